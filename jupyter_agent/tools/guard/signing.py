"""Signatures on what the agent keeps: undo-journal entries and saved conversations.

The undo journal and saved conversations live where the model's tools, or a ``run_bash`` command,
may reach; what the agent reads back from them must be what it wrote. Each record is signed with
HMAC-SHA256 under a secret key kept outside every workspace — ``<Jupyter data
folder>/jupyter_agent/signing_key``, created with mode 0600, as Jupyter keeps its notebook-signing
secret — and a record whose signature does not check (unsigned, altered, or signed on another
machine) is refused by its reader with a message. A ``purpose`` string is part of every signature,
so a signature made for one kind of record never passes for another.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import secrets
import stat
import threading
from pathlib import Path

from ...errors import SigningError
from .private import private_folder
from .runs_later import agent_data_dir

__all__ = ["SigningError", "key_path", "sign", "verify"]

_KEY_BYTES = 32
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_lock = threading.Lock()
_keys: dict[str, bytes] = {}


def key_path() -> Path:
    """Where the key is: ``<Jupyter data folder>/jupyter_agent/signing_key``."""
    return agent_data_dir() / "signing_key"


def _load_key() -> bytes:
    path = key_path()
    with _lock:
        cached = _keys.get(str(path))
        if cached is not None:
            return cached
        try:
            private_folder(path.parent)  # 0700, also when found looser
            key = _read_key(path)
            if key is None:
                key = _create_key(path)
        except OSError as exc:
            raise SigningError(
                f"the agent's signing key {path} cannot be used ({exc.strerror or exc})"
            ) from None
        _keys[str(path)] = key
        return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SigningError(f"the agent's signing key {path} is not a regular file")
        if info.st_mode & 0o077:
            raise SigningError(
                f"the agent's signing key {path} can be read by other users (mode "
                f"{stat.S_IMODE(info.st_mode):o}); remove it and a new one is made"
            )
        data = os.read(fd, 4 * _KEY_BYTES).strip()
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) < _KEY_BYTES:
        raise SigningError(f"the agent's signing key {path} is damaged; remove it and retry")
    return key


def _create_key(path: Path) -> bytes:
    key = secrets.token_bytes(_KEY_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise
        existing = _read_key(path)  # another process made it first
        if existing is None:
            raise
        return existing
    try:
        os.write(fd, key.hex().encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


def sign(purpose: str, data: bytes) -> str:
    """The hex HMAC-SHA256 of ``data`` for ``purpose``; raises ``SigningError``."""
    message = purpose.encode("utf-8") + b"\0" + data
    return hmac.new(_load_key(), message, hashlib.sha256).hexdigest()


def verify(purpose: str, data: bytes, signature: object) -> bool:
    """True if ``signature`` is ``sign(purpose, data)``; False for anything else (also when the
    key is unavailable)."""
    if not isinstance(signature, str) or not signature.isascii():  # compare_digest raises on
        return False  # a non-ASCII str: a hostile signature is a wrong one, not an error
    try:
        expected = sign(purpose, data)
    except SigningError:
        return False
    return hmac.compare_digest(expected, signature)
