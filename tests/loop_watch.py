"""Which thread ran a blocking function, and whether the event loop ran while it did: the proof
that "the loop stays free" while a hostile schema is checked, as an order of events, not a time.

A heartbeat task on the loop logs a tick each round; the watched function (a third-party one,
wrapped so it still runs) logs its start and end with the thread that ran it. The loop stayed
free if no call ran on the loop's thread and the heartbeat ticked between a call's start and end:
a call on the loop, or one in a thread that holds the GIL (``re``), leaves no tick inside.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any


class LoopWatch:
    """Ticks of the loop's heartbeat and the watched calls, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []  # ("tick" | "start" | "end", thread id)
        self.loop_thread = 0
        self._task: asyncio.Task[None] | None = None

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, logging the start and end of each call (list.append is atomic)."""

        def watched(*args: Any, **kwargs: Any) -> Any:
            thread = threading.get_ident()
            self.events.append(("start", thread))
            try:
                return function(*args, **kwargs)
            finally:
                self.events.append(("end", thread))

        return watched

    @property
    def calls(self) -> int:
        return sum(kind == "start" for kind, _ in self.events)

    @property
    def calls_on_the_loop(self) -> int:
        return sum(kind == "start" and t == self.loop_thread for kind, t in self.events)

    @property
    def ticks_during_calls(self) -> int:
        """Heartbeat ticks logged while some watched call was running."""
        running: set[int] = set()
        ticks = 0
        for kind, thread in self.events:
            if kind == "start":
                running.add(thread)
            elif kind == "end":
                running.discard(thread)
            elif running:
                ticks += 1
        return ticks

    def assert_the_loop_stayed_free(self, *, overlapped: bool = True) -> None:
        """No call on the loop's thread; ``overlapped``: the loop ran during one (a call that
        lasts, as a hostile one does; a call that ends at once leaves no room for a tick)."""
        assert self.calls, "the watched function never ran"
        assert self.calls_on_the_loop == 0, f"{self.calls_on_the_loop} calls ran on the loop"
        if overlapped:
            assert self.ticks_during_calls > 0, "the loop never ran while a call did"

    async def _tick(self) -> None:
        while True:
            self.events.append(("tick", self.loop_thread))
            await asyncio.sleep(0.01)

    async def __aenter__(self) -> LoopWatch:
        self.loop_thread = threading.get_ident()
        self._task = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
