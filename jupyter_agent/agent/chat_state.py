"""The bookkeeping of one chat: what it said so far, its turns, its usage, its tool calls' ids.

``Agent.stream_chat`` keeps one ``ChatState`` per chat; the clean-up code reads it when a chat ends
early (what the user already saw of an interrupted answer stays in the conversation). ``Call`` is
one ``tool_use`` of a reply as the loop runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..events import TextDelta, Usage


@dataclass
class ChatState:
    """Book-keeping of one chat, read by the clean-up code when the chat ends early."""

    max_turns: int
    deltas: list[str] = field(default_factory=list)
    #: Model text of the turn being streamed, not yet in ``messages``.
    turn_text: list[str] = field(default_factory=list)
    #: Where this turn's text (its separator included) begins in ``deltas``.
    turn_start: int = 0
    #: Whether this chat added an assistant message to the conversation.
    produced: bool = False
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    #: Every tool_use id of the conversation, so that new ones stay unique.
    used_ids: set[str] = field(default_factory=set)
    #: The last reply was paused (``pause_turn``): the next one continues its message.
    continuing: bool = False
    pauses: int = 0

    @property
    def text(self) -> str:
        return "".join(self.deltas)

    def reset_turn(self) -> None:
        """Take back the text of the turn being streamed (its reply starts over)."""
        if self.turn_text:
            del self.deltas[self.turn_start :]
        self.turn_text = []

    def text_deltas(self, text: str) -> list[TextDelta]:
        """The deltas for model text: a blank line first when an earlier turn said something."""
        deltas = []
        if not self.turn_text:
            self.turn_start = len(self.deltas)
        if not self.turn_text and self.deltas and not self.text.endswith("\n\n"):
            separator = "\n\n" if not self.text.endswith("\n") else "\n"
            self.deltas.append(separator)
            deltas.append(TextDelta(separator))
        self.turn_text.append(text)
        self.deltas.append(text)
        deltas.append(TextDelta(text))
        return deltas

    def note(self, note: str) -> TextDelta:
        """A note of the agent's own (the ``max_turns`` notice), set apart from the text."""
        text = self.text
        if text and not text.endswith("\n\n"):
            note = ("\n" if text.endswith("\n") else "\n\n") + note
        self.deltas.append(note)
        return TextDelta(note)


@dataclass(frozen=True, slots=True)
class Call:
    """One ``tool_use`` of a reply."""

    id: str
    name: str
    #: What the model sent; not a dict when its JSON could not be parsed.
    raw_input: object

    @property
    def input(self) -> dict[str, Any]:
        return self.raw_input if isinstance(self.raw_input, dict) else {}
