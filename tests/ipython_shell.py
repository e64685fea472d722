"""Driving the magics through a real IPython ``InteractiveShell`` with the model faked at the HTTP
boundary: the helpers every shell test shares (the ``shell`` fixture itself is in
``tests/conftest.py``).
"""

from __future__ import annotations

from typing import Any

from fake_anthropic import FakeAnthropic, offered_tools
from IPython.core.interactiveshell import InteractiveShell

from jupyter_agent.notebook.front.extension import get_magics
from jupyter_agent.notebook.front.magics import AgentMagics
from jupyter_agent.providers.anthropic import AnthropicProvider


def magics_of(ip: InteractiveShell) -> AgentMagics:
    magics = get_magics(ip)
    assert isinstance(magics, AgentMagics)
    return magics


def use_fake(ip: InteractiveShell, *script: Any) -> FakeAnthropic:
    fake = FakeAnthropic(*script)
    magics_of(ip).use_provider(AnthropicProvider(client=fake.client()))
    return fake


def run_ok(ip: InteractiveShell, code: str) -> None:
    result = ip.run_cell(code)
    assert result.error_before_exec is None, result.error_before_exec
    assert result.error_in_exec is None, result.error_in_exec
    assert result.result is None  # the magics display; they return nothing


def tool_names(request: dict[str, Any]) -> list[str]:
    """The tools the model is offered by ``request`` (with its mid-conversation tool changes)."""
    return offered_tools(request)


class Terminal:
    """A terminal's stdin as ``input()`` sees it (the user types the answers given)."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.questions: list[str] = []

    def isatty(self) -> bool:
        return True

    def input(self, question: str = "") -> str:
        self.questions.append(question)
        return self.answers.pop(0)
