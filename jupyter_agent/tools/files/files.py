"""The file tools: read, write, edit, list, create folders, move and remove — inside the workspace.

Every path goes through the workspace resolver first, so nothing outside the workspace is read,
written, created, moved or deleted, whatever the model asks; the I/O then happens relative to a
descriptor held on the workspace root (``beneath``). Writes are atomic (see ``atomic``).
``read_file`` and its streaming reader live in ``reading`` and ``line_reader``, the ``move`` tool
in ``move``; the rest is here.
The wording follows the reference tools the model knows (``file_path``, ``old_string``,
``new_string``, ``replace_all``). Blocking work runs in a worker thread so that several tool calls
of one turn can run side by side.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import stat
from pathlib import Path
from typing import Any, ClassVar

from ...errors import ToolInputError
from ..arguments import bool_arg, optional_str_arg, str_arg
from ..base import BuiltinTool, ToolFailure
from ..guard.atomic import atomic_write_at
from ..guard.beneath import RACE_MESSAGE, WorkspaceRoot
from ..guard.journal import ChangeJournal, recording
from ..project_files import instructions_move_reason, instructions_write_reason
from .file_common import (
    _PATH_NOTE,
    BINARY_SNIFF_BYTES,
    _failure,
    _open_for_reading,
    _refuse_trailing_slash,
    lstat_at,
)
from .reading import ReadFileTool

__all__ = [
    "EditFileTool",
    "ListDirTool",
    "MkdirTool",
    "ReadFileTool",
    "RemoveTool",
    "WriteFileTool",
]

#: edit_file loads the whole file; larger files are refused.
MAX_EDIT_BYTES = 10 * 1024 * 1024
#: list_dir shows at most this many entries.
MAX_LIST_ENTRIES = 2000


# -- write_file --------------------------------------------------------------------------------


class WriteFileTool(BuiltinTool):
    name = "write_file"
    description = (
        "Write a text file in the workspace (UTF-8), replacing it if it exists and creating "
        "missing parent folders. The write is atomic: the file ends up with either its old or "
        "its new content, never a mix."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "description": f"Path of the file to write, {_PATH_NOTE}.",
            },
            "content": {"type": "string", "description": "Full file contents to write."},
        },
        "required": ["file_path", "content"],
        "additionalProperties": False,
    }

    def needs_approval(self, args: dict[str, object]) -> str | None:
        """The user's project instructions (``AGENTS.md``) are changed only with their say."""
        return instructions_write_reason(self.context.workspace, args.get("file_path"))

    async def execute(self, args: dict[str, object]) -> str:
        file_path = str_arg(args, "file_path")
        content = str_arg(args, "content")
        path = self.context.resolve_for_writing(file_path)
        _refuse_trailing_slash(path, file_path)
        data = content.encode("utf-8", "surrogatepass")
        held = self.context.confinement.held
        journal = self.context.journal
        note = await asyncio.to_thread(_write_file, held, path, file_path, data, journal)
        return f"Wrote {len(data)} bytes to {self.context.relative(path)}{note}"


def _write_file(
    held: WorkspaceRoot,
    path: Path,
    shown: str,
    data: bytes,
    journal: ChangeJournal | None,
    *,
    private: bool = False,
) -> str:
    """Write ``data`` to ``path``; the journal's note ("" unless undo will not cover it).
    ``private``: the agent's own record (the session file), 0600 in a 0700 folder."""
    with recording(journal) as record:
        try:
            created = record.missing_folders(held, path.parent)
            held.makedirs(path.parent, private=private)
            record.created_folders(created)
        except (FileExistsError, NotADirectoryError):
            raise ToolFailure(
                f"Cannot write {shown}: a part of its folder path is a file"
            ) from None
        except OSError as exc:
            raise _failure("create the folder for", shown, exc) from None
        try:
            with held.parent_of(path) as (folder, name):
                _refuse_folder_or_link(folder, name, shown)
                before = record.keep_file(folder, name)
                atomic_write_at(folder, name, data, private=private)
                record.wrote(held.relative(path), before, data)
        except OSError as exc:
            raise _failure("write", shown, exc) from None
    return record.note


def _refuse_folder_or_link(folder: int, name: str, shown: str) -> None:
    """The checked path named a file (or nothing yet); a folder or a symlink now is refused."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        raise ToolFailure(f"{shown} is a folder; give the path of a file to write")
    if stat.S_ISLNK(info.st_mode):
        raise ToolFailure(RACE_MESSAGE.format(shown=shown))
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"{shown} is not a regular file (a FIFO, socket or device)")


# -- edit_file ---------------------------------------------------------------------------------


class EditFileTool(BuiltinTool):
    name = "edit_file"
    description = (
        "Replace text in a file by exact string match. old_string must occur exactly once in the "
        "file unless replace_all is true; the match is literal (no regular expressions, and "
        "nothing in new_string is special). If the match fails, nothing is written. Include "
        "enough surrounding lines in old_string to make it unique."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "description": f"Path of the file to edit, {_PATH_NOTE}.",
            },
            "old_string": {"type": "string", "description": "Exact text to find and replace."},
            "new_string": {"type": "string", "description": "Replacement text."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence of old_string instead of requiring a "
                "unique match (default false).",
            },
        },
        "required": ["file_path", "old_string", "new_string"],
        "additionalProperties": False,
    }

    def needs_approval(self, args: dict[str, object]) -> str | None:
        """The user's project instructions (``AGENTS.md``) are changed only with their say."""
        return instructions_write_reason(self.context.workspace, args.get("file_path"))

    async def execute(self, args: dict[str, object]) -> str:
        file_path = str_arg(args, "file_path")
        old_string = str_arg(args, "old_string")
        new_string = str_arg(args, "new_string")
        replace_all = bool_arg(args, "replace_all", False)
        if old_string == "":
            raise ToolInputError("old_string must not be empty; use write_file to create a file")
        if old_string == new_string:
            raise ToolInputError("old_string and new_string are the same; nothing would change")
        path = self.context.resolve_for_writing(file_path)
        _refuse_trailing_slash(path, file_path)
        held = self.context.confinement.held
        count, note = await asyncio.to_thread(
            _edit_file,
            held,
            path,
            file_path,
            old_string,
            new_string,
            replace_all,
            self.context.journal,
        )
        where = self.context.relative(path)
        return f"Edited {where}: {count} replacement{'' if count == 1 else 's'}{note}"


def _edit_file(
    held: WorkspaceRoot,
    path: Path,
    shown: str,
    old: str,
    new: str,
    replace_all: bool,
    journal: ChangeJournal | None,
) -> tuple[int, str]:
    """Replacements made, and the journal's note ("" unless undo will not cover the edit)."""
    fd = _open_for_reading(held, path, shown)
    try:
        with open(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            size = info.st_size
            if size > MAX_EDIT_BYTES:
                raise ToolFailure(
                    f"{shown} is {size} bytes, more than edit_file handles "
                    f"({MAX_EDIT_BYTES} bytes); use write_file to replace it"
                )
            data = handle.read(MAX_EDIT_BYTES + 1)
    except OSError as exc:
        raise _failure("read", shown, exc) from None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolFailure(f"{shown} looks like a binary file; edit_file only edits text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"{shown} is not valid UTF-8 text; edit_file cannot edit it") from None
    count = text.count(old)
    if count == 0:
        raise ToolFailure(
            f"old_string was not found in {shown} (0 matches). It must match the file's text "
            "exactly, including whitespace and indentation; read the file to check."
        )
    if count > 1 and not replace_all:
        raise ToolFailure(
            f"old_string appears {count} times in {shown} (it must be unique). Include more "
            "surrounding text to pick one occurrence, or set replace_all to true to replace all."
        )
    replaced = count if replace_all else 1
    # Worked out before building it: 2.5 KB of arguments must not become a 1.4 GiB file.
    grown = len(data) + replaced * (
        len(new.encode("utf-8", "surrogatepass")) - len(old.encode("utf-8", "surrogatepass"))
    )
    if grown > MAX_EDIT_BYTES:
        raise ToolFailure(
            f"This edit would make {shown} {grown:,} bytes, more than edit_file writes "
            f"({MAX_EDIT_BYTES:,} bytes); nothing was written. Use write_file for large content."
        )
    replaced_text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    updated = replaced_text.encode("utf-8", "surrogatepass")
    try:
        with recording(journal) as record, held.parent_of(path) as (folder, name):
            _refuse_folder_or_link(folder, name, shown)
            # The journal keeps the bytes read above through the tool's own descriptor.
            before = record.keep_bytes(data, info.st_mode)
            atomic_write_at(folder, name, updated)
            record.wrote(held.relative(path), before, updated)
    except OSError as exc:
        raise _failure("write", shown, exc) from None
    return replaced, record.note


# -- list_dir ----------------------------------------------------------------------------------


class ListDirTool(BuiltinTool):
    name = "list_dir"
    description = (
        "List a folder in the workspace, sorted by name: folders end with '/', symbolic links "
        "with '@'. Without a path, lists the workspace root."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": f"Folder to list, {_PATH_NOTE} (default: the workspace root).",
            },
        },
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> str:
        shown = optional_str_arg(args, "path") or "."
        path = self.context.resolve(shown)
        return await asyncio.to_thread(_list_dir, self.context.confinement.held, path, shown)


def _list_dir(held: WorkspaceRoot, path: Path, shown: str) -> str:
    try:
        with held.folder(path, readable=True) as folder, os.scandir(folder) as entries:
            names = []
            for entry in entries:
                if entry.is_symlink():
                    names.append(entry.name + "@")
                elif entry.is_dir(follow_symlinks=False):
                    names.append(entry.name + "/")
                else:
                    names.append(entry.name)
    except FileNotFoundError:
        raise ToolFailure(f"Folder not found: {shown}") from None
    except NotADirectoryError:
        if path.exists():
            raise ToolFailure(
                f"{shown} is a file, not a folder; use read_file to read it"
            ) from None
        raise ToolFailure(f"Folder not found: {shown}") from None
    except OSError as exc:
        raise _failure("list", shown, exc) from None
    if not names:
        return f"{shown} is empty"
    names.sort()
    if len(names) > MAX_LIST_ENTRIES:
        more = len(names) - MAX_LIST_ENTRIES
        names = names[:MAX_LIST_ENTRIES]
        names.append(f"[... and {more} more entries; use search_files to narrow down]")
    return "\n".join(names)


# -- mkdir -------------------------------------------------------------------------------------


class MkdirTool(BuiltinTool):
    name = "mkdir"
    description = "Create a folder in the workspace, with any missing parent folders."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": f"Folder to create, {_PATH_NOTE}."},
            "parents": {
                "type": "boolean",
                "description": "Create missing parent folders too (default true).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> str:
        shown = str_arg(args, "path")
        parents = bool_arg(args, "parents", True)
        path = self.context.resolve_for_writing(shown)
        return await asyncio.to_thread(self._mkdir, path, shown, parents)

    def _mkdir(self, path: Path, shown: str, parents: bool) -> str:
        where = self.context.relative(path)
        held = self.context.confinement.held
        if path == self.context.workspace:
            return f"Folder {where} already exists"
        try:
            with held.parent_of(path) as (folder, name):
                existing = lstat_at(folder, name)
                if existing is not None and stat.S_ISDIR(existing.st_mode):
                    return f"Folder {where} already exists"
        except FileNotFoundError:
            if not parents:
                raise _mkdir_failure(shown, FileNotFoundError()) from None
        except OSError as exc:
            raise _mkdir_failure(shown, exc) from None
        try:
            with recording(self.context.journal) as record:
                created = record.missing_folders(held, path)
                if parents:
                    held.makedirs(path.parent)
                with held.parent_of(path) as (folder, name):
                    os.mkdir(name, 0o777, dir_fd=folder)
                record.created_folders(created)
        except OSError as exc:
            raise _mkdir_failure(shown, exc) from None
        return f"Created folder {where}{record.note}"


def _mkdir_failure(shown: str, exc: OSError) -> ToolFailure:
    """Why ``mkdir`` could not create ``shown``, in the words the model acts on."""
    if isinstance(exc, FileExistsError):
        return ToolFailure(f"Cannot create folder {shown}: a file of that name exists")
    if isinstance(exc, FileNotFoundError):
        return ToolFailure(
            f"Cannot create folder {shown}: its parent folder does not exist "
            "(set parents to true to create it)"
        )
    if isinstance(exc, NotADirectoryError):
        return ToolFailure(f"Cannot create folder {shown}: a part of its path is a file")
    return _failure("create folder", shown, exc)


# -- remove ------------------------------------------------------------------------------------


class RemoveTool(BuiltinTool):
    name = "remove"
    description = (
        "Delete a file, a symbolic link (not what it points to) or a folder in the workspace. A "
        "folder that is not empty needs recursive set to true. The workspace root itself cannot "
        "be removed."
    )
    destructive = True
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": f"What to delete, {_PATH_NOTE}."},
            "recursive": {
                "type": "boolean",
                "description": "Delete a folder with everything in it (default false).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def needs_approval(self, args: dict[str, object]) -> str | None:
        """Removing the user's project instructions (or a folder holding them: ``CLAUDE.md``
        would take over) is done only with their say."""
        path = args.get("path")
        return instructions_write_reason(self.context.workspace, path) or (
            instructions_move_reason(self.context.workspace, path, ".")
        )

    async def execute(self, args: dict[str, object]) -> str:
        shown = str_arg(args, "path")
        recursive = bool_arg(args, "recursive", False)
        path = self.context.resolve_for_writing(shown, follow_final_symlink=False)
        if path == self.context.workspace:
            raise ToolFailure("Refusing to remove the workspace root itself")
        return await asyncio.to_thread(self._remove, path, shown, recursive)

    def _remove(self, path: Path, shown: str, recursive: bool) -> str:
        where = self.context.relative(path)
        held = self.context.confinement.held
        rel = held.relative(path)
        try:
            # With a journal, what is removed moves into it (one rename) so undo can put it back.
            with recording(self.context.journal) as record, held.parent_of(path) as (folder, name):
                info = lstat_at(folder, name)
                if info is None:
                    raise ToolFailure(f"Not found: {shown}")
                if not stat.S_ISDIR(info.st_mode):  # files and symlinks (to folders too)
                    if not record.trash(folder, name, rel):
                        os.unlink(name, dir_fd=folder)
                    return f"Removed {where}{record.note}"
                if not recursive:
                    try:
                        os.rmdir(name, dir_fd=folder)
                    except OSError as exc:
                        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                            raise ToolFailure(
                                f"{shown} is a folder that is not empty; set recursive to true "
                                "to delete it with everything in it"
                            ) from None
                        raise
                    record.removed_empty_folder(rel)
                    return f"Removed empty folder {where}{record.note}"
                if not record.trash(folder, name, rel):
                    # rmtree with dir_fd walks by descriptors and never follows a symlink inside.
                    shutil.rmtree(name, dir_fd=folder)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolFailure(f"Not found: {shown}") from None
        except OSError as exc:
            raise _failure("remove", shown, exc) from None
        return f"Removed folder {where} and everything in it{record.note}"
