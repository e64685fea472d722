"""Events the agent streams while it works, for any UI to render.

The agent knows nothing about notebooks; the notebook layer (or a terminal, or a test) iterates
``Agent.stream_chat`` and draws these. Order within one ``stream_chat``:

    TurnStarted → ContextCompacted? → (ThinkingDelta | TextDelta | TextReset)* → TurnFinished
        → (ToolCallStarted … ToolCallProgress* … ToolCallFinished)*
    … repeated per model turn …
    AgentFinished            (always last, unless the stream raised)

``ToolCallStarted`` events come in the model's order; ``ToolCallFinished`` as each call completes
(the calls of one turn run concurrently); ``ToolCallProgress`` between a call's start and its
end, when the tool reports how far it got (an MCP server's progress notifications).

``AgentError`` is emitted just before a failed request raises out of the stream.
``ThinkingDelta`` streams extended thinking (never part of the final text);
``TextReset`` takes back the text of the current turn (its reply is being streamed again);
``ContextCompacted`` says the agent shortened the conversation to fit the model's window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .tools.base import Image

#: Where a tool call stands, as every view shows it.
CallStatus = Literal["waiting", "running", "done", "error", "denied", "interrupted"]

#: Why a call was not run, when it was not: the user's ``deny`` policy, the user declining it,
#: nobody there to approve it, a tool the registry does not have (or has disabled), input that was
#: not a JSON object, or a reply cut off before its calls were whole (``max_tokens``, a refusal).
Refusal = Literal["policy", "user", "no_approver", "unavailable", "invalid", "incomplete"]

#: The refusals that are a *no* from the user or their settings (shown as ``denied``).
DENIALS: frozenset[Refusal] = frozenset({"policy", "user", "no_approver"})


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts, for one turn or added up over many."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A request to the model is about to be sent (``turn`` counts from 1 within one chat)."""

    turn: int
    model: str = ""


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's answer, as it streams. Joined, they are the final text."""

    text: str


@dataclass(frozen=True, slots=True)
class TextReset:
    """The reply of this turn is being streamed again from its start: the API broke off the
    stream (``overloaded_error``) after some text had been shown, and the provider retried. The
    text shown since this turn's ``TurnStarted`` is void; the deltas that follow replace it."""


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of what the model writes apart from its answer, as it streams.

    ``kind``: ``"thinking"`` (its reasoning, shown collapsed), ``"progress"`` (the short progress
    text current models write between tool calls, which arrives in thinking blocks; shown as it
    streams) or ``"notice"`` (a one-line note from the provider about the model: a setting it
    mapped, a deprecated model, facts from the built-in table).
    """

    text: str
    kind: str = "thinking"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A call of the model's reply begins. ``asks``: the call waits for the user's approval
    before it runs (a view shows it waiting, never running, until the question comes)."""

    call_id: str
    name: str
    input: dict[str, Any]
    asks: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallProgress:
    """A running call reported how far it got: ``progress`` of ``total`` (``None``: unknown)
    and a message, as the tool (or its MCP server) said them. Each replaces the call's last."""

    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    call_id: str
    name: str
    output: str
    is_error: bool
    duration_s: float
    #: Images of the result, as sent to the model (downscaled; at most 5).
    images: tuple[Image, ...] = ()
    #: Why the call was not run (``None``: it ran, whatever its result says).
    refused: Refusal | None = None
    #: How many secret values were replaced by ``[redacted: NAME]`` in ``output``.
    redacted: int = 0

    @property
    def status(self) -> CallStatus:
        """``denied`` for a call the user or their policy refused, else ``error`` or ``done``."""
        if self.refused in DENIALS:
            return "denied"
        return "error" if self.is_error else "done"


@dataclass(frozen=True, slots=True)
class ContextCompacted:
    """The conversation was shortened to fit the context window (estimated tokens), and how:
    tool results made one-line stubs, tool calls folded into a note, earlier turns summarised,
    results of the current turn shortened."""

    tokens_before: int
    tokens_after: int
    stubbed: int = 0
    folded: int = 0
    summarised: int = 0
    shortened: int = 0

    def actions(self) -> list[str]:
        """What was done, in words (``[]`` if the counts are not known)."""

        def count(number: int, one: str, many: str) -> str:
            return f"{number:,} {one if number == 1 else many}"

        done = []
        if self.stubbed:
            done.append(count(self.stubbed, "tool result", "tool results") + " made stubs")
        if self.folded:
            done.append(count(self.folded, "tool call", "tool calls") + " folded into a note")
        if self.summarised:
            done.append(count(self.summarised, "earlier turn", "earlier turns") + " summarised")
        if self.shortened:
            done.append(
                count(self.shortened, "result", "results") + " of the current turn shortened"
            )
        return done


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The model's reply for this turn is complete (before its tool calls run)."""

    turn: int
    stop_reason: str | None
    usage: Usage = field(default_factory=Usage)


StopKind = Literal["end_turn", "max_turns", "max_tokens", "refusal", "other"]


@dataclass(frozen=True, slots=True)
class AgentFinished:
    """The chat is over: its final text, why it stopped, and the tokens it used."""

    text: str
    stop: StopKind
    turns: int
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class AgentError:
    """A model request failed; the stream raises the exception right after this event."""

    message: str
    exception: BaseException | None = None


AgentEvent = (
    TurnStarted
    | TextDelta
    | TextReset
    | ThinkingDelta
    | ContextCompacted
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallFinished
    | TurnFinished
    | AgentFinished
    | AgentError
)
