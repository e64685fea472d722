"""The ``move`` tool: move or rename a file or folder inside the workspace, never overwriting.

Both ends are resolved inside the workspace and the rename happens between descriptors held on
the workspace root (``beneath``); a symlink moves as a link. What lands at the destination — the
file, or everything a moved folder holds — goes through the same guard as every written path
(``runs_later``), and the change journal records the move so ``%agent undo`` puts it back. Its
own module: it is the one file tool that checks a whole tree against the guard before acting.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from pathlib import Path
from typing import Any, ClassVar

from ...errors import WorkspaceError
from ..arguments import str_arg
from ..base import BuiltinTool, ToolFailure
from ..guard.beneath import RACE_MESSAGE, WorkspaceRoot, is_race
from ..guard.journal import recording
from ..guard.runs_later import notebook_folder_refusal
from ..project_files import instructions_move_reason
from .file_common import _PATH_NOTE, _failure, _os_reason, lstat_at

#: move checks at most this many entries of a folder it moves (each against runs_later).
MAX_MOVE_CHECKED_ENTRIES = 20_000


class MoveTool(BuiltinTool):
    name = "move"
    description = (
        "Move or rename a file or folder inside the workspace. If destination is an existing "
        "folder, source is moved into it. An existing file at the destination is not "
        "overwritten. A symbolic link is moved as a link."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": f"What to move, {_PATH_NOTE}."},
            "destination": {
                "type": "string",
                "description": f"New path, or an existing folder to move into; {_PATH_NOTE}.",
            },
        },
        "required": ["source", "destination"],
        "additionalProperties": False,
    }

    def needs_approval(self, args: dict[str, object]) -> str | None:
        """Moving the user's project instructions (``AGENTS.md``) away, onto their place, or
        inside a moved folder is done only with their say."""
        return instructions_move_reason(
            self.context.workspace, args.get("source"), args.get("destination")
        )

    async def execute(self, args: dict[str, object]) -> str:
        source_text = str_arg(args, "source")
        destination_text = str_arg(args, "destination")
        resolve = self.context.resolve_for_writing
        source = resolve(source_text, follow_final_symlink=False)
        destination = resolve(destination_text, follow_final_symlink=False)
        moved_to, note = await asyncio.to_thread(
            self._move, source, destination, source_text, destination_text
        )
        return f"Moved {self.context.relative(source)} to {self.context.relative(moved_to)}{note}"

    def _move(
        self, source: Path, destination: Path, source_text: str, dest_text: str
    ) -> tuple[Path, str]:
        root = self.context.workspace
        held = self.context.confinement.held
        if source == root:
            raise ToolFailure("Cannot move the workspace root itself")
        try:
            source_info = _entry(held, source)
            target_info = _entry(held, destination) if destination != root else os.stat(held.fd)
        except OSError as exc:
            raise _failure("move", source_text, exc) from None
        if source_info is None:
            raise ToolFailure(f"Not found: {source_text}")
        if target_info is not None and stat.S_ISDIR(target_info.st_mode):
            destination = destination / source.name  # a plain name: still inside the workspace
            try:
                target_info = _entry(held, destination)
            except OSError as exc:
                raise _failure("move", source_text, exc) from None
        if target_info is not None:
            shown = self.context.relative(destination)
            raise ToolFailure(
                f"Cannot move {source_text} to {dest_text}: {shown} already exists "
                "(move does not overwrite; choose another name)"
            )
        if stat.S_ISDIR(source_info.st_mode) and destination.is_relative_to(source):
            raise ToolFailure(f"Cannot move the folder {source_text} into itself")
        self._refuse_what_runs_later(source, destination, stat.S_ISDIR(source_info.st_mode))
        try:
            with recording(self.context.journal) as record:
                created = record.missing_folders(held, destination.parent)
                held.makedirs(destination.parent)
                record.created_folders(created)
                with (
                    held.parent_of(source) as (from_folder, from_name),
                    held.parent_of(destination) as (to_folder, to_name),
                ):
                    os.rename(from_name, to_name, src_dir_fd=from_folder, dst_dir_fd=to_folder)
                    record.moved(
                        held.relative(source), held.relative(destination), to_folder, to_name
                    )
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise ToolFailure(
                    f"Cannot move {source_text} to {dest_text}: they are on different "
                    "filesystems inside the workspace; copy the file and remove the original"
                ) from None
            if is_race(exc):
                raise ToolFailure(RACE_MESSAGE.format(shown=source_text)) from None
            raise ToolFailure(
                f"Cannot move {source_text} to {dest_text}: {_os_reason(exc)}"
            ) from None
        return destination, record.note

    def _refuse_what_runs_later(self, source: Path, destination: Path, is_folder: bool) -> None:
        """The final destination, and what a moved folder holds at its new place, go through the
        same guard as every written path (a folder holding ``__init__.py`` moved to
        ``jupyter_agent``, a ``.pth`` moved into a site folder)."""
        confinement = self.context.confinement
        shown = self.context.relative(destination)
        try:
            confinement.refuse_if_runs_later(destination, shown)
            if not is_folder:
                return
            seen = 0
            for folder, names, files in os.walk(source, followlinks=False):
                for name in [*names, *files]:
                    seen += 1
                    if seen > MAX_MOVE_CHECKED_ENTRIES:
                        raise ToolFailure(
                            f"Cannot move {self.context.relative(source)}: it holds more than "
                            f"{MAX_MOVE_CHECKED_ENTRIES} entries, too many to check; move it "
                            "in parts"
                        )
                    inner = Path(folder, name).relative_to(source)
                    confinement.refuse_if_runs_later(destination / inner, f"{shown}/{inner}")
                if any(name.endswith(".ipynb") for name in files):
                    # a notebook moved along makes its new folder a kernel's start folder
                    inner = Path(folder).relative_to(source)
                    reason = notebook_folder_refusal(Path(folder), destination / inner)
                    if reason is not None:
                        raise WorkspaceError(
                            f"Refusing to create or change {shown}/{inner}: {reason}. The "
                            "agent's file tools never write files that run by themselves later"
                        )
        except WorkspaceError as exc:
            raise ToolFailure(str(exc)) from None


def _entry(held: WorkspaceRoot, path: Path) -> os.stat_result | None:
    """The entry at ``path`` (not following a final symlink); None if it or its folder is absent."""
    try:
        with held.parent_of(path) as (folder, name):
            return lstat_at(folder, name)
    except (FileNotFoundError, NotADirectoryError):
        return None
