"""List prices, so ``%agent usage`` can say roughly what a session cost — and where that comes from.

Prices are US dollars per million tokens, taken from Anthropic's published price list
(``SOURCE``, as of ``SOURCE_DATE``): base input, output, 5-minute cache writes (what the agent's
``cache_control: ephemeral`` breakpoints write) and cache hits, per model. A model name matches
its entry exactly or by prefix (``claude-sonnet-4-5-20250929`` is ``claude-sonnet-4-5``), longest
prefix first. Every model of the installed ``anthropic`` SDK's model list is either priced here or
listed in ``UNPRICED`` with the reason (tests check both), so a new default model never shows a
silent "?" again.

Users can add or correct prices: ``estimate_cost(..., prices={"my-model": {"input": 1, "output":
5}})`` — in the notebook, ``%config AgentMagics.prices = {...}``. These are estimates for the
user's orientation, not a bill (batch, regional and long-prompt rates are not modelled; Haiku 5.5
is priced at its rate for prompts up to 100,000 tokens).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..events import Usage

SOURCE = "https://platform.claude.com/docs/en/about-claude/pricing"
SOURCE_DATE = "2026-11-23"


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float
    #: 5-minute cache write; the usual 1.25 × input when not given.
    cache_write: float | None = None
    #: Cache hit; the usual 0.1 × input when not given.
    cache_read: float | None = None

    @property
    def cache_write_rate(self) -> float:
        return self.input * 1.25 if self.cache_write is None else self.cache_write

    @property
    def cache_read_rate(self) -> float:
        return self.input * 0.1 if self.cache_read is None else self.cache_read


_OPUS_4_5_TO_5 = Price(5.0, 25.0, 6.25, 0.50)
_OPUS_4_0_TO_4_1 = Price(15.0, 75.0, 18.75, 1.50)
_SONNET_4_X = Price(3.0, 15.0, 3.75, 0.30)
_FABLE_5 = Price(10.0, 50.0, 12.50, 1.00)
_FABLE_5_1 = Price(10.0, 50.0, 12.50, 0.25)

#: The published list prices (``SOURCE``), by model name or name prefix.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": _FABLE_5_1,
    "claude-mythos-5-1": _FABLE_5_1,
    "claude-fable-5": _FABLE_5,
    "claude-mythos-5": _FABLE_5,
    "claude-opus-5-5": Price(4.0, 20.0, 5.00, 0.20),
    "claude-opus-5": _OPUS_4_5_TO_5,
    "claude-opus-4-8": _OPUS_4_5_TO_5,
    "claude-opus-4-7": _OPUS_4_5_TO_5,
    "claude-opus-4-6": _OPUS_4_5_TO_5,
    "claude-opus-4-5": _OPUS_4_5_TO_5,
    "claude-opus-4-1": _OPUS_4_0_TO_4_1,
    "claude-opus-4-0": _OPUS_4_0_TO_4_1,
    "claude-opus-4-20250514": _OPUS_4_0_TO_4_1,
    "claude-sonnet-5-5": Price(2.0, 10.0, 2.50, 0.10),  # cache hits cut to $0.10 on 2026-10-07
    "claude-sonnet-5": Price(2.0, 10.0, 2.50, 0.20),
    "claude-sonnet-4": _SONNET_4_X,  # 4, 4.5, 4.6
    "claude-3-7-sonnet": _SONNET_4_X,
    "claude-haiku-5-5": Price(0.10, 0.50, 0.125, 0.01),  # prompts up to 100,000 tokens
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": Price(0.80, 4.0, 1.00, 0.08),
    "offline": Price(0.0, 0.0, 0.0, 0.0),
}

#: Models the SDK knows that have no published price, and why.
UNPRICED: dict[str, str] = {
    "claude-mythos-preview": "invitation-only research preview; no public list price",
}


def price_for(model: str, prices: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model`` (exact name, else longest matching prefix), or ``None``."""
    table = PRICES if prices is None else {**PRICES, **prices}
    if model in table:
        return table[model]
    for prefix in sorted(table, key=len, reverse=True):
        if model.startswith(prefix):
            return table[prefix]
    return None


def user_prices(raw: Mapping[str, object]) -> dict[str, Price]:
    """User prices as ``{"model": {"input": 1, "output": 5, ...}}`` (or ``Price``); checked.

    Raises ``ValueError`` with a message naming the model for anything malformed.
    """
    parsed: dict[str, Price] = {}
    for model, entry in raw.items():
        if isinstance(entry, Price):
            parsed[str(model)] = entry
            continue
        if not isinstance(entry, Mapping):
            raise ValueError(
                f"price for {model!r} must be a dict like {{'input': 3, 'output': 15}}"
            )
        unknown = set(entry) - {"input", "output", "cache_write", "cache_read"}
        if unknown or "input" not in entry or "output" not in entry:
            raise ValueError(
                f"price for {model!r} needs 'input' and 'output' (and may have 'cache_write', "
                f"'cache_read'), in dollars per million tokens; got {sorted(entry)}"
            )
        values: dict[str, float] = {}
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"price {key!r} for {model!r} must be a number >= 0")
            values[str(key)] = float(value)
        parsed[str(model)] = Price(**values)
    return parsed


def estimate_cost(
    model: str, usage: Usage, prices: Mapping[str, Price] | None = None
) -> float | None:
    """Dollars for ``usage`` on ``model``, or ``None`` when the model has no price."""
    price = price_for(model, prices)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write_rate
        + usage.cache_read_input_tokens * price.cache_read_rate
    ) / 1_000_000
