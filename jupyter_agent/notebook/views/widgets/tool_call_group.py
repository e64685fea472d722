"""``ToolCallGroup``: the tool calls of one model reply, shown together.

The agent runs the calls of one reply concurrently; when there is more than one, the group says
so ("3 calls in parallel") and indents them under that label.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ...inert import html_bundle
from ..call_record import group_html, group_label, group_text
from .inert_html import InertHTML
from .tool_call_view import SharedParts, ToolCallView, widget_bundle


class ToolCallGroup(widgets.VBox):  # type: ignore[misc]
    """A labelled column of ``ToolCallView``s from one model reply."""

    def __init__(self, **kwargs: Any) -> None:
        self._label = InertHTML(layout=widgets.Layout(display="none"))
        self._column = widgets.VBox()
        super().__init__(children=[self._label, self._column], **kwargs)
        self.views: list[ToolCallView] = []
        self._parts: SharedParts | None = None

    def start(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolCallView:
        """A view for a call that starts, added to the group; its title's layout and style are
        the group's (one model each for all its calls)."""
        if self._parts is None:
            self._parts = SharedParts()
        view = ToolCallView(call_id, name, arguments, parts=self._parts)
        self.add(view)
        return view

    def add(self, view: ToolCallView) -> None:
        self.views.append(view)
        self._column.children = tuple(self.views)
        self._refresh_label()

    def view(self, call_id: str) -> ToolCallView | None:
        for view in self.views:
            if view.call_id == call_id:
                return view
        return None

    @property
    def parallel(self) -> bool:
        return len(self.views) > 1

    def label_text(self) -> str:
        return group_label(self.views)

    def _refresh_label(self) -> None:
        if self.parallel:
            self._label.value = f"<i>⇉ {self.label_text()}</i>"
            if len(self.views) == 2:
                self._label.layout.display = "flex"
                self._column.layout.border_left = "2px solid #999"
                self._column.layout.padding = "0 0 0 8px"
        else:
            self._label.layout.display = "none"

    def as_text(self) -> str:
        return group_text(self.views)

    def as_html(self) -> str:
        return group_html(self.views)

    def static_bundle(self) -> dict[str, str]:
        """What a finished reply's calls leave in the cell: HTML and plain text, no widget."""
        return html_bundle(self.as_html(), self.as_text())

    def close_all(self) -> None:
        """Close this group's widgets and their children (their models leave the kernel and
        the notebook's saved widget state)."""
        for view in self.views:
            close_tree(view)
        close_tree(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(self, self.as_text())


def close_tree(widget: widgets.Widget) -> None:
    """Close ``widget`` and every widget below it (``Widget.close`` leaves children open)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    layout = getattr(widget, "layout", None)
    widget.close()
    if isinstance(layout, widgets.Widget):
        layout.close()
    style = getattr(widget, "style", None)
    if isinstance(style, widgets.Widget):
        style.close()
