"""The file ``%agent save`` writes and ``%agent load`` reads: one conversation as JSON.

``{"format": "jupyter-agent-session", "version": 1, "system_prompt": ..., "provider": ...,
"model": ..., "messages": [...]}`` — the messages in Anthropic Messages format, as the agent
keeps them. Reading checks the shape before anything is replaced, so a wrong file changes
nothing; every problem is a one-line ``SessionError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SessionError

SESSION_FORMAT = "jupyter-agent-session"
SESSION_VERSION = 1

_ROLES = ("user", "assistant")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@dataclass(frozen=True, slots=True)
class SavedConversation:
    messages: list[dict[str, Any]]
    system_prompt: str | None


def save_conversation(
    path: Path,
    messages: list[dict[str, Any]],
    *,
    system_prompt: str,
    provider: str,
    model: str,
) -> None:
    """Write ``messages`` (and what produced them) to ``path``, creating its folder."""
    payload = {
        "format": SESSION_FORMAT,
        "version": SESSION_VERSION,
        "system_prompt": system_prompt,
        "provider": provider,
        "model": model,
        "messages": messages,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    except OSError as exc:
        raise SessionError(f"Cannot save the conversation to {str(path)!r}: {exc}") from None


def read_conversation(path: Path) -> SavedConversation:
    """The conversation saved at ``path``, checked."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SessionError(f"No saved conversation at {str(path)!r}") from None
    except (OSError, ValueError) as exc:
        raise SessionError(f"Cannot read {str(path)!r}: {_one_line(str(exc))}") from None
    messages = payload.get("messages") if isinstance(payload, dict) else None
    if (
        not isinstance(payload, dict)
        or payload.get("format") != SESSION_FORMAT
        or not isinstance(messages, list)
        or not all(isinstance(m, dict) and m.get("role") in _ROLES for m in messages)
    ):
        raise SessionError(f"{str(path)!r} is not a conversation saved by %agent save")
    system_prompt = payload.get("system_prompt")
    return SavedConversation(
        list(messages), system_prompt if isinstance(system_prompt, str) else None
    )
