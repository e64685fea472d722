"""``%agent ask TEXT`` outside a subshell: an ordinary turn from a line (issue 37).

In a terminal, or on the kernel's main shell, nothing runs beside: the question is a turn of the
default chat like a ``%%agent`` cell (``tests/notebook/runtime/test_subshell.py`` plays the
subshell side against a real kernel).
"""

from __future__ import annotations

import pytest
from fake_anthropic import text, user_texts
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import run_ok, use_fake


def test_agent_ask_is_a_turn_of_the_default_chat(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = use_fake(shell, text("Paris."), text("About 2.1 million."))
    run_ok(shell, '%agent ask "What is the capital of France?"')
    assert "Paris." in capsys.readouterr().out
    # unquoted: a line ending in "?" would be IPython's help for an object, not a magic
    run_ok(shell, "%agent ask How many people live there")
    assert "2.1 million" in capsys.readouterr().out
    assert user_texts(fake.requests[1])[0] == "What is the capital of France?"
    assert user_texts(fake.requests[1])[-1] == "How many people live there"


def test_agent_ask_without_a_question_is_one_line(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    result = shell.run_cell('%agent ask ""')
    assert isinstance(result.error_in_exec, UsageError)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "%agent ask needs a question" in lines[0], lines
