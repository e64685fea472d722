"""Watching processes from outside, by ``/proc``: is a pid gone, which processes carry a marker in
their command line — how the run_bash tests see that a tree was killed, also from inside a
sandbox's own PID namespace.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from pathlib import Path


def process_is_gone(pid: int) -> bool:
    """Dead, or a zombie waiting to be reaped (it no longer runs anything)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # no /proc: fall back to a signal probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


async def wait_until_gone(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if process_is_gone(pid):
            return True
        await asyncio.sleep(0.05)
    return process_is_gone(pid)


def unique_sleep() -> str:
    """``sleep N`` with a duration no other process has: its marker in ``/proc/*/cmdline``.

    Inside the sandbox the command has its own PID namespace, so a pid it prints means nothing
    outside; the test finds its processes by this marker instead.
    """
    return f"sleep {100 + secrets.randbelow(10**6) / 10**6:.6f}"


def pids_running(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``, seen from here."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and not process_is_gone(int(entry)) and "pytest" not in cmdline:
            found.append(int(entry))
    return found


async def wait_until_none_run(marker: str, within_s: float = 3.0) -> list[int]:
    """Wait for every process carrying ``marker`` to go; returns the survivors (if any)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not pids_running(marker):
            return []
        await asyncio.sleep(0.05)
    return pids_running(marker)


async def wait_until_running(marker: str, within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if pids_running(marker):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no process with {marker!r} started")
