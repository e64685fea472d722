"""The cell tools the model calls while a notebook page is connected: ``notebook_cells``,
``insert_cell``, ``edit_cell``, ``run_cell``, ``delete_cell``.

They are on the session's toolbox only while a frontend is connected; without one,
``propose_cell`` works as before. Each does its work on the main thread through the link
(``link.py``); ``run_cell`` runs the cell with ``cell_run.py``, and ``edit_cell``/``run_cell``
act on exactly the source the user approved (``review.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from ...errors import FrontendError
from ...tools.base import BuiltinTool, Image, ToolCapabilities, ToolFailure
from ...tools.context import ToolContext
from ...tools.progress import current_reporter
from ..runtime.bridge import MainThreadBridge
from ..text import clip
from .cell_run import claim_main_shell, outputs_for_model, run_cell_now
from .comm_protocol import CellType, DeleteOp, EditOp
from .link import NotebookLink, for_caller
from .review import approved

#: Characters of a cell's source ``notebook_cells`` shows.
MAX_LISTED_SOURCE = 4_000
#: Characters of a cell ``insert_cell`` or ``edit_cell`` may hold.
MAX_CELL_CHARS = 100_000

TOOL_NAMES = ("notebook_cells", "insert_cell", "edit_cell", "run_cell", "delete_cell")


def _describe(cells: Sequence[Mapping[str, object]]) -> str:
    if not cells:
        return "The notebook has no cells."
    parts = []
    for index, cell in enumerate(cells):
        kind = str(cell.get("cell_type", "code"))
        header = f"[{index}] id={cell.get('id')} {kind}"
        count = cell.get("execution_count")
        if kind == "code":
            header += f", ran as [{count}]" if count is not None else ", not run"
            if cell.get("edited"):
                header += ", edited since it ran"
        if cell.get("agent"):
            header += ", written by you (the agent)"
        body = clip(str(cell.get("source", "")), MAX_LISTED_SOURCE)
        part = f"{header}\n{body}"
        if cell.get("outputs"):
            part += f"\n--- outputs ---\n{cell['outputs']}"
        parts.append(part)
    return "\n\n".join(parts)


class _NotebookTool(BuiltinTool):
    def __init__(self, context: ToolContext, link: NotebookLink, bridge: MainThreadBridge) -> None:
        super().__init__(context)
        self.link = link
        self.bridge = bridge

    async def _on_main(self, fn: Callable[[], Any]) -> Any:
        if not self.link.connected:
            raise ToolFailure("no notebook frontend is connected (the notebook was closed)")
        try:
            return await self.bridge.call_on_main(for_caller(fn))
        except FrontendError as exc:
            raise ToolFailure(str(exc)) from None

    def _stop(self) -> bool:
        return self.bridge.stop_requested


def _text(args: dict[str, object], name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ToolFailure(f"'{name}' must be a string")
    if len(value) > MAX_CELL_CHARS:
        raise ToolFailure(f"'{name}' is too long (at most {MAX_CELL_CHARS} characters)")
    return value


class NotebookCellsTool(_NotebookTool):
    name = "notebook_cells"
    description = (
        "The user's open notebook as they see it now, unsaved edits included: each cell's id, "
        "type, source, execution count, whether it was edited since it ran, and an excerpt of "
        "its outputs. Use the ids with insert_cell, edit_cell, run_cell."
    )
    input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    async def execute(self, args: dict[str, object]) -> str:
        reply = await self._on_main(lambda: self.link.request({"op": "snapshot"}))
        cells = reply.get("cells")
        return _describe(cells if isinstance(cells, list) else self.link.cells)


class InsertCellTool(_NotebookTool):
    name = "insert_cell"
    description = (
        "Insert a new cell into the user's open notebook (it appears at once, marked as yours). "
        "By default it goes after the running %%agent cell, after the cells you inserted before "
        "in this answer, in order; 'after' names a cell id to insert after. It runs nothing "
        "(use run_cell). Returns the new cell's id."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "The cell's source"},
            "cell_type": {"type": "string", "enum": ["code", "markdown"], "default": "code"},
            "after": {"type": "string", "description": "Insert after the cell with this id"},
        },
        "required": ["source"],
    }

    async def execute(self, args: dict[str, object]) -> str:
        source = _text(args, "source")
        assert source is not None
        cell_type = args.get("cell_type", "code")
        if cell_type not in ("code", "markdown"):
            raise ToolFailure("'cell_type' must be 'code' or 'markdown'")
        kind: CellType = "markdown" if cell_type == "markdown" else "code"
        after = _text(args, "after", required=False)
        reply = await self._on_main(lambda: self.link.insert(source, kind, after))
        return f"Inserted {cell_type} cell {reply['cell_id']} (at position {reply.get('index')})."


class EditCellTool(_NotebookTool):
    name = "edit_cell"
    description = (
        "Replace old_string by new_string in one cell of the user's open notebook. old_string "
        "must occur exactly once in the cell's current source (read it with notebook_cells). "
        "The user sees the edit as a diff and accepts or rejects it."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "cell_id": {"type": "string"},
            "old_string": {"type": "string", "description": "Text to replace (exactly once)"},
            "new_string": {"type": "string", "description": "Its replacement"},
        },
        "required": ["cell_id", "old_string", "new_string"],
    }

    async def execute(self, args: dict[str, object]) -> str:
        cell_id, old, new = (_text(args, name) for name in ("cell_id", "old_string", "new_string"))
        if not old:
            raise ToolFailure("'old_string' must not be empty")
        assert cell_id is not None and new is not None
        pin = approved("edit_cell", cell_id)
        label = await self._on_main(lambda: self.link.turn()[0])
        op: EditOp = {
            "op": "edit",
            "turn": label,
            "cell_id": cell_id,
            "old_string": old,
            "new_string": new,
        }
        if pin is not None:  # the accepted diff, on the source it showed, or nothing
            op["expect"] = pin.source
        await self._on_main(lambda: self.link.request(op))
        return f"Edited cell {cell_id}."


class RunCellTool(_NotebookTool):
    name = "run_cell"
    description = (
        "Run one code cell of the user's open notebook in their kernel now, as if they ran it: "
        "its outputs (text, tables, plots, errors) appear in that cell with an execution count "
        "and are returned to you, plots as images. While it runs, the user sees how long it has "
        "run and its last output line. One cell runs at a time: wait for a run's result before "
        "the next run_cell."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "cell_id": {"type": "string"},
            "timeout": {
                "type": "number",
                "description": (
                    "Seconds the cell may run before it is interrupted (default and most: the "
                    "user's tool_timeout)"
                ),
            },
        },
        "required": ["cell_id"],
    }
    #: elapsed seconds and the last output line while the cell runs (``cell_run._Ticker``)
    capabilities: ClassVar[ToolCapabilities] = ToolCapabilities(reports_progress=True)

    def __init__(
        self,
        context: ToolContext,
        link: NotebookLink,
        bridge: MainThreadBridge,
        timeout: Callable[[], float | None],
    ) -> None:
        super().__init__(context, link, bridge)
        self.timeout = timeout

    async def execute(self, args: dict[str, object]) -> list[str | Image]:
        cell_id = _text(args, "cell_id")
        assert cell_id is not None
        limit, name, note = call_timeout(args.get("timeout"), self.timeout())
        pin = approved("run_cell", cell_id)
        expect = pin.source if pin is not None else None
        report = current_reporter()  # this call's: the main thread does not carry it
        try:
            with claim_main_shell(cell_id):
                result: tuple[bool, list[dict[str, Any]], int] = await self._on_main(
                    lambda: run_cell_now(
                        self.link, cell_id, limit, expect=expect, report=report, timeout_name=name
                    )
                )
        except FrontendError as exc:  # another run_cell holds the main shell
            raise ToolFailure(str(exc)) from None
        ok, outputs, count = result
        parts = outputs_for_model(outputs, count)
        if note:
            parts[0] = f"{parts[0]}\n\n{note}"
        if not ok:
            raise ToolFailure(str(parts[0]))
        return parts


def call_timeout(asked: object, ceiling: float | None) -> tuple[float | None, str, str]:
    """``run_cell``'s limit: the model's ``timeout`` within the user's ``tool_timeout``; the
    limit, its name for the timeout's error, and a note for the model when it was capped."""
    if asked is None:
        return ceiling, "tool_timeout", ""
    if isinstance(asked, bool) or not isinstance(asked, int | float) or not asked > 0:
        raise ToolFailure(f"'timeout' must be a positive number of seconds, not {asked!r}")
    wanted = float(asked)
    if ceiling is not None and wanted > ceiling:
        return (
            ceiling,
            "the user's tool_timeout",
            f"(timeout {wanted:g} s was asked for; a call runs at most the user's tool_timeout, "
            f"{ceiling:g} s)",
        )
    return wanted, "its timeout", ""


class DeleteCellTool(_NotebookTool):
    name = "delete_cell"
    description = "Delete one cell of the user's open notebook (%agent undo puts it back)."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"cell_id": {"type": "string"}},
        "required": ["cell_id"],
    }
    destructive: ClassVar[bool] = True

    async def execute(self, args: dict[str, object]) -> str:
        cell_id = _text(args, "cell_id")
        assert cell_id is not None
        label, running = await self._on_main(self.link.turn)
        if cell_id == running:
            raise ToolFailure("that is the running %%agent cell; it cannot be deleted now")
        op: DeleteOp = {"op": "delete", "turn": label, "cell_id": cell_id}
        await self._on_main(lambda: self.link.request(op))
        return f"Deleted cell {cell_id}."
