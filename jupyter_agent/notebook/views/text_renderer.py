"""``TextRenderer``: an agent run written to a terminal or a stream, from its events.

For terminal IPython and scripts: the answer is written as it streams, through
``inert.visible`` (no escape sequence of the model's or a tool's reaches the terminal); each tool
call is a line when it starts and a short block when it ends (progress is not written: it would be
a line each). On a terminal (a TTY) the answer's Markdown is rendered a line at a time
(``terminal_markdown``) and a finished call's block replaces its "running" line (cursor up, erase
down — only when nothing else was written since); to a pipe or a file the text stays plain and
both lines stay.
"""

from __future__ import annotations

import shutil
import sys
import unicodedata
from typing import TextIO

from ...events import (
    AgentError,
    AgentFinished,
    ContextCompacted,
    TextDelta,
    TextReset,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from ..inert import visible
from ..runtime.console import is_terminal, write_count
from . import tool_format
from .render import compaction_notice, redaction_notice
from .terminal_markdown import MarkdownLines


class TextRenderer:
    """Plain text, for terminal IPython and scripts.

    A started call's line is written at the next event or tick, not at once: a call that is
    about to ask for approval then reads "waiting", never "running" above its ``[y/N]`` prompt.
    On a TTY a call that ends before its line was written gets no "running" line at all, and one
    whose "running" line is among the last lines written has it replaced by its result.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.ended_by = ""
        self._stream = stream
        self._parts: list[str] = []
        self._at_line_start = True
        self._calls: dict[str, ToolCallStarted] = {}
        self._finished: set[str] = set()
        self._calls_this_reply = 0
        self._redacted = 0
        #: Started calls whose line is not written yet, with their "⇉" prefix.
        self._unannounced: list[tuple[ToolCallStarted, str]] = []
        self._thinking_noted = False
        self._in_progress = False
        #: Where the current turn's text begins in ``_parts`` (TextReset).
        self._turn_parts_start = 0
        self._tty: bool | None = None
        self._markdown = MarkdownLines()
        #: TTY: the "running" lines that are the last lines written (call id, line), and the
        #: console's write count right after them (anything written since: they stay).
        self._tail: list[tuple[str, str]] = []
        self._tail_mark = -1

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def _on_tty(self) -> bool:
        if self._tty is None:
            self._tty = is_terminal(self.stream)
        return self._tty

    def _write(self, text: str) -> None:
        """Write ``text`` with its control, escape, bidi and invisible characters made visible:
        a model's answer or a tool's result cannot move the cursor, rewrite a line above an
        approval, retitle the window or set the clipboard."""
        if not text:
            return
        self._flush_markdown()
        self._raw(visible(text))

    def _raw(self, text: str) -> None:
        """Write text that is already safe (made visible, plus our own SGR codes)."""
        if not text:
            return
        self.stream.write(text)
        self._at_line_start = text.endswith("\n")
        self._tail = []

    def _flush_markdown(self) -> None:
        if self._on_tty():
            self._raw(self._markdown.flush())

    def _progress_text(self, text: str, kind: str) -> None:
        """Write progress text (``… ``) or a notice (``[…]``) apart from the answer."""
        if kind == "notice":
            self._end_progress()
            self._line(f"[{text}]")
            return
        if not self._in_progress:
            self._in_progress = True
            self._line("")
            self._raw("\x1b[2m… " if self._on_tty() else "… ")
            self._at_line_start = False
        self._write(text)

    def _end_progress(self) -> None:
        if self._in_progress:
            self._in_progress = False
            if self._on_tty():
                self._raw("\x1b[0m")
            self._write("\n")

    def _line(self, text: str) -> None:
        if not self._at_line_start:
            self._write("\n")
        self._write(text + "\n")

    def _running_line(self, call_id: str, line: str) -> None:
        """Write a "running" line; on a TTY remember it as replaceable."""
        tail = self._tail
        self._line(line)
        if self._on_tty():
            self._tail = [*tail, (call_id, line)]
            self._tail_mark = write_count()

    def _announce(self, waiting: str | None = None) -> None:
        """Write the lines of started calls; ``waiting`` is the call that waits for approval.

        A call that will ask (``asks``) is held back until its question comes: however long the
        agent's loop takes to ask it, its line never says "running" before that."""
        held = []
        for started, prefix in self._unannounced:
            if started.asks and started.call_id != waiting:
                held.append((started, prefix))
                continue
            status = "waiting" if started.call_id == waiting else "running"
            line = tool_format.title(started.name, started.input, status, None)
            if status == "running":
                self._running_line(started.call_id, prefix + line)
            else:
                self._line(prefix + line + " for your approval")
        self._unannounced = held

    def _take_running_line(self, call_id: str) -> list[tuple[str, str]] | None:
        """Erase the "running" lines at the end (TTY) if ``call_id``'s is among them and nothing
        else was written since; the others' lines, to be written again. ``None``: left as is."""
        if not any(kept == call_id for kept, _ in self._tail) or write_count() != self._tail_mark:
            return None
        columns = max(1, shutil.get_terminal_size((80, 24)).columns)
        rows = sum(_rows(visible(line), columns) for _, line in self._tail)  # as written
        others = [(kept, line) for kept, line in self._tail if kept != call_id]
        self.stream.write(f"\x1b[{rows}A\r\x1b[J")  # up to the first of them, erase down
        self._tail = []
        self._at_line_start = True
        return others

    def handle(self, event: object) -> None:
        if isinstance(event, ThinkingDelta):
            if event.kind != "thinking":
                # progress between tool calls and notices: their own lines, as they stream
                self._progress_text(event.text, event.kind)
                return
            if not self._thinking_noted:
                self._thinking_noted = True
                self._line("[thinking …]")
            return
        self._end_progress()
        self._thinking_noted = False
        if isinstance(event, ContextCompacted):
            self._line(f"[{compaction_notice(event)}]")
            return
        if isinstance(event, ToolCallStarted):
            self._calls[event.call_id] = event
            self._calls_this_reply += 1
            prefix = "⇉ " if self._calls_this_reply > 1 else ""
            self._unannounced.append((event, prefix))
            return
        if isinstance(event, ToolCallFinished):
            # Ended before its line was written (on a terminal, or held back as a call that
            # asks): the result says it all.
            tty = self._on_tty()
            self._unannounced = [
                (started, prefix)
                for started, prefix in self._unannounced
                if started.call_id != event.call_id or not (tty or started.asks)
            ]
        self._announce()
        if isinstance(event, TextDelta):
            self._parts.append(event.text)
            if self._on_tty():
                self._raw(self._markdown.feed(event.text))
            else:
                self._write(event.text)
        elif isinstance(event, ToolCallFinished):
            self._finished.add(event.call_id)
            started = self._calls.get(event.call_id)
            arguments = started.input if started is not None else {}
            text = tool_format.plain_text(
                event.name,
                arguments,
                event.status,
                event.duration_s,
                event.output,
                result_chars=300,
            )
            others = self._take_running_line(event.call_id) if self._on_tty() else None
            self._line(text)
            for call_id, line in others or []:
                self._running_line(call_id, line)
            self._redacted += event.redacted
        elif isinstance(event, TurnStarted):
            self._calls_this_reply = 0
            self._turn_parts_start = len(self._parts)
        elif isinstance(event, TextReset):
            # what is written stays on the terminal: say that it is replaced
            if len(self._parts) > self._turn_parts_start:
                del self._parts[self._turn_parts_start :]
                self._line("[the reply broke off; retrying — the text above is replaced by:]")
        elif isinstance(event, AgentFinished | AgentError):
            self._flush_markdown()
            if not self._at_line_start:
                self._write("\n")
            if self._redacted:
                self._line(f"[{redaction_notice(self._redacted)}]")
                self._redacted = 0
        self.stream.flush()

    def tick(self) -> None:
        if self._unannounced:
            self._announce()
            self.stream.flush()

    def close(self, *, interrupted: bool) -> None:
        self._end_progress()
        self._announce()
        self._unannounced = []  # calls never asked about: "interrupted" below says it
        self._flush_markdown()
        if interrupted:
            for call_id, started in self._calls.items():
                if call_id not in self._finished:
                    self._line(tool_format.title(started.name, started.input, "interrupted", None))
        if not self._at_line_start:
            self._write("\n")
        self.stream.flush()

    def mark_waiting(self, call_id: str, waiting: bool) -> None:
        if waiting:
            self._announce(waiting=call_id)
            self._tail = []  # the prompt and the answer typed follow
            self.stream.flush()


def _rows(written: str, columns: int) -> int:
    """Terminal rows a line takes, ``written`` exactly as it went to the terminal (after
    ``visible``), followed by a newline. The count may fall short, never exceed: the cursor goes
    up that many rows and erases down, so one row too many would erase a line of the user's above
    (a row too few leaves part of a finished call's "running" line, which is cosmetic). So a
    character whose width a terminal may judge otherwise counts narrow, and the rows are the
    columns over the width (a terminal may start a row early, for a wide character at the end)."""
    return sum(max(1, -(-sum(map(_cell_width, line)) // columns)) for line in written.split("\n"))


def _cell_width(char: str) -> int:
    """Columns ``char`` takes at the least: none for marks (combining, enclosing and spacing ones
    — some terminals give the last a column), format characters and the Hangul jamo that join
    the syllable before them; two for East Asian wide and fullwidth characters; one otherwise."""
    if char.isascii():
        return 1
    if unicodedata.category(char) in _NO_COLUMN or "\u1160" <= char <= "\u11ff":
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


#: Unicode categories drawn on the character before (marks) or not at all (format characters).
_NO_COLUMN = frozenset({"Mn", "Me", "Mc", "Cf"})
