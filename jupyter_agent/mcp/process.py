"""A stdio server's process, seen from outside the SDK: its stderr, its pid, its clean-up.

The SDK's ``stdio_client`` starts the server in a new session (its own process group) and stops
it with the context; two things it leaves to the caller are kept here. **stderr** goes to a pipe
read into a bounded buffer (``StderrTail``), so a chatty server never floods a cell and a failed
start can quote its last lines. **The pid** is found by a /proc scan right after the spawn, so
that a kernel exiting without running the async clean-up (a daemon loop thread dies with it)
still kills the server's process group (``kill_leftovers``, run at exit): no orphans. A kernel
killed outright runs no exit hook; for that, servers start under ``_guard.py`` (``guarded``),
which ends the server's group when the thread that started it dies.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

#: Lines of a server's stderr kept; longer lines are cut.
STDERR_LINES = 200
STDERR_LINE_CHARS = 400

#: Process groups of the stdio servers alive in this process (pid == pgid: a new session).
_live_groups: set[int] = set()


class StderrTail:
    """The last ``STDERR_LINES`` lines a server wrote to stderr, read from a pipe on the loop."""

    def __init__(self, max_lines: int = STDERR_LINES) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=max_lines)
        self.dropped = 0
        self._partial = ""
        self._read_fd, write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        #: The write end, for the server process; ``close_writer`` once it has started.
        self.writer: IO[str] = os.fdopen(write_fd, "w")
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._read_fd, self.drain)

    def close_writer(self) -> None:
        with contextlib.suppress(OSError):
            self.writer.close()

    def drain(self) -> None:
        """Read whatever is waiting (called by the loop, and before quoting the tail)."""
        if self._read_fd < 0:
            return
        while True:
            try:
                chunk = os.read(self._read_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._close_reader()
                return
            self._add(chunk.decode("utf-8", "replace"))

    def _add(self, text: str) -> None:
        pieces = (self._partial + text).split("\n")
        self._partial = pieces.pop()[-STDERR_LINE_CHARS * 4 :]
        for line in pieces:
            if len(self.lines) == self.lines.maxlen:
                self.dropped += 1
            self.lines.append(line[:STDERR_LINE_CHARS].rstrip("\r"))

    def _close_reader(self) -> None:
        if self._read_fd < 0:
            return
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._read_fd)
        with contextlib.suppress(OSError):
            os.close(self._read_fd)
        self._read_fd = -1

    def close(self) -> None:
        self.close_writer()
        self.drain()
        self._close_reader()

    def tail(self, lines: int = 3) -> str:
        """The last ``lines`` lines (and an unfinished one), joined by `` | `` for one line."""
        self.drain()
        kept = [line for line in self.lines if line.strip()]
        if self._partial.strip():
            kept.append(self._partial)
        return " | ".join(kept[-lines:])

    def text(self) -> str:
        self.drain()
        head = f"[{self.dropped} earlier lines dropped]\n" if self.dropped else ""
        return head + "\n".join([*self.lines, *([self._partial] if self._partial else [])])


def _children_of(parent: int) -> dict[int, list[str]]:
    """``{pid: argv}`` of the live children of ``parent`` (Linux /proc; empty elsewhere)."""
    found: dict[int, list[str]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) != parent or fields[0] == "Z":
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry.name)] = [part.decode("utf-8", "replace") for part in argv if part]
    return found


def find_server_pid(command: Sequence[str], known: set[int]) -> int | None:
    """The pid of the child just started with ``command`` (not one of ``known``), if visible."""
    new = {pid: argv for pid, argv in _children_of(os.getpid()).items() if pid not in known}
    for pid, argv in new.items():
        if argv[1:] == list(command[1:]) and Path(argv[0]).name == Path(command[0]).name:
            return pid
    # a script's interpreter shows in its argv instead: the only new child is the server
    return next(iter(new)) if len(new) == 1 else None


GUARD = str(Path(__file__).with_name("_guard.py"))


def guarded(command: Sequence[str]) -> list[str]:
    """``command`` run under ``_guard.py``: it and what it starts die with this process."""
    return [sys.executable, "-I", "-S", GUARD, str(os.getpid()), "--", *command]


def child_pids() -> set[int]:
    return set(_children_of(os.getpid()))


def track(pid: int) -> None:
    _live_groups.add(pid)


def untrack(pid: int) -> None:
    _live_groups.discard(pid)


def kill_group(pid: int) -> None:
    """SIGKILL the server's process group (it leads a session of its own)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


@atexit.register
def kill_leftovers() -> None:
    """At interpreter exit: kill every server whose async clean-up never ran."""
    for pid in list(_live_groups):
        kill_group(pid)
    _live_groups.clear()
