"""Run the async agent from synchronous magics: one background event loop, one main-thread pump.

Two constraints shape this module:

* An ``AsyncAnthropic`` client (its HTTP connection pool) must stay on the event loop that
  created it. A kernel's own loop is already running while a cell executes, so the magics can't
  ``asyncio.run`` there, and a fresh loop per cell would strand the client. So the session gets
  **one long-lived loop in a daemon thread**; the agent and its provider live there.
* ipykernel 7 attributes output to the thread that produced it, and widgets must be touched from
  the kernel's main thread. So **every display happens on the main thread**: the background loop
  posts events (and requests such as "ask the user", "run this code in the user's namespace") to a
  thread-safe queue, and the main thread pumps that queue until the work is done.

The pump works in batches and sleeps until something is due. Every event other than streamed text
(a tool call starting or finishing, a turn ending), a request for the main thread
(``call_on_main``) and the end of the run wake it at once. Streamed text wakes it only when the
renderer would show it: at most every ``POLL_INTERVAL_S`` (the renderer's shortest pause between
updates) and once the queued text has grown by ``TEXT_GROWTH_FRACTION`` of what the current text
segment already holds (the renderer's own rule: a smaller growth would not be drawn anyway). The
posting side counts the characters and sets the wake-up — or, when the threshold is reached
before the pause is over, a timer on the background loop for the moment it ends. With nothing
due the pump still wakes every ``IDLE_WAKE_S`` for its idle work (the renderer's tick). In a
kernel, a ``CommWaiter`` (``kernel_comm.KernelCommPoller``) lets the pump sleep on the kernel's
shell socket as well, so a widget message (Stop, Approve, a tool toggle) wakes it at once and is
answered within milliseconds; while the pump is busy (a batch of main-thread tool calls) it looks
at that socket between items. A 20-second answer costs a few dozen main-thread wake-ups
(each ~0.1 ms of the kernel's main thread even with nothing to do), not one per token nor one per
poll interval; consecutive ``TextDelta`` events of a batch reach ``on_event`` as one (same text,
same order around other events).

The same code runs in a Jupyter kernel, in terminal IPython and in a plain script, with or without
an event loop already running in the calling thread. ``KeyboardInterrupt`` while pumping (the
kernel's stop button) cancels the background task, waits for its cleanup, and reports the run as
interrupted. ``request_stop`` (the cell's own Stop button) does exactly the same from a widget
callback: the pump sees it at its next wake-up and stops the run as if interrupted.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import queue
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ...errors import InterruptedByUser, NotPumpingError
from ...events import TextDelta, ToolCallProgress
from .courier import Courier

T = TypeVar("T")

# The renderer's pacing, owned here so that the bridge imports no view: the renderer
# (``rich_renderer.py``) and the pump below follow the same two numbers.

#: Default seconds between two updates of the streaming answer (the shortest pause).
DEFAULT_RENDER_INTERVAL_S = 0.15

#: An update of the streaming answer waits until the text has grown by this fraction of what is
#: already shown, so the number of updates grows with the logarithm of the answer's length
#: (and the characters re-sent stay proportional to it, not to its square).
MIN_GROWTH_FRACTION = 0.1


#: The shortest pause between two hand-overs of streamed text to the main thread: the renderer
#: shows new text at most this often anyway (benchmark 8: a 0.02 s poll cost 3.8x the CPU).
POLL_INTERVAL_S = DEFAULT_RENDER_INTERVAL_S
#: Streamed text wakes the main thread once it has grown by this fraction of its text segment
#: (text since the last other event): the renderer's threshold for a display update.
TEXT_GROWTH_FRACTION = MIN_GROWTH_FRACTION
#: The longest the pump sleeps with nothing due: its idle work polls the widget comms, so a Stop
#: click is seen within this time.
IDLE_WAKE_S = 0.5
#: How long an interrupted run may take to clean up before the pump stops waiting.
CLEANUP_TIMEOUT_S = 30.0


class CommWaiter(Protocol):
    """What the pump needs from a kernel's widget channel (``kernel_comm.KernelCommPoller``)."""

    def poll(self, timeout_s: float = 0.0) -> int:
        """Handle the widget messages that arrived (waiting up to ``timeout_s``)."""
        ...

    def wait(self, timeout_s: float, wake_fd: int) -> int:
        """Sleep until a widget message arrives (and handle it), ``wake_fd`` is readable, or
        ``timeout_s`` passes; the number of widget messages handled."""
        ...


class _WakeUp:
    """A ``threading.Event`` that can also wake a ``select``-style wait: while ``attach``-ed,
    ``set`` writes a byte to a socket pair whose reading end ``fileno`` is."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._pair: tuple[socket.socket, socket.socket] | None = None

    def attach(self) -> int:
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        self._pair = (reader, writer)
        if self._event.is_set():
            self._signal()
        return reader.fileno()

    def detach(self) -> None:
        pair, self._pair = self._pair, None
        if pair is not None:
            for end in pair:
                end.close()

    def _signal(self) -> None:
        pair = self._pair
        if pair is not None:
            with contextlib.suppress(OSError):  # full (a wake-up is pending anyway) or closed
                pair[1].send(b"\0")

    def set(self) -> None:
        if self._event.is_set():
            return  # its byte is already written, or the pump has not cleared it yet
        self._event.set()
        self._signal()

    def is_set(self) -> bool:
        return self._event.is_set()

    def clear(self) -> None:
        # Drain first, then clear: a set() in between leaves its byte, so no wake-up is lost.
        pair = self._pair
        if pair is not None:
            with contextlib.suppress(OSError):
                while pair[0].recv(4096):
                    pass
        self._event.clear()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


class BackgroundLoop:
    """An asyncio event loop running forever in a daemon thread."""

    def __init__(self, name: str = "jupyter-agent-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def closed(self) -> bool:
        return self._closed

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the returned future is safe to wait on from any thread."""
        if self._closed:
            coro.close()
            raise RuntimeError("the agent's event loop is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (for short setup/teardown work)."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("BackgroundLoop.run() called from the loop's own thread")
        return self.submit(coro).result(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop (cancelling what still runs there) and join its thread."""
        if self._closed:
            return
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        if not self.in_loop_thread():
            self._thread.join(timeout)


@dataclass
class RunOutcome(Generic[T]):
    """How a pumped run ended: its value, or that it was interrupted."""

    value: T | None = None
    interrupted: bool = False


@dataclass
class _MainCall:
    fn: Callable[[], Any]
    future: concurrent.futures.Future[Any]


@dataclass
class _Settled:
    value: Any = None
    error: BaseException | None = None
    cancelled: bool = False


class _Job:
    """A task on the background loop plus a future that settles only when the task has ended."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro: Coroutine[Any, Any, Any] | None = coro
        self.task: asyncio.Task[Any] | None = None
        self.settled: concurrent.futures.Future[_Settled] = concurrent.futures.Future()
        self._cancel_requested = False

    def start(self) -> None:  # on the loop thread
        if self._coro is None:
            return  # cancelled before it could start
        self.task = asyncio.ensure_future(self._coro)
        self._coro = None
        self.task.add_done_callback(self._settle)
        if self._cancel_requested:
            self.task.cancel()

    def cancel(self) -> None:  # on the loop thread
        self._cancel_requested = True
        if self.task is not None:
            self.task.cancel()
        elif self._coro is not None:
            # The stop button was pressed before ``start`` was even scheduled.
            self._coro.close()
            self._coro = None
            self.settled.set_result(_Settled(cancelled=True))

    def _settle(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            self.settled.set_result(_Settled(cancelled=True))
        elif task.exception() is not None:
            self.settled.set_result(_Settled(error=task.exception()))
        else:
            self.settled.set_result(_Settled(value=task.result()))


class MainThreadBridge:
    """The queue between the background loop and the main thread, and the pump that drains it."""

    def __init__(self, loop: BackgroundLoop) -> None:
        self.background = loop
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        #: Set to wake the pump before its poll interval is up (a main-thread call, the run's end).
        self._wake = _WakeUp()
        #: The kernel's widget channel, if any: the pump sleeps on it too (set by the magics for
        #: the duration of a run).
        self.comm_waiter: CommWaiter | None = None
        #: Items taken from the queue and not yet handled; they outlive an interrupted batch.
        self._backlog: collections.deque[object] = collections.deque()
        self._coalesce_text = True
        self._text_growth = TEXT_GROWTH_FRACTION
        self._accepting_calls = False
        self._pumping = False
        self._stop_requested = False
        #: Futures of main-thread calls an interrupt ended, answered once the run is cancelled.
        self._interrupted_calls: list[concurrent.futures.Future[Any]] = []
        #: Runs main-thread work while no run is pumping (``%agent serve`` sets it: the kernel's
        #: own loop, between cells); ``None``: such work is refused with ``NotPumpingError``.
        self.idle_runner: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None
        #: Called, in the awaiting task, when the kernel's interrupt ended a ``call_on_main``'s
        #: work, by the pump or the ``idle_runner`` (``%agent serve`` sets it: a served task whose
        #: code the user stopped reads ``cancelled``).
        self.on_interrupted: Callable[[], None] | None = None
        #: Times the pump took a non-empty batch from the queue (for tests and benchmarks).
        self.batches = 0
        #: Times the pump woke up (for tests and benchmarks).
        self.wakeups = 0
        #: The current run's ``on_event``, for the courier.
        self._on_event: Callable[[object], None] | None = None
        self._courier = Courier(self._carry_progress, POLL_INTERVAL_S)
        # When streamed text is worth a wake-up. Characters posted (written by the posting
        # side) and taken (by the pump); the pump sets the threshold and the earliest time.
        self._posted_chars = 0
        self._taken_chars = 0
        self._segment_chars = 0
        self._text_wake_at_chars = 0.0
        self._text_due = 0.0
        self._text_timer_set = False

    # -- from any thread -----------------------------------------------------------------------

    def post(self, event: object) -> None:
        """Hand ``event`` to the main thread's ``on_event``, in order.

        Streamed text wakes the main thread when the renderer would show it (see the module
        docstring); any other event wakes it at once.
        """
        self._queue.put(event)
        if type(event) is not TextDelta:
            self._wake.set()
            return
        self._posted_chars += len(event.text)
        if self._posted_chars < self._text_wake_at_chars or self._text_timer_set:
            return
        delay = self._text_due - time.monotonic()
        if delay <= 0:
            self._wake.set()
            return
        self._text_timer_set = True
        loop = self.background.loop
        if self.background.in_loop_thread():
            loop.call_later(delay, self._wake.set)
        else:
            loop.call_soon_threadsafe(loop.call_later, delay, self._wake.set)

    @property
    def running(self) -> bool:
        """A run is being pumped now (on whichever thread called ``run``)."""
        return self._pumping

    @property
    def stop_requested(self) -> bool:
        """The Stop button was pressed during the current run (a waiting prompt gives up)."""
        return self._stop_requested

    def request_stop(self) -> None:
        """End the current run as an interrupt would (the Stop button); no-op when idle."""
        if self._pumping:
            self._stop_requested = True
            self._wake.set()

    async def call_on_main(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` on the main thread during the current run and return its result.

        Raises ``NotPumpingError`` when no run is pumping (and no ``idle_runner`` is set: then
        it runs ``fn``), ``InterruptedByUser`` when the user interrupted the kernel while ``fn``
        ran. Cancelling the awaiting task before ``fn`` starts means it never starts.
        """
        if self._accepting_calls:
            future: concurrent.futures.Future[T] = concurrent.futures.Future()
            self._queue.put(_MainCall(fn, future))
            self._wake.set()
            try:
                return await asyncio.wrap_future(future)
            except InterruptedByUser:
                self._tell_interrupted()
                raise
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if self.idle_runner is None or (task is not None and task.cancelling()):
                    raise
                # the run ended before the pump reached ``fn`` (it never started): between
                # cells, the idle runner takes it
        if self.idle_runner is not None:
            try:
                result: T = await self.idle_runner(fn)
            except InterruptedByUser:
                self._tell_interrupted()
                raise
            return result
        raise NotPumpingError(
            "this needs the notebook's main thread, which is only available while a "
            "%%agent cell is running"
        )

    def _tell_interrupted(self) -> None:
        if self.on_interrupted is not None:
            with contextlib.suppress(Exception):
                self.on_interrupted()

    # -- on the main thread ----------------------------------------------------------------------

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        on_event: Callable[[object], None],
        *,
        on_idle: Callable[[], None] | None = None,
        cleanup_timeout: float = CLEANUP_TIMEOUT_S,
        coalesce_text: bool = True,
        text_growth: float | None = None,
    ) -> RunOutcome[T]:
        """Run ``coro`` on the background loop, pumping posted events until it ends.

        Returns the coroutine's value, or ``RunOutcome(interrupted=True)`` after a
        ``KeyboardInterrupt``. An exception raised by the coroutine is raised here.
        With ``coalesce_text`` (the default) consecutive ``TextDelta`` events of a batch reach
        ``on_event`` as one; without it, one by one as posted. ``text_growth`` is the growth of
        a text segment that wakes the main thread (``TEXT_GROWTH_FRACTION`` unless given; 0 for
        a renderer that writes text as it comes, as a terminal does).
        """
        if self._pumping:
            coro.close()
            raise RuntimeError("an agent run is already in progress in this session")
        job = _Job(coro)
        job.settled.add_done_callback(lambda _settled: self._wake.set())
        self._coalesce_text = coalesce_text
        self._text_growth = TEXT_GROWTH_FRACTION if text_growth is None else text_growth
        self._segment_chars = 0
        self._taken_chars = self._posted_chars  # text of an earlier run was dropped
        self._text_wake_at_chars = self._posted_chars + 1
        self._text_due = 0.0
        self._text_timer_set = False
        self._pumping = True
        self._accepting_calls = True
        self._stop_requested = False
        interrupted = False
        try:
            try:
                # Inside the inner try: the stop button may be pressed while scheduling the job
                # (a fast first tool call can even be running already).
                self.background.loop.call_soon_threadsafe(job.start)
                self._pump(job, on_event, on_idle, deadline=None)
            except KeyboardInterrupt:
                interrupted = True
            except BaseException:
                self._stop(job, on_event, on_idle, cleanup_timeout)
                raise
            if interrupted:
                self._stop(job, on_event, on_idle, cleanup_timeout)
        finally:
            self._accepting_calls = False
            self._pumping = False
            self._stop_requested = False
            self._answer_interrupted_calls()  # an interrupt during _stop's own pump
            self._refuse_pending_calls()
        if interrupted:
            return RunOutcome(interrupted=True)
        settled = job.settled.result()
        if settled.error is not None:
            raise settled.error
        if settled.cancelled:
            return RunOutcome(interrupted=True)
        return RunOutcome(value=settled.value)

    def _stop(
        self,
        job: _Job,
        on_event: Callable[[object], None],
        on_idle: Callable[[], None] | None,
        cleanup_timeout: float,
    ) -> None:
        """Cancel ``job`` and keep pumping (refusing new main-thread work) while it cleans up."""
        self._accepting_calls = False  # queued requests are cancelled as the pump reaches them
        self.background.loop.call_soon_threadsafe(job.cancel)
        self._answer_interrupted_calls()
        # A second stop press while cleaning up: stop waiting, the loop finishes on its own.
        with contextlib.suppress(KeyboardInterrupt):
            self._pump(job, on_event, on_idle, deadline=time.monotonic() + cleanup_timeout)

    def _pump(
        self,
        job: _Job,
        on_event: Callable[[object], None],
        on_idle: Callable[[], None] | None,
        deadline: float | None,
    ) -> None:
        waiter = self.comm_waiter
        wake_fd = self._wake.attach() if waiter is not None else -1
        try:
            self._pump_loop(job, on_event, on_idle, deadline, waiter, wake_fd)
        finally:
            if waiter is not None:
                self._wake.detach()

    def _pump_loop(
        self,
        job: _Job,
        on_event: Callable[[object], None],
        on_idle: Callable[[], None] | None,
        deadline: float | None,
        waiter: CommWaiter | None,
        wake_fd: int,
    ) -> None:
        last_idle = 0.0
        while True:
            # Clear the wake-up first: whatever is posted after this is seen by the next wait.
            if self._wake.is_set():
                self._wake.clear()
            finished = job.settled.done()  # read before draining: every post happened before it
            had_work = self._take_batch()
            handed_text = False
            while self._backlog:
                was_text = self._handle_next(on_event)
                handed_text = was_text or handed_text
                if waiter is not None and not was_text:
                    waiter.poll(0)  # a click waits no longer than one item of a busy batch
            now = time.monotonic()
            if handed_text or had_work:
                self._arm_text_wake(now if handed_text else None)
            if on_idle is not None and (not had_work or now - last_idle >= POLL_INTERVAL_S):
                on_idle()
                last_idle = now
            if finished and not had_work:
                return
            if deadline is not None and now > deadline:
                return
            if deadline is None and self._stop_requested and not finished:
                raise KeyboardInterrupt  # the Stop button: the same path as an interrupt
            if not finished:
                timeout = IDLE_WAKE_S
                if deadline is not None:
                    timeout = max(0.0, min(timeout, deadline - now))
                if waiter is not None:
                    waiter.wait(timeout, wake_fd)
                else:
                    self._wake.wait(timeout)
                self.wakeups += 1

    def _arm_text_wake(self, handed_at: float | None) -> None:
        """After a batch: when the next streamed text is worth waking for."""
        if handed_at is not None:
            self._text_due = handed_at + POLL_INTERVAL_S
        growth = max(1.0, self._text_growth * self._segment_chars)
        self._text_wake_at_chars = self._taken_chars + growth
        self._text_timer_set = False

    def _take_batch(self) -> bool:
        """Move everything queued (and what an interrupted batch left) into the backlog."""
        if self._queue.empty():  # the pump is the only consumer: non-empty stays non-empty
            return bool(self._backlog)
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if type(item) is TextDelta:
                self._taken_chars += len(item.text)
            self._backlog.append(item)
        self.batches += 1
        return True

    def _handle_next(self, on_event: Callable[[object], None]) -> bool:
        """Handle the next backlog item (a run of text as one); True if it was text."""
        item = self._backlog.popleft()
        if type(item) is not TextDelta:
            self._segment_chars = 0  # the renderer starts a new text segment after other events
            self._handle(item, on_event)
            return False
        if self._coalesce_text:
            texts = [item.text]
            while self._backlog and type(self._backlog[0]) is TextDelta:
                follower = self._backlog.popleft()
                assert isinstance(follower, TextDelta)
                texts.append(follower.text)
            if len(texts) > 1:
                item = TextDelta("".join(texts))
        self._segment_chars += len(item.text)
        self._handle(item, on_event)
        return True

    def _handle(self, item: object, on_event: Callable[[object], None]) -> None:
        if isinstance(item, _MainCall):
            if not self._accepting_calls:
                item.future.cancel()
                return
            if not item.future.set_running_or_notify_cancel():
                return  # the caller was cancelled before we got to it
            self._on_event = on_event
            try:
                with self._courier.during_call():
                    result = item.fn()
            except KeyboardInterrupt:
                # The caller hears of it only once the run is cancelled (``_stop``): told at
                # once, a tool could turn it into an error result and the turn go on to another
                # request before the cancellation reached it.
                self._interrupted_calls.append(item.future)
                raise
            except BaseException as exc:
                item.future.set_exception(exc)
            else:
                item.future.set_result(result)
            return
        on_event(item)

    def _carry_progress(self) -> None:
        """On the courier's thread, during a main-thread call: progress shown now, the rest
        moved to the backlog in order (as ``_take_batch`` would)."""
        on_event = self._on_event
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if type(item) is ToolCallProgress and on_event is not None:
                on_event(item)
                continue
            if type(item) is TextDelta:
                self._taken_chars += len(item.text)
            self._backlog.append(item)

    def _answer_interrupted_calls(self) -> None:
        """Main-thread calls an interrupt ended: their callers hear it now, after the cancel."""
        loop = self.background.loop
        while self._interrupted_calls:
            future = self._interrupted_calls.pop()
            error = InterruptedByUser("interrupted by the user")
            loop.call_soon_threadsafe(_set_exception_if_pending, future, error)

    def _refuse_pending_calls(self) -> None:
        """After a run: cancel main-thread requests still queued and drop stale events."""
        for item in self._backlog:
            if isinstance(item, _MainCall):
                item.future.cancel()
        self._backlog.clear()
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _MainCall):
                item.future.cancel()


async def forward_events(stream: AsyncIterator[object], bridge: MainThreadBridge) -> None:
    """Consume ``stream`` on the background loop, posting each event to the main thread."""
    try:
        async for event in stream:
            bridge.post(event)
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


def _set_exception_if_pending(future: concurrent.futures.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
