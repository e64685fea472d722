"""``%agent usage`` prices (issue 12, point 7): every model the SDK knows, from a cited table.

The default model ``claude-sonnet-5-5`` showed "?" and ``claude-opus-4-8`` was priced at the
old Opus 4 rates ($15/$75). The figures checked here are the published list prices (the source
is in ``pricing.SOURCE``); the check against the SDK's own model list keeps the table complete
when the SDK learns new models.
"""

from __future__ import annotations

import math
import re
import typing

import anthropic.types
import pytest
from fake_anthropic import FakeAnthropic, text
from IPython.core.interactiveshell import InteractiveShell

from jupyter_agent.events import Usage
from jupyter_agent.notebook.session.session import NotebookSession
from jupyter_agent.notebook.spend.pricing import (
    PRICES,
    SOURCE,
    UNPRICED,
    Price,
    estimate_cost,
    price_for,
    user_prices,
)
from jupyter_agent.providers.anthropic import DEFAULT_MODEL, AnthropicProvider

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000)

#: A dated snapshot of a model (``claude-sonnet-4-5-20250929``).
SNAPSHOT = re.compile(r"-\d{8}$")


def listed_price(model: str) -> Price | None:
    """The table's row of ``model`` itself (or of the model a dated snapshot is of), without
    falling back on a family's prefix as ``price_for`` does: what the table says of this model."""
    if model in PRICES:
        return PRICES[model]
    base = SNAPSHOT.sub("", model)
    return PRICES.get(base) if base != model else None


def sdk_models() -> list[str]:
    """The model names in the SDK's ``Model`` type (a Literal of names, or any str)."""
    names: list[str] = []
    for part in typing.get_args(anthropic.types.Model):
        names += [value for value in typing.get_args(part) if isinstance(value, str)]
    return names


def test_every_model_of_the_sdk_is_priced_or_says_why_not() -> None:
    models = sdk_models()
    assert DEFAULT_MODEL in models
    # a row of its own: a family's prefix priced claude-fable-5-2 as claude-fable-5
    silent = [m for m in models if listed_price(m) is None and m not in UNPRICED]
    assert not silent, f"models with neither a price of their own nor a reason: {silent}"
    assert all(price_for(m) is None for m in UNPRICED), "a model is both priced and unpriced"


@pytest.mark.parametrize(
    ("model", "dollars"),
    [
        ("claude-sonnet-5-5", 2 + 10),  # the default model: was "?"
        ("claude-opus-4-8", 5 + 25),  # was priced as Opus 4 ($15 + $75)
        ("claude-opus-4-5-20251101", 5 + 25),
        ("claude-opus-4-1", 15 + 75),
        ("claude-opus-4-20250514", 15 + 75),
        ("claude-opus-5-5", 4 + 20),
        ("claude-fable-5-1", 10 + 50),
        ("claude-sonnet-4-5-20250929", 3 + 15),
        ("claude-haiku-4-5-20251001", 1 + 5),
        # one request with a million-token prompt: Haiku 5.5's tier above 100K tokens
        ("claude-haiku-5-5", 0.50 + 2.50),
        ("claude-fable-5-2", 8 + 40),
    ],
)
def test_list_prices(model: str, dollars: float) -> None:
    cost = estimate_cost(model, MILLION)
    assert cost is not None and math.isclose(cost, dollars), (model, cost)


def test_cache_reads_and_writes_use_the_models_own_rates() -> None:
    cached = Usage(cache_creation_input_tokens=1_000_000, cache_read_input_tokens=1_000_000)
    sonnet = estimate_cost("claude-sonnet-5-5", cached)
    assert sonnet is not None and math.isclose(sonnet, 2.50 + 0.10)
    fable = estimate_cost("claude-fable-5-1", cached)
    assert fable is not None and math.isclose(fable, 12.50 + 0.25)


def test_unknown_models_are_unpriced_and_users_can_price_them() -> None:
    assert estimate_cost("my-local-llama", MILLION) is None
    prices = user_prices({"my-local-llama": {"input": 0.5, "output": 1.5}})
    cost = estimate_cost("my-local-llama", MILLION, prices)
    assert cost is not None and math.isclose(cost, 2.0)
    # a user price also corrects a built-in one
    discounted = user_prices({"claude-sonnet-5-5": Price(1.0, 5.0)})
    cost = estimate_cost("claude-sonnet-5-5", MILLION, discounted)
    assert cost is not None and math.isclose(cost, 6.0)
    assert "claude-sonnet-5-5" in PRICES  # the built-in table itself is untouched


@pytest.mark.parametrize(
    "bad",
    [{"m": 3}, {"m": {"input": 1}}, {"m": {"input": -1, "output": 1}}, {"m": {"in": 1, "out": 2}}],
)
def test_malformed_user_prices_are_refused_with_the_models_name(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="'m'"):
        user_prices(bad)


def test_usage_names_the_source_and_takes_user_prices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_agent")
    from jupyter_agent.notebook.front.extension import get_magics

    magics = get_magics(shell)
    magics.session.ledger.add(
        "claude-sonnet-5-5", Usage(input_tokens=1_000_000, output_tokens=100_000)
    )
    magics.session.ledger.add("my-local-llama", Usage(input_tokens=2_000_000))
    shell.run_line_magic("agent", "usage")
    out = capsys.readouterr().out
    assert "$3.00" in out  # 2 + 0.1 * 10
    assert "unpriced" in out
    assert SOURCE in out
    shell.run_line_magic("config", "AgentMagics.prices = {'my-local-llama': {'input': 1}}")
    assert magics.prices == {}  # refused (no output price), not kept half-set
    llama = "{'my-local-llama': {'input': 1, 'output': 2}}"
    shell.run_line_magic("config", f"AgentMagics.prices = {llama}")
    shell.run_line_magic("agent", "usage")
    out = capsys.readouterr().out
    assert "$2.00" in out and "$5.00" in out  # the model, then the total


# -- issue 32, point 5: Fable/Mythos 5.2 at their own price, Haiku 5.5's tier above 100K --------


@pytest.mark.parametrize("model", ["claude-fable-5-2", "claude-mythos-5-2"])
def test_fable_and_mythos_5_2_are_priced_as_themselves_not_as_fable_5(model: str) -> None:
    # $8 / $40, 5-minute cache writes $10, cache hits $0.20 (models overview, what's new 5.2);
    # they were priced as Fable 5: $10 / $50
    cost = estimate_cost(model, MILLION)
    assert cost is not None and math.isclose(cost, 8 + 40), (model, cost)
    cached = Usage(cache_creation_input_tokens=1_000_000, cache_read_input_tokens=1_000_000)
    cache_cost = estimate_cost(model, cached)
    assert cache_cost is not None and math.isclose(cache_cost, 10 + 0.20), (model, cache_cost)


def test_haiku_5_5_bills_a_prompt_above_100k_tokens_at_its_higher_tier() -> None:
    short = estimate_cost("claude-haiku-5-5", Usage(input_tokens=100_000, output_tokens=1_000))
    assert short is not None and math.isclose(short, (100_000 * 0.10 + 1_000 * 0.50) / 1e6)
    long = estimate_cost("claude-haiku-5-5", Usage(input_tokens=150_000, output_tokens=1_000))
    assert long is not None and math.isclose(long, (150_000 * 0.50 + 1_000 * 2.50) / 1e6), long
    # the prompt counts what was read from and written to the cache too
    cached = Usage(
        input_tokens=2_000,
        output_tokens=1_000,
        cache_read_input_tokens=90_000,
        cache_creation_input_tokens=10_000,
    )
    expected = (2_000 * 0.50 + 1_000 * 2.50 + 90_000 * 0.05 + 10_000 * 0.625) / 1e6
    cost = estimate_cost("claude-haiku-5-5", cached)
    assert cost is not None and math.isclose(cost, expected), (cost, expected)


def test_a_sessions_cost_prices_each_request_at_its_own_tier(session: NotebookSession) -> None:
    """Two Haiku 5.5 replies, one prompt under 100K tokens and one above: the session's cost is
    the sum of each at its tier (not the total at one tier)."""
    fake = FakeAnthropic(
        text("small", usage={"input_tokens": 60_000, "output_tokens": 1_000}),
        text("large", usage={"input_tokens": 140_000, "output_tokens": 1_000}),
    )
    session.use_provider(AnthropicProvider("claude-haiku-5-5", client=fake.client()))
    session.run("first")
    session.run("second")
    expected = (60_000 * 0.10 + 1_000 * 0.50 + 140_000 * 0.50 + 1_000 * 2.50) / 1e6
    assert math.isclose(session.spent(), expected), (session.spent(), expected)
    from jupyter_agent.notebook.spend.pricing import money

    report = session.usage_report()
    assert money(expected) in report, report


def test_every_built_in_price_cites_its_source() -> None:
    published = {model: price for model, price in PRICES.items() if model != "offline"}
    unsourced = [
        model for model, price in published.items() if not price.source.startswith("https://")
    ]
    assert not unsourced, f"rows without a source: {unsourced}"
    assert SOURCE.startswith("https://platform.claude.com/")


def test_every_current_model_has_a_price() -> None:
    """The current lineup (Anthropic's models overview) and the models the SDK lists."""
    current = [
        "claude-fable-5-2",
        "claude-mythos-5-2",
        "claude-opus-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
    ]
    assert all(listed_price(model) is not None for model in current)
    assert listed_price("claude-sonnet-4-5-20250929") is PRICES["claude-sonnet-4-5"]
    assert listed_price("claude-fable-5-3") is None  # not Fable 5's price by its prefix


async def test_every_model_the_models_api_lists_has_a_price() -> None:
    """The tests' Models API (the contract table's models, listed through the real SDK): each
    model it offers is priced by its own row, or is named unpriced with a reason."""
    listed = [model.id async for model in FakeAnthropic().client().models.list()]
    assert "claude-sonnet-5-5" in listed
    silent = [m for m in listed if listed_price(m) is None and m not in UNPRICED]
    assert not silent, f"the Models API lists models with no price: {silent}"
