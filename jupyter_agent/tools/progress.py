"""How a running tool says how far it got: a per-call callback, found without arguments.

The agent's ``ToolRound`` runs each call under ``reporting(callback)``; a tool calls
``report_progress(progress, total, message)`` (or ``ToolContext.report_progress``) and the round
turns it into a ``ToolCallProgress`` event for that call, which the notebook view shows while the
call runs. Concurrent calls of one reply share one ``ToolContext``, so the callback is found
through a context variable, which each call's task (and a worker thread started with
``asyncio.to_thread``) carries on its own. Outside a call, reporting does nothing. An MCP tool
passes the server's progress notifications on through it.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Protocol

from .var_block import VarBlock

#: Characters of a progress message an event carries: a call's view shows a line of it, and a
#: server's megabyte message must not be carried (and drawn) for each notification.
MAX_PROGRESS_MESSAGE_CHARS = 1_000


class ProgressCallback(Protocol):
    """Where a call's progress goes: ``progress`` of ``total`` (``None``: unknown), a message."""

    def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


_reporter: contextvars.ContextVar[ProgressCallback | None] = contextvars.ContextVar(
    "jupyter_agent_progress", default=None
)


def current_reporter() -> ProgressCallback | None:
    """The running call's progress callback (``None`` outside a call)."""
    return _reporter.get()


def report_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Tell the running call's view how far the call got; nothing outside a call.

    Safe from the event loop and from the call's worker thread; never raises."""
    reporter = _reporter.get()
    if reporter is None:
        return
    with contextlib.suppress(Exception):  # a view that cannot show it must not fail the tool
        reporter(progress, total, message)


def reporting(callback: ProgressCallback) -> contextlib.AbstractContextManager[None]:
    """Run the block (one tool call) with ``callback`` as its progress callback."""
    return VarBlock(_reporter, callback)


def progress_amount(progress: float, total: float | None) -> str:
    """How far a call has got, as its progress says it: ``3/10``, or ``3`` without a total."""
    return f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"


def with_amount(amount: str, line: str, joiner: str) -> str:
    """``line`` after ``amount``, unless it names the amount itself (``run_cell``'s
    ``12 s elapsed; …``): then it is the whole line."""
    return line if line.startswith(f"{amount} ") else f"{amount}{joiner}{line}"
