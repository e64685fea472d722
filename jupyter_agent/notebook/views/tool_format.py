"""How a tool call reads as text: the one-line title and the plain-text block.

Widgets, the terminal renderer and the ``text/plain`` part of every display all describe a tool
call the same way, so the wording lives here once. Every piece of a call (its name, argument
names and values, its result) is model- or tool-made: it goes through ``inert.visible`` for text
and ``inert.html_text`` for markup, so control, bidi and zero-width characters show as escapes.
"""

from __future__ import annotations

import json
from typing import Any

from ..inert import html_text, visible
from ..text import clip

#: One mark per status. Only characters that DejaVu Sans has (the font a bare Linux or Binder
#: image falls back to): emoji such as an hourglass or a raised hand render as empty boxes there.
STATUS_ICONS: dict[str, str] = {
    "running": "…",
    "waiting": "?",
    "done": "✓",
    "error": "✗",
    "interrupted": "■",
    "denied": "⊘",
}

#: Characters of a result shown before "show more".
RESULT_PREVIEW_CHARS = 2000
#: Characters of a result in the plain-text rendering.
TEXT_RESULT_CHARS = 600


def short_args(arguments: dict[str, Any], limit: int = 60) -> str:
    """``file_path='data.csv', limit=10`` — each value short, the whole within ``limit``."""
    parts = []
    for key, value in arguments.items():
        if isinstance(value, str):
            shown = value if len(value) <= 30 else value[:27] + "…"
            text = repr(shown.replace("\n", "⏎"))
        else:
            text = clip(json.dumps(value, ensure_ascii=False, default=str), 30)
        parts.append(f"{key}={text}")
    return visible(clip(", ".join(parts), limit))


def full_args(arguments: dict[str, Any], width: int | None = 100, indent: str = "    ") -> str:
    """Every argument in full, one per line, long lines wrapped (never cut) at ``width``
    (``None``: not wrapped, for a view that wraps itself).

    What an approval shows, widget or terminal: exactly the arguments the tool receives, a
    multi-line string as its lines (not one JSON string full of ``\\n``), control, bidi and
    zero-width characters as escapes (a carriage return or an erase-line cannot hide a
    ``; curl … | sh``), nothing cut.
    """
    lines: list[str] = []
    room = max(20, width - len(indent) - 2) if width is not None else 0
    for key, value in arguments.items():
        if isinstance(value, str):
            text = value
        else:
            text = json.dumps(value, ensure_ascii=False, default=str)
        name = visible(str(key))
        first = True
        for line in visible(text).split("\n"):
            if room:
                pieces = [line[at : at + room] for at in range(0, len(line), room)] or [""]
            else:
                pieces = [line]
            for piece in pieces:
                lines.append(f"{indent}{name}: {piece}" if first else f"{indent}  {piece}")
                first = False
    return "\n".join(lines) if lines else f"{indent}(no arguments)"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s"


def title(name: str, arguments: dict[str, Any], status: str, duration_s: float | None) -> str:
    """``✓ read_file(file_path='a.csv') · done · 12 ms``"""
    pieces = [f"{STATUS_ICONS.get(status, '')} {visible(name)}({short_args(arguments)})", status]
    if duration_s is not None:
        pieces.append(format_duration(duration_s))
    return " · ".join(pieces)


def plain_text(
    name: str,
    arguments: dict[str, Any],
    status: str,
    duration_s: float | None,
    result: str | None,
    *,
    result_chars: int = TEXT_RESULT_CHARS,
) -> str:
    """The plain-text rendering of one call: its title and, once finished, its result."""
    lines = [title(name, arguments, status, duration_s)]
    if result:
        shown = visible(clip(result, result_chars))
        lines.extend("    " + line for line in shown.split("\n"))
    return "\n".join(lines)


#: Characters of a result in the static (saved) record of a finished call.
RECORD_RESULT_CHARS = 600
#: Characters of the full arguments (behind "arguments") in the static record.
RECORD_ARGUMENT_CHARS = 4000

_STATUS_COLORS = {"error": "#b00020", "denied": "#b00020", "interrupted": "#8a6d00"}


def html_block(
    name: str,
    arguments: dict[str, Any],
    status: str,
    duration_s: float | None,
    result: str | None,
    *,
    result_chars: int = RECORD_RESULT_CHARS,
    thumbnails: tuple[str, ...] = (),
) -> str:
    """The static HTML of one call, what a saved notebook keeps: its title, an excerpt of the
    result (escaped) and ``thumbnails`` (ready ``<img>`` tags); callers show it through
    ``inert.html_bundle``, which cleans it again. No script, no widget state: it
    reads the same in JupyterLab after a restart, in nbconvert's HTML and on GitHub."""
    color = _STATUS_COLORS.get(status)
    style = "margin: 2px 0; font-family: monospace; font-size: 12px;"
    head = html_text(title(name, arguments, status, duration_s))
    if color:
        head = f'<span style="color: {color};">{head}</span>'
    parts = [f'<div style="{style}">{head}']
    if arguments:
        full = html_text(clip(full_args(arguments, None, indent=""), RECORD_ARGUMENT_CHARS))
        parts.append(
            '<details style="margin-left: 16px;"><summary>arguments</summary>'
            f'<pre style="white-space: pre-wrap; margin: 0; font-size: 11px;">{full}</pre>'
            "</details>"
        )
    if result:
        excerpt = html_text(clip(result, result_chars))
        parts.append(
            '<pre style="white-space: pre-wrap; margin: 0 0 0 16px; max-height: 12em; '
            f'overflow: auto; font-size: 11px;">{excerpt}</pre>'
        )
    if thumbnails:
        parts.append('<div style="margin-left: 16px;">' + "".join(thumbnails) + "</div>")
    parts.append("</div>")
    return "".join(parts)
