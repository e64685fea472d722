"""Pause a running cell for a few milliseconds while an answer beside it does its CPU work.

An answer beside a running cell (``front/ask_beside.py``) shares the interpreter with that cell.
When the cell is a pure-Python loop, the two take turns on the GIL, one switch interval each
(``subshell.py`` makes it short): every millisecond of the answer's own work — its question
parsed, its request built and sent, its first words parsed and drawn — costs two. Measured
(benchmark figure 22 (a)), the first token beside a CPU-bound cell took about three times as
long as on an idle kernel, for that reason alone.

CPython gives a thread no priority over another, and code on one thread cannot make another
wait — except through the main thread's *pending calls*: ``Py_AddPendingCall`` (public C API,
made for this: "schedule a function to be called from the main interpreter thread") runs a
function on the main thread at its next safe point, the same points where signal handlers run.
The function here waits, the GIL released, until the answer's hold ends or its cap passes.
So the answer's work runs at the speed it has on an idle kernel, and the cell loses at most the
cap for each hold — a few milliseconds of a loop that runs for minutes.

Bounded by construction:

* **Capped.** A hold ends by itself ``cap_s`` seconds after it was taken or renewed. Were the
  cell paused while holding a lock the answer needs (the import lock, say), the answer waits the
  cap out and goes on — never a deadlock.
* **Never the main thread on itself.** A hold taken on the main thread (a cell on the main shell)
  pauses nothing.
* **Interrupts go through.** A signal that arrives while the cell is paused (the kernel's
  interrupt, an alarm) ends the pause and is lost to no one: its Python handler runs in the
  cell right after, where its ``KeyboardInterrupt`` (or other error) is raised — never
  inside the pending call, where CPython would only print it. So during a pause each Python-level
  handler is swapped for one that notes the signal; the noted signals are handed back to their
  own handlers by a second pending call, ``PyErr_SetInterruptEx`` (public C API: "simulate the
  effect of a signal arriving"). A signal that a C library took over with a handler of its own
  (cysignals does) is not swapped: that would put CPython's handler back over the library's.
* **Nothing else changes.** The pending call reads and writes no user state; where the C API is
  missing (another interpreter), holds pause nothing.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import itertools
import os
import signal
import sys
import threading
import time
from typing import Any

#: The C signature of a pending call: ``int (*)(void *)``, 0 for success.
_PendingCall = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


def _add_pending_call() -> Any:
    """``Py_AddPendingCall`` with its argument types, or ``None`` where the interpreter lacks it."""
    try:  # a function object of our own: ``ctypes.pythonapi``'s is shared with every library
        signature = ctypes.PYFUNCTYPE(ctypes.c_int, _PendingCall, ctypes.c_void_p)
        return signature(("Py_AddPendingCall", ctypes.pythonapi))
    except (AttributeError, OSError):
        return None


def _set_interrupt() -> Any:
    """``PyErr_SetInterruptEx`` as a pending call (``int f(int signum)``, called with the signal
    number as its one argument: the same register as a pointer on the platforms CPython runs
    on), or ``None``."""
    try:
        return ctypes.cast(ctypes.pythonapi.PyErr_SetInterruptEx, _PendingCall)
    except (AttributeError, OSError):
        return None


class PauseHold:
    """One reason for the main thread to wait: taken by ``MainThreadPause.hold``."""

    def __init__(self, owner: MainThreadPause, key: int) -> None:
        self._owner = owner
        self._key = key

    def renew(self, cap_s: float) -> None:
        """Hold again, for at most ``cap_s`` seconds from now (after it ended, or to extend it)."""
        self._owner._set(self._key, cap_s)

    def release(self) -> None:
        """The work is done: the main thread may go on (nothing if already released)."""
        self._owner._drop(self._key)

    def __enter__(self) -> PauseHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class MainThreadPause:
    """Holds that keep the process's main thread waiting (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        #: Each live hold's key and the moment it ends by itself (``time.monotonic``).
        self._until: dict[int, float] = {}
        self._keys = itertools.count(1)
        self._scheduled = False
        self._add = _add_pending_call()
        self._interrupt = _set_interrupt()
        self._callback = _PendingCall(self._pending_call)  # kept alive while it may be called
        #: How many times the main thread paused, and for how long in all (seconds).
        self.pauses = 0
        self.paused_s = 0.0
        self._paused_now = False

    @property
    def paused(self) -> bool:
        """Whether the main thread is waiting on a hold right now."""
        return self._paused_now

    @property
    def available(self) -> bool:
        """Whether holds can pause the main thread here (the C API was found)."""
        return self._add is not None

    def hold(self, cap_s: float) -> PauseHold:
        """Keep the main thread waiting until the hold is released, at most ``cap_s`` seconds
        (nothing when called on the main thread itself)."""
        hold = PauseHold(self, next(self._keys))
        hold.renew(cap_s)
        return hold

    def _set(self, key: int, cap_s: float) -> None:
        if threading.current_thread() is threading.main_thread() or self._add is None:
            return
        with self._cond:
            self._until[key] = time.monotonic() + cap_s
            if not self._scheduled:
                self._scheduled = self._add(self._callback, None) == 0
            self._cond.notify_all()

    def _drop(self, key: int) -> None:
        with self._cond:
            if self._until.pop(key, None) is not None:
                self._cond.notify_all()

    def _pending_call(self, _arg: object) -> int:
        """On the main thread, at a safe point: wait while a hold lasts. Never raises (a pending
        call that fails would raise its error inside the user's cell)."""
        caught: list[int] = []
        try:
            with self._cond:  # read under the lock: a hold taken meanwhile is not lost
                live = self._live_until()
                if not live:
                    self._scheduled = False
            if live:
                try:
                    _record_signals(caught, _swapped)
                    _ending_pause[0] = True
                    self._wait_for_holds()
                finally:
                    _ending_pause[0] = False  # a signal from here on is only noted
                    with self._cond:  # however the wait ended, the next hold schedules anew
                        self._scheduled = False  # (while it waited, a hold only notified it)
                    _restore_signals(_swapped)
        except _SignalDuringPause:  # the pause ends; the signal is handed on below
            pass
        except KeyboardInterrupt:  # landed as the handlers were put back
            caught.append(signal.SIGINT)
        except BaseException:  # nothing may escape into the cell
            pass
        for signum in dict.fromkeys(caught):
            self._deliver_later(signum)
        return 0

    def _live_until(self) -> float:
        now = time.monotonic()
        return max((end for end in self._until.values() if end > now), default=0.0)

    def _deliver_later(self, signum: int) -> None:
        """Have ``signum``'s Python handler run in the cell once this pending call returned: a
        handler run here would raise inside this call, where its error is lost."""
        if self._add is None or self._interrupt is None or self._add(self._interrupt, signum):
            _thread.interrupt_main(signal.Signals(signum))  # the next best: at the next safe point

    def _wait_for_holds(self) -> None:
        with self._cond:
            started = time.monotonic()
            paused = False
            try:
                while True:
                    ends = self._live_until()
                    if not ends:
                        return
                    paused = self._paused_now = True
                    self._cond.wait(ends - time.monotonic())
            finally:  # (``_pending_call`` lets the next hold schedule a new pause)
                self._paused_now = False
                if paused:
                    self.pauses += 1
                    self.paused_s += time.monotonic() - started
                # holds whose cap passed are forgotten: a renewal schedules a new pause
                now = time.monotonic()
                for key in [key for key, end in self._until.items() if end <= now]:
                    del self._until[key]


class _SignalDuringPause(BaseException):
    """Ends a pause when a signal arrives (raised and caught inside the pending call only)."""


def _record_signals(caught: list[int], saved: dict[int, Any]) -> None:
    """Swap each Python-level signal handler for one that notes the signal and ends the pause;
    the handlers swapped out go to ``saved`` as they are, to put back."""

    def note(number: int, _frame: object) -> None:
        if not _wakeup_fd_only(saved.get(number)):  # asyncio's loop heard it already
            caught.append(number)
        if _ending_pause[0]:  # only the wait itself is cut short; never the putting back
            raise _SignalDuringPause

    for signum in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            handler = signal.getsignal(signum)
            if callable(handler) and _python_handles(signum):
                saved[signum] = handler
                signal.signal(signum, note)


def _c_handler(signum: int) -> int | None:
    """The address of the C function the OS calls for ``signum`` now (``sigaction``'s handler,
    the first field of its struct on Linux and macOS), or ``None`` where that cannot be read."""
    sigaction = getattr(_LIBC, "sigaction", None) if _LIBC is not None else None
    if sigaction is None:
        return None
    current = ctypes.create_string_buffer(512)  # larger than any platform's struct sigaction
    if sigaction(signum, None, current) != 0:
        return None
    return ctypes.c_void_p.from_buffer(current).value or 0


def _python_handles(signum: int) -> bool:
    """Whether CPython's own C handler takes ``signum`` (so that its Python-level handler runs).
    A C library may have put a handler of its own there since (cysignals does, for SIGINT):
    swapping the Python-level one would put CPython's back and drop the library's for good.
    Where the C side cannot be read, as before: CPython's."""
    if not _PYTHON_C_HANDLER:
        _PYTHON_C_HANDLER.append(_learn_python_c_handler())
    known = _PYTHON_C_HANDLER[0]
    if known is None:
        return True
    current = _c_handler(signum)
    return current is None or current == known


def _learn_python_c_handler() -> int | None:
    """CPython's C signal handler's address: read from a signal nobody uses (the last real-time
    one, at its default) while a Python-level handler holds it for a moment."""
    spare = getattr(signal, "SIGRTMAX", None)
    if spare is None or _LIBC is None:
        return None
    try:
        if signal.getsignal(spare) is not signal.SIG_DFL or _c_handler(spare) != 0:
            return None
        signal.signal(spare, lambda _number, _frame: None)
        try:
            return _c_handler(spare)
        finally:
            signal.signal(spare, signal.SIG_DFL)
    except (OSError, ValueError):
        return None


def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()
#: CPython's C signal handler's address, once learned (``None`` inside: it could not be).
_PYTHON_C_HANDLER: list[int | None] = []


def _wakeup_fd_only(handler: object) -> bool:
    """Whether ``handler`` is asyncio's for ``loop.add_signal_handler``: it does nothing, the
    loop hears the signal through its wakeup fd, written as the signal arrived. Handed on after
    a pause, it would be written there again (``PyErr_SetInterruptEx`` writes it too): the
    loop's callback would run twice. Such a signal ends the pause and is not handed on."""
    unix_events = sys.modules.get("asyncio.unix_events")
    noop = getattr(unix_events, "_sighandler_noop", None)
    return noop is not None and handler is noop


def _restore_signals(saved: dict[int, Any]) -> None:
    """Put back (and forget) the handlers ``saved``."""
    while saved:
        signum, handler = saved.popitem()
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, handler)


#: Whether a signal now ends the pause (while its wait runs), or is only noted.
_ending_pause = [False]
#: The handlers the pause under way swapped out. A process forked by another thread meanwhile
#: (a process pool, say) gets them back at once: nothing would put them back there.
_swapped: dict[int, Any] = {}
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _restore_signals(_swapped))


#: The one main thread a process has, and so its one set of holds.
main_pause = MainThreadPause()
