"""What ``%config AgentMagics.NAME`` sets: the notebook session's settings, and chat names.

A light module on purpose: the magics declare one trait per field at import, and
``%load_ext jupyter_agent`` must not pull in the agent, the SDKs or jsonschema to do that (the
session, which does, is built on first use). The limits' defaults are the ``Agent``'s (a test
checks they agree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any

from ...errors import SessionError

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant working inside the user's Jupyter notebook. You can use tools "
    "to read and change files in the notebook's folder (the workspace) and to look at the "
    "variables of the user's Python session. Answer in Markdown; be concise and show the code "
    "or numbers that support your answer."
)

DEFAULT_CHAT = "default"
PROVIDER_KINDS = ("auto", "anthropic", "offline", "openai")
#: Chat names: short, and safe in a file name or a shell word.
_CHAT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass
class SessionSettings:
    """What ``%config AgentMagics.NAME`` sets (the magics declare a trait for each field)."""

    provider: str = "auto"
    model: str = ""
    workspace: str = ""
    max_turns: int = 20
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    offline_cassette: str = ""
    allow_private_network: bool = False
    #: Whether run_bash's sandbox keeps the network (``ToolContext.shell_network``); off, a
    #: command has only its own loopback.
    shell_network: bool = False
    #: Hosts web_fetch reaches without asking (``*.example.com`` for its subdomains).
    web_allow: list[str] = field(default_factory=list)
    variable_budget: int = 8000
    prices: dict[str, Any] = field(default_factory=dict)
    #: Seconds one tool call may run (``None``: no limit).
    tool_timeout: float | None = 300.0
    #: The longest tool result the model sees, in characters (``None``: no cap).
    max_result_chars: int | None = 100_000
    #: The model's context window in tokens (``None``: the model's documented one).
    context_window: int | None = None
    #: Tokens Claude may think before answering (``None``: extended thinking off).
    thinking_budget: int | None = None
    #: Claude's effort (``low``, ``medium``, ``high``, ``xhigh``, ``max``; ``None``: the model's).
    effort: str | None = None
    #: Tool calls of one reply that run at the same time.
    max_parallel_tools: int = 8
    #: Dollars one %%agent cell may spend (``None``: no cap); ``--budget`` for one cell.
    budget: float | None = None
    #: Dollars the whole session may spend (``None``: no cap).
    session_budget: float | None = None


SETTING_NAMES = tuple(f.name for f in fields(SessionSettings))


def check_chat_name(name: str) -> str:
    if not _CHAT_NAME.fullmatch(name):
        raise SessionError(f"A chat name is 1 to 64 letters, digits, '_', '.' or '-', not {name!r}")
    return name
