"""The running cell's thread waits while a hold lasts (``runtime/main_pause.py``, figure 22 (a)).

The test's own main thread plays the running cell: a pure-Python loop that counts. Another
thread takes holds and watches the count: it stands still while the main thread is paused and
moves again once the hold is released, or its cap passes. Nothing here measures a duration; each
step waits for a state, with a generous deadline that only a broken pause would reach.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from jupyter_agent.notebook.runtime.main_pause import MainThreadPause

#: Only a broken pause makes a step wait this long.
DEADLINE_S = 30.0


class Loop:
    """The main thread's stand-in for a CPU-bound cell: counts until told to stop."""

    def __init__(self) -> None:
        self.count = 0
        self.stop = False

    def run(self) -> None:
        ends = time.monotonic() + DEADLINE_S
        while not self.stop:
            self.count += 1
            if self.count % 10_000 == 0 and time.monotonic() > ends:
                raise AssertionError("the other thread never stopped the loop")


def wait_for(condition: Callable[[], bool], what: str) -> None:
    ends = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > ends:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


def beside(work: Callable[[], None], loop: Loop) -> list[BaseException]:
    """Run ``work`` on another thread while ``loop`` runs on this (main) thread."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:
            errors.append(exc)
        finally:
            loop.stop = True

    thread = threading.Thread(target=target)
    thread.start()
    try:
        loop.run()
    finally:
        loop.stop = True
        thread.join(DEADLINE_S)
    return errors


@contextlib.contextmanager
def python_sigint() -> Iterator[None]:
    """Python's own SIGINT handler (a KeyboardInterrupt), as a kernel has while a cell runs."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_hold_pauses_the_running_loop_until_it_is_released() -> None:
    pause = MainThreadPause()
    assert pause.available
    loop = Loop()
    seen: dict[str, int] = {}

    def work() -> None:
        wait_for(lambda: loop.count > 0, "the loop to start")
        hold = pause.hold(cap_s=DEADLINE_S)
        wait_for(lambda: pause.paused, "the main thread to pause")
        seen["paused at"] = loop.count
        time.sleep(0.05)  # the loop would count many thousands meanwhile
        seen["still at"] = loop.count
        hold.release()
        wait_for(lambda: loop.count > seen["still at"], "the loop to go on")
        seen["after"] = loop.count

    assert beside(work, loop) == []
    assert seen["paused at"] == seen["still at"] < seen["after"]
    assert pause.pauses == 1 and pause.paused_s > 0 and not pause.paused


def test_a_hold_never_released_ends_by_itself_at_its_cap() -> None:
    pause = MainThreadPause()
    loop = Loop()
    seen: dict[str, int] = {}

    def work() -> None:
        wait_for(lambda: loop.count > 0, "the loop to start")
        pause.hold(cap_s=0.05)  # never released
        wait_for(lambda: pause.paused, "the main thread to pause")
        seen["paused at"] = loop.count
        wait_for(lambda: loop.count > seen["paused at"], "the cap to end the pause")

    assert beside(work, loop) == []
    assert pause.pauses == 1 and not pause.paused


def test_a_renewed_hold_pauses_the_loop_again() -> None:
    pause = MainThreadPause()
    loop = Loop()

    def work() -> None:
        wait_for(lambda: loop.count > 0, "the loop to start")
        hold = pause.hold(cap_s=DEADLINE_S)
        wait_for(lambda: pause.paused, "the first pause")
        hold.release()
        wait_for(lambda: pause.pauses == 1, "the first pause to end")
        hold.renew(DEADLINE_S)
        wait_for(lambda: pause.paused, "the second pause")
        at = loop.count
        time.sleep(0.02)
        assert loop.count == at
        hold.release()

    assert beside(work, loop) == []
    assert pause.pauses == 2


def test_an_interrupt_while_paused_ends_the_pause_and_is_raised_in_the_running_loop() -> None:
    pause = MainThreadPause()
    loop = Loop()
    hold_box: list[object] = []

    def work() -> None:
        wait_for(lambda: loop.count > 0, "the loop to start")
        hold_box.append(pause.hold(cap_s=DEADLINE_S))
        wait_for(lambda: pause.paused, "the main thread to pause")
        # the kernel's interrupt: SIGINT to the process, which Linux hands to its main thread
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        wait_for(lambda: not pause.paused, "the pause to end")

    interrupted = False
    errors: list[BaseException] = []
    with python_sigint():
        try:
            errors += beside(work, loop)
        except KeyboardInterrupt:
            interrupted = True
    assert interrupted, "the interrupt was swallowed by the pause"
    assert errors == []
    assert pause.pauses == 1


def test_a_hold_taken_on_the_main_thread_pauses_nothing() -> None:
    pause = MainThreadPause()
    hold = pause.hold(cap_s=DEADLINE_S)
    total = sum(range(100_000))  # bytecode runs: a pending pause would have run here
    hold.release()
    assert total and pause.pauses == 0 and not pause.paused


def test_any_signal_during_a_pause_reaches_its_own_handler_in_the_loop_once() -> None:
    class Alarm(Exception):
        pass

    calls: list[str] = []

    def on_alarm(_number: int, frame: object) -> None:
        calls.append(getattr(getattr(frame, "f_code", None), "co_name", "?"))
        raise Alarm

    pause = MainThreadPause()
    loop = Loop()

    def work() -> None:
        wait_for(lambda: loop.count > 0, "the loop to start")
        pause.hold(cap_s=DEADLINE_S)
        wait_for(lambda: pause.paused, "the main thread to pause")
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
        wait_for(lambda: not pause.paused, "the pause to end")

    previous = signal.signal(signal.SIGUSR1, on_alarm)
    try:
        with pytest.raises(Alarm):
            beside(work, loop)
        assert signal.getsignal(signal.SIGUSR1) is on_alarm, "the handler was not put back"
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert calls == ["run"], "the handler ran elsewhere than in the loop, or more than once"


def test_two_signals_at_once_during_a_pause_both_reach_their_handlers_and_holds_go_on() -> None:
    """Two signals tripped together while the loop is paused (an alarm and the kernel's
    interrupt, say): the first ends the pause; the second must not break the way out of it
    (raised again inside the pause's own lock handling, it left that lock held by the main
    thread, and the next hold from another thread waited for it for ever)."""
    calls: list[int] = []

    def note(number: int, _frame: object) -> None:
        calls.append(number)

    both = {signal.SIGUSR1, signal.SIGUSR2}
    pause = MainThreadPause()
    loop = Loop()

    def work() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, both)  # this thread takes the signals
        wait_for(lambda: loop.count > 0, "the loop to start")
        hold = pause.hold(cap_s=DEADLINE_S)
        wait_for(lambda: pause.paused, "the main thread to pause")
        # both trip while the main thread waits (it blocks them, so neither wakes it)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR2)
        hold.release()
        wait_for(lambda: len(calls) == 2, "both handlers to run")
        again = threading.Event()

        def hold_again() -> None:
            pause.hold(cap_s=DEADLINE_S).release()
            again.set()

        threading.Thread(target=hold_again, daemon=True).start()
        assert again.wait(DEADLINE_S), "a hold after the pause waited for ever"

    previous = {signum: signal.signal(signum, note) for signum in both}
    signal.pthread_sigmask(signal.SIG_BLOCK, both)
    try:
        errors = beside(work, loop)
        handlers = {signum: signal.getsignal(signum) for signum in both}
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, both)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    assert errors == []
    assert sorted(calls) == sorted(both)
    assert handlers == {signum: note for signum in both}, "a handler was not put back"


def test_a_signal_an_asyncio_loop_handles_during_a_pause_reaches_its_callback_once() -> None:
    """A cell that set ``loop.add_signal_handler`` (asyncio hears signals through its wakeup
    fd): a signal that arrives while the cell is paused is handled once, not once as it arrived
    and again as the pause handed it on (``PyErr_SetInterruptEx`` writes the wakeup fd too)."""
    import asyncio

    pause = MainThreadPause()
    calls: list[str] = []

    async def cell() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, calls.append, "usr1")
        try:

            def work() -> None:
                wait_for(lambda: cpu.count > 0, "the loop to start")
                hold = pause.hold(cap_s=DEADLINE_S)
                wait_for(lambda: pause.paused, "the main thread to pause")
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
                wait_for(lambda: not pause.paused, "the pause to end")
                hold.release()

            cpu = Loop()
            assert beside(work, cpu) == []
            for _ in range(10):  # the loop reads its wakeup fd: each byte calls back once
                await asyncio.sleep(0.01)
        finally:
            loop.remove_signal_handler(signal.SIGUSR1)

    asyncio.run(cell())
    assert calls == ["usr1"], calls


def test_a_process_forked_beside_a_pause_keeps_the_signal_handlers_the_cell_set() -> None:
    """Another thread forks while the cell is paused (a process pool started by the answer or
    a library's thread): the child has the cell's own handlers, not the pause's stand-ins (its
    Ctrl-C would raise the pause's private exception, and nothing puts them back there)."""
    import os
    import warnings

    pause = MainThreadPause()
    loop = Loop()
    status: list[int] = []

    def work() -> None:
        wait_for(lambda: loop.count > 0, "the loop to start")
        with pause.hold(cap_s=DEADLINE_S):
            wait_for(lambda: pause.paused, "the main thread to pause")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
                pid = os.fork()
            if pid == 0:  # the child: only report what its SIGINT handler is
                os._exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 3)
            status.append(os.waitpid(pid, 0)[1])

    with python_sigint():
        assert beside(work, loop) == []
    assert status and os.waitstatus_to_exitcode(status[0]) == 0, "the child had the stand-ins"


def test_the_pause_leaves_ctypes_pythonapi_as_another_library_set_it() -> None:
    """``ctypes.pythonapi``'s functions are one shared object per process: a library that set
    ``Py_AddPendingCall``'s argument types for its own calls keeps them, and holds still pause."""
    import ctypes

    shared = ctypes.pythonapi.Py_AddPendingCall
    before = (shared.argtypes, shared.restype)
    theirs = [ctypes.c_void_p, ctypes.c_void_p]  # a function pointer passed as an address
    shared.argtypes, shared.restype = theirs, ctypes.c_int
    try:
        pause = MainThreadPause()
        assert shared.argtypes == theirs, "the library's argument types were replaced"
        loop = Loop()

        def work() -> None:
            wait_for(lambda: loop.count > 0, "the loop to start")
            with pause.hold(cap_s=DEADLINE_S):
                wait_for(lambda: pause.paused, "the main thread to pause")

        assert beside(work, loop) == []
        assert pause.pauses == 1
    finally:
        shared.argtypes, shared.restype = before


def test_a_signal_a_c_library_handles_itself_is_left_to_it() -> None:
    """A C library (cysignals, say) may take a signal with a handler of its own after Python's
    ``signal.signal`` set a Python-level one; the pause must not put CPython's handler back over
    it (swapping the Python-level handler would). Here the library's disposition is SIG_IGN."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    previous = signal.signal(signal.SIGUSR2, lambda _number, _frame: None)
    libc.signal(signal.SIGUSR2, ctypes.c_void_p(1))  # the library's own: SIG_IGN
    pause = MainThreadPause()
    loop = Loop()

    def work() -> None:
        wait_for(lambda: loop.count > 0, "the loop to start")
        hold = pause.hold(cap_s=DEADLINE_S)
        wait_for(lambda: pause.paused, "the main thread to pause")
        hold.release()
        wait_for(lambda: pause.pauses == 1, "the pause to end")

    try:
        assert beside(work, loop) == []
        kept = libc.signal(signal.SIGUSR2, ctypes.c_void_p(1))
        assert kept == 1, f"the library's handler was replaced by {kept:#x}"
    finally:
        signal.signal(signal.SIGUSR2, previous)
