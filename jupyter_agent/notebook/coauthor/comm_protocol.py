"""The co-authoring comm's messages, typed: the kernel's mirror of ``labextension/src/protocol.ts``.

The kernel and the page were written apart and speak JSON over a comm (``link.py``); a field
renamed on one side only used to show up as a tool that silently did nothing. So every message
is a ``TypedDict`` here, named as the page's interface without its ``I`` (``InsertOp`` for
``IInsertOp``), with the same fields, the same optional ones and the same literals, and
``tests/notebook/test_comm_protocol.py`` reads ``protocol.ts`` and fails when the two differ.

The kernel writes an operation's body (``OperationBody``: ``{"op": "insert", ...}``); sending it
adds the ``Envelope`` (``type``, ``id``, ``noreply``) and, to an operation that names its
``turn``, the ``Stamp`` its undo journal entry is keyed and dated by. The page answers with a
``Success`` plus the operation's result (``Results``) plus the notebook, or a ``Failure``. What
the page sends is read as a ``Reply`` (every field optional: a page is not trusted to send what
it should, so each use still checks).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

#: The comm the page opens to its kernel's agent.
TARGET = "jupyter_agent.notebook"
#: The comm the kernel opens as the extension loads, so open notebooks connect.
HELLO_TARGET = "jupyter_agent.hello"

#: An nbformat output (``output_type`` and what that type carries), as nbformat defines it.
Output = dict[str, Any]
#: An nbformat cell, as nbformat defines it.
NbCell = dict[str, Any]

CellType = Literal["code", "markdown"]
#: The kind of one row of a review's diff.
DiffKind = Literal["same", "del", "add"]
#: One row of a review's diff: ``[kind, text]``, the text made visible (``review_diff.py``).
DiffRow = list[str]

# -- what the page tells the kernel about its notebook ----------------------------------------


class CellInfo(TypedDict):
    """One cell, as the kernel is told about it."""

    id: str
    cell_type: str
    source: str
    execution_count: int | None
    #: Run, and its source changed since.
    edited: bool
    #: An excerpt of its outputs, as text.
    outputs: str
    #: Written by the agent (its metadata says so).
    agent: bool


class NotebookSnapshot(TypedDict):
    """The notebook as the page holds it, unsaved edits included."""

    path: str
    cells: list[CellInfo]


class Hello(NotebookSnapshot):
    """The comm's opening message."""

    type: Literal["hello"]


class CellsAnnouncement(NotebookSnapshot):
    """Sent a moment after each change of the notebook."""

    type: Literal["cells"]


class KernelHello(TypedDict):
    """What the kernel sends on the hello comm (``HELLO_TARGET``)."""

    version: int


# -- operations (kernel → page) ---------------------------------------------------------------


class Envelope(TypedDict):
    """Every operation's envelope, added as it is sent."""

    type: Literal["op"]
    id: int
    #: The kernel does not wait: no reply (a run's outputs, its end, a relabel).
    noreply: NotRequired[bool]


class Stamp(TypedDict):
    """Added to each operation that names its turn (a change to the notebook)."""

    #: The turn's key: its %%agent cell's execute_request.
    turn_id: str
    #: When (the kernel's clock, seconds).
    at: float


class SnapshotOp(TypedDict):
    op: Literal["snapshot"]


class PeekOp(TypedDict):
    op: Literal["peek"]


class RelabelOp(TypedDict):
    op: Literal["relabel"]
    turn_id: str
    label: str


class InsertOp(TypedDict):
    op: Literal["insert"]
    turn: str
    source: str
    cell_type: CellType
    #: The cell to insert after; none: at the end.
    after: NotRequired[str | None]


class EditOp(TypedDict):
    op: Literal["edit"]
    turn: str
    cell_id: str
    old_string: str
    new_string: str
    #: The source the user approved the diff on: the edit applies to that or not at all.
    expect: NotRequired[str]


class ReviewOp(TypedDict):
    op: Literal["review"]
    cell_id: str
    #: The source the diff was made on: never shown over anything else.
    before: str
    lines: list[DiffRow]


class DeleteOp(TypedDict):
    op: Literal["delete"]
    turn: str
    cell_id: str


class RunStartOp(TypedDict):
    op: Literal["run_start"]
    turn: str
    cell_id: str
    #: The source the user approved running: nothing runs when the cell holds another.
    expect: NotRequired[str]


class OutputsOp(TypedDict):
    op: Literal["outputs"]
    cell_id: str
    outputs: list[Output]


class RunEndOp(TypedDict):
    op: Literal["run_end"]
    cell_id: str
    outputs: list[Output]
    execution_count: NotRequired[int]


class UndoOp(TypedDict):
    op: Literal["undo"]


class TurnRecordOp(TypedDict):
    """The record of the cell's last finished turn (``jupyter_agent.turn`` in its metadata),
    which the kernel replays when the cell runs again with the same prompt."""

    op: Literal["turn_record"]
    cell_id: str


#: An operation as the kernel's code writes it.
OperationBody = (
    SnapshotOp
    | PeekOp
    | RelabelOp
    | InsertOp
    | EditOp
    | ReviewOp
    | DeleteOp
    | RunStartOp
    | OutputsOp
    | RunEndOp
    | UndoOp
    | TurnRecordOp
)

# -- replies (page → kernel) ------------------------------------------------------------------


class NoResult(TypedDict):
    """An empty result."""


class PeekResult(TypedDict):
    #: Absent with an empty journal.
    turn: NotRequired[str]
    at: NotRequired[float]


class InsertResult(TypedDict):
    cell_id: str
    index: int


class EditResult(TypedDict):
    before: str
    after: str


class ReviewResult(TypedDict):
    """The user's decision on a review."""

    accepted: bool
    #: The source the diff was made on: an accepted edit applies to it alone.
    before: str


class DeleteResult(TypedDict):
    #: The cell as it was.
    deleted: NbCell


class RunStartResult(TypedDict):
    #: The source the cell holds: what the kernel runs (unless it approved another).
    source: str


class UndoResult(TypedDict):
    undone: bool
    message: str
    turn: NotRequired[str]
    restored: NotRequired[list[str]]
    skipped: NotRequired[list[str]]


class TurnRecordResult(TypedDict):
    #: The cell's record as the page holds it, unchecked (the kernel verifies its signature).
    record: dict[str, Any] | None


class Results(TypedDict):
    """Each operation's result."""

    snapshot: NoResult
    peek: PeekResult
    relabel: NoResult
    insert: InsertResult
    edit: EditResult
    review: ReviewResult
    delete: DeleteResult
    run_start: RunStartResult
    outputs: NoResult
    run_end: NoResult
    undo: UndoResult
    turn_record: TurnRecordResult


class Success(TypedDict):
    type: Literal["reply"]
    id: int
    ok: Literal[True]


class Failure(TypedDict):
    type: Literal["reply"]
    id: int
    ok: Literal[False]
    error: str


class Reply(TypedDict, total=False):
    """A reply as the kernel reads it: any of ``Success``/``Failure``, the notebook and every
    result's fields, each perhaps missing (the page is checked, not trusted). A reply the kernel
    makes up itself (the page left) has no ``id``."""

    type: Literal["reply"]
    id: int
    ok: bool
    error: str
    path: str
    cells: list[CellInfo]
    turn: str
    at: float
    cell_id: str
    index: int
    before: str
    after: str
    accepted: bool
    deleted: NbCell
    source: str
    undone: bool
    message: str
    restored: list[str]
    skipped: list[str]
    record: dict[str, Any] | None
