"""``start_reader``/``end_reader``: the process-group kill reaches the reader's group only.

A reader that has ended and been reaped leaves its pid free; on a machine whose pid space wraps
(``pid_max`` is 32768 in many containers) another process group may get that number — another
reader, a kernel started in its own session. ``end_reader`` then must not kill it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_agent.tools.guard.sandbox import end_reader, reader_sandbox, start_reader

_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _spawn_leader_with_pid(pid: int) -> subprocess.Popen[bytes] | None:
    """A process leading its own group whose pid is ``pid``, or None if another process took it
    first (the machine is busy) or the pid cannot be chosen."""
    for _ in range(20):
        try:
            _LAST_PID.write_text(str(pid - 1))
        except OSError:
            return None
        victim = subprocess.Popen(["sleep", "30"], start_new_session=True)
        if victim.pid == pid:
            return victim
        victim.kill()
        victim.wait()
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="chooses pids through /proc")
async def test_ending_a_reaped_reader_leaves_a_group_that_reuses_its_pid_alone() -> None:
    if not os.access(_LAST_PID, os.W_OK):
        pytest.skip("cannot choose the next pid here")
    reader = await start_reader(["true"])
    await reader.wait()  # ended and reaped: its pid is free again
    victim = _spawn_leader_with_pid(reader.pid)
    if victim is None:
        pytest.skip("could not get the reader's pid for another process")
    try:
        await end_reader(reader)  # what a search's clean-up does after a reader ended by itself
        with pytest.raises(subprocess.TimeoutExpired):
            victim.wait(timeout=0.5)  # still running: end_reader left it alone
    finally:
        victim.kill()
        victim.wait()


def _describe(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"
    return f"state {stat.rsplit(')', 1)[1].split()[0]}: {cmdline[:120]}"


def _our_descendants() -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found = []
    for pid in parents:
        ancestor = parents[pid]
        while ancestor in parents and ancestor not in (0, 1, os.getpid()):
            ancestor = parents[ancestor]
        if ancestor == os.getpid():
            found.append(pid)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_reader_start_cancelled_twice_ends_promptly_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    # A tool's timeout cancels it, and the user's interrupt cancels it again while its clean-up
    # still waits for the process being started.
    import asyncio
    import time

    from jupyter_agent.tools.guard.sandbox import reader_sandbox

    async def run() -> None:
        process = await start_reader(
            reader_sandbox(["sleep", "30"], tmp_path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            await process.wait()
        finally:
            await end_reader(process)

    # only what this test starts counts: a process an earlier test left (a kernel shutting
    # down) is not this test's
    before = set(_our_descendants())

    def ours_left() -> dict[int, str]:
        found = {pid: _describe(pid) for pid in _our_descendants() if pid not in before}
        return {pid: what for pid, what in found.items() if what != "gone"}

    for first, second in [(a, b) for a in range(6) for b in range(4)] * 2:
        task = asyncio.ensure_future(run())
        for _ in range(first):  # loop steps: the cancellations land at each point of the start
            await asyncio.sleep(0)
        task.cancel()
        for _ in range(second):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.wait({task}, timeout=10)  # 10 s only stops a hung test
        assert task.done(), f"cancelled after {first} and {second} more steps: still starting"
        # the cancel reached it: it did not end by ``sleep 30`` ending (the uncancelled path)
        assert task.cancelled(), f"cancelled after {first} and {second} more steps: {task}"
    deadline = time.monotonic() + 5
    while ours_left() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert ours_left() == {}


async def test_ending_a_reader_leaves_its_reaping_to_asyncio(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``Process.kill()`` polls first (``Popen.send_signal``), and a reader the group kill has
    just ended is then reaped under asyncio's child watcher: the watcher logs "Unknown child
    process", reports 255 instead of the signal, and a wait on it may never end."""
    import asyncio
    import logging
    import signal

    caplog.set_level(logging.WARNING, logger="asyncio")
    codes = []
    argv = reader_sandbox(["sleep", "30"], None)
    for attempt in range(100):
        process = await start_reader(argv, stdout=asyncio.subprocess.PIPE)
        await asyncio.sleep(0.001 * (attempt % 5))
        await end_reader(process)
        codes.append(process.returncode)
        # ... and ended while its start is cancelled
        start = asyncio.ensure_future(start_reader(argv, stdout=asyncio.subprocess.PIPE))
        await asyncio.sleep(0.001 * (attempt % 5))
        start.cancel()
        try:
            late = await start
        except asyncio.CancelledError:
            pass
        else:  # the start was complete before the cancel came: its process is ours to end
            await end_reader(late)
    assert codes == [-signal.SIGKILL] * 100
    assert not [r for r in caplog.records if "Unknown child process" in r.getMessage()]
