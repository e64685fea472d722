"""The session's providers, each built once: ``ProviderCache``.

A provider's HTTP client belongs to the event loop it was made on, so the session builds every
provider on its one background loop and keeps it, keyed by what tells providers apart (kind,
model, thinking budget, the offline cassette, and a digest of the environment variables the kind
reads: a key set after a turn failed without one builds a new provider, with a client that has
it). A thinking budget or effort for one turn is a cached copy sharing the client. The provider
given with ``use_provider`` is kept here too, and the one-time notes about providers (the offline
demo model answers; it ignores ``--model``) are said from here. Taken out of ``session.py`` so the
session reads as its conversations, tools and turns.
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Callable
from typing import Any

from ...errors import SessionError
from ...providers.base import Provider, ThinkingProvider
from ...tools.one_line import one_line
from ..runtime.bridge import BackgroundLoop
from ..spend.budget import BudgetedProvider
from .settings import PROVIDER_KINDS, SessionSettings

OFFLINE_NOTE = (
    "jupyter-agent: no ANTHROPIC_API_KEY is set, so the offline demo model answers. Set "
    "ANTHROPIC_API_KEY (or %config AgentMagics.provider = 'anthropic') to use Claude."
)

#: The environment variables a provider of each kind reads when it is built.
_PROVIDER_ENVIRONMENT = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "JUPYTER_AGENT_MODEL"),
    "auto": (
        "JUPYTER_AGENT_PROVIDER",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
    ),
}


def _environment_fingerprint(kind: str) -> str:
    """A digest of the variables ``kind`` reads (the keys themselves are not kept)."""
    values = "\0".join(os.environ.get(name, "") for name in _PROVIDER_ENVIRONMENT.get(kind, ()))
    return hashlib.sha256(values.encode()).hexdigest()


class ProviderCache:
    """The providers one session built, and the one ``use_provider`` gave it."""

    def __init__(
        self,
        settings: SessionSettings,
        notify: Callable[[str], None],
        background: Callable[[], BackgroundLoop],
    ) -> None:
        """``background``: the session's loop (started on first call), where providers are built."""
        self.settings = settings
        self._notify = notify
        self._background = background
        self._providers: dict[tuple[Any, ...], Provider] = {}
        #: The provider ``use_provider`` set, until a provider or model setting changes.
        self.custom: Provider | None = None
        self._offline_noted = False
        self._ignored_models: set[str] = set()

    def provider(
        self,
        kind: str | None = None,
        model: str | None = None,
        think: int | None = None,
        effort: str | None = None,
    ) -> Provider:
        """See ``NotebookSession.provider``."""
        budget = think if think is not None else self.settings.thinking_budget
        effort = effort if effort is not None else self.settings.effort
        if kind is None and model is None and self.custom is not None:
            return self._with_thinking(self.custom, budget, effort)
        kind = kind or self.settings.provider
        if kind not in PROVIDER_KINDS:
            raise SessionError(f"Unknown provider {kind!r}; use auto, anthropic, offline or openai")
        model = model if model is not None else self.settings.model
        key = self._provider_key(kind, model, budget)
        provider = self._providers.get(key)
        if provider is None:
            built = self._background().run(self._build_provider(kind, model))
            provider = self._with_thinking(built, budget, effort)
            self._providers[key] = provider
        return provider

    def _with_thinking(
        self, provider: Provider, budget: int | None, effort: str | None = None
    ) -> Provider:
        """``provider`` thinking with ``budget`` at ``effort``: itself, or a cached copy sharing
        its client."""
        if not isinstance(provider, ThinkingProvider):
            if budget is not None or effort is not None:
                self._notify(
                    f"jupyter-agent: extended thinking is for Claude; the {provider.name} "
                    "provider answers without it."
                )
            return provider
        if provider.thinking_budget == budget and provider.effort == effort:
            return provider
        key = ("variant", id(provider), budget, effort)
        variant = self._providers.get(key)
        if variant is None:
            variant = copy.copy(provider)  # the same client, on the same loop
            try:
                variant.thinking_budget = budget
                variant.effort = effort
            except ValueError as exc:
                raise SessionError(one_line(str(exc))) from None
            self._providers[key] = variant
        return variant

    def _provider_key(self, kind: str, model: str, thinking: int | None) -> tuple[Any, ...]:
        """What a cached provider was built from: a key set (or changed) after a turn failed
        without one builds a new provider, with a client that has it."""
        cassette = self.settings.offline_cassette
        if kind == "offline":
            return (kind, model, thinking, cassette)
        return (kind, model, thinking, cassette, _environment_fingerprint(kind))

    async def _build_provider(self, kind: str, model: str) -> Provider:
        """Built on the background loop, where the provider's HTTP client will live."""
        cassette = self.settings.offline_cassette or None
        try:
            if kind == "auto":
                from ...providers.auto import select_default_provider

                return select_default_provider(cassette=cassette, model=model or None)
            if kind == "anthropic":
                from ...providers.anthropic import AnthropicProvider

                return AnthropicProvider(model or None)
            if kind == "openai":
                from ...providers.openai_compat import OpenAIProvider

                return OpenAIProvider(model or None)
            from ...providers.offline import OfflineProvider

            return OfflineProvider(cassette)
        except Exception as exc:  # a bad cassette, a missing SDK, one refusing to start
            raise SessionError(f"Cannot use provider {kind!r}: {one_line(str(exc))}") from None

    def note_offline(self, provider: Provider) -> None:
        if provider.name != "offline" or self._offline_noted:
            return
        from ...providers.offline import OfflineProvider

        inner = provider.inner if isinstance(provider, BudgetedProvider) else provider
        if not (isinstance(inner, OfflineProvider) and inner.notice):  # else its answers say so
            self._offline_noted = True
            self._notify(OFFLINE_NOTE)

    def note_ignored_model(self, provider: Provider, requested: str) -> None:
        """A model named for the offline demo model: it answers the same whatever the name."""
        if provider.name == "offline" and requested and requested not in self._ignored_models:
            self._ignored_models.add(requested)
            self._notify(
                f"jupyter-agent: the offline demo model ignores --model {requested} (set "
                "ANTHROPIC_API_KEY to talk to Claude)."
            )

    def every_provider(self) -> list[Provider]:
        """Each provider held, once (to close their connections)."""
        held = {id(p): p for p in [*self._providers.values(), self.custom] if p}
        return list(held.values())

    def clear(self) -> None:
        """Forget the providers built (closed with the session's loop); ``custom`` stays."""
        self._providers.clear()
