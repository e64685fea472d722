"""``RichRenderer``: an agent run drawn in a Jupyter cell, from its events, on the main thread.

For Jupyter frontends: the answer streams into one display per text segment — the model's
Markdown rendered as sanitized HTML (``inert.py``: nothing the model writes can be active) —
updated at most every ``interval`` seconds plus a final update. Each update re-sends (and the
browser re-renders) the whole segment, so once the segment is long an update also waits until
the text has grown by a tenth (``MIN_GROWTH_FRACTION``): a 2,000-token answer costs a few dozen
display updates at any streaming speed rather than one per token. Each model reply's tool calls
appear as a ``ToolCallGroup`` of ``ToolCallView`` widgets, a running call's title with the latest
progress it reported (``ToolCallProgress``), redrawn at most every ``interval`` seconds too: the
latest progress of a call redrawn less than that ago waits, and is shown at the next progress
or ``tick`` after it (the pump ticks at least every ``IDLE_WAKE_S``): a flood of notifications is
a few title updates, never one per notification, and the last one still shows. Every display
also carries a ``text/plain`` part.

The live widgets are for the turn only. When the run ends, ``close`` replaces each group's display
(``update_display`` on its ``display_id``) by a static rendering — HTML and ``text/plain``, with
each call's title, an excerpt of its result and thumbnails of its images — and closes the widgets:
a saved notebook then holds no widget view, and reads the same after a kernel restart, in
nbconvert's HTML and on GitHub. A Stop button (``on_stop``) stands above the answer while the run
goes on; at the end its display becomes one line, "■ Stopped" when it was used.

With ``live=False`` — a kernel that nobody watches (nbconvert ``--execute``, papermill, nbval) —
no widget is opened at all: the calls show as their static record from the start
(``call_record.py``), redrawn in place as they progress, and there is no Stop button. nbclient
saves every widget model a cell opened, closed ones too, in the notebook's metadata: some 60
models per ``%%agent`` cell otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ...events import (
    AgentError,
    AgentFinished,
    ContextCompacted,
    TextDelta,
    TextReset,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from ..inert import InertMarkdown, html_bundle, html_text, text_bundle
from ..runtime.bridge import DEFAULT_RENDER_INTERVAL_S, MIN_GROWTH_FRACTION
from .render import STOP_BUTTON_CLASS, compaction_notice, redaction_notice

#: The answer's display: the model's Markdown as sanitized HTML (``inert.py`` says why).
MarkdownText = InertMarkdown


class ThinkingBlock:
    """The model's extended thinking, collapsed under a summary line (HTML) or one line (text);
    its progress text between tool calls and the provider's notices (``ThinkingDelta.kind``)
    shown as they are, apart from the answer."""

    def __init__(self, text: str, kind: str = "thinking") -> None:
        self.text = text
        self.kind = kind

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        if self.kind != "thinking":
            return html_bundle(
                f"<div style='color: #666; font-style: italic;'>{html_text(self.text)}</div>",
                f"[{self.text}]" if self.kind == "notice" else f"… {self.text}",
            )
        chars = len(self.text)
        return html_bundle(
            f"<details><summary><i>Thinking ({chars:,} characters)</i></summary>"
            '<pre style="white-space: pre-wrap; font-size: 12px; margin: 0;">'
            f"{html_text(self.text)}</pre></details>",
            f"[thinking: {chars:,} characters]",
        )


class Notice:
    """A one-line, static notice in the cell (HTML and plain text)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return html_bundle(
            f"<div style='color: #666; font-style: italic;'>{html_text(self.text)}</div>",
            f"[{self.text}]",
        )


class RichRenderer:
    """Markdown displays and tool-call widgets, for Jupyter frontends."""

    def __init__(
        self,
        interval_s: float = DEFAULT_RENDER_INTERVAL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_stop: Callable[[], None] | None = None,
        live: bool = True,
    ) -> None:
        from .._ipython import DisplayHandle

        self._handle_factory = DisplayHandle
        self.live = live
        self.interval_s = interval_s
        self._clock = clock
        self._thinking: list[str] = []
        self._thinking_kind = "thinking"
        self._thinking_handle: Any = None
        self._thinking_shown = 0.0
        self._parts: list[str] = []
        self._segment: list[str] = []
        self._segment_chars = 0
        self._segment_chars_shown = 0
        self._segment_handle: Any = None
        self._segment_dirty = False
        #: Where the current turn's text begins in ``_parts`` and in ``_segment`` (TextReset).
        self._turn_parts_start = 0
        self._turn_segment_start = 0
        self._last_update = 0.0
        self._group: Any = None
        self._group_handle: Any = None
        self._group_closed = True
        self._groups: list[tuple[Any, Any]] = []
        #: Progress not shown yet (the latest of each call), and when each call's view may next
        #: show progress (clock time).
        self._progress_waiting: dict[str, ToolCallProgress] = {}
        self._progress_due: dict[str, float] = {}
        #: Secret values taken out of this turn's tool results (said once, at the end).
        self._redacted = 0
        #: Display calls and updates made for the answer text (for tests and diagnostics).
        self.text_updates = 0
        #: The display of the latest text shown and that text (``keep_with_answer``).
        self._answer: tuple[Any, Any] | None = None
        #: Whether the Stop button was clicked.
        self.stop_clicked = False
        self.ended_by = ""
        self._stop_button: Any = None
        self._stop_handle: Any = None
        if on_stop is not None and live:
            self._show_stop_button(on_stop)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    # -- events ------------------------------------------------------------------------------

    def handle(self, event: object) -> None:
        if isinstance(event, ThinkingDelta):
            self._think(event.text, event.kind)
            return
        if self._thinking:
            self._end_thinking()
        if isinstance(event, ContextCompacted):
            self._end_segment()
            self._handle_factory().display(Notice(compaction_notice(event)))
            return
        if isinstance(event, TextDelta):
            if not event.text:
                return
            self._parts.append(event.text)
            self._segment.append(event.text)
            self._segment_chars += len(event.text)
            self._segment_dirty = True
            self.tick()
        elif isinstance(event, ToolCallStarted):
            self._end_segment()
            self._start_call(event)
        elif isinstance(event, ToolCallProgress):
            self._progress_waiting[event.call_id] = event
            self._show_progress()
        elif isinstance(event, ToolCallFinished):
            self._progress_waiting.pop(event.call_id, None)  # its view shows the end instead
            self._progress_due.pop(event.call_id, None)
            found = self._find(event.call_id)
            if found is not None:
                found[0].finish(
                    event.output,
                    is_error=event.is_error,
                    status=event.status,
                    duration_s=event.duration_s,
                    images=event.images,
                )
                self._redraw(*found[1:])
            self._redacted += event.redacted
        elif isinstance(event, TurnFinished):
            self._flush(force=True)
            self._group_closed = True  # the next call belongs to a new reply
        elif isinstance(event, TurnStarted):
            self._close_group()
            self._turn_parts_start = len(self._parts)
            self._turn_segment_start = len(self._segment)
        elif isinstance(event, TextReset):
            self._take_back_turn_text()
        elif isinstance(event, AgentFinished | AgentError):
            self._flush(force=True)
            if self._redacted:
                self._end_segment()
                self._handle_factory().display(Notice(redaction_notice(self._redacted)))
                self._redacted = 0

    def tick(self) -> None:
        self._flush(force=False)
        self._show_progress()

    # -- thinking ----------------------------------------------------------------------------

    def _think(self, text: str, kind: str = "thinking") -> None:
        """Thinking streams into one collapsed block per turn, updated at the renderer's pace
        (progress text and notices into a visible one of their own)."""
        if self._thinking and kind != self._thinking_kind:
            self._end_thinking()
        if not self._thinking:
            self._end_segment()
        self._thinking_kind = kind
        self._thinking.append(text)
        now = self._clock()
        if self._thinking_handle is None:
            self._thinking_handle = self._handle_factory()
            self._thinking_handle.display(ThinkingBlock("".join(self._thinking), kind))
            self._thinking_shown = now
        elif now - self._thinking_shown >= self.interval_s:
            self._thinking_handle.update(ThinkingBlock("".join(self._thinking), kind))
            self._thinking_shown = now

    def _end_thinking(self) -> None:
        if self._thinking_handle is not None:
            block = ThinkingBlock("".join(self._thinking), self._thinking_kind)
            self._thinking_handle.update(block)
        self._thinking = []
        self._thinking_handle = None

    def close(self, *, interrupted: bool) -> None:
        self._end_segment()
        for group, _handle in self._groups:
            for view in group.views:
                if not view.finished:
                    view.mark("interrupted" if interrupted else "error")
        for group, handle in self._groups:
            handle.update(group.static_bundle(), raw=True)
            group.close_all()
        self._group = None
        self._group_handle = None
        self._end_stop_button(interrupted=interrupted)

    def keep_with_answer(self, metadata: dict[str, Any]) -> bool:
        """Put ``metadata`` on the output that shows the answer (its last text), once the turn
        closed: a turn record travels with it (``notebook/replay/``). False without text."""
        if self._answer is None:
            return False
        handle, content = self._answer
        handle.update(content, metadata=metadata)
        return True

    # -- the Stop button ---------------------------------------------------------------------

    def _show_stop_button(self, on_stop: Callable[[], None]) -> None:
        import ipywidgets as widgets

        button = widgets.Button(
            description="Stop",
            icon="stop",
            button_style="warning",
            tooltip="End this turn now (like interrupting the kernel); the conversation is kept",
            layout=widgets.Layout(width="auto"),
        )
        # the page interrupts a busy kernel when this button is clicked during a run_cell; it
        # finds the button by this class (labextension/src/buttons.ts), never by its label
        button.add_class(STOP_BUTTON_CLASS)

        def clicked(_button: Any) -> None:
            if self.stop_clicked:
                return
            self.stop_clicked = True
            button.disabled = True
            button.description = "Stopping…"
            on_stop()

        button.on_click(clicked)
        self._stop_button = button
        self._stop_handle = self._handle_factory()
        bundle = {
            "text/plain": "(running: Stop ends the turn)",
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2,
                "version_minor": 0,
                "model_id": button.model_id,
            },
        }
        self._stop_handle.display(bundle, raw=True)

    def _end_stop_button(self, *, interrupted: bool) -> None:
        if self._stop_handle is None:
            return
        from .widgets.tool_call_group import close_tree

        if self.ended_by:  # e.g. the kernel was restarted during the turn
            line = self.ended_by
        elif self.stop_clicked:
            line = "■ Stopped with the Stop button."
        elif interrupted:
            line = "■ Interrupted."
        else:
            line = ""
        self._stop_handle.update(text_bundle(line), raw=True)
        close_tree(self._stop_button)
        self._stop_handle = None
        self._stop_button = None

    def mark_waiting(self, call_id: str, waiting: bool) -> None:
        found = self._find(call_id)
        if found is not None and not found[0].finished:
            found[0].mark("waiting" if waiting else "running")
            self._redraw(*found[1:])

    # -- text --------------------------------------------------------------------------------

    def _flush(self, *, force: bool) -> None:
        if not self._segment_dirty:
            return
        now = self._clock()
        if not force and (
            now - self._last_update < self.interval_s
            or self._segment_chars - self._segment_chars_shown
            < MIN_GROWTH_FRACTION * self._segment_chars_shown
        ):
            return
        content = MarkdownText("".join(self._segment))
        if self._segment_handle is None:
            self._segment_handle = self._handle_factory()
            self._segment_handle.display(content)
        else:
            self._segment_handle.update(content)
        self.text_updates += 1
        self._answer = (self._segment_handle, content)
        self._segment_chars_shown = self._segment_chars
        self._segment_dirty = False
        self._last_update = now

    def _take_back_turn_text(self) -> None:
        """``TextReset``: the text shown since the turn began goes; what streams next replaces it
        in the same display."""
        del self._parts[self._turn_parts_start :]
        del self._segment[self._turn_segment_start :]
        self._segment_chars = sum(len(piece) for piece in self._segment)
        self._segment_chars_shown = 0
        if self._segment_handle is not None:
            self._segment_dirty = True
            self._flush(force=True)

    def _end_segment(self) -> None:
        self._flush(force=True)
        self._turn_segment_start = 0
        self._segment = []
        self._segment_chars = 0
        self._segment_chars_shown = 0
        self._segment_handle = None

    # -- tool calls --------------------------------------------------------------------------

    def _start_call(self, event: ToolCallStarted) -> None:
        if self.live:
            from .widgets.tool_call_group import ToolCallGroup as Group
        else:
            from .call_record import StaticCallGroup as Group  # type: ignore[assignment]

        if self._group is None or self._group_closed:
            self._close_group()
            self._group = Group()
            self._group_handle = self._handle_factory()
            self._group.start(event.call_id, event.name, dict(event.input))
            self._group_handle.display(self._group)
            self._groups.append((self._group, self._group_handle))
            self._group_closed = False
            return
        self._group.start(event.call_id, event.name, dict(event.input))
        self._redraw(self._group, self._group_handle)

    def _redraw(self, group: Any, handle: Any) -> None:
        """Show a static group's new state (live widgets update themselves)."""
        if not self.live:
            handle.update(group)

    def _close_group(self) -> None:
        if self._group is not None and self._group_handle is not None:
            self._group_handle.update(self._group)  # the final text/plain for the live view
        self._group = None
        self._group_handle = None
        self._group_closed = True

    def _show_progress(self) -> None:
        """Show each call's latest progress whose view was not redrawn for it within the
        interval; the rest waits for a later event or tick."""
        if not self._progress_waiting:
            return
        now = self._clock()
        for call_id, event in list(self._progress_waiting.items()):
            due = self._progress_due.get(call_id)
            if due is not None and now < due:
                continue
            del self._progress_waiting[call_id]
            self._progress_due[call_id] = now + self.interval_s
            found = self._find(call_id)
            if found is not None:
                found[0].show_progress(event.progress, event.total, event.message)

    def _find(self, call_id: str) -> tuple[Any, Any, Any] | None:
        """The view of call ``call_id``, its group and the group's display handle."""
        for group, handle in reversed(self._groups):
            view = group.view(call_id)
            if view is not None:
                return view, group, handle
        return None
