"""``git_commit``: record the workspace's changes in its existing git repository.

It stages the paths it is given (each confined to the workspace) or every change under the
workspace, and commits only those: files the user staged elsewhere in a larger repository are left
alone. It never creates a repository, never opens an editor or pager and never prompts.

The model can write files in the workspace, so git must not run anything the model could have
planted there (issue 11; SPEC "Hardening"):

* the repository is found by walking up from the workspace for a ``.git`` folder or file and is
  passed explicitly (``GIT_DIR``/``GIT_WORK_TREE``), so a bare repository planted in the
  workspace (``HEAD``, ``objects/``, ``refs/``, ``config``) is never used
  (``safe.bareRepository=explicit`` as well);
* no configuration file the model could write is read: ``HOME`` and ``XDG_CONFIG_HOME`` point at
  an empty temporary folder, ``GIT_CONFIG_GLOBAL`` at a file holding only the user's identity
  (``user.name``/``user.email``, read beforehand from the user's own configuration), and
  ``GIT_CONFIG_NOSYSTEM``/``GIT_ATTR_NOSYSTEM`` are set. The repository's own ``.git/config`` is
  the user's (the file tools never write inside ``.git``); if it *includes* a file inside the
  workspace, git_commit refuses to run;
* whatever the configuration says, hooks are off (``core.hooksPath=/dev/null`` and
  ``--no-verify``: ``.husky/``, ``.pre-commit-config.yaml`` and ``.git/hooks`` do not run), as are
  ``core.fsmonitor``, external diff and textconv drivers, commit signing, credential helpers,
  editors and automatic ``gc``/maintenance;
* the environment is ``processes.safe_environment`` — no credentials, and no ``SSH_AUTH_SOCK``,
  GPG agent or other way to the user's keys.

And git_commit does not commit, without asking, files that *run elsewhere*: the next push runs a
CI workflow with the repository's secrets, a checkout runs hooks that husky or pre-commit install
from the repository, ``.gitattributes`` names filters (``RUNS_ELSEWHERE`` lists them). Before the
call, the policy gate asks ``needs_approval(args)``, which lists the changes the call would commit
(``git status`` in the same isolation) and names such files; the gate then asks the user, and
with no one to ask the call is refused. After staging, the call checks what it is about to commit
again and refuses any such file the user was not asked about (one written meanwhile by another
call of the same reply; or no gate at all).

What still runs: git itself and, for paths whose ``.gitattributes`` name one, a clean filter
that the *user's* repository configuration defines (git-lfs, say) — the user's own tool, never a
command of the model's making. Every git run has a timeout and is stopped with its whole process
tree, like ``run_bash``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .base import BuiltinTool, ToolFailure

if TYPE_CHECKING:
    from .context import ToolContext
from .guard.processes import CommandOutcome, run_command, safe_environment
from .guard.sandbox import git_sandbox, probe_off_the_loop
from .project_files import INSTRUCTION_FILES

#: Seconds one git command may take.
GIT_TIMEOUT_S = 120.0
#: How much git output an error message carries.
MAX_GIT_OUTPUT_CHARS = 4_000
#: How much of ``git config --list`` is read to check where the configuration comes from.
MAX_CONFIG_LISTING_CHARS = 1_000_000
#: Set on every git command line: they win over any configuration file.
_GIT_OPTIONS = (
    "-c", "core.pager=cat",
    "-c", "color.ui=false",
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.editor=true",
    "-c", "sequence.editor=true",
    "-c", "commit.gpgSign=false",
    "-c", "tag.gpgSign=false",
    "-c", "credential.helper=",
    "-c", "diff.external=",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "safe.bareRepository=explicit",
    "-c", "submodule.recurse=false",
    "--literal-pathspecs",
    "--no-replace-objects",
)  # fmt: skip
#: Identity settings carried over from the user's own configuration, and nothing else.
IDENTITY_KEYS = ("user.name", "user.email")
#: Seconds the check before a call (``needs_approval``: one ``git status``) may take.
STATUS_TIMEOUT_S = 20.0
#: Calls whose check is remembered until they run (a denied call never runs).
MAX_ANNOUNCED_CALLS = 64

#: Files that run elsewhere once committed and pushed or checked out, so git_commit asks first.
#: Folders (at the repository's top) whose every file counts: CI workflows and actions (GitHub,
#: CircleCI, Buildkite, GitLab templates), hooks that husky or a hooks folder install, dev
#: containers (their commands run when a codespace or container is built).
RUNS_ELSEWHERE_FOLDERS = (
    ".github/workflows",
    ".github/actions",
    ".circleci",
    ".buildkite",
    ".gitlab",
    ".husky",
    ".githooks",
    ".devcontainer",
)
#: File names (at any depth) that CI services, hook managers or git itself act on.
RUNS_ELSEWHERE_FILES = frozenset(
    {
        ".gitlab-ci.yml",
        "azure-pipelines.yml",
        "azure-pipelines.yaml",
        "Jenkinsfile",
        ".travis.yml",
        "bitbucket-pipelines.yml",
        ".drone.yml",
        "appveyor.yml",
        ".appveyor.yml",
        "cloudbuild.yaml",
        "cloudbuild.yml",
        ".pre-commit-config.yaml",
        ".pre-commit-hooks.yaml",
        "lefthook.yml",
        ".lefthook.yml",
        ".gitattributes",
        ".gitmodules",
    }
)
#: Everything above, as one tuple for the documentation and the tests.
RUNS_ELSEWHERE = (*RUNS_ELSEWHERE_FOLDERS, *sorted(RUNS_ELSEWHERE_FILES))
#: Project instructions (lower case): they steer this agent and every coding agent after it.
_INSTRUCTIONS = frozenset(name.lower() for name in INSTRUCTION_FILES)


def runs_elsewhere(path: str) -> bool:
    """True for a repository-relative path (``/``-separated) that runs elsewhere once committed
    (project instructions, ``AGENTS.md``, steer the coding agents of whoever checks it out)."""
    leaf = path.rsplit("/", 1)[-1]
    if leaf in RUNS_ELSEWHERE_FILES or leaf.lower() in _INSTRUCTIONS:
        return True
    return any(path.startswith(folder + "/") for folder in RUNS_ELSEWHERE_FOLDERS)


@dataclass(frozen=True, slots=True)
class Repository:
    """Where the workspace's repository lives: its git folder and its top-level folder."""

    git_dir: Path
    work_tree: Path


def find_repository(start: Path) -> Repository | None:
    """The repository holding ``start``: the nearest ``.git`` folder (or gitfile) above it.

    Only ``.git`` entries count, never a folder that merely looks like a bare repository: that is
    what the model could plant.
    """
    for folder in (start, *start.parents):
        marker = folder / ".git"
        if marker.is_dir():
            return Repository(Path(os.path.realpath(marker)), folder)
        if marker.is_file():
            try:
                text = marker.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            target = Path(text.removeprefix("gitdir:").strip())
            git_dir = target if target.is_absolute() else folder / target
            return Repository(Path(os.path.realpath(git_dir)), folder) if git_dir.is_dir() else None
    return None


class GitCommitTool(BuiltinTool):
    """``git_commit``: stage and commit in the workspace's repository."""

    name = "git_commit"
    description = (
        "Commit changes in the workspace's existing git repository. With `paths`, stages and "
        "commits exactly those files or folders (relative to the workspace; deletions included); "
        "without, stages and commits every change under the workspace. Returns the new commit's "
        "short hash and a one-line summary. Fails if the workspace is not in a git repository or "
        "there is nothing to commit."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "minLength": 1,
                "description": "The commit message (first line: a short summary).",
            },
            "paths": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "description": "Files or folders to commit; default: all changes.",
            },
        },
        "required": ["message"],
        "additionalProperties": False,
    }

    def __init__(self, context: ToolContext) -> None:
        super().__init__(context)
        self._lock = threading.Lock()
        #: What ``needs_approval`` named, per call (its arguments): what execute may commit.
        self._announced: dict[str, frozenset[str]] = {}

    def needs_approval(self, args: dict[str, object]) -> str | None:
        """Why the user must approve this call (it would commit files that run elsewhere), or
        None. The policy gate asks this before the call; ``execute`` commits no such file that
        was not named here."""
        try:
            pathspecs = self._pathspecs(args["paths"]) if args.get("paths") is not None else ["."]
        except Exception:
            return None  # execute reports the bad argument itself
        repository = find_repository(self.context.workspace)
        if repository is None:
            return None
        changed = _pending_changes(repository, self.context.workspace, pathspecs)
        if changed is None:
            found: frozenset[str] = frozenset()
            reason = (
                "git_commit could not list what it would commit, so it cannot rule out files "
                "that run elsewhere (CI workflows, hooks)"
            )
        else:
            found = frozenset(path for path in changed if runs_elsewhere(path))
            reason = _approval_reason(found) if found else ""
        with self._lock:
            if len(self._announced) >= MAX_ANNOUNCED_CALLS:  # calls that were denied, never run
                self._announced.pop(next(iter(self._announced)))
            self._announced[_call_key(args)] = found
        return reason or None

    async def execute(self, args: dict[str, object]) -> str:
        with self._lock:
            announced = self._announced.pop(_call_key(args), frozenset())
        message = args["message"]
        if not isinstance(message, str) or not message.strip():
            raise ToolFailure("The commit message is empty")
        if "\x00" in message:
            raise ToolFailure("The commit message contains a NUL character")
        raw_paths = args.get("paths")
        pathspecs = self._pathspecs(raw_paths) if raw_paths is not None else ["."]
        workspace = self.context.workspace
        repository = find_repository(workspace)
        if repository is None:
            raise ToolFailure(
                f"The workspace ({workspace}) is not inside a git repository; git_commit does "
                "not create one (run `git init` first if that is wanted)"
            )
        with tempfile.TemporaryDirectory(prefix="jupyter-agent-git-") as home:
            git = _IsolatedGit(repository, workspace, Path(home))
            await git.prepare()
            await git.run("add", "--all", "--", *pathspecs)
            staged = await git.run(
                "diff", "--cached", "--quiet", "--no-ext-diff", "--", *pathspecs, check=False
            )
            if staged.exit_code == 0:
                where = "the given paths" if raw_paths is not None else "the workspace"
                raise ToolFailure(f"Nothing to commit: there are no changes in {where}")
            if staged.exit_code != 1:
                raise ToolFailure(_failure("git diff --cached", staged))
            await self._refuse_unapproved(git, repository, pathspecs, announced)
            commit = ("commit", "--quiet", "--no-verify", "--no-gpg-sign", "--message", message)
            if raw_paths is None and repository.work_tree == workspace:
                # The workspace is the whole repository: commit the index as it is (this also
                # concludes a merge, which a partial commit cannot).
                await git.run(*commit)
            else:
                # "--only" with pathspecs commits just these paths, whatever else is staged.
                await git.run(*commit, "--only", "--", *pathspecs)
            # "HEAD --": a file named HEAD in the workspace must not make the revision ambiguous
            summary = await git.run("show", "--no-patch", "--format=%h %s", "HEAD", "--")
            stat = await git.run(
                "show", "--shortstat", "--no-ext-diff", "--no-textconv", "--format=", "HEAD", "--"
            )
        shortstat = " ".join(stat.output.split())
        first_line = summary.output.strip().splitlines()[0] if summary.output.strip() else "?"
        short_hash, _, subject = first_line.partition(" ")
        result = f"Committed {short_hash}: {subject}"
        return f"{result} ({shortstat})" if shortstat else result

    async def _refuse_unapproved(
        self,
        git: _IsolatedGit,
        repository: Repository,
        pathspecs: list[str],
        announced: frozenset[str],
    ) -> None:
        """Refuse (and unstage) staged files that run elsewhere and were not approved."""
        listing = await git.run(
            "diff",
            "--cached",
            "--name-only",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            "--",
            *pathspecs,
            max_chars=MAX_CONFIG_LISTING_CHARS,
        )
        staged = [path for path in listing.output.split("\0") if path]
        unapproved = sorted(p for p in staged if runs_elsewhere(p) and p not in announced)
        if not unapproved:
            return
        unstage = [
            os.path.relpath(repository.work_tree / path, self.context.workspace)
            for path in unapproved
        ]
        await git.run("reset", "--quiet", "--", *unstage, check=False)
        shown = ", ".join(unapproved[:10]) + (" …" if len(unapproved) > 10 else "")
        raise ToolFailure(
            f"Nothing was committed: {shown} would run elsewhere once pushed or checked out "
            "(CI workflows, hooks, git attributes), and the user was not asked about "
            "committing it. Tell the user what you changed; they can commit it themselves, or "
            "approve it when git_commit asks"
        )

    def _pathspecs(self, raw_paths: object) -> list[str]:
        if not isinstance(raw_paths, list) or not raw_paths:
            raise ToolFailure("paths must be a non-empty list of paths")
        pathspecs: list[str] = []
        for raw in raw_paths:
            if not isinstance(raw, str) or not raw:
                raise ToolFailure("Each entry of paths must be a non-empty string")
            # The path itself, not what a final symlink points to: git tracks the link.
            resolved = self.context.resolve(raw, follow_final_symlink=False)
            pathspecs.append(os.path.relpath(resolved, self.context.workspace))
        return pathspecs


class _IsolatedGit:
    """Runs git on one repository with nothing of the workspace's configuration."""

    def __init__(self, repository: Repository, workspace: Path, home: Path) -> None:
        self.repository = repository
        self.workspace = workspace
        self.home = home
        self.env = safe_environment()
        self.env.update(
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / "xdg"),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
            GIT_ATTR_NOSYSTEM="1",
            GIT_DIR=str(repository.git_dir),
            GIT_WORK_TREE=str(repository.work_tree),
        )

    async def prepare(self) -> None:
        """Write the identity-only global config; refuse config that includes workspace files."""
        identity = await _user_identity(self.workspace)
        lines = ["[user]"] + [
            f"\t{key.split('.')[1]} = {_quoted(value)}" for key, value in identity
        ]
        (self.home / "gitconfig").write_text("\n".join(lines) + "\n", encoding="utf-8")
        # -z: origins unquoted (git quotes a non-ASCII path otherwise); resolved before any
        # check, so "<git dir>/../x" is seen for what it is.
        listing = await self.run(
            "config",
            "--list",
            "--show-origin",
            "--name-only",
            "--includes",
            "--local",
            "-z",
            check=False,
            max_chars=MAX_CONFIG_LISTING_CHARS,
        )
        if len(listing.output) >= MAX_CONFIG_LISTING_CHARS - 200:
            raise ToolFailure(
                "The repository's configuration is too large to check; git_commit will not run"
            )
        git_dir = os.path.realpath(self.repository.git_dir)
        fields = listing.output.split("\0")
        for origin in fields[0::2]:
            if not origin.startswith("file:"):
                continue
            real = os.path.realpath(os.path.join(self.workspace, origin.removeprefix("file:")))
            if real.startswith(git_dir + os.sep):
                continue  # the repository's own config (the file tools never write in .git)
            if real == str(self.workspace) or real.startswith(str(self.workspace) + os.sep):
                raise ToolFailure(
                    f"The repository's configuration includes {real}, a file inside the "
                    "workspace, which the agent can write; git_commit will not run git with it"
                )

    async def run(
        self, *args: str, check: bool = True, max_chars: int = MAX_GIT_OUTPUT_CHARS
    ) -> CommandOutcome:
        await probe_off_the_loop()
        argv = git_sandbox(
            ["git", *_GIT_OPTIONS, *args],
            workspace=self.workspace,
            work_tree=self.repository.work_tree,
            git_dir=self.repository.git_dir,
            home=self.home,
        )
        outcome = await run_command(
            argv,
            cwd=self.workspace,
            env=self.env,
            timeout_s=GIT_TIMEOUT_S,
            max_chars=max_chars,
        )
        if outcome.timed_out:
            raise ToolFailure(
                f"git {args[0]} did not finish within {GIT_TIMEOUT_S:g} s and was stopped"
                + (f":\n{outcome.output.strip()}" if outcome.output.strip() else "")
            )
        if check and outcome.exit_code != 0:
            raise ToolFailure(_failure(f"git {args[0]}", outcome))
        return outcome


def _call_key(args: dict[str, object]) -> str:
    return json.dumps(args, sort_keys=True, default=repr)


def _approval_reason(found: frozenset[str]) -> str:
    shown = ", ".join(sorted(found)[:10]) + (" …" if len(found) > 10 else "")
    return (
        f"this commit would include {shown}, which runs elsewhere once pushed or checked out "
        "(a CI workflow runs with the repository's secrets; hooks and git attributes run on "
        "other people's machines; project instructions steer coding agents), under your name"
    )


def _pending_changes(
    repository: Repository, workspace: Path, pathspecs: list[str]
) -> list[str] | None:
    """Repository-relative paths with changes under ``pathspecs`` (staged, unstaged, untracked
    but not ignored: what ``git add --all`` and the commit take), or None if git could not say.

    Synchronous (the policy gate asks before the call): one ``git status``, with the isolation
    of every git_commit run and a short timeout.
    """
    with tempfile.TemporaryDirectory(prefix="jupyter-agent-git-") as home:
        git = _IsolatedGit(repository, workspace, Path(home))
        argv = git_sandbox(
            [
                "git",
                *_GIT_OPTIONS,
                "-c",
                "status.relativePaths=false",
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=all",
                "--",
                *pathspecs,
            ],
            workspace=workspace,
            work_tree=repository.work_tree,
            git_dir=repository.git_dir,
            home=Path(home),
        )
        try:
            done = subprocess.run(
                argv,
                cwd=workspace,
                env=git.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=STATUS_TIMEOUT_S,
                start_new_session=True,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    entries = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    # "XY path" per entry (no renames asked for, so no second path)
    return [entry[3:] for entry in entries if len(entry) > 3]


async def _user_identity(workspace: Path) -> list[tuple[str, str]]:
    """``user.name``/``user.email`` from the user's global and system configuration.

    Read with the user's real ``HOME`` but from a neutral folder, and only from files outside the
    workspace (a ``~/.gitconfig`` the model could have written is skipped). Reading values runs
    nothing. The repository's own identity, if it sets one, still applies (its config is read).
    """
    git = shutil.which("git") or "git"
    env = safe_environment()
    env["GIT_CONFIG_NOSYSTEM"] = "0"
    identity: list[tuple[str, str]] = []
    for key in IDENTITY_KEYS:
        outcome = await run_command(
            [git, "config", "--show-origin", "--get", key],
            cwd=tempfile.gettempdir(),
            env=env,
            timeout_s=GIT_TIMEOUT_S,
            max_chars=MAX_GIT_OUTPUT_CHARS,
        )
        if outcome.exit_code != 0 or "\t" not in outcome.output:
            continue
        origin, value = outcome.output.rstrip("\n").split("\t", 1)
        real = os.path.realpath(origin.removeprefix("file:"))
        if real == str(workspace) or real.startswith(str(workspace) + os.sep):
            continue
        if value and "\n" not in value:
            identity.append((key, value))
    return identity


def _quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _failure(what: str, outcome: CommandOutcome) -> str:
    output = outcome.output.strip() or "(no output)"
    return f"{what} failed ({outcome.describe_exit().lower()}):\n{output}"
