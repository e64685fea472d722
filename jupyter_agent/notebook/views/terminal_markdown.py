"""The answer's Markdown, readable in a terminal (terminal IPython on a TTY).

The model writes Markdown; a terminal shows it raw (``## Result``, ``**bold**``, fences). This
renders it a line at a time as it streams: headings bold (the top two underlined too), ``**bold**``
bold, ``*italic*`` italic, `` `code` `` and fenced code in cyan (code indented, fences hidden),
list bullets as ``•``, quotes behind a bar, rules as a line. It is deliberately small: no tables,
no wrapping, no nesting beyond what a line shows.

Safety: the model's text goes through ``inert.visible`` *before* any formatting is added, so every
control, escape, bidi and zero-width character of the model's is an escape written as text; the
only escape sequences on the terminal are the SGR colour codes added here (``ESC [ … m``).
"""

from __future__ import annotations

import re

from ..inert import visible

BOLD = "\x1b[1m"
ITALIC = "\x1b[3m"
UNDERLINE = "\x1b[4m"
CODE = "\x1b[36m"
DIM = "\x1b[2m"
RESET = "\x1b[0m"

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
#: What ``_count_marks`` looks at.
_MARK = re.compile(r"[`* ]")
_INLINE = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<bold>\*\*[^*\n]+\*\*|__[^_\n]+__)"
    r"|(?P<italic>(?<![\w*])\*[^*\s][^*\n]*\*(?![\w*]))"
    # neither part of a link runs past a "[": a line of them would be tried to its end from each
    r"|(?P<link>\[[^\[\]\n]+\]\([^\[)\s]+\))"
)


def inline(text: str) -> str:
    """One line's inline Markdown as SGR codes (``text`` is already made visible)."""

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if match.group("code"):
            return f"{CODE}{token[1:-1]}{RESET}"
        if match.group("bold"):
            return f"{BOLD}{token[2:-2]}{RESET}"
        if match.group("italic"):
            return f"{ITALIC}{token[1:-1]}{RESET}"
        label, _, url = token[1:-1].partition("](")
        return f"{UNDERLINE}{label}{RESET} ({url})"

    return _INLINE.sub(replace, text)


class MarkdownLines:
    """Renders streamed Markdown a line at a time; ``feed`` returns what to write now."""

    def __init__(self) -> None:
        self._pending = ""
        self._in_code = False
        #: Part of the current line already written (its block formatting decided).
        self._line_started = False
        self._forget_marks()

    def _forget_marks(self) -> None:
        """Start counting the marks of ``_pending`` afresh (it is a new line or what remains of
        one after its words were written). The counts are kept as the text arrives, so each
        character is looked at once: counting them again on every feed, for every space, cost
        time cubic in a paragraph whose ``*`` or backtick never closes."""
        #: How much of ``_pending`` is counted.
        self._counted = 0
        #: Parities (0 or 1) of the backticks, the ``**`` and the single ``*`` counted.
        self._ticks = self._pairs = self._singles = 0
        #: The run of ``*`` that the counted text ends with (not in the parities yet).
        self._run = 0
        #: The last space counted with every mark before it closed (0: none).
        self._cut = 0

    def feed(self, text: str) -> str:
        """What can be shown of ``text`` now: the lines it completes, and of a paragraph's
        unfinished line the words whose inline marks are closed (a paragraph is often one long
        line; the reader should see it stream)."""
        self._pending += text
        shown = ""
        if "\n" in text:
            *lines, self._pending = self._pending.split("\n")
            shown = "".join(self._line(line) + "\n" for line in lines)
            self._forget_marks()
        return shown + self._words_so_far()

    def _words_so_far(self) -> str:
        pending = self._pending
        if self._in_code or not pending:
            return ""
        if not self._line_started and not (pending[0].isalpha() or pending[0] in "\"'(“"):
            return ""  # a heading, list item, quote or fence may be starting: wait for the line
        self._count_marks()
        cut = self._cut
        if not cut:
            return ""
        # Every mark before the cut is closed: what remains has the parities counted so far.
        self._pending = pending[cut + 1 :]
        self._counted -= cut + 1
        self._cut = 0
        return self._line(pending[: cut + 1], partial=True)

    def _count_marks(self) -> None:
        """Count the marks of the text that arrived since, noting the last space before which
        every ``` ` ```, ``**`` and ``*`` is closed (a run of stars is pairs then maybe one)."""
        pending, run = self._pending, self._run
        run_end = self._counted if run else -1
        for match in _MARK.finditer(pending, self._counted):
            at, char = match.start(), match.group()
            if char == "*" and at == run_end:
                run, run_end = run + 1, at + 1
                continue
            self._pairs ^= (run // 2) & 1
            self._singles ^= run & 1
            run = 0
            if char == "*":
                run, run_end = 1, at + 1
            elif char == "`":
                self._ticks ^= 1
            elif at > 0 and not (self._ticks or self._pairs or self._singles):
                self._cut = at
        self._run = run
        if run and run_end != len(pending):  # the run ended before the last characters
            self._pairs ^= (run // 2) & 1
            self._singles ^= run & 1
            self._run = 0
        self._counted = len(pending)

    def flush(self) -> str:
        """The unfinished line as far as it goes (before other output, or at the end)."""
        rest, self._pending = self._pending, ""
        self._forget_marks()
        return self._line(rest, partial=True) if rest else ""

    def _line(self, raw: str, *, partial: bool = False) -> str:
        line = visible(raw.removesuffix("\r"))  # a CR-LF line end is a line end
        if self._line_started:  # the rest of a line whose start was written: inline only
            self._line_started = partial
            return f"{CODE}{line}{RESET}" if self._in_code else inline(line)
        self._line_started = partial
        if _FENCE.match(line) and not partial:
            self._in_code = not self._in_code
            return f"{DIM}───{RESET}"
        if self._in_code:
            return f"    {CODE}{line}{RESET}"
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            style = BOLD + (UNDERLINE if level <= 2 else "")
            return f"{style}{heading.group(2)}{RESET}"
        if _RULE.match(line) and not partial:
            return f"{DIM}{'─' * 40}{RESET}"
        bullet = _BULLET.match(line)
        if bullet:
            return f"{bullet.group(1)}• {inline(bullet.group(2))}"
        quote = _QUOTE.match(line)
        if quote:
            return f"{DIM}│{RESET} {inline(quote.group(1))}"
        return inline(line)
