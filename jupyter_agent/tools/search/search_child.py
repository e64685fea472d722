"""Searches run as child processes: sandboxed, without credentials, stopped at a deadline.

Both search backends walk the workspace in another process — ripgrep because it is a binary, the
Python search because a regex that backtracks for ever holds the GIL (in a thread it would freeze
the event loop and the whole kernel, deadline or not). What they share lives here: the reader
sandbox and clean environment they start in, reading their output within the deadline, and
stopping them on any way out. ``python_grep_isolated`` is the Python backend's child.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from .. import cut_mark
from ..base import ToolFailure
from ..guard.sandbox import end_reader, probe_off_the_loop, reader_sandbox, start_reader
from . import pysearch
from .pysearch import _python_grep, _Scope

__all__ = ["child_env", "python_grep_isolated", "read_within_deadline", "spawn_reader"]

_WORKER_SCRIPT = pysearch.__file__
#: The one module outside its folder that the worker loads (by path: see ``pysearch``).
_CUT_MARK = cut_mark.__file__


def child_env() -> dict[str, str]:
    """A search needs nothing from the environment; in particular it gets no credentials."""
    return {"PATH": os.environ.get("PATH", os.defpath)}


async def spawn_reader(
    argv: Sequence[str], workspace: Path, *, extra: Sequence[str] = (), stdin: int | None = None
) -> asyncio.subprocess.Process:
    """Start ``argv`` in the reader sandbox (it sees only the workspace, see ``sandbox``).

    The searches walk by path, so a folder swapped for a symlink while they walk must lead
    nowhere: in that sandbox there is no outside to reach.
    """
    await probe_off_the_loop()
    return await start_reader(
        reader_sandbox(argv, workspace, extra=extra),
        cwd=workspace,
        stdin=asyncio.subprocess.DEVNULL if stdin is None else stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
        limit=64 * 1024 * 1024,
    )


async def read_within_deadline(
    process: asyncio.subprocess.Process, read: Callable[[], Awaitable[None]], deadline_s: float
) -> bool:
    """Run ``read`` (which drains ``process``'s output) for at most ``deadline_s``.

    Returns whether the deadline cut it short; on any other way out (an error, a cancelled
    task) the process is stopped before the exception goes on.
    """
    try:
        await asyncio.wait_for(read(), deadline_s)
    except TimeoutError:
        return True
    except BaseException:
        await end_reader(process)
        raise
    return False


async def python_grep_isolated(
    scope: _Scope, regex: re.Pattern[str], max_results: int, deadline_s: float
) -> tuple[list[str], bool]:
    """``pysearch._python_grep`` in a child process, stopped at the deadline: (found, timed_out)."""
    job = json.dumps(
        {
            "workspace": str(scope.workspace),
            "target": scope.target,
            "target_is_file": scope.target_is_file,
            "whitelist": scope.whitelist,
            "parent_ignores": [str(p) for p in scope.parent_ignores],
            "hidden": scope.hidden,
            "pattern": regex.pattern,
            "flags": regex.flags,
            "wanted": max_results + 1,
        }
    ).encode("utf-8", "surrogatepass")
    try:
        worker = [sys.executable, "-I", "-S", _WORKER_SCRIPT]
        visible = [sys.prefix, sys.base_prefix, os.path.dirname(_WORKER_SCRIPT), _CUT_MARK]
        process = await spawn_reader(
            worker, scope.workspace, extra=visible, stdin=asyncio.subprocess.PIPE
        )
    except OSError:  # no usable interpreter (an embedded Python): search in a thread
        return await asyncio.to_thread(_python_grep, scope, regex, max_results), False
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    found: list[str] = []
    ready = False

    async def read() -> None:
        nonlocal ready
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(ConnectionError):
            process.stdin.write(job)
            await process.stdin.drain()
        process.stdin.close()
        while len(found) <= max_results:
            raw = await process.stdout.readline()  # a hit is a few hundred characters at most
            if not raw:
                return
            item = json.loads(raw)
            if not ready:
                ready = item == "ready"
                continue
            found.append(item)

    timed_out = await read_within_deadline(process, read, deadline_s)
    if timed_out or not process.stdout.at_eof():
        await end_reader(process)
        return found, timed_out
    stderr = await process.stderr.read()
    await process.wait()
    if not ready:  # the child could not start the search: do it here after all
        return await asyncio.to_thread(_python_grep, scope, regex, max_results), False
    if process.returncode != 0:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise ToolFailure(f"search failed: {tail[0]}")
    return found, False
