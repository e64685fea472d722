"""``ask_user(question, options)``: the agent asks the user and waits for the answer.

In a kernel with a frontend the question is a small form in the running cell (a button per
option, else a text field); the answer is what was clicked or typed. With nobody to answer
(nbclient, a script) the model is told so at once. The kernel test clicks the way a browser
does: a ``comm_msg`` on the shell channel while the cell runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import Terminal, use_fake
from kernel_frontend import WIDGET_VIEW, Kernel

from jupyter_agent.notebook.session.session import NotebookSession
from jupyter_agent.providers.anthropic import AnthropicProvider


def test_with_no_one_to_answer_the_model_is_told_so(session: NotebookSession) -> None:
    fake = FakeAnthropic(
        Reply(
            [
                tool_use(
                    "toolu_1",
                    "ask_user",
                    {"question": "Which region?", "options": ["North", "South"]},
                )
            ]
        ),
        text("I'll assume North."),
    )
    session.use_provider(AnthropicProvider(client=fake.client()))
    session.run("summarise the sales")
    assert "ask_user" in [t["name"] for t in fake.requests[0]["tools"]]
    [result] = tool_results(fake.requests[1])
    assert result.get("is_error")
    assert "no one can answer" in result_text(result)


def test_bad_arguments_are_an_error_result(session: NotebookSession) -> None:
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "ask_user", {"question": "", "options": "North"})]),
        text("OK."),
    )
    session.use_provider(AnthropicProvider(client=fake.client()))
    session.run("hi")
    [result] = tool_results(fake.requests[1])
    assert result.get("is_error")
    assert "invalid arguments for ask_user" in result_text(result)


@pytest.mark.slow
def test_a_click_on_an_option_is_the_answer(kernel: Kernel, fake_api: FakeAnthropic) -> None:
    fake_api.add(
        Reply(
            [
                tool_use(
                    "toolu_1",
                    "ask_user",
                    {"question": "Which region first?", "options": ["North", "South"]},
                )
            ]
        ),
        text("North it is."),
    )
    clicked: dict[str, bool] = {}

    def click_south(message: dict[str, Any]) -> None:
        if message["msg_type"] != "comm_open" or clicked:
            return
        state = message["content"]["data"].get("state", {})
        if state.get("_model_name") == "ButtonModel" and state.get("description") == "South":
            clicked["sent"] = True
            kernel.send_comm(
                message["content"]["comm_id"], {"method": "custom", "content": {"event": "click"}}
            )

    reply, outputs = kernel.execute("%%agent\nSummarise the sales", click_south)
    assert clicked, "no form with a 'South' button was shown"
    assert reply["status"] == "ok", outputs
    [result] = tool_results(fake_api.requests[1])
    assert not result.get("is_error")
    assert "South" in result_text(result)
    # the answered form left a line, not a widget, in the cell
    updates = [o for o in outputs if o["type"] == "update_display_data"]
    assert any(
        "South" in o["data"].get("text/plain", "") and WIDGET_VIEW not in o["data"] for o in updates
    )


@pytest.mark.parametrize(
    ("typed", "expected"), [("2", "South"), ("the East, please", "the East, please")]
)
def test_in_a_terminal_the_question_is_a_prompt(
    shell: InteractiveShell,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    typed: str,
    expected: str,
) -> None:
    terminal = Terminal(typed)
    monkeypatch.setattr("sys.stdin", terminal)
    monkeypatch.setattr("builtins.input", terminal.input)
    question = {"question": "Which region?", "options": ["North", "South"]}
    fake = use_fake(shell, Reply([tool_use("toolu_1", "ask_user", question)]), text("OK."))
    shell.run_cell("%%agent\nsummarise")
    assert terminal.questions == ["[1-2 or your own words] "]
    assert "? Which region?" in capsys.readouterr().out
    [result] = tool_results(fake.requests[1])
    assert result_text(result) == f"The user answered: {expected}"
