"""The main-thread pump sleeps on the kernel's widget channel as well as on its own wake-up, so a
widget message (Stop, Approve, a tool toggle) is handled during a turn by the pump itself, and
between the items of a busy batch — before, only the pump's idle work looked at it, every
0.15–0.5 s. Proved here by order (no idle work polls; which call had run when a click was
handled); how fast it is, is benchmark figure 19's goal.

The widget channel here is a real socket pair standing in for the kernel's shell socket: a
``CommWaiter`` that handles a "click" (a byte on it) from the main thread, as
``KernelCommPoller`` does with comm messages; a thread clicks while a run is in progress.
"""

from __future__ import annotations

import asyncio
import functools
import select
import socket
import threading
import time

from jupyter_agent.events import TextDelta
from jupyter_agent.notebook.runtime.bridge import BackgroundLoop, MainThreadBridge


class SocketWidgets:
    """Clicks arrive as bytes on a socket; handling one records how long it waited and how many
    of the turn's main-thread calls had run by then (``ran``)."""

    def __init__(self) -> None:
        self.inbox, self.outbox = socket.socketpair()
        self.inbox.setblocking(False)
        self.sent: list[float] = []
        self.waited: list[float] = []
        self.handled_on: set[str] = set()
        #: The turn's main-thread calls that ran (appended to by the test's calls).
        self.ran: list[int] = []
        #: ``len(ran)`` when each click was handled.
        self.handled_after: list[int] = []
        self.all_handled = threading.Event()
        self.expected = 0

    def click(self) -> None:
        self.sent.append(time.monotonic())
        self.outbox.send(b"c")

    def poll(self, timeout_s: float = 0.0) -> int:
        ready, _, _ = select.select([self.inbox], [], [], timeout_s)
        if not ready:
            return 0
        handled = len(self.inbox.recv(4096))
        now = time.monotonic()
        for _ in range(handled):
            self.waited.append(now - self.sent[len(self.waited)])
            self.handled_after.append(len(self.ran))
        self.handled_on.add(threading.current_thread().name)
        if self.expected and len(self.waited) >= self.expected:
            self.all_handled.set()
        return handled

    def wait(self, timeout_s: float, wake_fd: int) -> int:
        select.select([self.inbox, wake_fd], [], [], timeout_s)
        return self.poll(0)

    def close(self) -> None:
        self.inbox.close()
        self.outbox.close()


def test_a_click_wakes_the_pump_during_a_quiet_turn() -> None:
    """Nothing is posted and no idle work polls the widgets: only the pump's own wait on the
    widget channel can handle the clicks, and the turn ends only once they were handled (or,
    if they never are, at its 30 s safety cap, and the test fails)."""
    loop = BackgroundLoop()
    bridge = MainThreadBridge(loop)
    widgets = SocketWidgets()
    widgets.expected = 10

    async def quiet_turn() -> None:
        # waiting for the model: nothing posted until the clicks were handled
        await asyncio.to_thread(widgets.all_handled.wait, 30)

    def clicker() -> None:
        for _ in range(10):
            widgets.click()
            time.sleep(0.05)

    events: list[object] = []
    bridge.comm_waiter = widgets
    threading.Thread(target=clicker, daemon=True).start()
    try:
        bridge.run(quiet_turn(), events.append)  # no on_idle: nothing else polls the widgets
    finally:
        bridge.comm_waiter = None
        widgets.close()
        loop.close()
    assert len(widgets.waited) == 10
    assert widgets.handled_on == {threading.main_thread().name}


def test_a_click_is_handled_between_the_items_of_a_busy_batch() -> None:
    """120 main-thread calls queued at once: one long batch for the pump. Calls 10, 50 and 90
    click as they run; each click is handled before the next call runs, not after the batch."""
    loop = BackgroundLoop()
    bridge = MainThreadBridge(loop)
    widgets = SocketWidgets()
    clicking = (10, 50, 90)

    def step(index: int) -> None:
        widgets.ran.append(index)
        if index in clicking:
            widgets.click()

    async def burst() -> None:
        calls = [bridge.call_on_main(functools.partial(step, k)) for k in range(120)]
        await asyncio.gather(*calls)
        bridge.post(TextDelta("done"))

    events: list[object] = []
    bridge.comm_waiter = widgets
    try:
        bridge.run(burst(), events.append)
    finally:
        bridge.comm_waiter = None
        widgets.close()
        loop.close()
    assert widgets.ran == list(range(120))
    assert widgets.handled_after == [k + 1 for k in clicking], widgets.handled_after
