"""``%%agent --plan``: a turn with read-only tools that ends with a plan; ``%agent go`` (or the
Go button) carries it out with the normal tools, in the same chat.

Driven through a real ``InteractiveShell``; the model faked at the HTTP boundary.
"""

from __future__ import annotations

import pytest
from fake_anthropic import Reply, result_text, text, tool_results, tool_use, user_texts
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import magics_of, run_ok, tool_names, use_fake

from jupyter_agent.notebook.front.plan_mode import READ_ONLY_TOOLS


def test_plan_offers_only_read_only_tools_then_go_runs_with_all(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = use_fake(
        shell,
        text("1. Read data.csv\n2. Write summary.md"),
        Reply([tool_use("toolu_1", "write_file", {"file_path": "summary.md", "content": "ok"})]),
        text("Done."),
    )
    run_ok(shell, "%%agent --plan\nSummarise data.csv into summary.md")
    planned = tool_names(fake.requests[0])
    assert "read_file" in planned and "ask_user" in planned
    assert not set(planned) - READ_ONLY_TOOLS
    assert "write_file" not in planned and "run_bash" not in planned
    assert "plan" in user_texts(fake.requests[0])[-1].lower()
    out = capsys.readouterr().out
    assert "%agent go" in out
    # the tools are as they were once the plan is made
    registry = magics_of(shell).session.registry
    assert registry.is_tool_enabled("write_file")

    run_ok(shell, "%agent go")
    assert "write_file" in tool_names(fake.requests[1])
    assert "plan" in user_texts(fake.requests[1])[-1].lower()
    [result] = tool_results(fake.requests[2])
    assert not result.get("is_error"), result_text(result)


def test_go_without_a_plan_is_a_one_line_usage_error(shell: InteractiveShell) -> None:
    use_fake(shell)
    with pytest.raises(UsageError, match="No plan to carry out"):
        shell.run_line_magic("agent", "go")


def test_go_with_another_plans_nonce_refuses_and_the_plan_stays_pending(
    shell: InteractiveShell,
) -> None:
    """``--plan NONCE`` is what the Go button sends: a button not made for the pending plan (a
    forged one, an older plan's) runs nothing; ``%agent go`` typed by the user still runs it."""
    fake = use_fake(shell, text("1. Write summary.md"), text("Done."))
    run_ok(shell, "%%agent --plan\nSummarise data.csv into summary.md")
    with pytest.raises(UsageError, match="not the pending plan's"):
        shell.run_line_magic("agent", "go --plan 0123456789abcdef0123456789abcdef")
    assert len(fake.requests) == 1  # nothing was sent
    run_ok(shell, "%agent go")  # the plan is still pending; the user typed this
    assert len(fake.requests) == 2
    assert "Go ahead" in user_texts(fake.requests[1])[-1]
