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

from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings
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


# -- issue 34, point 5: amounts as written, never read as LaTeX -----------------------------


@pytest.mark.parametrize(
    ("dollars", "shown"),
    [
        (0.001, "$0.001"),  # was "$0.00"
        (0.0003, "$0.0003"),
        (0.14, "$0.14"),
        (0.125, "$0.125"),
        (0.1413, "$0.141"),
        (6.0, "$6.00"),
        (0.0, "$0.00"),
        (1250.5, "$1,250.50"),
    ],
)
def test_money_has_enough_digits(dollars: float, shown: str) -> None:
    from jupyter_agent.notebook.spend.pricing import money

    assert money(dollars) == shown


def _text_outside_ignored_spans(markup: str) -> str:
    """The text of ``markup`` a LaTeX typesetter scans: what is not inside an element of the
    class MathJax ignores (``mathjax_ignore``), nor a code element, nor a tag."""
    import re

    without = re.sub(r'<span class="mathjax_ignore[^"]*">[^<]*</span>', "", markup)
    without = re.sub(r"<code>.*?</code>", "", without, flags=re.S)
    return re.sub(r"<[^>]+>", "", without)


def test_the_stop_message_shows_its_amounts_and_no_math_in_the_cell(
    session: NotebookSession,
) -> None:
    """The message names two amounts; in JupyterLab the text between two ``$`` was typeset as
    math, and a $0.001 budget read ``$0.00``."""
    from jupyter_agent.notebook.inert import markdown_bundle

    fake = _fake(session, text("never sent"))
    outcome = session.run("hello", budget=0.001)
    assert fake.requests == []
    assert outcome.answer is not None
    assert "this cell's budget is $0.001 ($0.00 spent)" in outcome.answer, outcome.answer
    bundle = markdown_bundle(outcome.answer)  # what the cell displays
    assert "$0.001" in bundle["text/plain"]
    scanned = _text_outside_ignored_spans(bundle["text/html"])
    assert "$" not in scanned, bundle["text/html"]
    assert "budget is " in scanned  # the words are there, only the signs are fenced off


def test_real_math_in_an_answer_is_still_math() -> None:
    from jupyter_agent.notebook.inert import markdown_html

    markup = markdown_html("The area is $\\pi r^2$, which costs $5 or $6.")
    assert '<span class="math">' in markup  # typeset by the front end, as before
    assert "$" not in _text_outside_ignored_spans(markup.split("</span>", 1)[1]), markup


def test_the_cost_bound_of_a_long_prompt_uses_the_models_higher_tier() -> None:
    """Haiku 5.5 bills a prompt above 100K tokens at five times its base rates: the spend cap's
    estimate before sending must too (it priced every prompt at the base rate)."""
    from jupyter_agent.notebook.spend.budget import request_cost_bound
    from jupyter_agent.providers.base import ModelRequest

    long_prompt = ModelRequest(
        system="", messages=[{"role": "user", "content": "x" * 600_000}], tools=[]
    )
    bound = request_cost_bound("claude-haiku-5-5", long_prompt, 1_000, {})
    assert bound == pytest.approx((150_004 * 0.50 + 1_000 * 2.50) / 1e6, rel=1e-3)
    short_prompt = ModelRequest(system="", messages=[{"role": "user", "content": "x"}], tools=[])
    assert request_cost_bound("claude-haiku-5-5", short_prompt, 1_000, {}) == pytest.approx(
        (4 * 0.10 + 1_000 * 0.50) / 1e6, rel=1e-2
    )


def test_a_budget_below_the_models_default_room_shrinks_the_room_not_the_turn(
    tmp_path: Path,
) -> None:
    """A current model's default ``max_tokens`` leaves room for a long think (tens of thousands
    of tokens, about $0.49 of output on Sonnet 5.5): a cell with ``--budget 0.25`` must still
    get its answer, with the reply's room cut to what the budget covers — never below the usual
    8,192 tokens — instead of being stopped before its first request."""
    session = NotebookSession(SessionSettings(workspace=str(tmp_path)))
    fake = FakeAnthropic(text("Fine."))
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client())
    session.use_provider(provider)
    outcome = session.run("hello", budget=0.25)
    assert len(fake.requests) == 1, outcome.answer
    sent = fake.requests[0]["max_tokens"]
    assert 8192 <= sent < provider.max_tokens
    assert outcome.answer == "Fine."
    # a budget that cannot cover even the usual room still stops the turn before sending
    outcome = session.run("again", budget=0.01)
    assert len(fake.requests) == 1
    assert outcome.answer is not None and "budget" in outcome.answer
