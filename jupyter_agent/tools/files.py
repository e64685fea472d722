"""The file tools: read, write, edit, list, create folders, move and remove — inside the workspace.

Every path goes through the workspace resolver first, so nothing outside the workspace is read,
written, created, moved or deleted, whatever the model asks. Writes are atomic (see ``atomic``).
The wording follows the reference tools the model knows (``file_path``, ``old_string``,
``new_string``, ``replace_all``). Blocking work runs in a worker thread so that several tool calls
of one turn can run side by side.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import io
import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ToolInputError
from .arguments import bool_arg, optional_int_arg, optional_str_arg, str_arg
from .atomic import atomic_write_at
from .base import BuiltinTool, ToolFailure
from .beneath import RACE_MESSAGE, WorkspaceRoot, is_race

if TYPE_CHECKING:
    pass

__all__ = [
    "EditFileTool",
    "ListDirTool",
    "MkdirTool",
    "MoveTool",
    "ReadFileTool",
    "RemoveTool",
    "WriteFileTool",
]

#: read_file returns at most this many lines per call ...
MAX_READ_LINES = 2000
#: ... and at most this many characters (about 256 KB).
MAX_READ_CHARS = 256 * 1024
#: How much of a file is checked for NUL bytes to call it binary.
BINARY_SNIFF_BYTES = 8192
#: edit_file loads the whole file; larger files are refused.
MAX_EDIT_BYTES = 10 * 1024 * 1024
#: list_dir shows at most this many entries.
MAX_LIST_ENTRIES = 2000
#: Lines to skip are counted in chunks of this many bytes (one reused buffer) ...
_SKIP_CHUNK = 1024 * 1024
#: ... or, on a memory map, this many at a time (numpy's compare makes a same-sized temporary).
_MAPPED_CHUNK = 4 * 1024 * 1024
#: From this size on, lines are counted on a memory map with numpy when it is installed (its
#: vectorised compare counts several times faster than ``bytes.count``, and a map needs no copy).
FAST_SKIP_MIN_BYTES = 64 * 1024 * 1024
#: Lines are read in pieces of at most this many characters, so one huge line is never loaded.
_READ_PIECE = 64 * 1024

_PATH_NOTE = "relative to the workspace (an absolute path must lie inside it)"


def _os_reason(exc: OSError) -> str:
    """An OSError as a short phrase, without the host's absolute paths."""
    if isinstance(exc, FileNotFoundError):
        return "not found"
    if isinstance(exc, NotADirectoryError):
        return "a part of the path is not a folder"
    if isinstance(exc, IsADirectoryError):
        return "is a folder"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileExistsError):
        return "already exists"
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    if exc.errno == errno.ENOTEMPTY:
        return "folder is not empty"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return (exc.strerror or "input/output error").lower()


def _failure(op: str, shown: str, exc: OSError) -> ToolFailure:
    if is_race(exc):
        return ToolFailure(RACE_MESSAGE.format(shown=shown))
    return ToolFailure(f"Cannot {op} {shown}: {_os_reason(exc)}")


def _check_encoding(encoding: str) -> codecs.CodecInfo:
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        raise ToolInputError(f"unknown encoding {encoding!r}; try 'utf-8' or 'latin-1'") from None
    if not getattr(codec, "_is_text_encoding", True):  # rot13, base64, zlib, ...
        raise ToolInputError(f"{encoding!r} is not a text encoding; try 'utf-8' or 'latin-1'")
    return codec


def _refuse_trailing_slash(path: Path, shown: str) -> None:
    """``a.txt/`` names a folder; a file path must not end with a slash."""
    if shown.endswith(("/", os.sep)) and not path.is_dir():
        raise ToolFailure(
            f"{shown} ends with '/', which names a folder; give the file's path without it"
        )


# -- read_file ---------------------------------------------------------------------------------


class ReadFileTool(BuiltinTool):
    name = "read_file"
    description = (
        "Read a text file in the workspace. A small file comes back exactly as it is. A large "
        f"file comes back capped at {MAX_READ_LINES} lines or about {MAX_READ_CHARS // 1024} KB, "
        "with a note saying which offset to read from next. Use offset (1-based line number) and "
        "limit (number of lines) to read part of a file. Binary files are refused."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "description": f"Path of the file to read, {_PATH_NOTE}.",
            },
            "encoding": {
                "type": "string",
                "description": "Text encoding of the file (default utf-8).",
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "1-based line number to start reading from (default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Number of lines to read (default and maximum {MAX_READ_LINES}).",
            },
        },
        "required": ["file_path"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> str:
        file_path = str_arg(args, "file_path")
        encoding = optional_str_arg(args, "encoding") or "utf-8"
        offset = optional_int_arg(args, "offset", minimum=1)
        limit = optional_int_arg(args, "limit", minimum=1)
        codec = _check_encoding(encoding)
        path = self.context.resolve(file_path)
        _refuse_trailing_slash(path, file_path)
        held = self.context.confinement.held
        return await asyncio.to_thread(_read_file, held, path, file_path, codec, offset, limit)


def _open_for_reading(held: WorkspaceRoot, path: Path, shown: str) -> int:
    """A descriptor on the regular file ``path``, opened beneath the held root."""
    try:
        return held.open_regular(path, shown)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(f"File not found: {shown}") from None
    except OSError as exc:
        raise _failure("read", shown, exc) from None


def _read_file(
    held: WorkspaceRoot,
    path: Path,
    shown: str,
    codec: codecs.CodecInfo,
    offset: int | None,
    limit: int | None,
) -> str:
    fd = _open_for_reading(held, path, shown)
    info = os.fstat(fd)
    # UTF-16/32 text is full of NUL bytes, so only sniff for encodings that never produce them.
    sniff = not codec.name.startswith(("utf-16", "utf-32"))
    try:
        with open(fd, "rb") as raw:
            head = raw.read(BINARY_SNIFF_BYTES)
            if sniff and b"\0" in head:
                raise ToolFailure(
                    f"{shown} looks like a binary file ({info.st_size} bytes), not text; "
                    "read_file only reads text"
                )
            if offset is None and limit is None and info.st_size <= MAX_READ_CHARS:
                data = head + raw.read()
                text = data.decode(codec.name)
                if _count_lines(text) <= MAX_READ_LINES:
                    return text
            start = offset or 1
            raw.seek(0)
            skipped = 1
            if sniff and start > 1:
                # ASCII-compatible encodings: find the line in bytes, without decoding the rest.
                total = skip_lines(raw, start - 1)
                if total is not None:
                    raise _past_the_end(shown, start, total)
                skipped = start
            stream = io.TextIOWrapper(raw, encoding=codec.name, newline="")
            return _read_lines(stream, shown, start, limit, skipped)
    except UnicodeDecodeError:
        raise ToolFailure(
            f"{shown} is not valid {codec.name} text (it may be binary, or try another encoding)"
        ) from None
    except OSError as exc:
        raise _failure("read", shown, exc) from None


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def skip_lines(
    raw: io.BufferedReader, count: int, *, fast_min_bytes: int = FAST_SKIP_MIN_BYTES
) -> int | None:
    """Move past ``count`` lines; None if done, else how many lines the file has (fewer).

    Large files go through ``_skip_lines_mapped`` when numpy is available; both give the same
    answer and leave the file at the same position (a property test checks it).
    """
    try:
        size = os.fstat(raw.fileno()).st_size
    except OSError:
        size = 0
    if size and size >= fast_min_bytes and raw.tell() == 0:
        try:
            import numpy  # noqa: F401  (optional: only to count faster)
        except ImportError:
            pass
        else:
            return _skip_lines_mapped(raw, count, size)
    return _skip_lines(raw, count)


def _skip_lines_mapped(raw: io.BufferedReader, count: int, size: int) -> int | None:
    """``_skip_lines`` on a read-only memory map, counting newlines with numpy, chunk by chunk.

    Each counted chunk's pages are dropped from this process right away (``MADV_DONTNEED``), so
    the resident memory stays at one chunk however large the file.
    """
    import mmap

    import numpy as np

    skipped = 0
    with mmap.mmap(raw.fileno(), size, access=mmap.ACCESS_READ) as mapped:
        data = np.frombuffer(mapped, dtype=np.uint8)
        chunk = is_newline = data[:0]
        try:
            position = 0
            while position < size:
                chunk = data[position : position + _MAPPED_CHUNK]
                is_newline = chunk == 10
                found = int(np.count_nonzero(is_newline))
                if skipped + found >= count:
                    index = int(np.flatnonzero(is_newline)[count - skipped - 1])
                    offset = position + index + 1
                    raw.seek(offset)
                    return count if offset == size else None
                skipped += found
                with contextlib.suppress(OSError, AttributeError, ValueError):
                    mapped.madvise(mmap.MADV_DONTNEED, position, len(chunk))
                position += len(chunk)
            ends_in_line = size > 0 and int(data[size - 1]) != 10
        finally:
            del data, chunk, is_newline  # views of the map: it cannot close while they live
    raw.seek(size)
    return skipped + (1 if ends_in_line else 0)


def _skip_lines(raw: io.BufferedReader, count: int) -> int | None:
    """Move past ``count`` lines; None if done, else how many lines the file has (fewer)."""
    skipped = 0
    ends_in_line = False
    buffer = bytearray(_SKIP_CHUNK)  # one buffer for the whole skip: no allocation per chunk
    while True:
        size = raw.readinto(buffer)
        if not size:
            return skipped + (1 if ends_in_line else 0)
        newlines = buffer.count(b"\n", 0, size)
        if skipped + newlines < count:
            skipped += newlines
            ends_in_line = not buffer.endswith(b"\n", 0, size)
            continue
        rest = bytes(memoryview(buffer)[:size]).split(b"\n", count - skipped)[-1]
        raw.seek(-len(rest), io.SEEK_CUR)
        if not rest and not raw.peek(1):
            return count  # the wanted line would start exactly at the end of the file
        return None


def _past_the_end(shown: str, start: int, lines: int) -> ToolFailure:
    plural = "" if lines == 1 else "s"
    return ToolFailure(f"offset {start} is past the end of {shown} (it has {lines} line{plural})")


def _read_lines(
    stream: io.TextIOWrapper, shown: str, start: int, limit: int | None, line_no: int
) -> str:
    """Lines ``start`` .. ``start + limit - 1``, streamed, capped; with a note if capped.

    ``line_no`` is the line the stream is at (lines before ``start`` may be skipped already).
    """
    partial = False
    while line_no < start:
        piece = stream.readline(_READ_PIECE)
        if not piece:
            raise _past_the_end(shown, start, line_no - (0 if partial else 1))
        partial = not piece.endswith("\n")
        if not partial:
            line_no += 1
    wanted = MAX_READ_LINES if limit is None else min(limit, MAX_READ_LINES)
    parts: list[str] = []
    size = 0
    lines_done = 0
    cut_in_line = False
    while lines_done < wanted:
        room = MAX_READ_CHARS - size
        piece = stream.readline(min(room, _READ_PIECE) + 1)
        if not piece:
            break
        if len(piece) > room:
            parts.append(piece[:room])
            cut_in_line = True
            break
        parts.append(piece)
        size += len(piece)
        if piece.endswith("\n"):
            lines_done += 1
        elif size >= MAX_READ_CHARS:
            cut_in_line = bool(stream.read(1))
            break
    text = "".join(parts)
    last = start + lines_done - (0 if cut_in_line else 1)
    if cut_in_line:
        return text + (
            f"\n\n[Output capped at about {MAX_READ_CHARS // 1024} KB in the middle of line "
            f"{last}. To read further, call read_file with offset={last + 1}.]"
        )
    capped_by_us = limit is None or limit > MAX_READ_LINES
    if lines_done == wanted and capped_by_us and stream.read(1):
        return text + (
            f"\n\n[Showing lines {start}-{last} of {shown}; the file continues. read_file returns "
            f"at most {MAX_READ_LINES} lines per call. To read further, call read_file with "
            f"offset={last + 1} (and a limit of up to {MAX_READ_LINES}).]"
        )
    return text


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

    async def execute(self, args: dict[str, object]) -> str:
        file_path = str_arg(args, "file_path")
        content = str_arg(args, "content")
        path = self.context.resolve_for_writing(file_path)
        _refuse_trailing_slash(path, file_path)
        data = content.encode("utf-8", "surrogatepass")
        held = self.context.confinement.held
        await asyncio.to_thread(_write_file, held, path, file_path, data)
        return f"Wrote {len(data)} bytes to {self.context.relative(path)}"


def _write_file(held: WorkspaceRoot, path: Path, shown: str, data: bytes) -> None:
    try:
        held.makedirs(path.parent)
    except (FileExistsError, NotADirectoryError):
        raise ToolFailure(f"Cannot write {shown}: a part of its folder path is a file") from None
    except OSError as exc:
        raise _failure("create the folder for", shown, exc) from None
    try:
        with held.parent_of(path) as (folder, name):
            _refuse_folder_or_link(folder, name, shown)
            atomic_write_at(folder, name, data)
    except OSError as exc:
        raise _failure("write", shown, exc) from None


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
        count = await asyncio.to_thread(
            _edit_file, held, path, file_path, old_string, new_string, replace_all
        )
        where = self.context.relative(path)
        return f"Edited {where}: {count} replacement{'' if count == 1 else 's'}"


def _edit_file(
    held: WorkspaceRoot, path: Path, shown: str, old: str, new: str, replace_all: bool
) -> int:
    fd = _open_for_reading(held, path, shown)
    try:
        with open(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
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
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    try:
        with held.parent_of(path) as (folder, name):
            _refuse_folder_or_link(folder, name, shown)
            atomic_write_at(folder, name, updated.encode("utf-8", "surrogatepass"))
    except OSError as exc:
        raise _failure("write", shown, exc) from None
    return replaced


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
                existing = _lstat_at(folder, name)
                if existing is not None and stat.S_ISDIR(existing.st_mode):
                    return f"Folder {where} already exists"
        except FileNotFoundError:
            if not parents:
                raise ToolFailure(
                    f"Cannot create folder {shown}: its parent folder does not exist "
                    "(set parents to true to create it)"
                ) from None
        except NotADirectoryError:
            raise ToolFailure(
                f"Cannot create folder {shown}: a part of its path is a file"
            ) from None
        except OSError as exc:
            raise _failure("create folder", shown, exc) from None
        try:
            if parents:
                held.makedirs(path.parent)
            with held.parent_of(path) as (folder, name):
                os.mkdir(name, 0o777, dir_fd=folder)
        except FileExistsError:
            raise ToolFailure(f"Cannot create folder {shown}: a file of that name exists") from None
        except FileNotFoundError:
            raise ToolFailure(
                f"Cannot create folder {shown}: its parent folder does not exist "
                "(set parents to true to create it)"
            ) from None
        except NotADirectoryError:
            raise ToolFailure(
                f"Cannot create folder {shown}: a part of its path is a file"
            ) from None
        except OSError as exc:
            raise _failure("create folder", shown, exc) from None
        return f"Created folder {where}"


def _entry(held: WorkspaceRoot, path: Path) -> os.stat_result | None:
    """The entry at ``path`` (not following a final symlink); None if it or its folder is absent."""
    try:
        with held.parent_of(path) as (folder, name):
            return _lstat_at(folder, name)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _lstat_at(folder: int, name: str) -> os.stat_result | None:
    """The entry ``name`` in the held folder, not following a symlink; None if absent."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


# -- move --------------------------------------------------------------------------------------


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

    async def execute(self, args: dict[str, object]) -> str:
        source_text = str_arg(args, "source")
        destination_text = str_arg(args, "destination")
        resolve = self.context.resolve_for_writing
        source = resolve(source_text, follow_final_symlink=False)
        destination = resolve(destination_text, follow_final_symlink=False)
        moved_to = await asyncio.to_thread(
            self._move, source, destination, source_text, destination_text
        )
        return f"Moved {self.context.relative(source)} to {self.context.relative(moved_to)}"

    def _move(self, source: Path, destination: Path, source_text: str, dest_text: str) -> Path:
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
        try:
            held.makedirs(destination.parent)
            with (
                held.parent_of(source) as (from_folder, from_name),
                held.parent_of(destination) as (to_folder, to_name),
            ):
                os.rename(from_name, to_name, src_dir_fd=from_folder, dst_dir_fd=to_folder)
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
        return destination


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
        try:
            with held.parent_of(path) as (folder, name):
                info = _lstat_at(folder, name)
                if info is None:
                    raise ToolFailure(f"Not found: {shown}")
                if not stat.S_ISDIR(info.st_mode):  # files and symlinks (to folders too)
                    os.unlink(name, dir_fd=folder)
                    return f"Removed {where}"
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
                    return f"Removed empty folder {where}"
                # rmtree with dir_fd walks by descriptors and never follows a symlink inside.
                shutil.rmtree(name, dir_fd=folder)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolFailure(f"Not found: {shown}") from None
        except OSError as exc:
            raise _failure("remove", shown, exc) from None
        return f"Removed folder {where} and everything in it"
