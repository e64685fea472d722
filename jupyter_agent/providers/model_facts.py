"""What a Claude model accepts and holds: from the Models API, else a cited built-in table.

``client.models.retrieve(model)`` answers the context window (``max_input_tokens``), the largest
``max_tokens``, the ``thinking.type``s and effort levels the model accepts, image and PDF input,
and the lifecycle. ``ModelFactsCache`` asks once per kernel, client and model, in a task of its
own, so the first request never waits for it: until the answer is in (and for good when the
Models API cannot answer — no key, a proxy, another platform) the built-in table serves, and the
provider says so once. What the Models API does not carry — mid-conversation system messages and
tool changes, the ``updates`` display, prefix-bound thinking, the default effort — always comes
from the table.

Each row of ``BUILT_IN`` cites its page (platform.claude.com/docs/en/…, read 2026-11-28):
``models/overview``, each model's ``overview`` and ``whats-new`` pages, ``build-with-claude/
preserved-thinking`` (which models bind thinking to the prefix), ``build-with-claude/
mid-conversation-system-messages`` (which models take system messages and tool changes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anthropic

#: Shown in errors about a retired or unknown model.
CURRENT_MODEL = "claude-sonnet-5-5"
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """One model's facts; ``source`` says where they came from."""

    model: str
    context_window: int
    max_tokens: int
    #: Accepted ``thinking.type`` values (``adaptive``, ``between_tools``, ``disabled``,
    #: ``enabled``).
    thinking_types: frozenset[str]
    #: Accepted effort levels (empty: the model takes no ``output_config.effort``).
    effort_levels: frozenset[str]
    default_effort: str | None = None
    image_input: bool = True
    pdf_input: bool = True
    lifecycle: str = "active"
    retires_at: str | None = None
    #: ``{"role": "system"}`` messages mid-conversation (no beta).
    system_messages: bool = False
    #: ``tool_addition``/``tool_removal`` blocks (beta ``mid-conversation-tool-changes``).
    tool_changes: bool = False
    #: The ``updates`` display (only the progress text between tool calls comes back).
    display_updates: bool = False
    #: ``"models-api"`` or ``"built-in: <page>"``.
    source: str = ""

    @property
    def adaptive_by_default(self) -> bool:
        """Whether the model thinks unless told not to (every adaptive-only model)."""
        return "adaptive" in self.thinking_types and "enabled" not in self.thinking_types


_ALL = frozenset(EFFORT_LEVELS)
_NO_XHIGH = frozenset({"low", "medium", "high", "max"})
_ADAPTIVE = frozenset({"adaptive"})
_ADAPTIVE_OFF = frozenset({"adaptive", "disabled"})
_EVERY = frozenset({"enabled", "adaptive", "disabled"})
_BUDGET = frozenset({"enabled", "disabled"})


def _row(model: str, page: str, **facts: Any) -> ModelFacts:
    settings: dict[str, Any] = {
        "context_window": 1_000_000,
        "max_tokens": 128_000,
        "thinking_types": _ADAPTIVE,
        "effort_levels": _ALL,
        "default_effort": "high",
        "system_messages": True,
        "tool_changes": True,
        "display_updates": True,
    }
    settings.update(facts)
    return ModelFacts(model=model, source=f"built-in: {page}", **settings)


_OLD = {
    "system_messages": False,
    "tool_changes": False,
    "display_updates": False,
}
_OLDER = {
    **_OLD,
    "context_window": 200_000,
    "max_tokens": 64_000,
    "thinking_types": _BUDGET,
    "effort_levels": frozenset(),
    "default_effort": None,
}

#: The built-in table, one row per model the installed SDK names.
BUILT_IN: dict[str, ModelFacts] = {
    row.model: row
    for row in (
        _row("claude-fable-5-2", "models/fable-5-2/overview; preserved-thinking"),
        _row("claude-mythos-5-2", "models/mythos-5-2/overview; preserved-thinking"),
        _row("claude-fable-5-1", "models/fable-5-1/overview; mid-conversation-system-messages"),
        _row("claude-mythos-5-1", "models/mythos-5-1/overview; mid-conversation-system-messages"),
        _row(
            "claude-opus-5-5",
            "models/opus-5-5/overview (adaptive always on, effort medium)",
            default_effort="medium",
        ),
        _row(
            "claude-sonnet-5-5",
            "models/sonnet-5-5/whats-new-sonnet-5-5 (adaptive or between_tools, effort high)",
            thinking_types=frozenset({"adaptive", "between_tools"}),
        ),
        _row(
            "claude-haiku-5-5",
            "models/haiku-5-5/overview (adaptive, effort medium)",
            thinking_types=_ADAPTIVE_OFF,
            default_effort="medium",
            display_updates=False,
        ),
        _row(
            "claude-sonnet-5",
            "models/sonnet-5-5/migration-guide (Sonnet 5: adaptive, disabled; no system messages)",
            thinking_types=_ADAPTIVE_OFF,
            **_OLD,
        ),
        _row(
            "claude-fable-5",
            "models/overview; mid-conversation-system-messages",
            display_updates=False,
        ),
        _row(
            "claude-mythos-5",
            "models/mythos-5/overview; mid-conversation-system-messages",
            display_updates=False,
        ),
        _row(
            "claude-opus-5",
            "models/opus-5/overview; mid-conversation-system-messages",
            thinking_types=_ADAPTIVE_OFF,
            display_updates=False,
        ),
        _row(
            "claude-opus-4-8",
            "models/overview; mid-conversation-system-messages",
            thinking_types=_ADAPTIVE_OFF,
            display_updates=False,
        ),
        _row("claude-opus-4-7", "models/overview", thinking_types=_ADAPTIVE_OFF, **_OLD),
        _row("claude-mythos-preview", "models/overview", thinking_types=_ADAPTIVE_OFF, **_OLD),
        _row(
            "claude-opus-4-6",
            "models/overview",
            thinking_types=_EVERY,
            effort_levels=_NO_XHIGH,
            **_OLD,
        ),
        _row(
            "claude-sonnet-4-6",
            "models/overview",
            thinking_types=_EVERY,
            effort_levels=_NO_XHIGH,
            **_OLD,
        ),
        _row("claude-haiku-4-5", "models/haiku-4-5/overview", **_OLDER),
        _row("claude-haiku-4-5-20251001", "models/haiku-4-5/overview", **_OLDER),
        _row("claude-sonnet-4-5", "models/sonnet-4-5/overview", **_OLDER),
        _row("claude-sonnet-4-5-20250929", "models/sonnet-4-5/overview", **_OLDER),
        _row(
            "claude-opus-4-5",
            "models/opus-4-5/overview",
            **{**_OLDER, "effort_levels": frozenset({"low", "medium", "high"})},
        ),
        _row(
            "claude-opus-4-5-20251101",
            "models/opus-4-5/overview",
            **{**_OLDER, "effort_levels": frozenset({"low", "medium", "high"})},
        ),
    )
}


def built_in(model: str) -> ModelFacts | None:
    """The built-in row of ``model`` (a dated id falls back to its alias's row)."""
    row = BUILT_IN.get(model)
    if row is None and model[-9:-8] == "-" and model[-8:].isdigit():
        row = BUILT_IN.get(model[:-9])
    return dataclasses.replace(row, model=model) if row is not None else None


#: For a model neither the Models API nor the table knows (a proxy's alias, say): the
#: conservative facts — no feature that could be refused.
def unknown_facts(model: str) -> ModelFacts:
    return ModelFacts(
        model=model,
        context_window=200_000,
        max_tokens=8_192,
        thinking_types=frozenset({"enabled", "disabled"}),
        effort_levels=frozenset(),
        source="built-in: none (unknown model)",
    )


def from_model_info(info: Any) -> ModelFacts:
    """``ModelFacts`` from the SDK's ``ModelInfo``; the table fills what the API does not say."""
    model = str(info.id)
    row = built_in(model) or unknown_facts(model)
    capabilities = info.capabilities
    thinking_types = row.thinking_types
    effort_levels = row.effort_levels
    image_input, pdf_input = row.image_input, row.pdf_input
    if capabilities is not None:
        types = capabilities.thinking.types
        thinking_types = frozenset(
            name
            for name in ("adaptive", "between_tools", "disabled", "enabled")
            if getattr(getattr(types, name, None), "supported", False)
        )
        effort = capabilities.effort
        effort_levels = frozenset(
            level
            for level in EFFORT_LEVELS
            if effort.supported and getattr(getattr(effort, level, None), "supported", False)
        )
        image_input = capabilities.image_input.supported
        pdf_input = capabilities.pdf_input.supported
    retires = info.retires_at.date().isoformat() if info.retires_at else None
    default_effort = row.default_effort if row.default_effort in effort_levels else None
    return dataclasses.replace(
        row,
        context_window=info.max_input_tokens or row.context_window,
        max_tokens=info.max_tokens or row.max_tokens,
        thinking_types=thinking_types,
        effort_levels=effort_levels,
        default_effort=default_effort,
        image_input=image_input,
        pdf_input=pdf_input,
        lifecycle=str(info.lifecycle),
        retires_at=retires,
        source="models-api",
    )


class ModelFactsCache:
    """Model facts per client and model, looked up once per kernel in a background task."""

    def __init__(self) -> None:
        self._entries: weakref.WeakKeyDictionary[Any, dict[str, _Entry]] = (
            weakref.WeakKeyDictionary()
        )

    def _entry(self, client: anthropic.AsyncAnthropic, model: str) -> _Entry:
        per_client = self._entries.setdefault(client, {})
        return per_client.setdefault(model, _Entry())

    def known(self, client: anthropic.AsyncAnthropic, model: str) -> ModelFacts | None:
        """The Models API's facts if they are in (never waits)."""
        return self._entry(client, model).facts

    def is_missing(self, client: anthropic.AsyncAnthropic, model: str) -> bool:
        """Whether the Models API answered that it has no such model."""
        return self._entry(client, model).missing

    def started(self, client: anthropic.AsyncAnthropic, model: str) -> asyncio.Task[None] | None:
        """The lookup of ``model`` with ``client``, if one was started."""
        return self._entry(client, model).task

    def start(self, client: anthropic.AsyncAnthropic, model: str) -> asyncio.Task[None]:
        """Start (once) the lookup of ``model`` with ``client``."""
        entry = self._entry(client, model)
        task = entry.task
        if task is None or task.cancelled() or (task.done() and task.get_loop().is_closed()):
            if task is not None and task.done() and not task.cancelled():
                return task  # answered (or failed for good) on an earlier loop
            task = asyncio.get_running_loop().create_task(self._lookup(client, model, entry))
            entry.task = task
        return task

    async def _lookup(self, client: anthropic.AsyncAnthropic, model: str, entry: _Entry) -> None:
        import anthropic

        try:
            info = await client.models.retrieve(model)
        except anthropic.NotFoundError as exc:
            # the API's answer for an id it does not list names the model; a proxy without the
            # route answers something else, and the built-in table serves
            entry.missing = str(getattr(exc, "body", "") or "").find("model:") >= 0
            return
        except (anthropic.AnthropicError, TypeError, ValueError) as exc:
            # no key, a proxy without the route, another platform: the built-in table serves
            _log.info("Models API lookup of %s failed: %s", model, exc)
            return
        entry.facts = from_model_info(info)


@dataclass
class _Entry:
    facts: ModelFacts | None = None
    missing: bool = False
    task: asyncio.Task[None] | None = None


#: One cache per kernel (the process): every provider and copy of one shares it.
FACTS = ModelFactsCache()


def lifecycle_notice(facts: ModelFacts) -> str | None:
    """The one line a deprecated or retired model gets."""
    if facts.lifecycle == "deprecated":
        when = f" on {facts.retires_at}" if facts.retires_at else ""
        return (
            f"{facts.model} is deprecated and retires{when}; switch to a current model "
            f"(e.g. {CURRENT_MODEL})."
        )
    if facts.lifecycle == "retired":
        return f"{facts.model} is retired; use a current model (e.g. {CURRENT_MODEL})."
    return None


def request_facts(client: anthropic.AsyncAnthropic, model: str) -> tuple[ModelFacts, list[str]]:
    """The facts a request to ``model`` goes by, and what the cell should be told about them.

    Never waits and starts nothing: the provider starts the Models API lookup once the first
    reply's first token shows (``FACTS.start``); until it answers the built-in table serves (a
    model the table does not know gets conservative facts). A model the Models API does not
    list, or lists as retired, is a one-line ``ProviderError`` naming a current model.
    """
    from ..errors import ProviderError

    task = FACTS.started(client, model)
    if FACTS.is_missing(client, model):
        raise ProviderError(
            f"Claude has no model {model!r} (the Models API does not list it); use a current "
            f"model, e.g. {CURRENT_MODEL}."
        )
    facts = FACTS.known(client, model)
    notices: list[str] = []
    if facts is not None:
        notice = lifecycle_notice(facts)
        if facts.lifecycle == "retired" and notice:
            raise ProviderError(notice)
        if notice:
            notices.append(notice)
        return facts, notices
    facts = built_in(model) or unknown_facts(model)
    if task is not None and task.done():
        page = facts.source.removeprefix("built-in: ")
        notices.append(
            f"The Models API did not answer for {model}: its window, output limit and thinking "
            f"come from the built-in table ({page})."
        )
    return facts, notices
