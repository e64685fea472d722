"""Prints from other threads, shown by the main thread in the order things happened.

While a ``%%agent`` cell runs, the agent lives on a background event loop and sync ``@tool``
functions run in worker threads. A reviewer installed as ``agent.approval_handler`` that prints
its verdict, or a user's tool that prints progress, writes to ``sys.stdout`` from one of those
threads — and the kernel sends that text at once, while the main thread may still be drawing
the events before it, so the text landed above the tool-call views it belongs after (and
ipykernel 7 may attribute it to the wrong cell). ``OrderedConsole`` routes such writes through
the main-thread bridge instead: the main thread prints them between the events, in order. To a
terminal (terminal IPython) the text goes through ``inert.visible``: what a tool prints from a
file or a page cannot move the cursor, set the clipboard or retitle the window.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

from ..inert import visible
from .subshell import on_subshell_thread

#: Writes that reached the console's streams while routed (any thread), and printed texts shown:
#: a renderer that rewrites its own last lines on a terminal first checks nothing came between.
_writes = 0


def write_count() -> int:
    """How many writes went to the routed streams so far (see ``_writes``)."""
    return _writes


def _count_write() -> None:
    global _writes
    _writes += 1


@dataclass(frozen=True, slots=True)
class PrintedText:
    """Text another thread wrote to ``stdout`` or ``stderr`` during the turn."""

    text: str
    stream: str  # "stdout" or "stderr"

    def show(self) -> None:
        """Write it where it was meant to go (call on the main thread)."""
        target: TextIO | None = sys.__stdout__ if self.stream == "stdout" else sys.__stderr__
        current = getattr(sys, self.stream)
        if isinstance(current, _ThreadRouter):
            target = current.original
        if target is not None:
            _count_write()
            target.write(visible(self.text) if is_terminal(target) else self.text)
            target.flush()


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal, which obeys escape sequences (a kernel's stream is not:
    the frontend shows its colours and carriage returns as text, which a tool's progress bar
    relies on)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class _ThreadRouter:
    """A stand-in for ``sys.stdout``/``sys.stderr``: the main thread writes through, others post."""

    def __init__(self, original: TextIO, name: str, post: Callable[[object], None]) -> None:
        self.original = original
        self._name = name
        self._post = post
        self._main = threading.main_thread()

    def write(self, text: str) -> int:
        _count_write()
        # a kernel subshell's cell (``subshell.py``) prints into its own cell, not this turn's
        if threading.current_thread() is self._main or on_subshell_thread():
            return self.original.write(text)
        if text:
            self._post(PrintedText(text, self._name))
        return len(text)

    def flush(self) -> None:
        if threading.current_thread() is self._main or on_subshell_thread():
            self.original.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, ...
        return getattr(self.original, name)


class OrderedConsole:
    """Route other threads' prints through ``post`` while the ``with`` block runs."""

    def __init__(self, post: Callable[[object], None]) -> None:
        self._post = post
        self._saved: tuple[TextIO, TextIO] | None = None

    def __enter__(self) -> OrderedConsole:
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout = _ThreadRouter(sys.stdout, "stdout", self._post)
        sys.stderr = _ThreadRouter(sys.stderr, "stderr", self._post)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
            self._saved = None
