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

What still runs: git itself and, for paths whose ``.gitattributes`` name one, a clean filter
that the *user's* repository configuration defines (git-lfs, say) — the user's own tool, never a
command of the model's making. Every git run has a timeout and is stopped with its whole process
tree, like ``run_bash``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .base import BuiltinTool, ToolFailure
from .processes import CommandOutcome, run_command, safe_environment
from .sandbox import git_sandbox, probe_off_the_loop

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

    async def execute(self, args: dict[str, object]) -> str:
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
