"""A server's form in the notebook (``notebook/mcp_forms.py``): asked field by field, declined
when nobody can answer.

Against the reference "everything" server (npm, pinned): its elicitation tool is called the way
the model calls it, through the session's registry; a notebook run with nobody at it declines.
In terminal IPython the fields are prompts, defaults kept by choosing "keep the default".
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from ipython_shell import Terminal
from npm_packages import SERVER_EVERYTHING, npm_package

from jupyter_agent.mcp.client_features import coerce_answer, form_from_schema
from jupyter_agent.notebook.mcp_forms import mcp_form_asker
from jupyter_agent.notebook.session import NotebookSession, SessionSettings
from jupyter_agent.notebook.user_questions import UserQuestions

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "check": {"type": "boolean", "title": "Agree"},
        "firstLine": {"type": "string", "title": "First line", "default": "It was a dark night."},
        "size": {"type": "string", "title": "Size", "enum": ["S", "M", "L"]},
        "count": {"type": "integer", "title": "Count"},
    },
    "required": ["name"],
}


def test_in_a_terminal_each_field_is_a_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal("Ada", "1", "1", "3", "7")  # Ada, yes, keep the default, L, 7
    monkeypatch.setattr("sys.stdin", terminal)
    monkeypatch.setattr("builtins.input", terminal.input)
    session = NotebookSession(SessionSettings(workspace=str(tmp_path), provider="offline"))
    try:
        form = form_from_schema("everything", "Tell me about you", SCHEMA)
        ask = mcp_form_asker(UserQuestions(session.bridge, None, use_widgets=lambda: False))
        outcome = session.bridge.run(ask(form), lambda _event: None)
    finally:
        session.close()
    answer = outcome.value
    assert answer != "decline", terminal.questions
    assert coerce_answer(form, answer) == {  # type: ignore[arg-type]
        "name": "Ada",
        "check": True,
        "firstLine": "It was a dark night.",
        "size": "L",
        "count": 7,
    }
    assert len(terminal.questions) == 5


def test_a_form_nobody_can_answer_is_declined_by_the_real_server(tmp_path: Path) -> None:
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    command = [node, str(npm_package(SERVER_EVERYTHING) / "dist" / "index.js"), "stdio"]
    session = NotebookSession(SessionSettings(workspace=str(tmp_path), provider="offline"))
    try:
        mcp = session.toolbox.mcp
        session.bridge.background.run(mcp.add_server("everything", command=command, policy="allow"))
        registry = session.registry

        async def when_listed() -> None:
            async with asyncio.timeout(20):
                while not registry.has_tool("everything__trigger-elicitation-request"):
                    await asyncio.sleep(0.05)

        session.bridge.background.run(when_listed())
        result = session.bridge.run(
            registry.call("everything__trigger-elicitation-request", {}), lambda _event: None
        ).value
    finally:
        session.close()
    assert "declined" in result.content, result.content
