"""``one_line``: text folded onto one line, so an error or a title read from outside (a server's
message, a saved conversation's name) cannot break a one-line report or a table row."""

from __future__ import annotations


def one_line(text: object) -> str:
    """``text``'s words joined by single spaces (newlines and runs of whitespace folded)."""
    return " ".join(str(text).split())
