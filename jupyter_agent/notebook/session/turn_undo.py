"""``%agent undo`` over the two journals a turn writes: the files its tools changed (the
workspace's ``ChangeJournal``) and the notebook cells it inserted, edited or deleted (the page's
journal, over the co-authoring link).

The newer of the two entries is undone, both when they are the same ``%%agent`` cell's; only this
notebook's turns count, not the folder's (``coauthor/undo_scope.py``). Taken out of
``session.py``: the session holds the journal, this decides what one undo takes back.
"""

from __future__ import annotations

from typing import Any

from ...errors import SessionError, WorkspaceError
from ...tools.context import ToolContext
from ...tools.guard.journal import ChangeJournal
from ...tools.one_line import one_line
from ..coauthor.link import newest_cell_change, undo_cells
from ..coauthor.undo_scope import scope_journal


def open_journal(context: ToolContext, shell: Any, in_notebook: bool) -> str:
    """A change journal for the workspace on ``context`` (``None`` there if it cannot be made);
    why it cannot, or "".

    It lives on disk (``.jupyter_agent/undo``), so a new one for the same workspace — after a
    settings change or a kernel restart — undoes what the earlier ones recorded.
    """
    try:
        context.journal = ChangeJournal(context.confinement)
        if in_notebook:  # this notebook's turns (``undo_scope.py``)
            scope_journal(context.journal, shell)
    except (WorkspaceError, OSError) as exc:  # e.g. a symlink planted where it would live
        context.journal = None
        return one_line(str(exc))
    return ""


def undo_turn(journal: ChangeJournal | None, shell: Any, in_notebook: bool, problem: str) -> str:
    """Restore what the file tools changed in the last ``%%agent`` cell, and the notebook's
    cells it inserted, edited or deleted; says what it did. ``problem``: why there is no
    ``journal``."""
    scope_journal(journal, shell)  # this notebook's last turn, not the folder's
    cells = newest_cell_change(shell) if in_notebook else None
    files = journal.pending_entry() if journal is not None else None
    # the newest of the two journals' entries; both when they are the same cell's
    if cells is not None and (files is None or files[0] == cells[0] or cells[1] >= files[1]):
        undone = undo_cells(shell)
        message = undone.message if undone is not None else "No cell changes to undo."
        if journal is not None and files is not None and files[0] == cells[0]:
            return f"{message}\n{journal.undo().message}"
        return message
    if journal is None:
        raise SessionError(f"Undo is not available: {problem}")
    return journal.undo().message
