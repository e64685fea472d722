"""Where the ``%agent serve`` token lives: a file only the user can read, never a cell's output.

A token printed in the cell went wherever the cell's outputs go — the saved ``.ipynb`` (often
0644, shared, committed), its checkpoints, a collaboration store, and ``notebook_history``, which
sends outputs to the model. On a shared host another user read it there and drove the kernel.

So the token is written to ``jupyter-agent-serve-PORT.token`` in Jupyter's runtime folder (the
folder of the kernels' connection files, which the file tools already refuse; refused if another
user owns it or may write in it, as they could swap the file), created with mode
0600 — never through a symlink, never over a file someone else made — and removed when the server
stops. The printed lines name the file (``$(cat '…')``, which bash, zsh and PowerShell expand
where the user pastes them), and the token is among the redactor's secrets while it is valid,
so no tool result carries it to the model.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ...tools.redact import hold_secret, release_secret

#: The token's name in a redacted tool result: ``[redacted: agent-serve-token]``.
REDACTED_AS = "agent-serve-token"


def token_folder() -> Path:
    """Jupyter's runtime folder (``jupyter --runtime-dir``), made 0700 when missing."""
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(jupyter_runtime_dir())
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(folder)
    return folder


def _check_private(folder: Path) -> None:
    """Raise ``PermissionError`` unless ``folder`` is the user's own and no one else may write
    in it: another user who could would swap the token file the printed lines read (POSIX)."""
    if not hasattr(os, "geteuid"):
        return
    found = folder.stat()
    fix = "; set JUPYTER_RUNTIME_DIR to a folder only you can write"
    if found.st_uid != os.geteuid():
        raise PermissionError(
            f"the folder {folder} is owned by another user (uid {found.st_uid}){fix}"
        )
    if found.st_mode & 0o022:
        mode = oct(found.st_mode & 0o7777)
        raise PermissionError(f"the folder {folder} is writable by other users (mode {mode}){fix}")


def keep_token(token: str, port: int) -> Path:
    """Write ``token`` to a new 0600 file for the server on ``port``; the file's path.

    A file left by a server that died on the same port is replaced; a symlink there is removed,
    never followed."""
    path = token_folder() / f"jupyter-agent-serve-{port}.token"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags, 0o600)
    try:
        os.write(descriptor, f"{token}\n".encode())
    finally:
        os.close(descriptor)
    hold_secret(token, REDACTED_AS)
    return path


def discard_token(token: str, path: Path | None) -> None:
    """The server stopped: its file goes (the token is worthless now) and so does its
    redaction."""
    release_secret(token)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def shown_path(path: Path) -> str:
    """``path`` as the cell shows it: under the home folder as ``~/…`` (the saved notebook
    names no one's home)."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


def shell_read(path: Path) -> str:
    """``$(cat ~/'PATH')``: the token, read where the user pastes the line (bash, zsh and
    PowerShell expand it inside double quotes)."""
    shown = shown_path(path)
    home, rest = ("~/", shown[2:]) if shown.startswith("~/") else ("", shown)
    escaped = rest.replace("'", "'\\''")
    return f"$(cat {home}'{escaped}')"
