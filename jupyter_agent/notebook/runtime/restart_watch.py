"""End a ``%%agent`` turn as soon as its kernel is asked to shut down or restart.

A restart sends ``shutdown_request`` on the control channel; ipykernel answers it on its own
thread and sets ``shell.exit_now``, then waits for the running cell, which the turn keeps busy
(a model reply, an approval prompt), until the manager kills the process a few seconds later.
A turn killed there left its live widgets in the saved notebook ("model not found" when it is
opened again), its record "running", and, from the comm poller, a ``ZMQError`` traceback.
So while a turn runs, this watches ``exit_now`` and stops the turn at once, as Stop would: the
record is made static, says the kernel was restarted, and the cell ends before the kill.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

#: Seconds between looks at ``shell.exit_now``.
WATCH_INTERVAL_S = 0.1
#: What the record says of a turn cut by a restart (or a shutdown) of its kernel.
RESTARTED = "■ The kernel was restarted (or shut down) during this turn; the turn ended here."


class RestartWatch:
    """Calls ``on_restart`` once, on its own thread, when ``shell.exit_now`` becomes true."""

    def __init__(self, shell: Any, on_restart: Callable[[], None]) -> None:
        self._shell = shell
        self._on_restart = on_restart
        self._done = threading.Event()
        self.fired = False
        self._thread = threading.Thread(target=self._watch, name="agent-restart-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(WATCH_INTERVAL_S):
            if getattr(self._shell, "exit_now", False):
                self.fired = True
                self._on_restart()
                return

    def stop(self) -> None:
        self._done.set()
