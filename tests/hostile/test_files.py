"""Odd files and growing edits (issue 11, points 5 and 7).

A FIFO in the workspace (or one swapped in mid-call) made ``read_file`` block for ever in a worker
thread; ``edit_file`` with ``replace_all`` turned 2.5 KB of arguments into a 1.4 GiB file. Each
test plays the case through the default registry and checks for a clear error result, in bounded
time, with nothing written.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.files.files import MAX_EDIT_BYTES
from jupyter_agent.tools.registry import ToolRegistry


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    return create_default_registry(ToolContext(tmp_path))


@pytest.mark.parametrize("tool", ["read_file", "edit_file"])
async def test_a_fifo_is_an_error_not_a_hang(
    registry: ToolRegistry, tmp_path: Path, tool: str
) -> None:
    os.mkfifo(tmp_path / "pipe")
    threads_before = threading.active_count()
    args = {"file_path": "pipe"}
    if tool == "edit_file":
        args |= {"old_string": "a", "new_string": "b"}
    # opening the fifo would block for ever: the 10 s only stops a hung test
    result = await asyncio.wait_for(registry.call(tool, args), timeout=10)
    assert result.is_error and "not a regular file" in result.content
    await asyncio.sleep(0.1)
    assert threading.active_count() <= threads_before + 1  # no worker left blocked in open()


def _fifo_swapper(folder: str, stop: Any) -> None:
    """Exchange a regular file and a FIFO until told to stop (an attacker's process)."""
    libc = ctypes.CDLL(None, use_errno=True)
    os.chdir(folder)
    while not stop.is_set():
        libc.renameat2(-100, b"data.txt", -100, b"fifo", 2)  # RENAME_EXCHANGE


async def test_a_fifo_swapped_in_mid_call_is_an_error_not_a_hang(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    """The check saw a regular file; a racer puts a FIFO there before the open.

    (The window between the old code's ``stat`` and ``open`` is microseconds wide: 3,000 calls did
    not hit it here. The open is now ``O_NONBLOCK`` and the check an ``fstat`` of the open
    descriptor, so no window is left; this test keeps it that way.)"""
    (tmp_path / "data.txt").write_text("plain data\n")
    os.mkfifo(tmp_path / "fifo")
    context = multiprocessing.get_context("fork")
    stop = context.Event()
    swapper = context.Process(target=_fifo_swapper, args=(str(tmp_path), stop), daemon=True)
    swapper.start()
    try:
        for _ in range(100):
            results = await asyncio.wait_for(
                asyncio.gather(
                    *(registry.call("read_file", {"file_path": "data.txt"}) for _ in range(10))
                ),
                timeout=10,
            )
            for result in results:
                assert result.content == "plain data\n" or (
                    result.is_error and "not a regular file" in result.content
                ), result.content
    finally:
        stop.set()
        swapper.join(5)


async def test_a_socket_and_a_device_are_refused(registry: ToolRegistry, tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    try:
        result = await registry.call("read_file", {"file_path": "sock"})
        assert result.is_error and "not a regular file" in result.content
    finally:
        server.close()
    (tmp_path / "zero").symlink_to("/dev/zero")  # points outside: refused by the resolver
    result = await registry.call("read_file", {"file_path": "zero"})
    assert result.is_error


async def test_replace_all_cannot_blow_a_file_up(registry: ToolRegistry, tmp_path: Path) -> None:
    target = tmp_path / "small.txt"
    target.write_text("a" * 2_000)
    result = await registry.call(
        "edit_file",
        {
            "file_path": "small.txt",
            "old_string": "a",
            "new_string": "b" * 8_000,
            "replace_all": True,
        },
    )
    assert result.is_error
    assert (
        "more than edit_file writes" in result.content and "nothing was written" in result.content
    )
    assert target.read_text() == "a" * 2_000
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".small.txt")]  # no temp file


async def test_an_edit_up_to_the_cap_still_works(registry: ToolRegistry, tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("x\n" * 100)
    result = await registry.call(
        "edit_file",
        {"file_path": "notes.txt", "old_string": "x", "new_string": "yy", "replace_all": True},
    )
    assert not result.is_error, result.content
    assert target.read_text() == "yy\n" * 100
    assert MAX_EDIT_BYTES >= 1_000_000
