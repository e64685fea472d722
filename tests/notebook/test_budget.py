"""The spend cap: a turn stops before a request that could take it past the cell's or the
session's budget (estimated from the price table before sending), and says so.

The session runs without IPython, the model faked at the HTTP boundary with prices of our own
(``AgentMagics.prices``): $1,000 per million tokens, a tenth of a cent per token, so that the
estimates are easy to reason about.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import magics_of, run_ok

from jupyter_agent.notebook.session import NotebookSession, SessionSettings
from jupyter_agent.providers.anthropic import AnthropicProvider

PRICES = {"claude-sonnet-5-5": {"input": 1000, "output": 1000}}


@pytest.fixture
def session_settings(tmp_path: Path) -> SessionSettings:
    """The shared session, with a price table of its own."""
    return SessionSettings(workspace=str(tmp_path), prices=PRICES)


def _fake(session: NotebookSession, *script: Reply) -> FakeAnthropic:
    fake = FakeAnthropic(*script)
    session.use_provider(
        AnthropicProvider("claude-sonnet-5-5", client=fake.client(), max_tokens=100)
    )
    return fake


def test_a_turn_stops_before_a_request_that_could_pass_the_cell_budget(
    session: NotebookSession, tmp_path: Path
) -> None:
    # the tool result adds some 6,000 tokens ($6) to the second request: past a $6 budget
    (tmp_path / "big.txt").write_text(("x" * 39 + "\n") * 600)
    fake = _fake(
        session,
        Reply([tool_use("toolu_1", "read_file", {"file_path": "big.txt"})]),
        text("never sent"),
    )
    outcome = session.run("read big.txt", budget=6.0)
    assert len(fake.requests) == 1  # the first request fit, the second could not
    assert outcome.answer is not None
    assert "budget" in outcome.answer and "$6.00" in outcome.answer
    report = session.usage_report()
    assert "spent" in report
    # the conversation is valid: the next turn (no cap) goes on from it
    fake.script.insert(0, text("Fine."))
    session.run("go on")
    assert len(fake.requests) == 2


def test_the_session_budget_counts_every_cell(session: NotebookSession) -> None:
    fake = _fake(session, text("One."), text("Two."))
    session.configure(session_budget=1000.0)
    session.run("first")
    spent = session.spent()
    assert spent > 0
    session.configure(session_budget=spent + 0.001)  # less than any request could cost
    outcome = session.run("second")
    assert len(fake.requests) == 1
    assert outcome.answer is not None and "session budget" in outcome.answer
    assert f"left ${0.001:.2f}" in session.usage_report() or "left $0.00" in session.usage_report()


def test_budget_option_and_usage_in_the_notebook(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    magics = magics_of(shell)
    magics.prices = PRICES
    fake = FakeAnthropic(text("never sent"))
    magics.use_provider(
        AnthropicProvider("claude-sonnet-5-5", client=fake.client(), max_tokens=100)
    )
    run_ok(shell, "%%agent --budget 0.01\nhello")
    out = capsys.readouterr().out
    assert fake.requests == []
    assert "budget" in out and "$0.01" in out
    run_ok(shell, "%config AgentMagics.session_budget = 5.0")
    run_ok(shell, "%agent usage")
    out = capsys.readouterr().out
    assert "session budget $5.00" in out
