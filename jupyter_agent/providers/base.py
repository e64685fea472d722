"""The provider contract: how the agent talks to a model, whatever serves it.

The agent keeps the conversation in Anthropic Messages format and hands each provider a
``ModelRequest``; a provider streams back ``TextDelta`` events as text arrives (``ThinkingDelta``
for extended thinking) and ends with exactly one ``ModelResponse`` holding the complete reply as
Anthropic content blocks — thinking blocks with their signatures, so they round-trip — and the
API's ``stop_reason`` untouched (``pause_turn``, ``refusal``, ``model_context_window_exceeded``
are the agent's to act on). Providers for other
APIs (OpenAI-compatible servers) translate both ways; the offline model reads a script.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..events import TextDelta, TextReset, ThinkingDelta, Usage


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request: the system prompt, the conversation and the enabled tools' schemas."""

    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    #: ``"chat"``, or ``"summary"`` when the agent asks for a summary of the conversation to
    #: compact it (no tools; the offline model answers it with a deterministic digest), or
    #: ``"sampling"`` for an MCP server's completion request (no tools).
    purpose: str = "chat"


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """A complete reply: Anthropic content blocks (``text`` and ``tool_use``), why it stopped."""

    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: Usage = field(default_factory=Usage)
    model: str = ""


ProviderEvent = TextDelta | ThinkingDelta | TextReset | ModelResponse


@runtime_checkable
class Provider(Protocol):
    """A source of model replies."""

    #: Shown to the user ("anthropic", "offline", "openai").
    name: str
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one reply: any number of ``TextDelta``/``ThinkingDelta``, then one
        ``ModelResponse``. A ``TextReset`` says the reply starts over (a retry after text was
        streamed): the deltas before it are void.

        A request that fails for good raises ``ProviderError`` (after the SDK's own retries).
        """
        ...

    async def aclose(self) -> None:
        """Release connections; the provider is not used afterwards."""
        ...


@runtime_checkable
class ThinkingProvider(Protocol):
    """A provider that can think before it answers (extended thinking, ``AnthropicProvider``).

    ``thinking_budget`` is the tokens a reply may spend thinking, ``None`` for none, and
    ``effort`` how hard it thinks (``None``: the model's default); setting them
    on a copy gives a variant sharing the client. A provider without it answers without thinking.
    """

    thinking_budget: int | None
    #: ``low`` … ``max``, or ``None`` for the model's own effort.
    effort: str | None


@runtime_checkable
class ReplyCapped(Protocol):
    """A provider whose replies are capped at ``max_tokens`` (``None``: the server decides).

    The cap is what the agent keeps free of the context window for the reply, and what a cost
    bound assumes a reply may cost; without it the agent assumes its own default.
    """

    max_tokens: int | None


@runtime_checkable
class KnowsModelFacts(Protocol):
    """A provider that knows its model's facts (``AnthropicProvider``: the Models API's answer,
    else a cited built-in table): the window the agent fits the conversation to."""

    def facts(self) -> Any:
        """The model's ``ModelFacts`` (``context_window``, ``max_tokens``, ...)."""
        ...


def reply_cap(provider: object, default: int | None) -> int | None:
    """``provider.max_tokens`` when it is ``ReplyCapped``, else ``default``.

    The same test as ``isinstance(provider, ReplyCapped)`` as a plain attribute lookup: that
    ``isinstance`` walks the protocol's members on every call, and the agent asks on every request.
    """
    cap = getattr(provider, "max_tokens", default)
    return cap if cap is None or isinstance(cap, int) else default


def known_facts(provider: object) -> Any:
    """``provider.facts()`` when it is ``KnowsModelFacts``, else ``None`` (a plain attribute
    lookup, as ``reply_cap``)."""
    facts = getattr(provider, "facts", None)
    return facts() if callable(facts) else None


class _ClosingStream:
    """``closing_stream``'s block (a class, not a generator: it wraps every request)."""

    __slots__ = ("_iterator",)

    def __init__(self, iterator: AsyncIterator[ProviderEvent]) -> None:
        self._iterator = iterator

    async def __aenter__(self) -> AsyncIterator[ProviderEvent]:
        return self._iterator

    async def __aexit__(self, *_exc: object) -> None:
        close = getattr(self._iterator, "aclose", None)  # a plain AsyncIterator need not have one
        if close is not None:
            await close()


def closing_stream(
    iterator: AsyncIterator[ProviderEvent],
) -> AbstractAsyncContextManager[AsyncIterator[ProviderEvent]]:
    """Close a provider's stream however its reader leaves it (its HTTP response too)."""
    return _ClosingStream(iterator)
