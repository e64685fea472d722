"""A server's form in the notebook (``notebook/asking/mcp_forms.py``): asked field by field,
declined when nobody can answer.

Against the reference "everything" server (npm, pinned): its elicitation tool is called the way
the model calls it, through the session's registry; a notebook run with nobody at it declines.
In terminal IPython the fields are prompts, defaults kept by choosing "keep the default"; in a
kernel a frontend answers, tutorial 06's form is widgets in the cell, clicked as a browser does.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from ipython_shell import Terminal
from kernel_frontend import WIDGET_VIEW, Kernel
from npm_packages import SERVER_EVERYTHING, npm_package

from jupyter_agent.mcp.client_features import coerce_answer, form_from_schema
from jupyter_agent.notebook.asking.mcp_forms import mcp_form_asker
from jupyter_agent.notebook.asking.user_questions import UserQuestions
from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings

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


NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


@pytest.mark.slow
def test_tutorial_06s_form_is_shown_and_answered_when_someone_can_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tutorial 06's elicitation cell, in a kernel a frontend answers (``allow_stdin``): the
    server's form comes up as widgets in the cell, the clicks are the answer the server gets,
    and the answered questions stay as lines (nbval's run, with nobody there, declines)."""
    shutil.copytree(NOTEBOOKS / "mcp_servers", tmp_path / "mcp_servers")
    shutil.copytree(NOTEBOOKS / "cassettes", tmp_path / "cassettes")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "offline")
    kernel = Kernel(tmp_path)
    try:
        reply, outputs = kernel.execute(
            "%load_ext jupyter_agent\n"
            '%config AgentMagics.offline_cassette = "cassettes/06_mcp.json"\n'
            "import sys"
        )
        assert reply["status"] == "ok", outputs
        reply, outputs = kernel.execute(
            "%agent mcp add units --policy allow -- {sys.executable} mcp_servers/units_server.py"
        )
        assert reply["status"] == "ok", outputs
        labels: list[str] = []
        clicked: list[str] = []

        def answer(message: dict[str, Any]) -> None:
            # a browser's clicks: "imperial" for the units, then keep the default decimals
            if message["msg_type"] != "comm_open":
                return
            state = message["content"]["data"].get("state", {})
            if state.get("_model_name") == "HTMLModel":
                labels.append(str(state.get("value", "")))
            wanted = "imperial" if not clicked else "(keep the default)"
            asking_decimals = bool(labels) and "Decimals" in labels[-1]
            if state.get("_model_name") != "ButtonModel" or state.get("description") != wanted:
                return
            if wanted == "(keep the default)" and not asking_decimals:
                return  # the first question's own "keep" button
            clicked.append(wanted)
            kernel.send_comm(
                message["content"]["comm_id"], {"method": "custom", "content": {"event": "click"}}
            )

        reply, outputs = kernel.execute(
            "%%agent\nWhich units do I want my answers in? Ask me with the units server's form, "
            "and keep to what I choose.",
            answer,
            timeout=90,
        )
    finally:
        kernel.close()
    assert reply["status"] == "ok", outputs
    assert clicked == ["imperial", "(keep the default)"], labels
    [asked] = [label for label in labels if "units asks:" in label]
    assert "Which units should answers be given in?" in asked and "Units" in asked, labels
    # the server got the answer the clicks gave, and the model read it
    shown = "\n".join(o["data"].get("text/plain", "") for o in outputs if "data" in o)
    assert "The user chose imperial units, 1 decimal(s)." in shown, shown
    # each answered question became a line in the cell, no widget left there
    lines = [
        o["data"]["text/plain"]
        for o in outputs
        if o["type"] == "update_display_data" and WIDGET_VIEW not in o["data"]
    ]
    assert any("Units" in line and "→ imperial" in line for line in lines), lines
    assert any("Decimals" in line and "→ (keep the default)" in line for line in lines), lines


@pytest.mark.slow
def test_a_form_from_a_call_in_a_code_cell_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tutorial 06's own way of calling a server's tool — ``await agent.registry.call(...)`` in a
    code cell — for the tool that asks: the form said "this needs the notebook's main thread,
    which is only available while a %%agent cell is running" instead of being asked."""
    shutil.copytree(NOTEBOOKS / "mcp_servers", tmp_path / "mcp_servers")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "offline")
    kernel = Kernel(tmp_path)
    try:
        reply, outputs = kernel.execute(
            "%load_ext jupyter_agent\nimport sys\n"
            "%agent mcp add units --policy allow -- {sys.executable} mcp_servers/units_server.py"
        )
        assert reply["status"] == "ok", outputs
        clicked: list[str] = []

        def answer(message: dict[str, Any]) -> None:
            # a browser's clicks: "imperial" for the units, then keep the default decimals
            if message["msg_type"] != "comm_open":
                return
            state = message["content"]["data"].get("state", {})
            wanted = "imperial" if not clicked else "(keep the default)"
            if state.get("_model_name") != "ButtonModel" or state.get("description") != wanted:
                return
            clicked.append(wanted)
            kernel.send_comm(
                message["content"]["comm_id"], {"method": "custom", "content": {"event": "click"}}
            )

        reply, outputs = kernel.execute(
            "from jupyter_agent.notebook.front.extension import get_magics\n"
            "agent = get_magics(get_ipython()).agent\n"
            "result = await agent.registry.call('units__choose_units', {})\n"
            "print(result.is_error, '|', result.content)",
            answer,
            timeout=90,
        )
    finally:
        kernel.close()
    assert reply["status"] == "ok", outputs
    printed = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    assert "main thread" not in printed, printed
    assert "False | " in printed and "imperial" in printed, printed
    assert clicked and clicked[0] == "imperial", clicked


@pytest.mark.slow
def test_a_sampling_request_from_a_call_in_a_code_cell_is_put_to_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference "everything" server's sampling tool called from a code cell: the approval
    was refused with "needs the notebook's main thread"; now it is asked, and Approve sends the
    request to the session's model (the offline one here)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    server = npm_package(SERVER_EVERYTHING) / "dist" / "index.js"
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "offline")
    kernel = Kernel(tmp_path)
    try:
        reply, outputs = kernel.execute(
            f"%load_ext jupyter_agent\n%agent mcp add ev --policy allow -- {node} {server} stdio"
        )
        assert reply["status"] == "ok", outputs
        clicked: list[str] = []

        def approve(message: dict[str, Any]) -> None:
            if message["msg_type"] != "comm_open":
                return
            state = message["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") == "Approve":
                clicked.append("Approve")
                kernel.send_comm(
                    message["content"]["comm_id"],
                    {"method": "custom", "content": {"event": "click"}},
                )

        reply, outputs = kernel.execute(
            "import asyncio\n"
            "from jupyter_agent.notebook.front.extension import get_magics\n"
            "agent = get_magics(get_ipython()).agent\n"
            "while not agent.registry.has_tool('ev__trigger-sampling-request'):\n"
            "    await asyncio.sleep(0.05)\n"
            "result = await agent.registry.call(\n"
            "    'ev__trigger-sampling-request', {'prompt': 'a rhyme', 'maxTokens': 50})\n"
            "print(result.is_error, '|', result.content)",
            approve,
            timeout=90,
        )
    finally:
        kernel.close()
    assert reply["status"] == "ok", outputs
    printed = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    assert "main thread" not in printed and "declined" not in printed, printed
    assert clicked == ["Approve"], printed
    assert printed.startswith("False | ") and "offline" in printed.lower(), printed
