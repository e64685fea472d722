"""One way to build the ``Agent`` a loop test drives: a provider — or the fake Messages API, which
becomes an ``AnthropicProvider`` on its client — a workspace, exactly the tools given, and the
agent's options. The agent, provider and edge tests each had their own copy of this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_anthropic import FakeAnthropic

from jupyter_agent.agent.agent import Agent
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import Provider
from jupyter_agent.tools.registry import ToolRegistry

#: The system prompt of the scripted conversations (the fake API checks the request carries it).
SYSTEM = "You are a careful assistant."


def make_agent(
    model: FakeAnthropic | Provider,
    workspace: Path,
    *tools: Any,
    system_prompt: str = SYSTEM,
    max_retries: int = 0,
    **options: Any,
) -> Agent:
    """An agent on ``model`` whose registry holds ``tools`` and nothing else.

    ``max_retries`` is the SDK client's, when ``model`` is the fake API; ``options`` go to
    ``Agent`` (``max_turns``, ``approval_handler``, ``context_window``, ...).
    """
    if isinstance(model, FakeAnthropic):
        model = AnthropicProvider("claude-sonnet-5-5", client=model.client(max_retries=max_retries))
    registry = ToolRegistry()
    for item in tools:
        registry.register(item)
    return Agent(
        model, workspace=workspace, system_prompt=system_prompt, registry=registry, **options
    )
