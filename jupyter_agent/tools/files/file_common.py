"""What the file tools share: how a path is described, how an OS error reads, opening to read.

``files`` (write, edit, list, mkdir, remove), ``move`` and ``reading`` (read_file) describe
their path arguments the same way, turn an ``OSError`` into a short phrase without the host's
absolute paths (and a swapped-in symlink into the race message), open an existing regular file
beneath the held workspace root and look an entry up (never following a symlink) the same way.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..base import ToolFailure
from ..guard.beneath import RACE_MESSAGE, WorkspaceRoot, is_race

__all__ = ["BINARY_SNIFF_BYTES"]

#: How much of a file is checked for NUL bytes to call it binary.
BINARY_SNIFF_BYTES = 8192

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


def _refuse_trailing_slash(path: Path, shown: str) -> None:
    """``a.txt/`` names a folder; a file path must not end with a slash."""
    if shown.endswith(("/", os.sep)) and not path.is_dir():
        raise ToolFailure(
            f"{shown} ends with '/', which names a folder; give the file's path without it"
        )


def _open_for_reading(held: WorkspaceRoot, path: Path, shown: str) -> int:
    """A descriptor on the regular file ``path``, opened beneath the held root."""
    try:
        return held.open_regular(path, shown)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(f"File not found: {shown}") from None
    except OSError as exc:
        raise _failure("read", shown, exc) from None


def lstat_at(folder: int, name: str) -> os.stat_result | None:
    """The entry ``name`` in the held folder, not following a symlink; None if absent."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
