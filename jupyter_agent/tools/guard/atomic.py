"""Atomic file replacement: a file is either its old content or its new content, never half.

``write_file``, ``edit_file`` and ``save_session_context`` all write through ``atomic_write``.
The new bytes go to a temporary file in the target's own folder (same filesystem, so the final
``rename`` is atomic), are flushed to disk, and then replace the target in one step. On Linux the
temporary file is created with ``O_TMPFILE``: it has no name until it is complete, so even a
process killed mid-write (``SIGKILL``) leaves nothing behind. Elsewhere a named, hidden temporary
file is used and removed on any error.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

__all__ = ["atomic_write", "atomic_write_at", "atomic_write_text"]

_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: Use Linux's O_TMPFILE when the system has it; False forces the named temporary file.
USE_O_TMPFILE = bool(_O_TMPFILE)
#: errnos meaning "this filesystem or kernel cannot do O_TMPFILE", so use a named temp file.
_NO_TMPFILE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT, errno.ENOSYS}


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """``atomic_write`` of ``text`` encoded, without newline translation."""
    atomic_write(path, text.encode(encoding))


def atomic_write(path: str | os.PathLike[str], data: bytes, *, private: bool = False) -> None:
    """Replace the file at ``path`` with ``data`` atomically; its folder must exist.

    An existing file keeps its permission bits; a new one gets the usual ``0o666 & ~umask``.
    Raises ``OSError`` (nothing changed) if the write fails.
    """
    target = os.fspath(path)
    folder = os.path.dirname(target) or os.curdir
    dir_fd = os.open(folder, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        atomic_write_at(dir_fd, os.path.basename(target), data, private=private)
    finally:
        os.close(dir_fd)


def atomic_write_at(dir_fd: int, name: str, data: bytes, *, private: bool = False) -> None:
    """``atomic_write`` of the file ``name`` in the folder open as ``dir_fd``.

    Only the single name is looked up, relative to the held folder: the file tools use this so
    that a folder swapped for a symlink after their path check cannot redirect the write.
    ``private``: one of the agent's own records, created 0600 (an existing one looser loses its
    group and other bits).
    """
    try:
        old_mode: int | None = stat.S_IMODE(
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        )
    except FileNotFoundError:
        old_mode = None
    create = 0o666
    if private:
        create = 0o600
        old_mode = None if old_mode is None else old_mode & ~0o077
    if USE_O_TMPFILE and _write_unnamed(dir_fd, name, data, old_mode, create):
        return
    _write_named(dir_fd, name, data, old_mode, create)


def _write_unnamed(
    dir_fd: int, name: str, data: bytes, old_mode: int | None, create: int = 0o666
) -> bool:
    """The O_TMPFILE path; False if this filesystem cannot do it (nothing was written)."""
    try:
        fd = os.open(".", _O_TMPFILE | os.O_WRONLY | _O_CLOEXEC, create, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _NO_TMPFILE:
            return False
        raise
    staged: str | None = None
    try:
        _write_all(fd, data, old_mode)
        # Give the finished inode a name next to the target, then rename it over the target.
        staged = _temp_name(name)
        try:
            os.link(f"/proc/self/fd/{fd}", staged, dst_dir_fd=dir_fd, follow_symlinks=True)
        except OSError as exc:
            staged = None
            if exc.errno in (errno.ENOENT, errno.EPERM, errno.EXDEV, errno.EACCES):
                return False  # no /proc: fall back to a named temp file
            raise
        os.replace(staged, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        staged = None
    finally:
        os.close(fd)
        if staged is not None:
            with contextlib.suppress(OSError):
                os.unlink(staged, dir_fd=dir_fd)
    _sync_folder(dir_fd)
    return True


def _write_named(
    dir_fd: int, name: str, data: bytes, old_mode: int | None, create: int = 0o666
) -> None:
    staged = _temp_name(name)
    fd = os.open(
        staged,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | _O_NOFOLLOW,
        create,
        dir_fd=dir_fd,
    )
    try:
        try:
            _write_all(fd, data, old_mode)
        finally:
            os.close(fd)
        os.replace(staged, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged, dir_fd=dir_fd)
        raise
    _sync_folder(dir_fd)


def _write_all(fd: int, data: bytes, old_mode: int | None) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    if old_mode is not None:
        os.fchmod(fd, old_mode)
    os.fsync(fd)


def _temp_name(name: str) -> str:
    # Short enough that a 255-byte file name still leaves room for the prefix and suffix.
    return f".{name[:200]}.{secrets.token_hex(4)}.tmp"


def _sync_folder(dir_fd: int) -> None:
    """Make the rename itself durable; best effort (some filesystems refuse)."""
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)
