"""Which model will answer the next ``%%agent`` cell, said in one line before any is built.

A new user's first question is "am I talking to Claude?": ``%agent config`` starts with this line
("Claude (claude-…) — key found", "offline demo model — no ANTHROPIC_API_KEY"). It reads the
settings and the environment the way the providers will when they are built, and builds nothing
(no client, no SDK import beyond a constant).
"""

from __future__ import annotations

import os
from typing import Any

from ..session.settings import SessionSettings

#: The environment variable ``select_default_provider`` reads (``providers/auto.py``).
_PROVIDER_ENV = "JUPYTER_AGENT_PROVIDER"


def _anthropic_model(requested: str) -> str:
    from ...providers.anthropic import DEFAULT_MODEL, MODEL_ENV_VAR

    return requested or os.environ.get(MODEL_ENV_VAR) or DEFAULT_MODEL


def _has_anthropic_key() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def answering_model(settings: SessionSettings, custom: Any = None) -> str:
    """One line: the model the next cell's turn goes to, and whether it can be reached."""
    if custom is not None:
        return f"{custom.name} ({custom.model}) — set with use_provider()"
    kind = settings.provider
    if kind == "auto":
        choice = os.environ.get(_PROVIDER_ENV, "").strip().lower()
        if choice in ("anthropic", "offline", "openai"):
            kind = choice
        else:
            kind = "anthropic" if _has_anthropic_key() else "offline"
            if kind == "offline":
                replay = " (replaying a recorded session)" if settings.offline_cassette else ""
                later = f" ({settings.model} once a key is set)" if settings.model else ""
                return f"offline demo model{replay} — no ANTHROPIC_API_KEY{later}"
    if kind == "anthropic":
        model = _anthropic_model(settings.model)
        if _has_anthropic_key():
            return f"Claude ({model}) — key found"
        return f"Claude ({model}) — no ANTHROPIC_API_KEY: requests will fail until you set it"
    if kind == "openai":
        from ...providers.openai_compat import DEFAULT_MODEL

        model = (
            settings.model
            or os.environ.get("OPENAI_MODEL")
            or os.environ.get("JUPYTER_AGENT_MODEL")
            or DEFAULT_MODEL
        )
        where = os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
        return f"OpenAI-compatible ({model}) at {where}"
    replay = " replaying a recorded session" if settings.offline_cassette else ""
    return f"offline demo model{replay} (provider 'offline')"
