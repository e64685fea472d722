"""The running cell waits a moment while an agent cell beside it starts and shows its first words.

An answer beside a CPU-bound cell does its own work at half speed: the two share the GIL
(``runtime/main_pause.py`` says why and how the running cell is paused). Two stretches of an
answer are its own CPU work and decide how soon its first words show: its start — the subshell
runs the cell, the magic parses it, builds the agent and its view, the request is built and sent
— and the arrival of its first words, parsed on the session's loop and drawn on the subshell.
For each the running cell pauses until the stretch ends, at most ``HEAD_START_CAP_S``: with a
model that answers at once the whole answer starts at the speed it has on an idle kernel; with a
real one (first words after a second or so) the cell loses the cap at the start, and the time the
first words take to draw. Only an agent cell on a subshell beside a running main-shell cell
pauses anything.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from ..runtime.main_pause import PauseHold, main_pause
from ..runtime.services import register, service, unregister
from ..runtime.subshell import main_shell_busy, subshell_id

__all__ = ["HEAD_START_CAP_S", "HeadStart", "head_start_hold", "is_agent_cell"]

#: The longest the running cell waits for each stretch (seconds).
HEAD_START_CAP_S = 0.03


def is_agent_cell(source: str) -> bool:
    """Whether ``source`` is a ``%%agent`` cell or a ``%agent ask`` line (what answers beside)."""
    first = source.lstrip().split("\n", 1)[0].split()
    if not first:
        return False
    return first[0] == "%%agent" or first[:2] == ["%agent", "ask"]


class HeadStart:
    """IPython hooks: an agent cell starting on a subshell beside a running cell takes a hold on
    the main thread (``pre_run_cell``) that its answer releases once its first words show, or
    that ends with the cell (``post_run_cell``)."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._local = threading.local()

    def install(self) -> None:
        if getattr(self.shell, "kernel", None) is None:  # no subshells outside a kernel
            return
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        register(self.shell, self)

    def uninstall(self) -> None:
        hooks = (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell))
        for name, hook in hooks:
            with contextlib.suppress(ValueError):
                self.shell.events.unregister(name, hook)
        unregister(self.shell, self)

    def pre_run_cell(self, info: Any) -> None:
        source = getattr(info, "raw_cell", "") or ""
        if (
            subshell_id(self.shell) is not None
            and main_shell_busy(self.shell)
            and is_agent_cell(source)
        ):
            self._local.hold = main_pause.hold(HEAD_START_CAP_S)

    def post_run_cell(self, _result: Any) -> None:
        hold = self.current()
        self._local.hold = None
        if hold is not None:
            hold.release()

    def current(self) -> PauseHold | None:
        """The hold the agent cell running on this thread took, if it took one."""
        hold = getattr(self._local, "hold", None)
        return hold if isinstance(hold, PauseHold) else None


def head_start_hold(shell: Any) -> PauseHold | None:
    """The hold of the agent cell running on this thread beside a running cell, if any."""
    head_start = service(shell, HeadStart)
    return head_start.current() if head_start is not None else None
