"""The review in the page before a cell tool acts: ``edit_cell`` as a diff in the cell,
``run_cell`` with the code that will run; the tool then acts on exactly what was approved.

An approval handler wraps the session's (``review_approvals``): while a page is connected, the
user accepts or rejects an edit in the notebook itself (the diff made by ``review_diff.py``), and
is asked about a run with the cell's source as the page holds it now. What they approved is
pinned for that call alone (``approved``), so an approval names code, not a cell id.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from ...approvals import ApprovalHandler, ApprovalRequest, Decision
from ...errors import FrontendError
from ..runtime.bridge import MainThreadBridge
from .comm_protocol import ReviewOp
from .link import NotebookLink, link_for
from .review_diff import diff_lines, edited


@dataclass(frozen=True, slots=True)
class ApprovedCell:
    """What the user approved for one call: the cell's source as the prompt showed it
    (``run_cell``) or as the diff was computed on (``edit_cell``). The tool acts on exactly
    that, or refuses: an approval names code, not a cell id."""

    tool: str
    cell_id: str
    source: str


#: Set by the approval handler as the user says yes; read by the same call's tool. The gate asks
#: and then runs the call in one task, so a context variable belongs to that call alone.
_APPROVED: contextvars.ContextVar[ApprovedCell | None] = contextvars.ContextVar(
    "jupyter_agent_approved_cell", default=None
)


def approved(tool: str, cell_id: str) -> ApprovedCell | None:
    """The approval this call of ``tool`` on ``cell_id`` was given, if it was asked about."""
    pin = _APPROVED.get()
    if pin is None or pin.tool != tool or pin.cell_id != cell_id:
        return None
    _APPROVED.set(None)
    return pin


def review_approvals(
    inner: ApprovalHandler, shell: Any, bridge: MainThreadBridge
) -> ApprovalHandler:
    """``inner``, except that ``edit_cell`` is asked about as a diff in the notebook, and
    ``run_cell`` with the cell's source as it will run (fetched from the page before asking)."""

    async def handler(request: ApprovalRequest) -> Decision:
        link = link_for(shell)
        _APPROVED.set(None)
        if request.name not in ("edit_cell", "run_cell") or link is None or not link.connected:
            return await inner(request)
        if request.name == "run_cell":
            return await _ask_run(inner, request, link, bridge)
        return await _ask_edit(request, link, bridge)

    return handler


async def _cell_source(link: NotebookLink, bridge: MainThreadBridge, cell_id: str) -> str | None:
    """Cell ``cell_id``'s source as the running cell's page holds it now (unsaved edits too)."""
    reply = await link.request_async(bridge, {"op": "snapshot"})
    cells = reply.get("cells")
    listed = cells if isinstance(cells, list) else []
    cell = next((c for c in listed if isinstance(c, dict) and c.get("id") == cell_id), None)
    if cell is None or not isinstance(cell.get("source"), str):
        return None
    return str(cell["source"]) if cell.get("cell_type") == "code" else None


async def _ask_edit(
    request: ApprovalRequest, link: NotebookLink, bridge: MainThreadBridge
) -> Decision:
    """Show the edit as a diff in the cell, made here through the one sanitising function
    (``review_diff``), over the source it was computed on; an accepted edit applies to that."""
    args = request.input
    cell_id, old, new = (
        str(args.get(name, "")) for name in ("cell_id", "old_string", "new_string")
    )
    try:
        before = await _cell_source(link, bridge, cell_id)
        if before is None:
            return Decision(False, f"the edit could not be shown: no code cell with id {cell_id}")
        try:
            after = edited(before, old, new)
        except ValueError as exc:
            return Decision(False, f"the edit could not be shown: {exc}")
        op: ReviewOp = {
            "op": "review",
            "cell_id": cell_id,
            "before": before,
            "lines": diff_lines(before, after),
        }
        reply = await link.request_async(bridge, op)
    except FrontendError as exc:
        return Decision(False, f"the edit could not be shown: {exc}")
    if reply.get("accepted"):
        _APPROVED.set(ApprovedCell("edit_cell", cell_id, before))
        return Decision(True)
    return Decision(False, "the user rejected the edit in the notebook")


async def _ask_run(
    inner: ApprovalHandler, request: ApprovalRequest, link: NotebookLink, bridge: MainThreadBridge
) -> Decision:
    """Ask about a ``run_cell`` showing the code that will run, as the page holds it now."""
    cell_id = str(request.input.get("cell_id"))
    try:
        source = await _cell_source(link, bridge, cell_id)
    except FrontendError as exc:
        return Decision(False, f"the cell could not be shown: {exc}")
    if source is None:
        return Decision(False, f"there is no code cell with id {cell_id} to show the user")
    shown = ApprovalRequest(
        request.call_id, request.name, {"cell_id": cell_id, "source": source}, request.reason
    )
    decision = await inner(shown)
    if decision.approved:
        _APPROVED.set(ApprovedCell("run_cell", cell_id, source))
    return decision
