"""List prices, so ``%agent usage`` can say roughly what a session cost — and where that comes from.

Prices are US dollars per million tokens, taken from Anthropic's published price list
(``SOURCE``, as of ``SOURCE_DATE``) and each model's own page (every row names its ``source``):
base input, output, 5-minute cache writes (what the agent's ``cache_control: ephemeral``
breakpoints write) and cache hits, per model. A model name matches its entry exactly or by prefix
(``claude-sonnet-4-5-20250929`` is ``claude-sonnet-4-5``), longest prefix first. Every model of the
installed ``anthropic`` SDK's model list has a row of its own here (not a family's prefix,
which priced Fable 5.2 as Fable 5) or is listed in ``UNPRICED`` with the reason (tests check
both), so a new model fails the tests until someone looks its price up.

Some models bill a whole request at a higher tier when its prompt is long (Claude Haiku 5.5:
prompts above 100,000 tokens, cache reads and writes counted). A tier is chosen per request, so
the session keeps its usage per model *and* per prompt size (``UsageLedger``): the sum of many
short requests is not priced as one long one, nor a long one at the short rate.

Users can add or correct prices: ``estimate_cost(..., prices={"my-model": {"input": 1, "output":
5}})`` — in the notebook, ``%config AgentMagics.prices = {...}``. These are estimates for the
user's orientation, not a bill (batch, regional and 1-hour cache rates are not modelled).

``money`` is the one way a dollar amount is written for the user: enough digits that a $0.001
budget does not read $0.00.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...events import Usage

SOURCE = "https://platform.claude.com/docs/en/about-claude/pricing"
SOURCE_DATE = "2026-11-28"

#: The current lineup and its prices: Fable 5.2 at $8 / $40, Opus 5.5, Sonnet 5.5, Haiku 5.5.
MODELS_OVERVIEW = "https://platform.claude.com/docs/en/models/overview"
_FABLE_5_2_PAGE = "https://platform.claude.com/docs/en/models/fable-5-2/whats-new-fable-5-2"
_FABLE_5_1_PAGE = "https://platform.claude.com/docs/en/models/fable-5-1/overview"
_FABLE_5_PAGE = "https://platform.claude.com/docs/en/models/fable-5/overview"
_OPUS_5_5_PAGE = "https://platform.claude.com/docs/en/models/opus-5-5/overview"
_OPUS_5_PAGE = "https://platform.claude.com/docs/en/models/opus-5/overview"
_SONNET_5_5_PAGE = "https://platform.claude.com/docs/en/models/sonnet-5-5/overview"
_SONNET_5_PAGE = "https://platform.claude.com/docs/en/models/sonnet-5/overview"
_HAIKU_5_5_PAGE = "https://platform.claude.com/docs/en/models/haiku-5-5/overview"


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float
    #: 5-minute cache write; the usual 1.25 × input when not given.
    cache_write: float | None = None
    #: Cache hit; the usual 0.1 × input when not given.
    cache_read: float | None = None
    #: The rates of a request whose prompt (input, cache reads and cache writes) is longer than
    #: ``long_prompt_above`` tokens (Haiku 5.5: above 100,000 tokens); ``None``: one rate.
    long_prompt: Price | None = None
    long_prompt_above: int = 0
    #: Where the figures are published (every built-in row names one).
    source: str = field(default="", compare=False)

    @property
    def cache_write_rate(self) -> float:
        return self.input * 1.25 if self.cache_write is None else self.cache_write

    @property
    def cache_read_rate(self) -> float:
        return self.input * 0.1 if self.cache_read is None else self.cache_read

    def for_prompt(self, prompt_tokens: int) -> Price:
        """The rates of a request whose prompt is ``prompt_tokens`` long."""
        if self.long_prompt is not None and prompt_tokens > self.long_prompt_above:
            return self.long_prompt
        return self


def prompt_tokens(usage: Usage) -> int:
    """A request's prompt as the tiers count it: input plus cache reads and writes."""
    return usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens


#: Input, output, 5-minute cache write, cache hit.
Rates = tuple[float, float, float, float]


def _row(source: str, *rates: float, long_prompt: Price | None = None, above: int = 0) -> Price:
    base, output, cache_write, cache_read = rates
    return Price(base, output, cache_write, cache_read, long_prompt, above, source=source)


_OPUS_4_5_TO_5: Rates = (5.0, 25.0, 6.25, 0.50)
_OPUS_4_0_TO_4_1: Rates = (15.0, 75.0, 18.75, 1.50)
_SONNET_4_X: Rates = (3.0, 15.0, 3.75, 0.30)
_FABLE_5_2: Rates = (8.0, 40.0, 10.0, 0.20)
_FABLE_5_1: Rates = (10.0, 50.0, 12.50, 0.25)
_FABLE_5: Rates = (10.0, 50.0, 12.50, 1.00)
#: Haiku 5.5 bills a request whose prompt is above 100,000 tokens at five times its base rates.
_HAIKU_5_5 = _row(
    _HAIKU_5_5_PAGE,
    0.10,
    0.50,
    0.125,
    0.01,
    long_prompt=Price(0.50, 2.50, 0.625, 0.05, source=_HAIKU_5_5_PAGE),
    above=100_000,
)

#: The published list prices, by model name or name prefix, each with its source.
PRICES: dict[str, Price] = {
    "claude-fable-5-2": _row(_FABLE_5_2_PAGE, *_FABLE_5_2),
    "claude-mythos-5-2": _row(_FABLE_5_2_PAGE, *_FABLE_5_2),  # Fable 5.2's specs and prices
    "claude-fable-5-1": _row(_FABLE_5_1_PAGE, *_FABLE_5_1),
    "claude-mythos-5-1": _row(SOURCE, *_FABLE_5_1),
    "claude-fable-5": _row(_FABLE_5_PAGE, *_FABLE_5),
    "claude-mythos-5": _row(SOURCE, *_FABLE_5),
    "claude-opus-5-5": _row(_OPUS_5_5_PAGE, 4.0, 20.0, 5.00, 0.20),
    "claude-opus-5": _row(_OPUS_5_PAGE, *_OPUS_4_5_TO_5),
    "claude-opus-4-8": _row(SOURCE, *_OPUS_4_5_TO_5),
    "claude-opus-4-7": _row(SOURCE, *_OPUS_4_5_TO_5),
    "claude-opus-4-6": _row(SOURCE, *_OPUS_4_5_TO_5),
    "claude-opus-4-5": _row(SOURCE, *_OPUS_4_5_TO_5),
    "claude-opus-4-1": _row(SOURCE, *_OPUS_4_0_TO_4_1),
    "claude-opus-4-0": _row(SOURCE, *_OPUS_4_0_TO_4_1),
    "claude-opus-4-20250514": _row(SOURCE, *_OPUS_4_0_TO_4_1),
    # cache hits cut from $0.20 to $0.10 on 2026-10-07
    "claude-sonnet-5-5": _row(_SONNET_5_5_PAGE, 2.0, 10.0, 2.50, 0.10),
    "claude-sonnet-5": _row(_SONNET_5_PAGE, 2.0, 10.0, 2.50, 0.20),
    "claude-sonnet-4-6": _row(SOURCE, *_SONNET_4_X),
    "claude-sonnet-4-5": _row(SOURCE, *_SONNET_4_X),
    "claude-sonnet-4": _row(SOURCE, *_SONNET_4_X),  # 4 (claude-sonnet-4-20250514, -4-0)
    "claude-3-7-sonnet": _row(SOURCE, *_SONNET_4_X),
    "claude-haiku-5-5": _HAIKU_5_5,
    "claude-haiku-4-5": _row(SOURCE, 1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": _row(SOURCE, 0.80, 4.0, 1.00, 0.08),
    "offline": _row("none: the offline demo model runs on this machine", 0, 0, 0, 0),
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
        parsed[str(model)] = Price(
            values["input"], values["output"], values.get("cache_write"), values.get("cache_read")
        )
    return parsed


def estimate_cost(
    model: str, usage: Usage, prices: Mapping[str, Price] | None = None
) -> float | None:
    """Dollars for ``usage`` of ONE request on ``model`` (its prompt's length picks the tier),
    or ``None`` when the model has no price. Usage added up over many requests goes through
    ``UsageLedger``, which keeps the tiers apart."""
    price = price_for(model, prices)
    if price is None:
        return None
    return _cost(price.for_prompt(prompt_tokens(usage)), usage)


def _cost(price: Price, usage: Usage) -> float:
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write_rate
        + usage.cache_read_input_tokens * price.cache_read_rate
    ) / 1_000_000


#: The prompt lengths at which some built-in price changes tier (kept apart in ``UsageLedger``).
TIER_BOUNDS: tuple[int, ...] = tuple(
    sorted({p.long_prompt_above for p in PRICES.values() if p.long_prompt is not None})
)


class UsageLedger:
    """What a session's requests used, per model, kept apart by prompt length so that each
    request is priced at its own tier however the prices change later (``AgentMagics.prices``).
    Requests are counted from the kernel's main thread (a turn's replies) and from the session's
    loop (an MCP server's sampling), hence the lock."""

    def __init__(self) -> None:
        #: model → the longest tier bound its requests' prompts passed (0: none) → their usage
        self._usage: dict[str, dict[int, Usage]] = {}
        self._lock = threading.Lock()

    def add(self, model: str, usage: Usage) -> None:
        """Count one request's ``usage`` on ``model``."""
        size = prompt_tokens(usage)
        bound = max((b for b in TIER_BOUNDS if size > b), default=0)
        with self._lock:
            tiers = self._usage.setdefault(model, {})
            tiers[bound] = tiers.get(bound, Usage()) + usage

    def _snapshot(self) -> dict[str, dict[int, Usage]]:
        with self._lock:
            return {model: dict(tiers) for model, tiers in self._usage.items()}

    def totals(self) -> dict[str, Usage]:
        """The usage of each model, all requests added up (in the order models were first used)."""
        totals: dict[str, Usage] = {}
        for model, tiers in self._snapshot().items():
            total = Usage()
            for usage in tiers.values():
                total = total + usage
            totals[model] = total
        return totals

    def cost(self, model: str, prices: Mapping[str, Price] | None = None) -> float | None:
        """Dollars for ``model``'s requests, or ``None`` when it has no price."""
        price = price_for(model, prices)
        if price is None:
            return None
        return sum(
            _cost(price.for_prompt(bound + 1 if bound else 0), usage)
            for bound, usage in self._snapshot().get(model, {}).items()
        )

    def total_cost(self, prices: Mapping[str, Price] | None = None) -> float:
        """Dollars for every priced model's requests (an unpriced model adds nothing)."""
        return sum(self.cost(model, prices) or 0.0 for model in self._snapshot())


def money(dollars: float) -> str:
    """``dollars`` as the user reads it: ``$6.00``, ``$0.14``, ``$0.001``, ``$1,250.50``.

    Cents from a dollar up; below, three significant digits (trailing zeros dropped past the
    cents), so a $0.001 budget is not ``$0.00`` and $0.125 is not rounded away. Plain text: a
    cell shows it through the Markdown renderer of ``inert.py``, which keeps every ``$`` that is
    not math out of the front end's LaTeX typesetter."""
    if dollars < 0:
        return "-" + money(-dollars)
    if dollars == 0 or dollars >= 1 or not math.isfinite(dollars):
        return f"${dollars:,.2f}"
    decimals = max(2, 2 - math.floor(math.log10(dollars)))
    text = f"{dollars:.{decimals}f}"
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0").ljust(2, "0")
    return f"${whole}.{fraction}"
