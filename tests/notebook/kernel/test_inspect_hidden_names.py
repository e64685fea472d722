"""``inspect_variable`` refuses exactly the names ``list_variables`` hides, in a real IPython shell.

It used to read ``In``, ``_ih`` (every cell the user ran) and ``_``-private names that
``list_variables`` does not show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from jupyter_agent.notebook.front.extension import get_magics
from jupyter_agent.tools.registry import ToolRegistry


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolRegistry]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_agent")
    magics = get_magics(ip)
    assert magics is not None
    magics.workspace = str(tmp_path)
    ip.run_cell("secret_token = 'sk-in-history'")
    ip.run_cell("sales = [1, 2, 3]\n_scratch = {'private': True}\nimport json\nfrom os import path")
    yield magics.agent.registry
    ip.run_line_magic("unload_ext", "jupyter_agent")
    for name in ("secret_token", "sales", "_scratch", "json", "path"):
        ip.user_ns.pop(name, None)


def call(registry: ToolRegistry, name: str, args: dict[str, object]) -> tuple[bool, str]:
    result = asyncio.run(registry.call(name, args))
    return result.is_error, result.content


def listed(registry: ToolRegistry) -> set[str]:
    _, content = call(registry, "list_variables", {})
    return {line.split(":", 1)[0] for line in content.splitlines()}


@pytest.mark.parametrize(
    "hidden",
    ["In", "Out", "_ih", "_oh", "_i1", "_", "_scratch", "json", "path", "get_ipython", "exit"],
)
def test_hidden_names_are_refused_with_a_clear_error(registry: ToolRegistry, hidden: str) -> None:
    assert hidden not in listed(registry)
    is_error, content = call(registry, "inspect_variable", {"name": hidden})
    assert is_error
    assert "sk-in-history" not in content
    assert f"{hidden!r} is not one of the user's variables" in content or "no variable" in content
    assert "sales" in content  # says what can be inspected


def test_history_is_not_readable(registry: ToolRegistry) -> None:
    for name in ("In", "_ih"):
        is_error, content = call(registry, "inspect_variable", {"name": name})
        assert is_error and "is not one of the user's variables" in content
        assert "sk-in-history" not in content


def test_every_listed_variable_can_be_inspected(registry: ToolRegistry) -> None:
    names = listed(registry)
    assert {"sales", "secret_token"} <= names
    for name in names:
        is_error, content = call(registry, "inspect_variable", {"name": name})
        assert not is_error, content
