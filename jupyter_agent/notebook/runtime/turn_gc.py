"""``TurnGC``: keep full garbage collections of the kernel's heap out of a ``%%agent`` turn.

A full (generation 2) collection walks every tracked object of the process. In a kernel with
IPython, ipywidgets, the SDK and the user's data that is hundreds of thousands of objects, and
it stops the main thread for 0.2–0.6 s on a slow machine: during a turn the pump is blocked, so
a click on Stop or Approve waits that long (benchmark figure 19's tail). The trigger is not any
one allocation of ours: CPython runs a full collection once the objects that survived younger
collections since the last one reach a quarter of the old generation, so any turn that keeps
objects alive (its events, records, widget models, the API's parsed JSON) sets one off now and
then, wherever in the turn it happens to be.

While the turn runs, the objects that existed before it are moved to the permanent generation
(``gc.freeze()``), so collections — full ones included — walk only what the turn made; they
still run, and still free the turn's own cyclic garbage. When the turn ends, however it ends
(an error, Stop, ``KeyboardInterrupt``), ``gc.unfreeze()`` puts those objects back in the oldest
generation; the thresholds are never touched. If CPython ran a full collection during the turn
(of the turn's objects only), or the objects that outlived turns reached a quarter of the heap
(CPython's own rule, which cannot see them: ``_Ledger``), the whole heap is collected after the
cell: on the kernel's event loop once the kernel has been idle for ``IDLE_S`` (no turn begun;
cells run back to back wait until they are done, up to ``MAX_POSTPONE_S``), at once where no
loop runs (a terminal). A cycle among objects older than the turn that becomes
garbage during it waits until then; so that a long turn cannot hold much memory that way, the
heap is thawed and collected at once if the process grew by more than ``MAX_GROWTH`` bytes
during the turn (looked at from the pump's idle work).

Nothing is done when the collector is off, or when objects are already frozen (the user's own
``gc.freeze()``, or a turn inside a turn): unfreezing would thaw the user's objects too.
Measured on CPython 3.11. 3.12 and 3.13 start collections at the eval breaker rather than on
allocation, with the same generations and the same ``freeze``; 3.14 collects the old
generation in increments, so its full pauses are shorter to begin with — frozen objects are
left out of those increments too (``gc.freeze``'s documented meaning), but the gain is smaller.
CPython 3.12 alone puts objects in the permanent generation itself: each collection moves the
immortal objects it meets there (their reference counts say nothing of their referrers; 375
tuples of the interpreter's own from start-up on, back after each ``unfreeze`` at the next full
collection). Those are nobody's freeze, so ``get_freeze_count()`` is not 0 with nothing frozen;
``_Parked`` keeps that share, and only objects beyond it count as already frozen.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from types import TracebackType

#: How much the process may grow during one turn before the held-back old objects are thawed
#: and collected anyway.
MAX_GROWTH = 256 * 1024 * 1024
#: How often (seconds) ``check`` looks at the process's size.
CHECK_EVERY = 1.0

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class _Ledger:
    """CPython's rule for a full collection, kept across turns by hand.

    CPython counts the objects that outlive its younger collections and runs a full one when
    they reach a quarter of the heap it last walked. Objects that outlive a turn reach the old
    generation through ``unfreeze`` and are never counted: left alone, a session of nothing but
    turns would stop running full collections (measured: the closed views of 20 burst cells,
    100,000 objects, still held), so the count is kept here."""

    def __init__(self) -> None:
        self.outlived = 0  # objects that outlived a turn since the last full collection
        self.heap = 0  # the heap's size when a turn found it after that collection

    def due(self) -> bool:
        return self.outlived * 4 > self.heap

    def collected(self) -> None:
        self.outlived = self.heap = 0


_LEDGER = _Ledger()


class _Parked:
    """How many objects of the permanent generation CPython's own collector put there.

    Only 3.12 does (immortal objects, see the module's docstring): its share is what the
    permanent generation holds as this module is imported (the user's freeze, if any, comes
    later: ``%load_ext`` runs first in a notebook), and grows only after a full collection of
    ours found no more than that share frozen, so that whatever it added was the collector's.
    On 3.11 and 3.13 it stays 0: every frozen object there is someone's freeze."""

    def __init__(self) -> None:
        self.count = gc.get_freeze_count() if sys.version_info[:2] == (3, 12) else 0

    def nothing_frozen(self) -> bool:
        """No object frozen by anyone (the user, or a turn this one runs inside)."""
        return gc.get_freeze_count() <= self.count


_PARKED = _Parked()


def _collect() -> None:
    """A full collection of the whole heap; on 3.12 the immortal objects it parks in the
    permanent generation are counted as the collector's own (see ``_Parked``)."""
    nothing_frozen = _PARKED.nothing_frozen()
    gc.collect()
    if nothing_frozen:
        _PARKED.count = max(_PARKED.count, gc.get_freeze_count())


def resident_bytes() -> int | None:
    """The process's resident size, or ``None`` where it cannot be read cheaply.

    ``/proc/self/statm`` (Linux) gives the current size; elsewhere ``getrusage``'s peak is the
    best cheap figure, and a peak only grows, which is what a bound needs."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class TurnGC:
    """A context manager: the heap older than the turn frozen while it runs, thawed after.

    ``max_growth``: bytes the process may grow before the freeze is given up for the rest of
    the turn (thawed and collected once), looked at every ``check_every`` seconds at most.
    ``frozen``: whether the heap is frozen now; ``thawed_early``: the bound was passed.

    Entered again while it is entered (a cell that begins the scope before its setup, then runs
    the turn in it), only the outermost ``with`` freezes and thaws.
    """

    def __init__(self, max_growth: int = MAX_GROWTH, check_every: float = CHECK_EVERY) -> None:
        self.max_growth = max_growth
        self.check_every = check_every
        self.frozen = False
        self.thawed_early = False
        self.deferred = False
        self._start_size: int | None = None
        self._next_check = 0.0
        self._full_before = 0
        self._depth = 0

    def __enter__(self) -> TurnGC:
        global _turns_begun
        self._depth += 1
        if self._depth > 1:
            return self
        _turns_begun += 1
        if gc.isenabled() and _PARKED.nothing_frozen():
            self._full_before = _full_collections()
            gc.freeze()
            self.frozen = True
            self._start_size = resident_bytes()
            self._next_check = time.monotonic() + self.check_every
        return self

    def check(self) -> None:
        """Called from the pump's idle work: give the freeze up if the process grew too much."""
        if not self.frozen or self._start_size is None:
            return
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + self.check_every
        size = resident_bytes()
        if size is not None and size - self._start_size > self.max_growth:
            self._thaw()
            self.thawed_early = True
            _collect()
            _LEDGER.collected()

    def _thaw(self) -> None:
        if self.frozen:
            self.frozen = False
            gc.unfreeze()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._depth -= 1
        if self._depth or not self.frozen:
            return
        if not _LEDGER.heap:
            # the heap the turn found, counted now rather than as it began: counting the frozen
            # objects walks them all (~10 ms for 200,000), which the first token need not wait for
            _LEDGER.heap = gc.get_freeze_count()
        _LEDGER.outlived += len(gc.get_objects())  # the turn's objects still alive (not frozen)
        self._thaw()
        # A full collection of the whole heap is run after the cell when one was due: CPython
        # ran one during the turn (on the turn's objects only), or by the ledger's count.
        if _full_collections() > self._full_before or _LEDGER.due():
            self.deferred = True
            _LEDGER.collected()
            collect_after_cell()


def _full_collections() -> int:
    return int(gc.get_stats()[2]["collections"])


#: Seconds without a new turn before the deferred full collection runs (see ``collect_after_cell``).
IDLE_S = 0.5
#: ... but a collection postponed this long by turn after turn runs at the next chance anyway.
MAX_POSTPONE_S = 30.0


class _Pending:
    """The one deferred collection waiting for the kernel to be idle, if any."""

    def __init__(self) -> None:
        self.handle: asyncio.TimerHandle | None = None
        self.since = 0.0  # when it was first deferred
        self.turns = 0  # turns begun when it was last scheduled
        self.idle_s = IDLE_S
        self.max_postpone_s = MAX_POSTPONE_S


_PENDING = _Pending()
_turns_begun = 0


def collect_after_cell(*, idle_s: float = IDLE_S, max_postpone_s: float = MAX_POSTPONE_S) -> None:
    """A full collection once the kernel is idle: on its event loop, ``idle_s`` after the cell
    when no turn has begun meanwhile (``Run All`` and back-to-back cells wait until they are
    done, up to ``max_postpone_s``), so that the 0.1–0.5 s it stops the kernel falls while the
    user reads the answer rather than on a click as the next cell starts; at once where no loop
    runs (a terminal)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _collect()
        return
    if _PENDING.handle is None:
        _PENDING.since = time.monotonic()
    else:
        _PENDING.handle.cancel()
    _PENDING.idle_s, _PENDING.max_postpone_s = idle_s, max_postpone_s
    _schedule(loop)


def _schedule(loop: asyncio.AbstractEventLoop) -> None:
    _PENDING.turns = _turns_begun
    _PENDING.handle = loop.call_later(_PENDING.idle_s, _collect_if_idle, loop)


def _collect_if_idle(loop: asyncio.AbstractEventLoop) -> None:
    overdue = time.monotonic() - _PENDING.since > _PENDING.max_postpone_s
    if _turns_begun != _PENDING.turns and not overdue:
        _schedule(loop)  # a turn ran meanwhile: wait for another quiet spell
        return
    _PENDING.handle = None
    _collect()
