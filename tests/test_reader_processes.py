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

from jupyter_agent.tools.sandbox import end_reader, start_reader

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
