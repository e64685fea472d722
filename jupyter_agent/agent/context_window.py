"""``ContextWindow``: one chat's fit to its model's context window.

Before each request the agent asks ``fit()`` whether the conversation fits; when it does not —
before sending, or because the API answered "prompt is too long" — the same ``fit()`` compacts it
(``compaction.py``) and says what it did as a ``ContextCompacted`` event. The window's size is
the model's documented one (``tokens.py``) unless the agent sets ``context_window``, and shrinks
to what the API reports as its maximum. Estimates come from the last reply's reported input
tokens (``TokenEstimator``), calibrated when the API's own count disagrees.

The window reads the chat it belongs to (``WindowSubject``: an ``Agent``) each time: its
provider, messages, system prompt and tools, never a copy.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import ContextOverflowError, ProviderError
from ..events import ContextCompacted
from ..providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    closing_stream,
    known_facts,
    reply_cap,
)
from . import conversation
from .compaction import SUMMARY_SYSTEM, TARGET_SHARE, compact
from .results import CHARS_PER_TOKEN, cut_middle
from .tokens import TokenEstimator, context_window_for, reported_sizes

__all__ = ["ContextOverflowError", "ContextWindow", "WindowSubject"]

#: Output tokens kept free for the reply when the provider does not say its ``max_tokens``.
DEFAULT_REPLY_TOKENS = 8192


class WindowSubject(Protocol):
    """What the window reads of its chat (an ``Agent``)."""

    provider: Provider
    context_window: int | None
    messages: list[dict[str, Any]]

    @property
    def system_prompt(self) -> str: ...

    def get_tools(self) -> list[dict[str, Any]]: ...


class ContextWindow:
    """Estimates, limits and compaction for the conversation of one chat."""

    def __init__(self, subject: WindowSubject) -> None:
        self._subject = subject
        self.tokens = TokenEstimator()
        #: The maximum the API reported ("prompt is too long: N > M maximum"), once it did.
        self.reported_window: int | None = None
        self._fixed_cache: tuple[tuple[str, tuple[str, ...]], int] | None = None
        #: The tool list and system prompt ``fixed_tokens`` last measured, and its answer: a
        #: request measures the same list twice (``fit``, then ``record``).
        self._fixed_last: tuple[list[dict[str, Any]], str, int] | None = None

    # -- sizes -----------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """``context_window``, or the provider's model's own (its facts: the Models API's answer
        once in, else the built-in table)."""
        subject = self._subject
        provider = subject.provider
        facts = known_facts(provider)
        known = facts.context_window if facts is not None else None
        window = subject.context_window or known or context_window_for(subject.provider.model)
        if self.reported_window is not None:
            window = min(window, self.reported_window)
        return window

    def limits(self) -> tuple[int, int]:
        """(the most a request may carry, what compaction aims at), in estimated tokens."""
        window = self.size
        provider = self._subject.provider
        reply = reply_cap(provider, DEFAULT_REPLY_TOKENS)
        reserve = min(int(reply or 0), window // 4)
        limit = window - reserve
        return limit, min(limit, int(window * TARGET_SHARE))

    def fixed_tokens(self, tools: list[dict[str, Any]]) -> int:
        """Estimated tokens of the system prompt and the tool schemas (cached per tool set)."""
        system = self._subject.system_prompt
        last = self._fixed_last
        if last is not None and last[0] is tools and last[1] == system:
            return last[2]
        key = (system, tuple([str(tool.get("name")) for tool in tools]))
        if self._fixed_cache is None or self._fixed_cache[0] != key:
            tokens = (len(system) + sum(len(str(tool)) for tool in tools)) // CHARS_PER_TOKEN
            self._fixed_cache = (key, tokens)
        self._fixed_last = (tools, system, self._fixed_cache[1])
        return self._fixed_cache[1]

    def estimate(self, tools: list[dict[str, Any]] | None = None) -> int:
        """About how many input tokens the next request would carry."""
        tools = self._subject.get_tools() if tools is None else tools
        return self.tokens.estimate(self._subject.messages, self.fixed_tokens(tools))

    def forget(self) -> None:
        """The conversation was rewritten (cleared, repaired): no report describes it now."""
        self.tokens.forget()

    def record(self, tools: list[dict[str, Any]], reported_input_tokens: int) -> None:
        """A reply came for a request carrying the conversation as it is now."""
        self.tokens.record(self._subject.messages, self.fixed_tokens(tools), reported_input_tokens)

    def calibrate(self, error: ProviderError, estimate: int) -> None:
        """Learn from the API's own count in a "prompt is too long: N tokens" answer."""
        sizes = reported_sizes(error)
        tokens = self.tokens
        tokens.forget()
        if sizes is not None and estimate > 0:
            reported, maximum = sizes
            self.reported_window = maximum
            tokens.scale = max(tokens.scale, tokens.scale * reported / estimate)
        else:
            tokens.scale = min(4.0, tokens.scale * 1.5)

    # -- fitting ---------------------------------------------------------------------------------

    async def fit(
        self,
        *,
        force: bool = False,
        overflow: ProviderError | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> ContextCompacted | None:
        """Compact the conversation if it does not fit (always with ``force``).

        ``overflow``: the API refused the last request as too long (its count calibrates the
        estimate first, and compaction runs whatever the estimate says). Raises
        ``ContextOverflowError`` when even the current turn alone cannot fit. ``tools``: the
        schemas the request will carry, when the caller has them (else the chat's).
        """
        tools = self._subject.get_tools() if tools is None else tools
        if overflow is not None:
            self.calibrate(overflow, self.estimate(tools))
            force = True
        limit, target = self.limits()
        if not force and self.estimate(tools) <= limit:
            return None
        fixed = self.fixed_tokens(tools)
        estimator = self.tokens
        messages = self._subject.messages

        def estimate(candidate: list[dict[str, Any]]) -> int:
            return estimator.estimate(candidate, fixed)

        result = await compact(
            messages,
            limit=limit,
            target=target,
            estimate=estimate,
            summarise=self._summarise,
            force=force,
        )
        if result.messages == messages:
            return None
        messages[:] = result.messages
        self.tokens.forget()
        return ContextCompacted(
            result.tokens_before,
            self.estimate(tools),
            stubbed=result.stubbed,
            folded=result.folded,
            summarised=result.summarised,
            shortened=result.shortened,
        )

    async def compact_now(self) -> ContextCompacted | None:
        """``%agent compact``: compact now; None if there is nothing to do or it would not help."""
        messages = self._subject.messages
        if not messages:
            return None
        if conversation.repair(messages):
            self.tokens.forget()
        try:
            event = await self.fit(force=True)
        except ContextOverflowError:
            return None  # the latest turn alone is too big; the next chat will say so
        if event is not None and event.tokens_after >= event.tokens_before:
            return None
        return event

    async def _summarise(self, transcript: str) -> str:
        """A summary of ``transcript`` from the same provider (its text, tools off)."""
        _, target = self.limits()
        budget = target * CHARS_PER_TOKEN // 2
        request = ModelRequest(
            system=SUMMARY_SYSTEM,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "Summarise this conversation so far:\n\n"
                            + cut_middle(transcript, budget),
                        }
                    ],
                }
            ],
            tools=[],
            purpose="summary",
        )
        response: ModelResponse | None = None
        try:
            async with closing_stream(self._subject.provider.stream(request)) as stream:
                async for item in stream:
                    if isinstance(item, ModelResponse):
                        response = item
        except ProviderError:
            response = None
        if response is None:
            # the provider could not summarise: keep a mechanical digest instead
            return cut_middle(transcript, budget // 2)
        return "".join(str(b.get("text", "")) for b in response.content if b.get("type") == "text")
