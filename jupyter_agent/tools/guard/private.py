"""What the agent keeps is private: its files mode 0600, its folders 0700.

On a shared host (JupyterHub, Debian's 0755 homes) another local user must read nothing the
agent keeps: the undo journal and the copies it keeps, the session file, OAuth tokens, saved
conversations, the signing key. Each is *created* with its private mode (``os.mkdir``'s and
``os.open``'s mode argument, so there is no moment when it is looser), and a folder of the
agent's found looser (made by an older version, copied from elsewhere) is tightened when it is next
used — only if this user owns it. Files the agent writes *for the user* (``write_file``) are not
these: they get the user's umask, like any file the user's programs make.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["PRIVATE_FILE", "PRIVATE_FOLDER", "private_folder", "tighten"]

#: The mode of a file the agent keeps, and of a folder of its own.
PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700

_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def tighten(fd: int) -> None:
    """Take group and other bits off the open file or folder ``fd`` if this user owns it."""
    info = os.fstat(fd)
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077 and info.st_uid == os.geteuid():
        os.fchmod(fd, mode & ~0o077)


def private_folder(path: str | os.PathLike[str], own: int = 1) -> Path:
    """Make sure the folder ``path`` exists, its last ``own`` components private: each created
    0700, or tightened when found looser. The folders above are created as usual (they are the
    user's: ``~/.config``, a data folder). Returns ``path``."""
    target = Path(path)
    parts = target.parts
    split = max(len(parts) - own, 1)
    current = Path(*parts[:split])
    current.mkdir(parents=True, exist_ok=True)
    for name in parts[split:]:
        current = current / name
        with contextlib.suppress(FileExistsError):
            os.mkdir(current, PRIVATE_FOLDER)
        fd = os.open(current, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
        try:
            tighten(fd)
        finally:
            os.close(fd)
    return target
