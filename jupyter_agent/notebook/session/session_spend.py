"""What a session spends: ``SessionSpend``, its usage ledger and the caps of a cell and of the
session.

Every model request of the session — each chat's turns and an MCP server's sampling — adds its
usage to one ledger, priced with the user's price table. A cell's ``--budget`` (or the
``budget`` setting) and the ``session_budget`` become a ``SpendGuard`` per turn; sampling during
a turn counts against that turn's guard, outside one against the caps of a cell. Taken out of
``session.py``: the spend wing (``spend/``) prices and guards, this applies the session's
settings to them.
"""

from __future__ import annotations

from ...providers.base import Provider
from ..spend.budget import BudgetedProvider, SpendGuard
from ..spend.pricing import UsageLedger, money, user_prices
from ..spend.usage_report import usage_report
from .settings import SessionSettings


class SessionSpend:
    """The session's ledger, the guard of the turn that runs, and what they add up to."""

    def __init__(self, settings: SessionSettings) -> None:
        self.settings = settings
        #: What every model request of the session used, per model and prompt-size tier.
        self.ledger = UsageLedger()
        #: The spend guard of the turn that runs, if it has caps.
        self.turn_guard: SpendGuard | None = None
        self._budget_used = False

    def spent(self) -> float:
        """Dollars this session's replies cost, estimated from the price table."""
        return self.ledger.total_cost(user_prices(self.settings.prices))

    def sampling(self, provider: Provider) -> Provider:
        """``provider`` for an MCP server's sampling request: behind the running cell's guard
        (or, outside a cell, the caps of one), its cost in the session's usage."""
        guard = self.turn_guard
        if guard is None:
            guard = self.guard(None) or SpendGuard(
                None, None, None, user_prices(self.settings.prices)
            )
        return BudgetedProvider(provider, guard, on_usage=self.ledger.add)

    def guard(self, budget: float | None) -> SpendGuard | None:
        """The caps of one cell (``budget``, else the setting) and of the session, if any."""
        cell = budget if budget is not None else self.settings.budget
        cap = self.settings.session_budget
        if cell is None and cap is None:
            return None
        self._budget_used = True
        left = None if cap is None else cap - self.spent()
        return SpendGuard(cell, left, cap, user_prices(self.settings.prices))

    def budget_report(self) -> str:
        """What ``%agent usage`` adds about the budgets: spent, and what is left."""
        cell, cap = self.settings.budget, self.settings.session_budget
        if cell is None and cap is None and not self._budget_used:
            return ""
        spent = self.spent()
        parts = [f"spent: {money(spent)} this session (estimated)"]
        if cap is not None:
            parts.append(f"session budget {money(cap)}, left {money(max(cap - spent, 0.0))}")
        if cell is not None:
            parts.append(f"cell budget {money(cell)}")
        return "; ".join(parts)

    def usage_report(self) -> str:
        report = usage_report(self.ledger, user_prices(self.settings.prices))
        budgets = self.budget_report()
        return f"{report}\n{budgets}" if budgets else report
