"""``git_commit``: record the workspace's changes in its existing git repository.

It stages the paths it is given (each confined to the workspace) or every change under the
workspace, and commits only those: files the user staged elsewhere in a larger repository are left
alone. It never creates a repository, never opens an editor or pager and never prompts (the child
environment is ``shell.safe_environment``, credential-free and non-interactive); hooks and commit
signing follow the user's git configuration. Every git run has a timeout and is stopped with its
whole process group, like ``run_bash``.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from .base import BuiltinTool, ToolFailure
from .shell import CommandOutcome, run_command, safe_environment

#: Seconds one git command may take (hooks included).
GIT_TIMEOUT_S = 120.0
#: How much git output an error message carries.
MAX_GIT_OUTPUT_CHARS = 4_000
#: Passed through to git besides ``safe_environment``'s allowlist, so that commit signing (GPG or
#: SSH keys held by an agent) works as the user configured it.
SIGNING_VARIABLES = ("GNUPGHOME", "GPG_AGENT_INFO", "SSH_AUTH_SOCK")
_GIT_OPTIONS = ("-c", "core.pager=cat", "-c", "color.ui=false", "--literal-pathspecs")


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

        toplevel = await self._git("rev-parse", "--show-toplevel", check=False)
        if toplevel.exit_code != 0:
            raise ToolFailure(
                f"The workspace ({self.context.workspace}) is not inside a git repository; "
                "git_commit does not create one (run `git init` first if that is wanted)"
            )
        await self._git("add", "--all", "--", *pathspecs)
        staged = await self._git("diff", "--cached", "--quiet", "--", *pathspecs, check=False)
        if staged.exit_code == 0:
            where = "the given paths" if raw_paths is not None else "the workspace"
            raise ToolFailure(f"Nothing to commit: there are no changes in {where}")
        if staged.exit_code != 1:
            raise ToolFailure(_failure("git diff --cached", staged))
        if raw_paths is None and os.path.samefile(toplevel.output.strip(), self.context.workspace):
            # The workspace is the whole repository: commit the index as it is (this also
            # concludes a merge, which a partial commit cannot).
            await self._git("commit", "--quiet", "--message", message)
        else:
            # "--only" with pathspecs commits just these paths, whatever else is staged.
            await self._git("commit", "--quiet", "--message", message, "--only", "--", *pathspecs)
        summary = await self._git("show", "--no-patch", "--format=%h %s", "HEAD")
        stat = await self._git("show", "--shortstat", "--format=", "HEAD")
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

    async def _git(self, *args: str, check: bool = True) -> CommandOutcome:
        outcome = await run_command(
            ["git", *_GIT_OPTIONS, *args],
            cwd=self.context.workspace,
            env=safe_environment(extra_names=SIGNING_VARIABLES),
            timeout_s=GIT_TIMEOUT_S,
            max_chars=MAX_GIT_OUTPUT_CHARS,
        )
        if outcome.timed_out:
            raise ToolFailure(
                f"git {args[0]} did not finish within {GIT_TIMEOUT_S:g} s and was stopped"
                + (f":\n{outcome.output.strip()}" if outcome.output.strip() else "")
            )
        if check and outcome.exit_code != 0:
            raise ToolFailure(_failure(f"git {args[0]}", outcome))
        return outcome


def _failure(what: str, outcome: CommandOutcome) -> str:
    output = outcome.output.strip() or "(no output)"
    return f"{what} failed ({outcome.describe_exit().lower()}):\n{output}"
