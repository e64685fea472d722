"""``ToolCallView``: one tool call, collapsed to a title line, expandable to its details.

The title shows the tool's name, a short form of its arguments, its status and duration, and
while the call runs the latest progress it reported; errors turn it red. Expanded, it shows the
full arguments as JSON and the result, long results cut with a "show more" button. The view also
renders as plain text (``as_text()``), which is what terminal IPython and notebook viewers
without widgets show.

A reply of thirty calls draws thirty views on the main thread while a click waits (figure 19),
so a view starts as its title alone — a box and a toggle button, whose layout and style the
calls of one group share (``SharedParts``) — and is sent once as it first shows. The body is
made when the user first opens the view, the thumbnails when images arrive.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_bool import ToggleButtonStyle
from traitlets import Bool, Dict, Float, Int, Unicode, observe

from ....events import CallStatus
from ...inert import html_text, visible
from .. import tool_format
from ..call_record import CallRendering, progress_text
from ..thumbnails import thumbnail_tags
from .inert_html import InertHTML

#: Characters added to the visible result by each "show more" click.
SHOW_MORE_STEP = 10_000

# A finished call stays neutral so that errors and refusals are what catches the eye.
_BUTTON_STYLES = {
    "running": "info",
    "waiting": "warning",
    "done": "",
    "error": "danger",
    "interrupted": "warning",
    "denied": "danger",
}


def widget_bundle(widget: widgets.Widget, text: str) -> dict[str, Any]:
    """A display bundle with the widget's view and our own ``text/plain`` rendering."""
    return {
        "text/plain": visible(text),
        "application/vnd.jupyter.widget-view+json": {
            "version_major": 2,
            "version_minor": 0,
            "model_id": widget.model_id,
        },
    }


def _pre(text: str, color: str | None = None) -> str:
    style = "white-space: pre-wrap; margin: 0; font-size: 12px; max-height: 400px; overflow: auto;"
    if color:
        style += f" color: {color};"
    return f'<pre style="{style}">{html_text(text)}</pre>'


class SharedParts:
    """The layout and style models every call view of a group can share: one model each for the
    frontend instead of three per call (the group closes them with its views)."""

    def __init__(self) -> None:
        self.header_layout = widgets.Layout(width="auto", max_width="100%")
        self.header_style = ToggleButtonStyle()
        self.view_layout = widgets.Layout(align_items="flex-start")


class ToolCallView(CallRendering, widgets.VBox):  # type: ignore[misc]
    """A collapsible view of one tool call."""

    tool_name = Unicode()
    arguments = Dict()
    status = Unicode("running")
    duration_s = Float(None, allow_none=True)
    result = Unicode("")
    is_error = Bool(False)
    expanded = Bool(False)
    shown_chars = Int(tool_format.RESULT_PREVIEW_CHARS)

    def __init__(
        self,
        call_id: str,
        name: str,
        arguments: dict[str, Any],
        *,
        parts: SharedParts | None = None,
        **kwargs: Any,
    ) -> None:
        self.call_id = call_id
        parts = parts if parts is not None else SharedParts()
        # the title as it first shows, so that nothing is sent again at once
        self._header = widgets.ToggleButton(
            value=False,
            description=tool_format.title(name, arguments, "running", None),
            button_style=_BUTTON_STYLES["running"],
            icon="chevron-right",
            layout=parts.header_layout,
            style=parts.header_style,
            tooltip="Show or hide this call's arguments and result",
        )
        #: The result's images (``jupyter_agent.Image``) and their thumbnails' ``<img>`` tags.
        self.images: tuple[Any, ...] = ()
        self._thumbnails: tuple[str, ...] = ()
        # Made when first needed: the thumbnails when images arrive, the body when the user
        # opens the view. A reply's calls are drawn on the main thread while clicks wait.
        self._thumbnails_html: InertHTML | None = None
        self._body: _Body | None = None
        #: The latest progress the running call reported (``ToolCallProgress``), as text.
        self._progress = ""
        kwargs.setdefault("layout", parts.view_layout)
        super().__init__(
            children=[self._header],
            tool_name=name,
            arguments=dict(arguments),
            **kwargs,
        )
        self._header.observe(self._on_header_toggled, names="value")
        self._refresh_title()

    # -- state changes -----------------------------------------------------------------------

    def finish(
        self,
        output: str,
        *,
        is_error: bool,
        duration_s: float | None,
        images: tuple[Any, ...] = (),
        status: CallStatus | None = None,
    ) -> None:
        """The call ended. ``status``: the event's (``denied`` for a refused call); by default
        ``error`` or ``done`` from ``is_error``.

        ``images`` (the result's ``jupyter_agent.Image`` parts) show as small thumbnails under
        the title."""
        if images:
            self.images = tuple(images)
            self._thumbnails = thumbnail_tags(self.images)
            self._thumbnails_html = InertHTML("".join(self._thumbnails))
            self._set_children()
        with self._header.hold_sync():  # the new title in one message
            self.set_trait("is_error", is_error)
            self.set_trait("duration_s", duration_s)
            self.set_trait("result", output)
            self.status = status or ("error" if is_error else "done")

    def mark(self, status: str) -> None:
        """Set a status without a result (``waiting`` for approval, ``interrupted``)."""
        with self._header.hold_sync():
            self.status = status

    def show_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The running call reported how far it got: its title shows the latest, until the call
        ends (``ToolCallProgress``; an MCP server's progress notifications)."""
        if self.finished:
            return
        self._progress = progress_text(progress, total, message)
        self._refresh_title()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(self, self.as_text())

    # -- rendering ---------------------------------------------------------------------------

    @observe("status", "duration_s", "tool_name", "arguments")
    def _on_summary_change(self, change: dict[str, Any]) -> None:
        self._refresh_title()
        if change["name"] == "arguments" and self._body is not None:
            self._body.show_arguments(self.arguments)

    @observe("result", "shown_chars", "is_error")
    def _on_result_change(self, change: dict[str, Any]) -> None:
        if self._body is not None:
            self._show_result(self._body)

    @observe("expanded")
    def _on_expanded(self, change: dict[str, Any]) -> None:
        self._header.value = bool(change["new"])
        if change["new"] and self._body is None:
            self._body = _Body(self._on_show_more)
            self._body.show_arguments(self.arguments)
            self._show_result(self._body)
        if self._body is not None:
            self._body.layout.display = "flex" if change["new"] else "none"
        self._set_children()
        self._refresh_title()

    def _set_children(self) -> None:
        parts = [self._header, self._thumbnails_html, self._body]
        self.children = tuple(part for part in parts if part is not None)

    def _on_header_toggled(self, change: dict[str, Any]) -> None:
        self.expanded = bool(change["new"])

    def _on_show_more(self, _button: widgets.Button) -> None:
        self.shown_chars = min(self.shown_chars + SHOW_MORE_STEP, len(self.result))

    def _refresh_title(self) -> None:
        title = tool_format.title(self.tool_name, self.arguments, self.status, self.duration_s)
        if self._progress and self.status == "running":
            title += f" · {self._progress}"
        self._header.description = title
        self._header.button_style = _BUTTON_STYLES.get(self.status, "")
        self._header.icon = "chevron-down" if self.expanded else "chevron-right"

    def _show_result(self, body: _Body) -> None:
        if not self.result:
            body.show_result("(running…)" if not self.finished else "(empty)", 0, is_error=False)
            return
        visible = self.result[: self.shown_chars]
        body.show_result(visible, len(self.result) - len(visible), is_error=self.is_error)


class _Body(widgets.VBox):  # type: ignore[misc]
    """An open view's details: the full arguments, the result, and "show more" for a long one."""

    def __init__(self, on_show_more: Any) -> None:
        self._arguments_html = InertHTML()
        self._result_html = InertHTML()
        self._show_more = widgets.Button(
            description="show more", layout=widgets.Layout(width="auto", display="none")
        )
        self._show_more.on_click(on_show_more)
        super().__init__(
            [
                InertHTML("<b>arguments</b>"),
                self._arguments_html,
                InertHTML("<b>result</b>"),
                self._result_html,
                self._show_more,
            ],
            layout=widgets.Layout(padding="0 0 0 24px", width="100%"),
        )

    def show_arguments(self, arguments: dict[str, Any]) -> None:
        self._arguments_html.value = _pre(tool_format.full_args(arguments, None, indent=""))

    def show_result(self, visible: str, hidden: int, *, is_error: bool) -> None:
        """``visible``: the part of the result shown; ``hidden``: how many characters follow."""
        color = "#b00020" if is_error else None
        suffix = f"\n… {hidden} more characters" if hidden > 0 else ""
        self._result_html.value = _pre(visible + suffix, color)
        self._show_more.layout.display = "flex" if hidden > 0 else "none"
        if hidden > 0:
            self._show_more.description = f"show more ({hidden} characters hidden)"
