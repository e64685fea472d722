"""The table ``%agent usage`` prints: tokens and estimated cost per model, and a legend.

Kept apart from the session so the wording can be tested on its own: the legend explains each
column the table shows, and only those prices it used (an offline-only session cites no price
list; the offline model counts no tokens and says so instead of showing zeros as if measured).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...events import Usage
from .pricing import SOURCE, SOURCE_DATE, UNPRICED, Price, UsageLedger, money

#: Model names the offline provider reports (``OfflineProvider.model``): nothing to count or pay.
OFFLINE_MODEL_PREFIX = "offline"

_HEADER = f"{'model':<28} {'input':>9} {'output':>9} {'cache r/w':>13} {'cost':>9}"


def _row(name: str, usage: Usage, cost_text: str) -> str:
    cache = f"{usage.cache_read_input_tokens}/{usage.cache_creation_input_tokens}"
    return f"{name:<28} {usage.input_tokens:>9} {usage.output_tokens:>9} {cache:>13} {cost_text:>9}"


def usage_report(ledger: UsageLedger, prices: Mapping[str, Price]) -> str:
    """The usage table for ``ledger`` priced with the list prices and ``prices`` (each request
    at its own tier)."""
    usage_by_model = ledger.totals()
    if not usage_by_model:
        return "No tokens used yet in this session."
    lines = [_HEADER]
    total = Usage()
    total_cost: float | None = 0.0
    offline = [model for model in usage_by_model if model.startswith(OFFLINE_MODEL_PREFIX)]
    for model, usage in usage_by_model.items():
        total = total + usage
        cost = ledger.cost(model, prices)
        if cost is None:
            total_cost = None
        elif total_cost is not None:
            total_cost += cost
        lines.append(_row(model, usage, "unpriced" if cost is None else money(cost)))
    if len(usage_by_model) > 1:
        lines.append(_row("total", total, "unpriced" if total_cost is None else money(total_cost)))
    lines.append(
        "input, output: tokens sent to and received from the model; cache r/w: input tokens "
        "read from / written to the prompt cache;"
    )
    if len(offline) < len(usage_by_model):
        lines.append(
            f"cost: US dollars estimated from the list prices at {SOURCE} (as of {SOURCE_DATE}) "
            "and AgentMagics.prices; 'unpriced': the model has no published price"
        )
    else:
        lines.append("cost: US dollars (the offline model is free)")
    for model in usage_by_model:
        if model in UNPRICED:
            lines.append(f"({model}: {UNPRICED[model]})")
    for model in offline:
        lines.append(
            f"({model}: the offline demo model runs on this machine; it counts no tokens, "
            "so its row stays at 0)"
        )
    return "\n".join(lines)
