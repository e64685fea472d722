"""Atomic writes: old or new content, never a mix, and no temporary file left behind.

The crash test kills a real process with SIGKILL in the middle of a large ``write_file`` — at
the moment its temporary file is seen half written — and checks the original file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jupyter_agent.tools.guard import atomic
from jupyter_agent.tools.guard.atomic import atomic_write, atomic_write_text

ORIGINAL = b"original content\n"
BIG = 200 * 1024 * 1024

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from jupyter_agent.tools.guard import atomic
    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.files.files import WriteFileTool

    workspace, size, unnamed = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    atomic.USE_O_TMPFILE = unnamed
    content = "x" * size
    tool = WriteFileTool(ToolContext(workspace))
    print("ready", flush=True)
    print(asyncio.run(tool.execute({"file_path": "big.txt", "content": content})), flush=True)
    """
)


@pytest.fixture(params=[True, False], ids=["o_tmpfile", "named_temp"])
def unnamed(request: pytest.FixtureRequest) -> bool:
    use = bool(request.param)
    if use and not getattr(os, "O_TMPFILE", 0):
        pytest.skip("no O_TMPFILE on this system")
    return use


@pytest.fixture
def temp_mode(unnamed: bool, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(atomic, "USE_O_TMPFILE", unnamed)
    return unnamed


def _partial_temp_fd(pid: int, folder: Path) -> tuple[str, int] | None:
    """The writer's temporary file, if it is open and partly written: (link, size)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if not link.startswith(str(folder)) or not (
                "(deleted)" in link or link.endswith(".tmp")
            ):
                continue
            size = os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            continue
        if 0 < size < BIG:
            return link, size
    return None


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_sigkill_mid_write_leaves_the_original(tmp_path: Path, unnamed: bool) -> None:
    target = tmp_path / "big.txt"
    target.write_bytes(ORIGINAL)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), str(BIG), "1" if unnamed else "0"],
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        seen = None
        deadline = time.monotonic() + 60
        while seen is None and child.poll() is None and time.monotonic() < deadline:
            seen = _partial_temp_fd(child.pid, tmp_path)
        assert seen is not None, "the write finished before it could be interrupted"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    assert target.read_bytes() == ORIGINAL, f"interrupted at {seen}"
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    if unnamed:
        assert leftovers == ["big.txt"]  # an O_TMPFILE never had a name
    else:
        # A named temp file cannot be cleaned up after SIGKILL, but it is hidden and never the
        # target itself.
        assert leftovers[0] == "big.txt" or leftovers[0].startswith(".big.txt.")
        assert all(n == "big.txt" or n.startswith(".big.txt.") for n in leftovers)


@pytest.mark.slow
def test_uninterrupted_big_write_completes(tmp_path: Path) -> None:
    target = tmp_path / "big.txt"
    target.write_bytes(ORIGINAL)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), str(8 * 1024 * 1024), "1"],
        capture_output=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.splitlines()[-1] == b"Wrote 8388608 bytes to big.txt"
    assert target.stat().st_size == 8 * 1024 * 1024
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.txt"]


def test_replace_keeps_mode_and_new_file_follows_umask(tmp_path: Path, temp_mode: bool) -> None:
    existing = tmp_path / "existing"
    existing.write_bytes(b"old")
    existing.chmod(0o640)
    atomic_write(existing, b"new")
    assert existing.read_bytes() == b"new"
    assert existing.stat().st_mode & 0o777 == 0o640
    umask = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh"
        atomic_write_text(fresh, "héllo")
    finally:
        os.umask(umask)
    assert fresh.read_bytes() == "héllo".encode()
    assert fresh.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing", "fresh"]


def test_failed_replace_leaves_no_temp_file(tmp_path: Path, temp_mode: bool) -> None:
    folder = tmp_path / "a_folder"
    (folder / "child").mkdir(parents=True)
    with pytest.raises(OSError):
        atomic_write(folder, b"cannot replace a folder with a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_folder"]
    assert sorted(p.name for p in folder.iterdir()) == ["child"]


def test_missing_folder_is_an_error(tmp_path: Path, temp_mode: bool) -> None:
    with pytest.raises(OSError):
        atomic_write(tmp_path / "no" / "such" / "file", b"x")
    assert list(tmp_path.iterdir()) == []


def test_replacing_a_symlink_replaces_the_link(tmp_path: Path, temp_mode: bool) -> None:
    # atomic_write works on the path it is given; the tools resolve links before calling it.
    (tmp_path / "real").write_bytes(b"real")
    (tmp_path / "link").symlink_to("real")
    atomic_write(tmp_path / "link", b"new")
    assert not (tmp_path / "link").is_symlink()
    assert (tmp_path / "real").read_bytes() == b"real"
