"""A small price table, so ``%agent usage`` can say roughly what a session cost.

Prices are US dollars per million tokens, matched by model-name prefix (longest first). They are
an estimate for the user's orientation, not a bill; unknown models show tokens without a cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..events import Usage


@dataclass(frozen=True, slots=True)
class Price:
    input: float  # per million input tokens
    output: float  # per million output tokens

    @property
    def cache_write(self) -> float:
        return self.input * 1.25

    @property
    def cache_read(self) -> float:
        return self.input * 0.1


PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "offline": Price(0.0, 0.0),
}


def price_for(model: str) -> Price | None:
    """The price of ``model`` (matched by prefix), or ``None`` when unknown."""
    for prefix in sorted(PRICES, key=len, reverse=True):
        if model.startswith(prefix):
            return PRICES[prefix]
    return None


def estimate_cost(model: str, usage: Usage) -> float | None:
    """Dollars for ``usage`` on ``model``, or ``None`` when the model's price is unknown."""
    price = price_for(model)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    ) / 1_000_000
