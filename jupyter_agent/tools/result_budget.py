"""How many characters of a tool's result will reach the model uncut, for tools that page.

The agent cuts any result longer than ``max_result_chars`` to its head and tail
(``agent/results.py``). A tool that pages through something large — ``read_file`` — ends each
page with a note saying where the next one starts; if the agent then cut the middle out of the
page, following the note would skip what the model never saw. So whoever runs a call under a
cap (the agent's ``invoke``) sets it here for the time of the call, and a paging tool makes its
page fit: the note and the cut then agree. A ``ContextVar``: each call of a turn has its own,
and ``asyncio.to_thread`` carries it into the worker thread where a tool reads its file.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar

from .var_block import VarBlock

__all__ = ["PAGE_NOTE_ROOM", "page_chars", "result_budget"]

_BUDGET: ContextVar[int | None] = ContextVar("jupyter_agent_result_budget", default=None)

#: Characters a paging tool leaves for its note (and for redaction marks, which may lengthen a
#: result a little) when it fits a page into the budget.
PAGE_NOTE_ROOM = 1_000


def result_budget(max_chars: int | None) -> AbstractContextManager[None]:
    """Within this block, results are cut beyond ``max_chars`` characters (None: never)."""
    return VarBlock(_BUDGET, max_chars)


def page_chars(default: int, *, with_images: bool = False) -> int:
    """The characters a page may hold: ``default``, or less if the current call's result budget
    would cut it (leaving ``PAGE_NOTE_ROOM`` for the note, and at least half the budget).

    ``with_images``: the page may come with images, which take up to half the budget
    (``agent/results.py``), so the text gets the other half.
    """
    budget = _BUDGET.get()
    if budget is None:
        return default
    if with_images:
        budget //= 2
    return max(1, min(default, max(budget - PAGE_NOTE_ROOM, budget // 2)))
