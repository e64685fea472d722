"""Draw an agent run in a cell, from its events, on the main thread: what every renderer offers.

Two renderers follow ``Renderer``: ``RichRenderer`` (``rich_renderer.py``) for Jupyter frontends —
Markdown displays and tool-call widgets, a static record once the run ends — and ``TextRenderer``
(``text_renderer.py``) for terminal IPython and scripts, where the answer streams as escaped text.
The magics pick one per cell and drive it while the run is pumped; the notices both show (a
conversation compacted, secrets redacted from tool results) are worded here, once.
"""

from __future__ import annotations

from typing import Protocol

from ...events import ContextCompacted

#: The class of the agent's Stop button: the page matches it by this (``buttons.ts``).
STOP_BUTTON_CLASS = "jp-agent-stop"


def compaction_notice(event: ContextCompacted) -> str:
    """What a cell says when the conversation was compacted to fit the context window."""
    done = event.actions() or ["older tool results shortened, older turns summarised"]
    return (
        f"Context compacted to fit the model's window: about {event.tokens_before:,} → "
        f"{event.tokens_after:,} tokens ({'; '.join(done)}; your recent messages are kept)."
    )


def redaction_notice(count: int) -> str:
    """What a cell says when secrets were taken out of tool results (``tools/redact.py``)."""
    values = "1 secret value was" if count == 1 else f"{count:,} secret values were"
    return f"{values} redacted from tool results before the model saw them ([redacted: NAME])."


class Renderer(Protocol):
    """What the magics drive while a run is pumped."""

    #: Why the turn ended, when not by itself (a kernel restart): the record's last line.
    ended_by: str

    def handle(self, event: object) -> None: ...

    def tick(self) -> None: ...

    def close(self, *, interrupted: bool) -> None: ...

    def mark_waiting(self, call_id: str, waiting: bool) -> None: ...

    @property
    def text(self) -> str: ...
