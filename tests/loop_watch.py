"""How long the event loop went without running a 10 ms ticker: the measure of "the loop stays
free" while a hostile schema is checked or an image is decoded.
"""

from __future__ import annotations

import asyncio
import time


class LoopWatch:
    """The longest the event loop went without running a 10 ms ticker."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.01)
            self.longest = max(self.longest, time.monotonic() - before)

    async def __aenter__(self) -> LoopWatch:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0.05)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        await asyncio.sleep(0.05)  # the ticker's last round measures a freeze that just ended
        self._task.cancel()
