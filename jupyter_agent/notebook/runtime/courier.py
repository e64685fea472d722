"""Tool calls' progress shown while the main thread is busy with a main-thread call.

The bridge (``bridge.py``) pumps the agent's events on the main thread; a main-thread call that
runs long — a cell ``run_cell`` runs, for minutes — keeps it from drawing anything meanwhile.
``Courier`` is the bridge's helper thread for that time (issue 37: a long ``run_cell`` shows its
elapsed time and last output line while it runs).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator


class Courier:
    """Shows tool calls' progress while the main thread runs a main-thread call (issue 37).

    A cell that ``run_cell`` runs holds the main thread for minutes; the pump, on that thread,
    draws nothing meanwhile, so the call's progress (elapsed time, last output line) would show
    only once it is over. During such a call this thread, started at the first, takes what is
    queued every ``interval_s``: progress events it hands to the run's ``on_event`` at
    once (the renderer is idle: its thread is in the call, and ipykernel gives a thread's
    displays the running cell's parent), everything else it leaves, in order, for the pump.
    The call does not return before a carry in progress has ended, so the renderer is never
    used from two threads at once."""

    def __init__(self, carry: Callable[[], None], interval_s: float) -> None:
        self._carry = carry
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._armed = threading.Event()
        self._active = False
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def during_call(self) -> Iterator[None]:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="jupyter-agent-courier", daemon=True
            )
            self._thread.start()
        self._active = True
        self._armed.set()
        try:
            yield
        finally:
            with self._lock:  # a carry under way ends first; none starts after
                self._active = False
                self._armed.clear()

    def _run(self) -> None:
        while True:
            self._armed.wait()
            time.sleep(self._interval_s)
            with self._lock:
                if self._active:
                    with contextlib.suppress(Exception):
                        self._carry()
