"""The main-thread pump sleeps on the kernel's widget channel as well as on its own wake-up, so a
widget message (Stop, Approve, a tool toggle) is handled within milliseconds during a turn —
before, only the pump's idle work looked at it, every 0.15–0.5 s.

The widget channel here is a real socket pair standing in for the kernel's shell socket: a
``CommWaiter`` that handles a "click" (a byte on it) from the main thread, as
``KernelCommPoller`` does with comm messages; a thread clicks while a run is in progress.
"""

from __future__ import annotations

import asyncio
import select
import socket
import threading
import time

from jupyter_agent.events import TextDelta
from jupyter_agent.notebook.runtime.bridge import BackgroundLoop, MainThreadBridge


class SocketWidgets:
    """Clicks arrive as bytes on a socket; handling one records how long it waited."""

    def __init__(self) -> None:
        self.inbox, self.outbox = socket.socketpair()
        self.inbox.setblocking(False)
        self.sent: list[float] = []
        self.waited: list[float] = []
        self.handled_on: set[str] = set()

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
        self.handled_on.add(threading.current_thread().name)
        return handled

    def wait(self, timeout_s: float, wake_fd: int) -> int:
        select.select([self.inbox, wake_fd], [], [], timeout_s)
        return self.poll(0)

    def close(self) -> None:
        self.inbox.close()
        self.outbox.close()


def run_with_clicks(bridge: MainThreadBridge, widgets: SocketWidgets, work: object) -> None:
    clicker_done = threading.Event()

    def clicker() -> None:
        time.sleep(0.1)
        for _ in range(10):
            widgets.click()
            time.sleep(0.05)
        clicker_done.set()

    threading.Thread(target=clicker, daemon=True).start()
    events: list[object] = []
    bridge.comm_waiter = widgets
    try:
        # the magics' idle work also polls the widgets (the only way before the pump slept on them)
        bridge.run(work, events.append, on_idle=lambda: widgets.poll(0))  # type: ignore[arg-type]
    finally:
        bridge.comm_waiter = None
    assert clicker_done.wait(5)


def test_a_click_wakes_the_pump_during_a_quiet_turn() -> None:
    loop = BackgroundLoop()
    bridge = MainThreadBridge(loop)
    widgets = SocketWidgets()

    async def quiet_turn() -> None:
        await asyncio.sleep(1.0)  # waiting for the model: nothing posted

    try:
        run_with_clicks(bridge, widgets, quiet_turn())
    finally:
        widgets.close()
        loop.close()
    assert len(widgets.waited) == 10
    assert widgets.handled_on == {threading.main_thread().name}
    assert max(widgets.waited) < 0.05, [round(w, 3) for w in widgets.waited]


def test_a_click_is_handled_between_the_items_of_a_busy_batch() -> None:
    loop = BackgroundLoop()
    bridge = MainThreadBridge(loop)
    widgets = SocketWidgets()

    async def burst() -> None:
        # 120 main-thread calls of 10 ms each, queued at once: one long batch for the pump
        calls = [bridge.call_on_main(lambda: time.sleep(0.01)) for _ in range(120)]
        await asyncio.gather(*calls)
        bridge.post(TextDelta("done"))

    try:
        run_with_clicks(bridge, widgets, burst())
    finally:
        widgets.close()
        loop.close()
    assert len(widgets.waited) == 10
    assert max(widgets.waited) < 0.05, [round(w, 3) for w in widgets.waited]
