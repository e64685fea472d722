"""Text cut to a budget with a visible mark: the one helper every notebook module clips with.

Summaries of kernel variables, tool-call views, the co-authoring link's results and the cell
history all cut long text the same way, so the model and the reader learn one mark. It lives
apart from ``summarize.py`` (which describes Python objects) so that a view or the co-authoring
link can clip without importing the kernel's object summaries.
"""

from __future__ import annotations

from ..tools.cut_mark import cut_end

__all__ = ["clip"]


def clip(text: str, budget: int) -> str:
    """``text`` cut to at most ``budget`` characters, with a visible mark when cut."""
    return cut_end(text, budget)
