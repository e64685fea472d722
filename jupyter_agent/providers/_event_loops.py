"""Which event loop an SDK client belongs to, for providers used from several ``asyncio.run``.

``AsyncAnthropic`` and ``AsyncOpenAI`` keep pooled connections on the event loop that opened
them. A script that calls ``asyncio.run(agent.chat(...))`` twice runs each chat on a new loop;
reusing a connection of the first, closed loop fails *after* the request was written, and the
SDK's retry then sends it again — the model is asked, and billed, twice. A provider asks
``LoopTracker.moved()`` before each request: when the loop changed, a client the provider built
is replaced by a fresh one, and a client the user passed in is kept with a ``RuntimeWarning``.
"""

from __future__ import annotations

import asyncio
import weakref

CLIENT_ON_NEW_LOOP_WARNING = (
    "{provider}: the client passed in is now used on a different event loop than before; its "
    "pooled connections belong to the first loop, and a request on one of them can fail and be "
    "retried (sent twice). Create the client inside the loop that uses it, or keep one loop."
)


class LoopTracker:
    """Remembers the event loop of the last request (weakly: a finished loop can go away)."""

    def __init__(self) -> None:
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def moved(self) -> bool:
        """Record the running loop; True when an earlier request ran on a different one."""
        loop = asyncio.get_running_loop()
        previous = self._loop() if self._loop is not None else None
        self._loop = weakref.ref(loop)
        return previous is not None and previous is not loop

    def elsewhere(self) -> bool:
        """True when the last request ran on a loop other than the running one."""
        previous = self._loop() if self._loop is not None else None
        return previous is not None and previous is not asyncio.get_running_loop()
