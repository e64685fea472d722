"""Descriptor-relative file I/O: a path's check and its use cannot be separated.

The tool calls of one model reply run concurrently, so one call can swap a folder for a symlink
pointing outside the workspace between another call's path check and its use. The resolver
(``workspace.py``) checks a path and turns it into a real path inside the workspace; everything
here then *uses* that path relative to a directory descriptor held on the workspace root, never
by its absolute name again:

* ``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`` (Linux
  5.6+): the kernel refuses any ``..`` out of the root and any symlink met on the way — the
  checked path had none, so one there now means somebody swapped it in, and the call fails
  instead of following it;
* elsewhere, a walk of one ``O_NOFOLLOW | O_DIRECTORY`` open per folder (the same guarantee, a
  few more system calls);
* leaf operations (create, rename, unlink, mkdir, list) take the parent folder's descriptor
  (``dir_fd=``), so only a single name — never a path — is looked up at the moment of use;
* files are opened ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO,
  socket or device (even one swapped in) is refused instead of blocking a worker for ever.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from ...errors import ToolFailure
from .private import PRIVATE_FOLDER, tighten
from .runs_later import AGENT_FOLDER

_O_PATH = getattr(os, "O_PATH", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
#: openat2's system-call number (the same on x86-64 and arm64; the generic table).
_SYS_OPENAT2 = 437


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


def _load_syscall() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall
    except (OSError, AttributeError):
        return None


_SYSCALL = _load_syscall()
#: None until the first call finds out whether this kernel has openat2.
_HAS_OPENAT2: bool | None = None

RACE_MESSAGE = (
    "{shown} changed while it was being used (a folder in its path was replaced, e.g. by a "
    "symbolic link); nothing was done — try again"
)


def _openat2(dir_fd: int, rel: str, flags: int, mode: int) -> int:
    """openat2 beneath ``dir_fd``; raises OSError; ENOSYS if the kernel lacks it."""
    tmpfile = getattr(os, "O_TMPFILE", 0)  # includes O_DIRECTORY's bit: compare it whole
    creating = flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile)
    # openat2 refuses a mode unless the call may create a file
    how = _OpenHow(
        flags | _O_CLOEXEC,
        mode if creating else 0,
        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    )
    assert _SYSCALL is not None
    fd = _SYSCALL(  # type: ignore[operator]
        _SYS_OPENAT2,
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(rel)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), rel)
    return int(fd)


def _walk_open(dir_fd: int, rel: str, flags: int, mode: int) -> int:
    """The portable equivalent: one no-follow open per component."""
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        raise OSError(errno.EXDEV, "path leaves the workspace", rel)
    if not parts:
        return os.open(".", flags | _O_CLOEXEC, mode, dir_fd=dir_fd)
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            following = os.open(
                part,
                _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC | (_O_PATH or os.O_RDONLY),
                dir_fd=current,
            )
            os.close(current)
            current = following
        return os.open(parts[-1], flags | _O_NOFOLLOW | _O_CLOEXEC, mode, dir_fd=current)
    finally:
        os.close(current)


def open_beneath(root_fd: int, rel: str, flags: int, mode: int = 0o666) -> int:
    """Open ``rel`` (a checked, symlink-free path relative to the root) beneath ``root_fd``.

    Any symlink or ``..`` met on the way is an error (``ELOOP``/``EXDEV``), never followed.
    """
    global _HAS_OPENAT2
    rel = rel or "."
    if _HAS_OPENAT2 is not False and _SYSCALL is not None:
        try:
            fd = _openat2(root_fd, rel, flags, mode)
        except OSError as exc:
            if exc.errno != errno.ENOSYS:
                raise
            _HAS_OPENAT2 = False
        else:
            _HAS_OPENAT2 = True
            return fd
    return _walk_open(root_fd, rel, flags, mode)


class WorkspaceRoot:
    """A held descriptor on the workspace root, and descriptor-relative operations beneath it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd = os.open(root, _O_DIRECTORY | _O_CLOEXEC | (_O_PATH or os.O_RDONLY))

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            os.close(self._fd)

    @property
    def fd(self) -> int:
        return self._fd

    def relative(self, real: Path | str) -> str:
        """A resolved absolute path inside the root as a root-relative one (``""`` for the root)."""
        rel = os.path.relpath(os.fspath(real), self.root)
        return "" if rel == os.curdir else rel

    def open(self, real: Path | str, flags: int, mode: int = 0o666) -> int:
        return open_beneath(self._fd, self.relative(real), flags, mode)

    @contextlib.contextmanager
    def folder(self, real: Path | str, *, readable: bool = False) -> Iterator[int]:
        """A descriptor on the folder ``real`` (for ``dir_fd=`` calls), closed afterwards."""
        flags = _O_DIRECTORY | (os.O_RDONLY if readable or not _O_PATH else _O_PATH)
        fd = self.open(real, flags)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def parent_of(self, real: Path | str) -> Iterator[tuple[int, str]]:
        """``(descriptor of the parent folder, leaf name)`` for a path inside the root."""
        rel = self.relative(real)
        if not rel:
            raise ToolFailure("This operation cannot act on the workspace root itself")
        parent, _, leaf = rel.rpartition("/")
        with self.folder(
            os.path.join(self.root, parent) if parent else self.root, readable=True
        ) as fd:
            yield fd, leaf

    def open_regular(self, real: Path | str, shown: str) -> int:
        """Open an existing regular file for reading; FIFOs, devices and folders are refused."""
        try:
            fd = self.open(real, os.O_RDONLY | _O_NONBLOCK | _O_NOFOLLOW)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
                raise ToolFailure(
                    f"{shown} is not a regular file (a FIFO, socket or device); it is not read"
                ) from None
            raise
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ToolFailure(
                    f"{shown} is a folder, not a file; use list_dir to see what it holds"
                )
            if not stat.S_ISREG(info.st_mode):
                raise ToolFailure(
                    f"{shown} is not a regular file (a FIFO, socket or device); it is not read"
                )
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def makedirs(self, real: Path | str, *, private: bool = False) -> None:
        """Create ``real`` and its missing parents, one ``mkdirat`` per component.

        ``private``: the folder holds the agent's own records: its components from the first
        ``.jupyter_agent`` on are created 0700, or tightened if looser (``private.py``).
        """
        parts = [p for p in self.relative(real).split("/") if p and p != "."]
        first_private = len(parts)
        if private and AGENT_FOLDER in parts:  # never a folder of the user's own
            first_private = parts.index(AGENT_FOLDER)
        current = os.dup(self._fd)
        try:
            for index, part in enumerate(parts):
                own = index >= first_private
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, PRIVATE_FOLDER if own else 0o777, dir_fd=current)
                following = os.open(
                    part,
                    _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC | (os.O_RDONLY if own else _O_PATH),
                    dir_fd=current,
                )
                os.close(current)
                current = following
                if own:
                    tighten(current)
        finally:
            os.close(current)


def is_race(exc: OSError) -> bool:
    """An error that means a symlink or ``..`` appeared where the checked path had none."""
    return exc.errno in (errno.ELOOP, errno.EXDEV)
