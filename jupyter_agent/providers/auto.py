"""``select_default_provider``: Claude when a key is set, the offline model otherwise.

The notebook layer calls this when the user has not chosen a provider, so that a notebook opened
on Binder (no key) still works — with the offline model announcing itself — and the same notebook
talks to Claude as soon as ``ANTHROPIC_API_KEY`` is set. ``JUPYTER_AGENT_PROVIDER`` (``anthropic``,
``offline`` or ``openai``) forces a choice.
"""

from __future__ import annotations

import os

from .base import Provider

PROVIDER_ENV_VAR = "JUPYTER_AGENT_PROVIDER"
CHOICES = ("anthropic", "offline", "openai")


def select_default_provider(
    *, cassette: str | os.PathLike[str] | None = None, model: str | None = None
) -> Provider:
    """``AnthropicProvider(model)`` if ``ANTHROPIC_API_KEY`` is set, else ``OfflineProvider``.

    ``cassette`` is a recorded session the offline model replays; ``model`` is passed to the
    provider that talks to a real model.
    """
    choice = os.environ.get(PROVIDER_ENV_VAR, "").strip().lower()
    if choice and choice not in CHOICES:
        raise ValueError(f"{PROVIDER_ENV_VAR}={choice!r} is not one of {', '.join(CHOICES)}")
    if choice == "openai":
        from .openai_compat import OpenAIProvider

        return OpenAIProvider(model)
    if choice == "anthropic" or (choice != "offline" and os.environ.get("ANTHROPIC_API_KEY")):
        from .anthropic import AnthropicProvider

        return AnthropicProvider(model)
    from .offline import OfflineProvider

    return OfflineProvider(cassette)
