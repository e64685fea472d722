"""Main-thread work outside a ``%%agent`` turn, on the kernel's own event loop.

Forms, approvals and links are shown on the kernel's main thread (``bridge.py``): during a turn
the cell's pump runs them. Outside one, work still comes: a code cell that calls a tool itself
(``await agent.registry.call(...)``, as tutorial 06 does) whose MCP server asks the user a
question or for a sampling approval. That cell is awaiting on the kernel's event loop, on the
main thread, so a callback on that loop runs at once and can show the form (its widget messages
are read by a poller of its own, as during a turn). Between cells the loop is idle and runs it
too; while a cell that does not await runs, the work waits for that cell to end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from ...errors import InterruptedByUser

T = TypeVar("T")

IdleRunner = Callable[[Callable[[], Any]], Awaitable[Any]]


def kernel_loop_runner(shell: Any) -> IdleRunner | None:
    """An idle runner for ``MainThreadBridge`` that runs work on ``shell``'s kernel loop, or
    ``None`` outside a kernel (terminal IPython, a script)."""
    io_loop = getattr(getattr(shell, "kernel", None), "io_loop", None)
    if io_loop is None:
        return None

    async def on_kernel_loop(fn: Callable[[], T]) -> T:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return  # the caller gave up before the kernel got here
            try:
                with _interruptible():
                    result = fn()
            except KeyboardInterrupt:  # the kernel's stop button: this work, not the kernel
                future.set_exception(InterruptedByUser("interrupted by the user"))
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

        io_loop.add_callback(run)
        return await asyncio.wrap_future(future)

    return on_kernel_loop


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Let the kernel's interrupt (SIGINT) reach work run between cells, as it reaches a cell.

    ipykernel ignores SIGINT between requests and installs Python's handler only while it
    executes one, so a served ``run_python`` running here went on through the kernel's Stop
    (issue 37). The handler it had is put back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
