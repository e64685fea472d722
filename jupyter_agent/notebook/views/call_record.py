"""Tool calls as plain records, for a cell that nobody watches live.

A notebook run by nbconvert ``--execute``, papermill or nbval has no one at a frontend to expand
a call or click Stop, and nbclient saves the state of every widget model a cell ever opened in
the notebook's metadata, closed ones included. There the renderer shows each reply's calls as a
``StaticCallGroup`` of ``StaticCall``s: the same title, result excerpt and thumbnails as the live
``ToolCallGroup``/``ToolCallView`` (``call_text``, ``call_html``, ``group_text`` and
``group_html`` are what both render with), as HTML and ``text/plain`` redrawn in place, and no
widget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...events import CallStatus
from ...tools.progress import progress_amount, with_amount
from ..inert import html_bundle, html_text, visible
from . import tool_format
from .thumbnails import thumbnail_tags


class RenderedCall(Protocol):
    def as_text(self) -> str: ...

    def as_html(self) -> str: ...


def call_text(
    name: str,
    arguments: dict[str, Any],
    status: str,
    duration_s: float | None,
    result: str,
    images: tuple[Any, ...],
) -> str:
    """One call as plain text: its title, an excerpt of its result, the images it returned."""
    text = tool_format.plain_text(name, arguments, status, duration_s, result or None)
    if images:
        kinds = ", ".join(image.media_type for image in images)
        text += f"\n    [{len(images)} image(s): {kinds}]"
    return text


def call_html(
    name: str,
    arguments: dict[str, Any],
    status: str,
    duration_s: float | None,
    result: str,
    thumbnails: tuple[str, ...],
) -> str:
    """The static record of one call: no widget state needed to show it."""
    return tool_format.html_block(
        name, arguments, status, duration_s, result or None, thumbnails=thumbnails
    )


#: Characters of a progress message a running call's title shows.
PROGRESS_MESSAGE_CHARS = 80
#: Characters of a progress message read for the title: it is cut to these before its
#: whitespace is folded and its invisible characters escaped, so a server's megabyte message
#: costs no more main-thread time than a short one.
PROGRESS_MESSAGE_READ_CHARS = 4 * PROGRESS_MESSAGE_CHARS


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """A running call's latest progress for its title: ``3/10 · copying files`` — one line,
    invisible and control characters as escapes, the message cut to a title's width."""
    amount = progress_amount(progress, total)
    if not message:
        return amount
    line = visible(" ".join(message.lstrip()[:PROGRESS_MESSAGE_READ_CHARS].split()))
    if len(line) > PROGRESS_MESSAGE_CHARS:
        line = line[: PROGRESS_MESSAGE_CHARS - 1] + "…"
    return with_amount(amount, line, " · ")


def group_label(calls: Sequence[object]) -> str:
    return f"{len(calls)} calls in parallel" if len(calls) > 1 else ""


def group_text(calls: Sequence[RenderedCall]) -> str:
    """The calls of one reply as plain text; parallel ones indented under a label."""
    if len(calls) <= 1:
        return "\n".join(call.as_text() for call in calls)
    lines = [f"⇉ {group_label(calls)}:"]
    for call in calls:
        lines.extend("  " + line for line in call.as_text().splitlines())
    return "\n".join(lines)


def group_html(calls: Sequence[RenderedCall]) -> str:
    """The calls of one reply as static HTML; parallel ones indented under a label."""
    rendered = "".join(call.as_html() for call in calls)
    if len(calls) <= 1:
        return rendered
    label = html_text(f"⇉ {group_label(calls)}")
    return (
        f'<div><i style="font-size: 12px;">{label}</i>'
        f'<div style="border-left: 2px solid #999; padding-left: 8px;">{rendered}</div></div>'
    )


class _CallFields(Protocol):
    tool_name: str
    arguments: dict[str, Any]
    status: str
    duration_s: float | None
    result: str
    images: tuple[Any, ...]
    _thumbnails: tuple[str, ...]


class CallRendering:
    """What a call shows, read from its fields: the live ``ToolCallView`` and the static
    ``StaticCall`` both draw with this."""

    @property
    def finished(self: _CallFields) -> bool:
        return self.status in ("done", "error", "denied", "interrupted")

    def as_text(self: _CallFields) -> str:
        return call_text(
            self.tool_name, self.arguments, self.status, self.duration_s, self.result, self.images
        )

    def as_html(self: _CallFields) -> str:
        """The static record of this call: no widget state needed to show it."""
        return call_html(
            self.tool_name,
            self.arguments,
            self.status,
            self.duration_s,
            self.result,
            self._thumbnails,
        )


class StaticCall(CallRendering):
    """One tool call's state, shown as static HTML and text (no widget)."""

    def __init__(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        self.call_id = call_id
        self.tool_name = name
        self.arguments = dict(arguments)
        self.status = "running"
        self.duration_s: float | None = None
        self.result = ""
        self.is_error = False
        self.images: tuple[Any, ...] = ()
        self._thumbnails: tuple[str, ...] = ()

    def finish(
        self,
        output: str,
        *,
        is_error: bool,
        duration_s: float | None,
        images: tuple[Any, ...] = (),
        status: CallStatus | None = None,
    ) -> None:
        if images:
            self.images = tuple(images)
            self._thumbnails = thumbnail_tags(self.images)
        self.is_error = is_error
        self.duration_s = duration_s
        self.result = output
        self.status = status or ("error" if is_error else "done")

    def mark(self, status: str) -> None:
        self.status = status

    def show_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Nothing: a record nobody watches is not redrawn for each progress notification."""


class StaticCallGroup:
    """The calls of one model reply, displayed as their static record."""

    def __init__(self) -> None:
        self.views: list[StaticCall] = []

    def start(self, call_id: str, name: str, arguments: dict[str, Any]) -> StaticCall:
        """The record of a call that starts, added to the group."""
        call = StaticCall(call_id, name, arguments)
        self.add(call)
        return call

    def add(self, view: StaticCall) -> None:
        self.views.append(view)

    def view(self, call_id: str) -> StaticCall | None:
        for view in self.views:
            if view.call_id == call_id:
                return view
        return None

    def static_bundle(self) -> dict[str, str]:
        return html_bundle(group_html(self.views), group_text(self.views))

    def close_all(self) -> None:
        """Nothing to close: no widget was opened."""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return self.static_bundle()
