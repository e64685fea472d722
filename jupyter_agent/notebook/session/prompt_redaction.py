"""Prompts the package builds from the notebook pass the one redactor, as tool results do.

``%agent error`` sends a failing cell's source and traceback, and ``{{name}}`` brings a
variable's value into a ``%%agent`` prompt: both are the notebook's data, which may hold a key
(a cell that set one, an exception that printed one, a settings dict). They go through
``tools/redact.py`` — credential-named environment values and well-known token shapes become
``[redacted: NAME]`` — before the model, the conversation or the saved record sees them, and the
cell says how many were taken out. What the user typed in the prompt itself is theirs and sent as
typed.
"""

from __future__ import annotations

from collections.abc import Callable

from ...tools.redact import redact

__all__ = ["redacted_prompt", "redaction_line"]


def redaction_line(count: int) -> str:
    """What the cell says when ``count`` secret values were taken out of a built prompt."""
    values = "1 secret value was" if count == 1 else f"{count:,} secret values were"
    return (
        f"jupyter-agent: {values} redacted from the prompt built from the notebook before the "
        "model saw it ([redacted: NAME])."
    )


def redacted_prompt(text: str, notify: Callable[[str], None]) -> str:
    """``text`` redacted; ``notify`` told how many values were, when any were."""
    clean, count = redact(text)
    if count:
        notify(redaction_line(count))
    return clean
