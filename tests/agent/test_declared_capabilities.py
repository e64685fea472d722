"""Capabilities are declared, not guessed: what a provider or a tool can do is a type the code
names (``ThinkingProvider``, ``ReplyCapped``, ``MCPTool.description``), never a
``getattr(obj, "name", default)`` that silently falls back when a name is misspelt."""

from __future__ import annotations

import ast
from pathlib import Path

import jupyter_agent
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import ReplyCapped, ThinkingProvider
from jupyter_agent.providers.offline import OfflineProvider
from jupyter_agent.providers.openai_compat import OpenAIProvider

PACKAGE = Path(jupyter_agent.__file__).parent
#: The modules that hold the agent's and the session's wiring.
WIRING = [
    "agent/agent.py",
    "agent/toolbox.py",
    "agent/tool_round.py",
    "agent/gate.py",
    "agent/context_window.py",
    "notebook/session/session.py",
    "notebook/spend/budget.py",
    "mcp/manager.py",
]


def _guesses(relative: str) -> list[str]:
    """``getattr``/``hasattr`` calls naming an attribute by a literal string in ``relative``."""
    found = []
    for node in ast.walk(ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
        ):
            found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_wiring_guesses_no_capability() -> None:
    assert [guess for module in WIRING for guess in _guesses(module)] == []


def test_the_providers_declare_what_they_can_do() -> None:
    anthropic = AnthropicProvider(client=object(), thinking_budget=2048, max_tokens=4096)  # type: ignore[arg-type]
    openai = OpenAIProvider(model="m", base_url="http://127.0.0.1:9", api_key="x")
    offline = OfflineProvider()
    assert isinstance(anthropic, ThinkingProvider) and anthropic.thinking_budget == 2048
    assert isinstance(anthropic, ReplyCapped) and anthropic.max_tokens == 4096
    assert isinstance(openai, ReplyCapped) and openai.max_tokens is None
    assert not isinstance(openai, ThinkingProvider)
    assert not isinstance(offline, ThinkingProvider) and not isinstance(offline, ReplyCapped)


def test_the_tools_declare_their_own_approval_checks(tmp_path: Path) -> None:
    from jupyter_agent.tools.base import ChecksApproval, RemembersApproval
    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.factory import create_default_registry

    registry = create_default_registry(ToolContext(tmp_path))
    checking = {t.name for t in registry.list_tools() if isinstance(t, ChecksApproval)}
    remembering = {t.name for t in registry.list_tools() if isinstance(t, RemembersApproval)}
    assert {"git_commit", "web_fetch"} <= checking and "read_file" not in checking
    assert "web_fetch" in remembering and "git_commit" not in remembering
