"""How long a cell waited behind a running one, so an agent cell that queued can say so.

A kernel runs one cell at a time on its main shell. In JupyterLab and Notebook 7 our extension
sends a ``%%agent`` cell run while another cell runs to a subshell (``subshell.py``) or marks it
queued; elsewhere — VS Code, a console, a frontend without the extension — the cell simply
waits, and an answer that arrives late, with no word why, reads as a slow model. The SPEC's
"Long work": elsewhere "the cell waits as any cell does and says so".

The kernel is not told when a request reached it, only when the frontend sent it (the header's
``date``, on the frontend's clock). The clocks may differ, so one request's age is no measure;
the difference between two is: each cell's start, on the kernel's clock, minus its header date
is the clocks' offset plus the time it waited, and the smallest such value seen is the offset
plus the shortest wait (about none). A cell's wait is its value minus that smallest one — an
underestimate when every cell so far had waited, never an invention. It counts as waiting
*behind a running cell* only when the cell started as the cell before it ended.
"""

from __future__ import annotations

import contextlib
import datetime
import time
from typing import Any

from .services import register, service, unregister
from .subshell import on_subshell_thread, request_header

__all__ = ["QueueWaits", "waited_behind_a_cell"]

#: A wait shorter than this is not worth a line.
SHOWN_FROM_S = 1.0
#: A cell that started this soon after the cell before it ended was waiting for it to end.
BEHIND_WITHIN_S = 0.5


def _sent_at(shell: Any) -> float | None:
    """When the frontend sent the request the main shell runs now (its clock), or ``None``
    outside a kernel or without a date."""
    date = request_header(shell).get("date")
    if isinstance(date, str):
        with contextlib.suppress(ValueError):
            date = datetime.datetime.fromisoformat(date.replace("Z", "+00:00"))
    if not isinstance(date, datetime.datetime) or date.tzinfo is None:
        return None
    return date.timestamp()


class QueueWaits:
    """Follows the main shell's cells (IPython's ``pre_run_cell``/``post_run_cell``) and keeps
    how long the current one waited behind the one before it."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._least_offset: float | None = None
        self._last_end: float | None = None
        #: The wait of the cell that runs now, when it waited behind a running cell.
        self.current: float | None = None
        self._installed = False

    def install(self) -> None:
        if self._installed:
            return
        self.shell.events.register("pre_run_cell", self._pre_run_cell)
        self.shell.events.register("post_run_cell", self._post_run_cell)
        self._installed = True
        register(self.shell, self)

    def uninstall(self) -> None:
        for name, callback in (
            ("pre_run_cell", self._pre_run_cell),
            ("post_run_cell", self._post_run_cell),
        ):
            with contextlib.suppress(ValueError):
                self.shell.events.unregister(name, callback)
        self._installed = False
        unregister(self.shell, self)

    def _pre_run_cell(self, info: Any) -> None:
        if on_subshell_thread():
            return
        now = time.time()
        self.current = None
        sent = _sent_at(self.shell)
        if sent is None:
            return
        offset = now - sent
        if self._least_offset is None or offset < self._least_offset:
            self._least_offset = offset
        waited = offset - self._least_offset
        behind = self._last_end is not None and now - self._last_end <= BEHIND_WITHIN_S
        if behind and waited >= SHOWN_FROM_S:
            self.current = waited

    def _post_run_cell(self, result: Any) -> None:
        if not on_subshell_thread():
            self._last_end = time.time()


def waited_behind_a_cell(shell: Any) -> str | None:
    """The one line an agent cell that waited behind a running cell shows, or ``None``."""
    waits = service(shell, QueueWaits)
    if waits is None or waits.current is None:
        return None
    return (
        f"↳ This cell waited {waits.current:.0f} s behind a running cell (a kernel runs one cell "
        "at a time; the guide's “While a cell runs” says how to ask beside it)."
    )
