"""Deny asks why (issue 25): the approval prompt's Deny takes an optional one-line reason — a text
field in the notebook's prompt, a follow-up question in terminal IPython (empty allowed) — and the
model gets it in the refusal result as "Denied by the user: <reason>". The reason is shown inert
wherever it is shown (the prompt's verdict line, the terminal).

The notebook prompt is driven as a browser would (a comm ``update`` with the typed text, then a
click) on ipywidgets' dummy comm, inside a real agent turn against the fake Messages API; the
terminal through a real ``InteractiveShell`` whose ``input()`` answers as a user types.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import Terminal, run_ok, use_fake
from ipywidgets.widgets.tests.utils import setup_test_comm, teardown_test_comm
from widget_frontend import frontend_click, frontend_update, html_text

from jupyter_agent.agent.agent import Agent
from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.notebook.views.widgets.approval_prompt import ApprovalPrompt
from jupyter_agent.providers.anthropic import AnthropicProvider


@pytest.fixture
def dummy_comm() -> Iterator[None]:
    setup_test_comm()
    yield
    teardown_test_comm()


def _deny_in_the_notebook(typed: str, tmp_path: Path) -> tuple[ApprovalPrompt, str]:
    """One turn whose ``run_bash`` call the user denies in the prompt, typing ``typed`` first;
    the prompt and the tool result the model got."""
    prompts: list[ApprovalPrompt] = []

    async def the_user(request: ApprovalRequest) -> Decision:
        prompt = ApprovalPrompt(request)
        prompts.append(prompt)
        if typed:
            frontend_update(prompt.why, value=typed)
        frontend_click(prompt.deny_button)
        assert prompt.decision is not None
        return prompt.decision

    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "run_bash", {"command": "rm -rf data"})]), text("Understood.")
    )
    agent = Agent(
        AnthropicProvider("claude-sonnet-5-5", client=fake.client()),
        workspace=tmp_path,
        approval_handler=the_user,
    )
    agent.registry.enable("run_bash")
    asyncio.run(agent.chat("clean up"))
    [result] = tool_results(fake.requests[1])
    assert result["is_error"] is True
    return prompts[0], result_text(result)


@pytest.mark.usefixtures("dummy_comm")
def test_deny_in_the_notebook_tells_the_model_the_reason_typed(tmp_path: Path) -> None:
    prompt, told = _deny_in_the_notebook("the data folder is my only copy", tmp_path)
    assert "Denied by the user: the data folder is my only copy" in told
    assert "was not run" in told
    assert html_text(prompt.static_bundle()["text/html"]) == (
        "Denied: run_bash was not run (the user said: the data folder is my only copy)"
    )


@pytest.mark.usefixtures("dummy_comm")
def test_deny_without_a_reason_still_denies(tmp_path: Path) -> None:
    _prompt, told = _deny_in_the_notebook("", tmp_path)
    assert "declined" in told and "Denied by the user" not in told


@pytest.mark.usefixtures("dummy_comm")
def test_the_reason_is_one_line_and_inert_where_it_is_shown(tmp_path: Path) -> None:
    typed = "no\x1b]0;pwned\x07 \u202eway\nreally"
    prompt, told = _deny_in_the_notebook(typed, tmp_path)
    line = prompt.static_bundle()["text/plain"]
    assert "\x1b" not in line and "\u202e" not in line and "\n" not in line
    assert "\\x1b" in line and "\\u202e" in line
    assert "Denied by the user: " in told and "\n" not in told.split("Denied by the user: ")[1]


def test_deny_at_the_terminal_asks_why_and_tells_the_model(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal("n", "wrong folder, use scratch/")
    monkeypatch.setattr("sys.stdin", terminal)
    monkeypatch.setattr("builtins.input", terminal.input)
    fake = use_fake(
        shell,
        Reply([tool_use("toolu_b", "run_bash", {"command": "echo hi > proof.txt"})]),
        text("Finished."),
    )
    run_ok(shell, "%agent_tools enable run_bash")
    run_ok(shell, "%%agent\nWrite the proof file")
    assert terminal.questions == ["Allow run_bash? [y/N] ", "Why? (optional, Enter to skip) "]
    [result] = tool_results(fake.requests[1])
    assert result["is_error"] is True
    assert "Denied by the user: wrong folder, use scratch/" in result_text(result)
    assert not (tmp_path / "proof.txt").exists()


def test_an_empty_why_at_the_terminal_is_a_plain_deny(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal("n", "")
    monkeypatch.setattr("sys.stdin", terminal)
    monkeypatch.setattr("builtins.input", terminal.input)
    fake = use_fake(
        shell,
        Reply([tool_use("toolu_b", "run_bash", {"command": "echo hi > proof.txt"})]),
        text("Finished."),
    )
    run_ok(shell, "%agent_tools enable run_bash")
    run_ok(shell, "%%agent\nWrite the proof file")
    [result] = tool_results(fake.requests[1])
    assert "declined" in result_text(result) and "Denied by the user" not in result_text(result)
