"""Thinking, effort, ``display`` and ``max_tokens`` as each Claude model accepts them.

No setting produces a 400: ``thinking_budget`` becomes ``{"type": "enabled"}`` only on a model
that lists that type, and adaptive thinking at an effort that fits the budget elsewhere (the
cell names the effort once); an effort the model does not list becomes the nearest one it does.
Adaptive thinking asks for a ``display`` that returns the model's progress text between tool
calls (``updates`` where the model has it, under its beta; ``summarized`` elsewhere, or when the
user asked to see the reasoning). ``max_tokens`` leaves room for thinking at the chosen effort
plus the answer, never above the model's maximum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model_facts import EFFORT_LEVELS, ModelFacts

DISPLAY_UPDATES_BETA = "thinking-display-updates-2026-08-18"
#: Room for the answer itself, beside thinking.
ANSWER_ROOM = 16_384
#: Room for thinking at each effort level (adaptive thinking spends about this much at most on
#: hard problems; the answer's room comes on top).
THINKING_ROOM = {"low": 8_192, "medium": 16_384, "high": 32_768, "xhigh": 49_152, "max": 65_536}
#: The budget a thinking budget's tokens map to, as the upper bound of each level.
_BUDGET_LEVELS = ((4_096, "low"), (16_384, "medium"), (32_768, "high"), (65_536, "xhigh"))


@dataclass
class ThinkingPlan:
    """What a request carries for thinking, and what the cell is told about it."""

    thinking: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    betas: list[str] = field(default_factory=list)
    #: One-line notices (a budget mapped to an effort, an effort the model lacks).
    notices: list[str] = field(default_factory=list)
    #: ``"progress"``: text that arrives in thinking blocks is the progress between tool calls;
    #: ``"thinking"``: it is reasoning (shown collapsed).
    streamed_as: str = "thinking"
    #: The effort the request asks for (``None``: the model's default).
    effort: str | None = None


def effort_for_budget(budget: int) -> str:
    """The effort level a thinking budget of ``budget`` tokens corresponds to."""
    for bound, level in _BUDGET_LEVELS:
        if budget <= bound:
            return level
    return "max"


def nearest_effort(wanted: str, levels: frozenset[str]) -> str | None:
    """``wanted`` if the model lists it, else the closest level it lists (lower on a tie)."""
    if wanted in levels or not levels:
        return wanted if wanted in levels else None
    order = list(EFFORT_LEVELS)
    index = order.index(wanted)
    ranked = sorted(levels, key=lambda level: (abs(order.index(level) - index), order.index(level)))
    return ranked[0]


def plan_thinking(facts: ModelFacts, budget: int | None, effort: str | None) -> ThinkingPlan:
    """The thinking of a request to ``facts.model`` for a ``budget`` and an ``effort``."""
    plan = ThinkingPlan()
    types = facts.thinking_types
    wanted = effort
    if budget is not None and "enabled" in types:
        plan.thinking = {"type": "enabled", "budget_tokens": budget}
    elif budget is not None and "adaptive" in types:
        if wanted is None:
            wanted = effort_for_budget(budget)
            named = nearest_effort(wanted, facts.effort_levels) or "default"
            plan.notices.append(
                f"{facts.model} takes no thinking budget: thinking adaptively at effort "
                f"'{named}' for --think {budget}."
            )
        plan.thinking = {"type": "adaptive", "display": "summarized"}
    elif budget is not None:
        plan.notices.append(f"{facts.model} does not think; --think {budget} is ignored.")
    elif facts.adaptive_by_default:
        if facts.display_updates:
            plan.thinking = {"type": "adaptive", "display": "updates"}
            plan.betas.append(DISPLAY_UPDATES_BETA)
            plan.streamed_as = "progress"
        else:
            plan.thinking = {"type": "adaptive", "display": "summarized"}
    if wanted is not None:
        level = nearest_effort(wanted, facts.effort_levels)
        if level is None:
            plan.notices.append(
                f"{facts.model} takes no effort setting; effort '{wanted}' ignored."
            )
        else:
            if level != wanted:
                plan.notices.append(
                    f"{facts.model} has no effort '{wanted}': using '{level}' instead."
                )
            plan.output_config = {"effort": level}
            plan.effort = level
    return plan


def default_max_tokens(facts: ModelFacts, plan: ThinkingPlan) -> int:
    """Room for thinking at the plan's effort (or its budget) plus the answer, within the
    model's maximum."""
    thinking = plan.thinking or {}
    if thinking.get("type") == "enabled":
        room = int(thinking["budget_tokens"]) + ANSWER_ROOM
    elif thinking.get("type") == "adaptive" or facts.adaptive_by_default:
        level = plan.effort or facts.default_effort or "high"
        room = THINKING_ROOM.get(level, THINKING_ROOM["high"]) + ANSWER_ROOM
    else:
        room = ANSWER_ROOM
    return max(1, min(room, facts.max_tokens))
