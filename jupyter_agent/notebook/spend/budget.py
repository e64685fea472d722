"""The spend cap: dollars one ``%%agent`` cell, and the whole session, may spend on the model.

Before each request the turn would send, ``SpendGuard`` estimates what it could cost at most —
its input (the system prompt, the tools' schemas and the conversation, at ~4 characters a
token) plus the provider's whole ``max_tokens`` of output, at the price table's rates
(``pricing.py``, with ``AgentMagics.prices``) — and when that could take the cell or the session
past its budget, the request is not sent: ``BudgetedProvider`` answers in its place with a short
reply that says so, and the turn ends there cleanly (the conversation stays valid; the next cell
goes on from it). What each reply really cost (its reported usage) is what counts as spent.

A model without a price (the offline demo model, a local server) costs nothing here. An MCP
server's sampling request goes through the same guard (``purpose == "sampling"``): counted, and
refused with a ``ProviderError`` — the server gets it as the error of its request.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from ...agent.results import CHARS_PER_TOKEN
from ...agent.tokens import messages_tokens
from ...errors import ProviderError
from ...events import TextDelta, Usage
from ...providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderEvent,
    ReplyCapped,
    reply_cap,
)
from .pricing import Price, estimate_cost, money, price_for

#: Output tokens assumed for a provider that does not say its ``max_tokens``; also the least
#: room a reply is given when the budget would not cover the provider's whole ``max_tokens``
#: (a current model's default leaves room for a long think: tens of thousands of tokens).
DEFAULT_OUTPUT_TOKENS = 8192


def _input_cost(
    model: str, request: ModelRequest, prices: Mapping[str, Price]
) -> tuple[float, float] | None:
    """What ``request``'s input costs on ``model`` and what one output token costs (dollars),
    or ``None`` for a model with no price."""
    price = price_for(model, prices)
    if price is None:
        return None
    schema_chars = len(request.system) + len(json.dumps(request.tools, ensure_ascii=False))
    input_tokens = messages_tokens(request.messages) + schema_chars // CHARS_PER_TOKEN
    rates = price.for_prompt(input_tokens)  # a long prompt may bill the whole request higher
    return input_tokens * rates.input / 1_000_000, rates.output / 1_000_000


def request_cost_bound(
    model: str, request: ModelRequest, max_tokens: int, prices: Mapping[str, Price]
) -> float:
    """The most ``request`` could cost on ``model`` (0 for a model with no price)."""
    costs = _input_cost(model, request, prices)
    return 0.0 if costs is None else costs[0] + max_tokens * costs[1]


def affordable_output(
    model: str, request: ModelRequest, left: float, prices: Mapping[str, Price]
) -> int:
    """The most output tokens ``request`` may ask for on ``model`` with ``left`` dollars."""
    costs = _input_cost(model, request, prices)
    if costs is None or costs[1] <= 0:
        return 2**31
    return max(int((left - costs[0]) / costs[1]), 0)


@dataclass
class SpendGuard:
    """One cell's caps: ``cell`` dollars for the cell, ``session_left`` for the rest of the
    session (``None``: no cap); ``spent`` is what the cell's replies cost so far."""

    cell: float | None
    session_left: float | None
    session_cap: float | None
    prices: Mapping[str, Price]
    spent: float = 0.0
    stopped: str = ""

    def refusal(self, estimate: float) -> str | None:
        """Why a request that could cost ``estimate`` is not sent, or ``None``."""
        if self.cell is not None and self.spent + estimate > self.cell:
            return (
                f"■ Stopped: the next request could cost up to {money(estimate)}, and this "
                f"cell's budget is {money(self.cell)} ({money(self.spent)} spent). Run the cell "
                "with a larger --budget, or change AgentMagics.budget, to go on."
            )
        if self.session_left is not None and self.spent + estimate > self.session_left:
            left = max(self.session_left - self.spent, 0.0)
            cap = money(self.session_cap) if self.session_cap is not None else "its cap"
            return (
                f"■ Stopped: the next request could cost up to {money(estimate)}, and the "
                f"session budget ({cap}) has {money(left)} left. Raise "
                "AgentMagics.session_budget to go on."
            )
        return None

    def left(self) -> float | None:
        """Dollars the next request may still cost (``None``: no cap)."""
        caps = [cap for cap in (self.cell, self.session_left) if cap is not None]
        return min(caps) - self.spent if caps else None

    def record(self, model: str, usage: Usage) -> None:
        self.spent += estimate_cost(model, usage, self.prices) or 0.0


def with_max_tokens(provider: Provider, max_tokens: int) -> Provider:
    """``provider`` answering in at most ``max_tokens`` (a copy sharing its client and state)."""
    variant = copy.copy(provider)
    cast("ReplyCapped", variant).max_tokens = max_tokens
    return variant


class BudgetedProvider:
    """``provider`` behind a ``SpendGuard``: a request that could pass the budget is answered
    with a reply saying so instead of being sent. ``on_usage(model, usage)``: told what each
    reply used (the session's ledger, for requests it does not otherwise see)."""

    def __init__(
        self,
        provider: Provider,
        guard: SpendGuard,
        on_usage: Callable[[str, Usage], None] | None = None,
    ) -> None:
        self.inner = provider
        self.guard = guard
        self.on_usage = on_usage
        self.name: str = provider.name
        self.model: str = provider.model

    def __getattr__(self, attribute: str) -> Any:  # notice, thinking_budget, ...: the provider's
        return getattr(self.inner, attribute)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        model = self.inner.model
        max_tokens = reply_cap(self.inner, None)
        if not isinstance(max_tokens, int):
            max_tokens = DEFAULT_OUTPUT_TOKENS
        estimate = request_cost_bound(model, request, max_tokens, self.guard.prices)
        refusal = self.guard.refusal(estimate)
        inner = self.inner
        left = self.guard.left()
        if refusal is not None and left is not None and max_tokens > DEFAULT_OUTPUT_TOKENS:
            # The model's default room (sized for a long think) would not fit the budget: a
            # reply with less room, no less than the usual default, may.
            room = affordable_output(model, request, left, self.guard.prices)
            if room >= DEFAULT_OUTPUT_TOKENS:
                inner = with_max_tokens(self.inner, min(room, max_tokens))
                refusal = None
        if refusal is not None:
            self.guard.stopped = refusal
            if request.purpose == "sampling":  # an MCP server's request: its error, not a reply
                raise ProviderError(refusal.removeprefix("■ Stopped: "))
            if request.purpose == "summary":  # compaction: no summary rather than a wrong one
                yield ModelResponse([{"type": "text", "text": ""}], "end_turn", model=model)
                return
            yield TextDelta(refusal)
            yield ModelResponse([{"type": "text", "text": refusal}], "end_turn", model=model)
            return
        async for event in inner.stream(request):
            if isinstance(event, ModelResponse):
                self.guard.record(event.model or model, event.usage)
                if self.on_usage is not None:
                    self.on_usage(event.model or model, event.usage)
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()
