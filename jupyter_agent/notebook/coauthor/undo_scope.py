"""Whose turn ``%agent undo`` takes back: the notebook's, not the folder's.

The file journal lives in the workspace (``.jupyter_agent/undo``), so every notebook in a folder
shares it; and several notebooks may share one kernel. Each turn's entry is signed with the
notebook it ran in, and ``%agent undo`` run in a notebook sees only that notebook's entries:

- the page that ran the cell, when the co-authoring extension is connected (its notebook's
  path, as the page announced it: right also when several notebooks share the kernel);
- else the notebook the Jupyter server started the kernel for (``JPY_SESSION_NAME``);
- else none (terminal IPython, a script): every entry, as before.
"""

from __future__ import annotations

import os
from typing import Any


def notebook_scope(shell: Any) -> str:
    """The notebook the running cell belongs to ("" when it cannot be told)."""
    from .link import link_for

    link = link_for(shell)
    if link is not None and link.connected:
        page = link.page()
        if page is not None and page.path:
            return f"notebook:{page.path}"
    session = os.environ.get("JPY_SESSION_NAME", "")
    return f"notebook:{session}" if session else ""


def scope_journal(journal: Any, shell: Any) -> None:
    """Point ``journal`` (a ``ChangeJournal`` or ``None``) at the running cell's notebook."""
    if journal is not None:
        journal.scope = notebook_scope(shell)


def name_turn(shell: Any, journal: Any, label: str | None) -> None:
    """As a turn ends: its file entry and the page's cell entry named ``label`` (the cell's own
    ``cell N``, known only now: each cell the turn ran took a number before it)."""
    from .link import link_for

    if label is None:
        return
    if journal is not None:
        journal.relabel(label)
    link = link_for(shell)
    if link is not None and link.connected:
        link.finish_turn(label)
