"""The page as a source of a re-run cell's turn record: asked over the co-author link.

The frontend extension keeps a finished ``%%agent`` cell's record in the cell's metadata
(``labextension/src/turn_record.ts``): the page clears a cell's outputs as the cell starts, so the
record the kernel wrote into the answer's output is moved into the cell as it arrives. When the
cell runs again, this source asks the page that runs it for the cell's record with the
``turn_record`` operation (``comm_protocol.TurnRecordOp``) and hands back what the page says,
unchecked — the page is not trusted: ``record.verify_record`` decides.

The question is asked on the main thread as the cell starts, before its turn, through
``NotebookLink.request``: it polls the shell socket for the page's answer itself (the cell holds
the kernel's main thread, so nothing else would deliver it), handing the messages behind it — the
next cells of a Run All — back to the kernel in order.

A page that is not connected (yet) has still said what the cell holds: JupyterLab and Notebook 7
send a cell's metadata with the request that runs it, the record included. That is read instead —
in a Run All right after ``%load_ext jupyter_agent`` the page's comm waits behind the queued cells,
and waiting for it would hold every cell of a frontend without the extension — and so it is for a
cell running beside a busy one (a subshell's thread): the comm's messages are the main thread's
to read. A page whose
extension does not know the operation, or no answer in time: no record from here (``sources.py``
then asks the saved notebook).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ...errors import FrontendError
from ..coauthor.comm_protocol import TurnRecordOp
from ..coauthor.link import NotebookLink, link_for
from .record import TURN_KEY

__all__ = ["RECORD_TIMEOUT_S", "PageRecordSource", "page_record_source"]

#: Seconds the page has to answer: it reads the cell's metadata, so it answers at once; a page
#: that does not (wedged, or gone without closing its comm) must not hold the cell long.
RECORD_TIMEOUT_S = 5.0


class _Cell(Protocol):
    """The running cell as ``sources.CellRef`` names it: by the id its request carries."""

    @property
    def cell_id(self) -> str | None: ...


class PageRecordSource:
    """The record the page that runs the cell holds for it."""

    def __init__(self, shell: Any, link: NotebookLink) -> None:
        self.shell = shell
        self.link = link

    def __repr__(self) -> str:
        return f"PageRecordSource({self.link.path or 'no page'!r})"

    def record_for(self, cell: _Cell) -> object | None:
        if cell.cell_id is None:
            return None  # not run from a page (nbclient, a console): the page cannot say
        if self.link.page() is None or threading.current_thread() is not threading.main_thread():
            return self._sent_with_the_request()
        op: TurnRecordOp = {"op": "turn_record", "cell_id": cell.cell_id}
        try:
            reply = self.link.request(op, timeout=RECORD_TIMEOUT_S)
        except FrontendError:
            return None
        return reply.get("record")

    def _sent_with_the_request(self) -> object | None:
        """The record in the metadata the running cell's execute request carries, if any."""
        try:
            parent = self.link.kernel.get_parent()
        except Exception:  # no kernel, or an ipykernel without channels
            return None
        metadata = parent.get("metadata") if isinstance(parent, dict) else None
        return metadata.get(TURN_KEY) if isinstance(metadata, dict) else None


def page_record_source(shell: Any) -> PageRecordSource | None:
    """The page's source for ``shell``'s kernel, or ``None`` without the co-author link."""
    link = link_for(shell)
    return PageRecordSource(shell, link) if link is not None else None
