"""``save_session_context``: write the conversation so far to a Markdown file in the workspace.

The agent's ``save_context(reason)`` goes through the registry to this tool. The file is
``context.session_context_file_path`` (``.jupyter_agent/session.md`` in the workspace unless the
program chose another). A relative path, or any path inside the workspace, goes through the
workspace resolver like every other path, so a symlink planted there cannot redirect the write,
and is then written relative to the descriptor held on the workspace root (``beneath``), like
``write_file``: a folder of its path swapped for a symlink after the check fails the call instead
of redirecting it. An absolute path outside the workspace is the programmer's explicit choice and
is used as is.

(The module was ``session.py``; it saves the session-context file, which the notebook session —
a different thing — does not.)
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from ..arguments import str_arg
from ..base import BuiltinTool, ToolFailure
from ..guard.atomic import atomic_write
from ..guard.beneath import WorkspaceRoot
from .files import _write_file

__all__ = ["SaveSessionContextTool", "render_session_file"]


class SaveSessionContextTool(BuiltinTool):
    name = "save_session_context"
    description = (
        "Save the current session context (the conversation so far, as Markdown) to the "
        "session file in the workspace, so that it can be picked up later. Give a short reason."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "reason": {
                "type": "string",
                "description": "Why the context is being saved (recorded in the file).",
            },
        },
        "required": ["reason"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> str:
        reason = str_arg(args, "reason")
        target = self._target()
        text = render_session_file(self.context.session_context, reason)
        data = text.encode("utf-8", "surrogatepass")
        if self.context.confinement.contains(str(target)):
            shown = self.context.relative(target)
            held = self.context.confinement.held
            await asyncio.to_thread(_write_beneath, held, target, shown, data)
        else:
            shown = str(target)
            await asyncio.to_thread(_write, target, data)
        return f"Session context saved to {shown} ({len(data)} bytes). Reason: {reason}"

    def _target(self) -> Path:
        configured = Path(self.context.session_context_file_path)
        root = self.context.workspace
        inside = not configured.is_absolute() or _lexically_inside(configured, root)
        if inside:
            # the agent's own record, in .jupyter_agent/ by default: a path the program chose
            return self.context.resolve(configured, agent_folder_ok=True)
        return configured


def _lexically_inside(path: Path, root: Path) -> bool:
    normal = os.path.normpath(path)
    return normal == str(root) or normal.startswith(str(root).rstrip(os.sep) + os.sep)


def _write_beneath(held: WorkspaceRoot, target: Path, shown: str, data: bytes) -> None:
    """Write the session file inside the workspace, through write_file's own descriptor-relative
    writer (no journal: the session file is the tool's output, not a change to undo)."""
    if target == held.root:
        raise ToolFailure("The session file path is the workspace folder itself")
    _write_file(held, target, shown, data, None, private=True)


def _write(target: Path, data: bytes) -> None:
    """Write the session file at an absolute path outside the workspace the program chose."""
    if target.is_dir():
        raise ToolFailure(f"The session file path {target.name!r} is a folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)  # the program's choice of folder
        atomic_write(target, data, private=True)
    except OSError as exc:
        raise ToolFailure(f"Cannot save the session context: {exc.strerror or exc}") from None


def render_session_file(session_context: str, reason: str, *, now: datetime | None = None) -> str:
    """The session file's text: a header with the time and reason, then the context."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    body = session_context if session_context.strip() else "_(no conversation yet)_\n"
    if not body.endswith("\n"):
        body += "\n"
    return f"# Session context\n\n- Saved: {stamp}\n- Reason: {reason}\n\n{body}"
