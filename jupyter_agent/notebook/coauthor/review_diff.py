"""The diff an ``edit_cell`` review shows: what the user accepts is what the cell will hold.

The frontend extension draws the lines it is sent as text; they are made here, on the kernel,
through the one function that makes untrusted text visible (``inert.visible``): a lone carriage
return (which Python reads as a line break, but a ``<pre>`` draws as nothing), bidi overrides
and isolates (Trojan Source: a condition that reads as a comment), zero-width and other
invisible characters are shown as escapes, and long lines are wrapped (never cut) so nothing
runs off the right edge. The source the diff was computed on goes with it: the page refuses to
show it over anything else, and an accepted edit is applied to exactly that source.
"""

from __future__ import annotations

from ..inert import visible

#: Characters of a diff line before it wraps (its continuation is marked ``↪``).
WRAP_AT = 100
#: Unchanged lines shown around the changed block.
CONTEXT = 2


def _wrapped(kind: str, line: str) -> list[list[str]]:
    shown = visible(line)
    pieces = [shown[at : at + WRAP_AT] for at in range(0, len(shown), WRAP_AT)] or [""]
    return [[kind, piece if n == 0 else f"↪ {piece}"] for n, piece in enumerate(pieces)]


def diff_lines(before: str, after: str) -> list[list[str]]:
    """``[kind, text]`` rows (kind ``same``, ``del`` or ``add``) of one changed block with
    ``CONTEXT`` lines around it, each made visible and wrapped."""
    old, new = before.split("\n"), after.split("\n")
    start = 0
    while start < len(old) and start < len(new) and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    rows: list[list[str]] = []
    for line in old[max(0, start - CONTEXT) : start]:
        rows += _wrapped("same", line)
    for line in old[start:end_old]:
        rows += _wrapped("del", line)
    for line in new[start:end_new]:
        rows += _wrapped("add", line)
    for line in old[end_old : end_old + CONTEXT]:
        rows += _wrapped("same", line)
    return rows


def edited(source: str, old: str, new: str) -> str:
    """``source`` with its one ``old`` replaced by ``new``; ``ValueError`` (saying why) unless
    ``old`` occurs exactly once."""
    count = source.count(old) if old else 0
    if count != 1:
        raise ValueError(
            "old_string is not in the cell (it may have been edited since)"
            if count == 0
            else f"old_string occurs {count} times in the cell; give more context"
        )
    at = source.index(old)
    return source[:at] + new + source[at + len(old) :]
