"""``propose_cell``: the agent writes code into a new cell for the user to read and run.

It runs nothing. The proposals of one ``%%agent`` cell are collected while the turn runs and, when
the cell finishes (IPython's ``post_run_cell``), become one new unexecuted code cell right after
it, in the order they were made: ``shell.set_next_input(code, replace=False)``. (A kernel keeps
only one such payload per execution, so they must be joined; in terminal IPython the code is the
next input at the prompt.)

With the co-authoring extension connected (``coauthor/link.py``) the cell is placed through the
notebook model instead, below the ``%%agent`` cell, marked as the agent's: a re-run of that cell
then replaces its own earlier proposal — the agent's cell right below it, never run and holding
the code proposed last time (or the same code again) — instead of adding one more on every run.
A cell the user ran or edited is theirs: the new proposal goes above it. Without the extension
the kernel cannot see the notebook, and Lab and Notebook 7 add a cell for each
``set_next_input``.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from ...tools.base import BuiltinTool, ToolFailure
from ...tools.context import ToolContext
from ..coauthor.comm_protocol import CellInfo, InsertOp
from ..runtime.services import register, service, unregister

#: Characters of code one proposal may hold.
MAX_PROPOSAL_CHARS = 100_000


class CellProposals:
    """The code proposed during the running cell, placed as one new cell when it finishes."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._pending: list[str] = []
        self._lock = threading.Lock()
        self._installed = False
        #: What was last proposed below each ``%%agent`` cell (by cell id), through the notebook.
        self._placed: dict[str, str] = {}

    def add(self, code: str) -> int:
        with self._lock:
            self._pending.append(code)
            return len(self._pending)

    def install(self) -> None:
        if not self._installed:
            self.shell.events.register("post_run_cell", self.flush)
            self._installed = True
            register(self.shell, self)

    def uninstall(self) -> None:
        if self._installed:
            self.shell.events.unregister("post_run_cell", self.flush)
            self._installed = False
        unregister(self.shell, self)

    def flush(self, _result: Any = None) -> None:
        """Place what was proposed as one new cell (on the main thread, at the cell's end)."""
        with self._lock:
            pending, self._pending = self._pending, []
        if pending:
            code = "\n\n".join(part.rstrip("\n") for part in pending)
            if not self._place_in_notebook(code):
                self.shell.set_next_input(code, replace=False)

    def _place_in_notebook(self, code: str) -> bool:
        """Put ``code`` below the running cell through the co-authoring extension, in place of
        its own earlier proposal; ``False`` when no extension is connected (or it failed)."""
        from ...errors import FrontendError
        from ..coauthor.link import link_for

        link = link_for(self.shell)
        if link is None or not link.connected:
            return False
        try:
            label, running = link.turn()
            if running is None:
                return False
            cells = link.request({"op": "snapshot"}).get("cells") or []
            ids = [cell.get("id") for cell in cells if isinstance(cell, dict)]
            if running not in ids:
                return False
            below = ids.index(running) + 1
            after = cells[below] if below < len(cells) else None
            if after is not None and self._own_proposal(after, running, code):
                if after.get("source") == code:
                    return True  # the same proposal again: it is already there
                link.request({"op": "delete", "turn": label, "cell_id": after["id"]})
            op: InsertOp = {
                "op": "insert",
                "turn": label,
                "source": code,
                "cell_type": "code",
                "after": running,
            }
            link.request(op)
        except FrontendError:
            return False
        self._placed[running] = code
        return True

    def _own_proposal(self, cell: CellInfo, running: str, code: str) -> bool:
        """Whether ``cell`` is this cell's earlier proposal, still as the agent left it."""
        return (
            bool(cell.get("agent"))
            and cell.get("cell_type") == "code"
            and cell.get("execution_count") is None
            and cell.get("source") in (code, self._placed.get(running))
        )


class ProposeCellTool(BuiltinTool):
    name = "propose_cell"
    description = (
        "Propose Python code as a new notebook cell, placed right after the user's %%agent cell "
        "when your answer ends. It runs nothing: the user reads it and runs it. Use it for code "
        "the user should keep or run themselves (a fix, a plot, the next analysis step). "
        "Several proposals in one answer become one cell, in order."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "The cell's Python source"}},
        "required": ["code"],
    }

    def __init__(self, context: ToolContext, proposals: CellProposals) -> None:
        super().__init__(context)
        self.proposals = proposals

    async def execute(self, args: dict[str, object]) -> str:
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            raise ToolFailure("'code' must be non-empty Python source")
        if len(code) > MAX_PROPOSAL_CHARS:
            raise ToolFailure(f"the proposed cell is too long (at most {MAX_PROPOSAL_CHARS} chars)")
        number = self.proposals.add(code)
        lines = code.count("\n") + 1
        where = "the new cell after this %%agent cell"
        if number > 1:
            return f"Added {lines} lines to {where} (proposal {number} of this answer)."
        return f"Proposed {lines} lines as {where}; the user will see it when your answer ends."


def proposals_for(shell: Any) -> CellProposals | None:
    """The proposals collector installed on ``shell``, if any."""
    return service(shell, CellProposals)
