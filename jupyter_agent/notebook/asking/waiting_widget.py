"""A widget in the running cell that waits for the user's click: an approval, a question.

Both are shown the same way: on the main thread, with the running cell's widget poller (or one of
their own) pumping widget messages until the widget has its answer or the cell's Stop is pressed;
then the widget gives way to its static line (nothing stays open in the kernel, no widget view is
saved) and is closed. With nobody at a frontend or terminal there is no one to wait for.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..runtime.bridge import MainThreadBridge
from ..runtime.kernel_comm import KernelCommPoller, unattended_kernel


class WaitingWidget(Protocol):
    def static_bundle(self) -> dict[str, str]: ...

    def close_all(self) -> None: ...


W = TypeVar("W", bound=WaitingWidget)


def someone_can_answer(shell: Any) -> bool:
    """A frontend that answers the running cell, or (outside a kernel) a terminal."""
    if getattr(shell, "kernel", None) is None:
        return sys.stdin is not None and sys.stdin.isatty()
    return not unattended_kernel(shell)


def wait_for_click(
    shell: Any,
    poller: KernelCommPoller | None,
    bridge: MainThreadBridge,
    make: Callable[[], W],
    *,
    answered: Callable[[W], bool],
    give_up: Callable[[W, str], None],
) -> W | None:
    """Show ``make()`` and pump until ``answered(widget)``; ``give_up(widget, why)`` on Stop or
    an interrupt. ``poller``: the running cell's, else one is made for this wait.

    ``None`` (nothing made, nothing shown) when no widget message can reach this kernel: the
    caller asks at a text prompt instead.
    """
    from .._ipython import DisplayHandle

    owned = False
    if poller is None:
        poller = KernelCommPoller.for_shell(shell)
        owned = poller is not None
    if poller is None or not poller.available:
        return None
    widget = make()
    handle = DisplayHandle()
    handle.display(widget)
    try:
        poller.pump_until(lambda: answered(widget) or bridge.stop_requested)
    finally:
        if not answered(widget):  # Stop, or an interrupt, while waiting: lock the widget
            stopped = bridge.stop_requested
            give_up(widget, "the user stopped the turn" if stopped else "the cell was interrupted")
        handle.update(widget.static_bundle(), raw=True)
        widget.close_all()
        if owned:
            poller.close()
    return widget
