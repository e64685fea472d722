"""The newer ``%agent`` commands through a real ``InteractiveShell``: chats, error, undo, ``--out``.

The model is faked at the HTTP boundary (``tests/fake_anthropic.py``) or is the offline model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_anthropic import (
    Reply,
    offered_tools,
    progress,
    result_text,
    text,
    tool_results,
    tool_use,
    user_texts,
)
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import magics_of, run_ok, use_fake

from jupyter_agent.providers.offline import OFFLINE_NOTICE


def one_line_usage_error(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str], cell: str
) -> str:
    result = ip.run_cell(cell)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: "), err
    return lines[0]


# -- several conversations ---------------------------------------------------------------------


def test_chat_option_keeps_a_conversation_per_name(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = use_fake(
        shell,
        text("Paris.", usage={"input_tokens": 100, "output_tokens": 10}),
        text("4.", usage={"input_tokens": 7, "output_tokens": 1}),
        text("2.1 million.", usage={"input_tokens": 120, "output_tokens": 12}),
        text("5."),
    )
    run_ok(shell, "%%agent\nWhat is the capital of France?")
    run_ok(shell, "%%agent --chat maths\nWhat is 2 + 2?")
    run_ok(shell, "%%agent\nHow many people live there?")
    assert user_texts(fake.requests[1]) == ["What is 2 + 2?"]
    assert user_texts(fake.requests[2])[0] == "What is the capital of France?"

    capsys.readouterr()
    run_ok(shell, "%agent chats")
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["chat", "messages", "input", "output"]
    assert table[1].split() == ["default", "4", "220", "22"]
    assert table[2].split() == ["maths", "2", "7", "1"]

    run_ok(shell, "%agent reset maths")
    run_ok(shell, "%%agent -c maths\nAnd 2 + 3?")
    assert user_texts(fake.requests[3]) == ["And 2 + 3?"]
    assert len(magics_of(shell).session.chat("default").messages) == 4


def test_reset_without_a_name_empties_every_chat(shell: InteractiveShell) -> None:
    fake = use_fake(shell, text("a"), text("b"), text("c"))
    run_ok(shell, "%%agent\nfirst")
    run_ok(shell, "%%agent --chat other\nsecond")
    run_ok(shell, "%agent reset")
    run_ok(shell, "%%agent --chat other\nthird")
    assert user_texts(fake.requests[2]) == ["third"]


def test_agent_tools_act_on_every_chat(shell: InteractiveShell) -> None:
    fake = use_fake(
        shell,
        text("a"),
        Reply([tool_use("t1", "write_file", {"file_path": "x.txt", "content": "x"})]),
        text("b"),
    )
    run_ok(shell, "%%agent --chat one\nhello")
    run_ok(shell, "%agent_tools disable web_fetch")
    run_ok(shell, "%agent_tools policy write_file deny")
    run_ok(shell, "%%agent --chat one\nwrite x.txt")
    assert "web_fetch" not in offered_tools(fake.requests[1])
    assert not Path("x.txt").exists()
    assert magics_of(shell).session.chat("one").get_policy("write_file") == "deny"


# -- %agent error ---------------------------------------------------------------------------------


def test_agent_error_sends_the_failing_cell_and_its_traceback(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = use_fake(shell, text("You divide by zero; use a non-zero divisor."))
    shell.run_cell("ratio = 1\nvalues = [3, 0]\n\ndef scale(v):\n    return ratio / v\n")
    failing = "total = sum(scale(v) for v in values)"
    result = shell.run_cell(failing, store_history=True)
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    count = result.execution_count
    shell.run_cell("print('a later cell that works')", store_history=True)
    capsys.readouterr()
    run_ok(shell, "%agent error")

    [prompt] = user_texts(fake.requests[0])
    assert prompt.startswith(f"Cell [{count}] of my notebook raised an exception.")
    assert f"```python\n{failing}\n```" in prompt
    assert "ZeroDivisionError: division by zero" in prompt
    assert "return ratio / v" in prompt  # the frame inside the function, with its line
    assert "interactiveshell.py" not in prompt  # IPython's own frames left out
    assert "use a non-zero divisor" in capsys.readouterr().out


def test_agent_error_with_no_error_yet_is_a_one_line_usage_error(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("last_value", "last_traceback", "last_type", "last_exc"):
        monkeypatch.delattr(sys, name, raising=False)
    fake = use_fake(shell)
    line = one_line_usage_error(shell, capsys, "%agent error")
    assert "No error yet" in line
    assert fake.requests == []


def test_agent_error_sends_a_syntax_error_and_ignores_its_own_failures(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = use_fake(shell, text("A parenthesis is missing."))
    shell.run_cell("print('unclosed'", store_history=True)
    shell.run_cell("%agent frobnicate")  # a UsageError of our own: not "the last error"
    run_ok(shell, "%agent error")
    [prompt] = user_texts(fake.requests[0])
    assert "print('unclosed'" in prompt
    assert "SyntaxError: '(' was never closed" in prompt
    assert "_IncompleteInputError" not in prompt  # Python 3.13's private name for it


def test_agent_error_names_what_an_unfinished_cell_left_open_on_every_python(
    shell: InteractiveShell,
) -> None:
    """Python 3.13's codeop, whose flags IPython compiles cells with, raises the private
    ``_IncompleteInputError`` ("incomplete input") for an unclosed bracket: the prompt said that
    and no ``SyntaxError`` — here for an error raised before the extension was loaded, in a cell
    IPython transformed (a line magic), over several lines."""
    shell.run_line_magic("unload_ext", "jupyter_agent")
    cell = "%time total = 1\nitems = [\n    1,\n    2,\n"
    result = shell.run_cell(cell, store_history=True)
    assert isinstance(result.error_before_exec, SyntaxError)
    shell.run_line_magic("load_ext", "jupyter_agent")
    magics_of(shell).workspace = str(Path.cwd())
    fake = use_fake(shell, text("Close the list."))
    run_ok(shell, "%agent error")
    [prompt] = user_texts(fake.requests[0])
    assert "items = [" in prompt
    assert "SyntaxError: '[' was never closed" in prompt
    assert "_IncompleteInputError" not in prompt and "incomplete input" not in prompt


def test_a_mistyped_magics_usage_error_is_not_the_last_error(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped magic (any IPython ``UsageError``) became "the last error" that %agent error
    sent, instead of the exception before it."""
    fake = use_fake(shell, text("Divide by something else."))
    shell.run_cell("1 / 0", store_history=True)
    for mistyped in ("%timeit -Z 1", "%matplotlibb inline", "%agent_tools frob"):
        result = shell.run_cell(mistyped, store_history=True)
        assert isinstance(result.error_in_exec, UsageError), mistyped
    run_ok(shell, "%agent error")
    [prompt] = user_texts(fake.requests[0])
    assert "ZeroDivisionError" in prompt and "UsageError" not in prompt


def test_agent_error_on_the_offline_demo_model_says_plainly_it_cannot_explain(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no key the demo model read_file'd the traceback's paths or answered "Nothing matches
    `**/*.py`"; it now says what it can't do and how to get a model that can."""
    shell.run_cell("open('/no/such/dir/data.py').read()", store_history=True)
    capsys.readouterr()
    run_ok(shell, "%agent error")
    out = capsys.readouterr().out
    assert "can't explain errors" in out
    assert "ANTHROPIC_API_KEY" in out
    assert "Nothing matches" not in out and "read_file" not in out


def test_agent_error_finds_an_error_raised_before_the_extension_was_loaded(
    shell: InteractiveShell,
) -> None:
    shell.run_line_magic("unload_ext", "jupyter_agent")
    result = shell.run_cell("undefined_name + 1", store_history=True)
    assert isinstance(result.error_in_exec, NameError)
    shell.run_line_magic("load_ext", "jupyter_agent")
    magics_of(shell).workspace = str(Path.cwd())
    fake = use_fake(shell, text("Define it first."))
    run_ok(shell, "%agent error --chat debug")
    [prompt] = user_texts(fake.requests[0])
    assert prompt.startswith("A cell of my notebook raised an exception.")
    assert "undefined_name + 1" in prompt and "NameError" in prompt
    assert [chat.name for chat in magics_of(shell).session.chats()] == ["default", "debug"]


# -- --out keeps only the answer; the offline usage legend ------------------------------------


def test_out_keeps_only_the_answer_of_the_offline_model(
    shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sales.csv").write_text("region,revenue\nnorth,10\nsouth,30\n")
    run_ok(shell, "%%agent --out ans\nWhich region has the highest revenue?")
    shown = capsys.readouterr().out
    assert OFFLINE_NOTICE in shown and "This answer came from the offline demo model" in shown
    answer = shell.user_ns["ans"]
    assert "south" in answer
    assert OFFLINE_NOTICE not in answer
    assert "offline demo model" not in answer
    assert not answer.rstrip().endswith("---")


def test_the_offline_usage_table_says_what_its_columns_hold(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    run_ok(shell, "%%agent\nhello")
    capsys.readouterr()
    run_ok(shell, "%agent usage")
    header, row, *legend = capsys.readouterr().out.splitlines()
    assert header.split() == ["model", "input", "output", "cache", "r/w", "cost"]
    assert row.split()[0] == "offline-demo"
    explained = "\n".join(legend)
    assert "input, output:" in explained and "cache r/w:" in explained and "cost:" in explained
    assert "it counts no tokens" in explained  # the zeros are not measurements
    assert "list prices" not in explained  # no price list was used


# -- %agent undo ----------------------------------------------------------------------------------


def test_undo_restores_what_the_last_agent_cell_wrote(
    shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("original\n")
    use_fake(
        shell,
        Reply([tool_use("t1", "write_file", {"file_path": "notes.txt", "content": "first\n"})]),
        text("Wrote it."),
        Reply(
            [
                tool_use("t2", "write_file", {"file_path": "notes.txt", "content": "second\n"}),
                tool_use("t3", "write_file", {"file_path": "new.txt", "content": "new\n"}),
            ]
        ),
        text("Wrote both."),
    )
    run_ok(shell, "%agent_tools policy write_file allow")
    run_ok(shell, "%%agent\nwrite first")
    run_ok(shell, "%%agent --chat other\nwrite second and new")
    assert (tmp_path / "notes.txt").read_text() == "second\n"
    capsys.readouterr()
    run_ok(shell, "%agent undo")
    message = capsys.readouterr().out
    assert "notes.txt" in message and "new.txt" in message
    assert "run_bash" in message  # it says what is beyond it
    assert (tmp_path / "notes.txt").read_text() == "first\n"  # only the last cell is undone
    assert not (tmp_path / "new.txt").exists()
    run_ok(shell, "%agent undo")  # and then the cell before
    assert (tmp_path / "notes.txt").read_text() == "original\n"
    capsys.readouterr()
    run_ok(shell, "%agent undo")
    assert "Nothing to undo" in capsys.readouterr().out


def test_undo_works_after_the_session_restarts_and_spares_the_users_edits(
    shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("a0\n")
    (tmp_path / "b.txt").write_text("b0\n")
    use_fake(
        shell,
        Reply(
            [
                tool_use("t1", "write_file", {"file_path": "a.txt", "content": "a1\n"}),
                tool_use("t2", "write_file", {"file_path": "b.txt", "content": "b1\n"}),
            ]
        ),
        text("Done."),
    )
    run_ok(shell, "%agent_tools policy write_file allow")
    run_ok(shell, "%%agent\nchange both")
    (tmp_path / "b.txt").write_text("my own edit\n")  # the user works on b.txt meanwhile
    shell.run_line_magic("unload_ext", "jupyter_agent")  # as good as a kernel restart
    shell.run_line_magic("load_ext", "jupyter_agent")
    magics_of(shell).workspace = str(tmp_path)
    capsys.readouterr()
    run_ok(shell, "%agent undo")
    message = capsys.readouterr().out
    assert (tmp_path / "a.txt").read_text() == "a0\n"
    assert (tmp_path / "b.txt").read_text() == "my own edit\n"
    assert "b.txt" in message


# -- the settings of the other streams: thinking, limits, compaction ---------------------------


def test_think_option_and_thinking_budget_setting_turn_on_extended_thinking(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32, fault 1: the default model takes no budget; --think maps to adaptive thinking
    at an effort the cell names once — never a 400 (a model that takes budgets gets one:
    ``tests/providers/test_anthropic_contract.py``)."""
    fake = use_fake(shell, *[text(c) for c in "abcde"])
    run_ok(shell, "%%agent --think 2048\nThink first")
    assert "thinking adaptively at effort 'low' for --think 2048" in capsys.readouterr().out
    run_ok(shell, "%%agent\nNo budget now")
    run_ok(shell, "%config AgentMagics.thinking_budget = 20000")
    run_ok(shell, "%%agent\nThink by default")
    run_ok(shell, "%%agent --chat other --think 1024 --effort max\nThink less, try hard")
    run_ok(shell, "%config AgentMagics.thinking_budget = None")
    run_ok(shell, "%config AgentMagics.effort = 'medium'")
    run_ok(shell, "%%agent\nMedium")
    sent = [(r.get("thinking"), r.get("output_config")) for r in fake.requests]
    assert sent == [
        ({"type": "adaptive", "display": "summarized"}, {"effort": "low"}),
        ({"type": "adaptive", "display": "updates"}, None),
        ({"type": "adaptive", "display": "summarized"}, {"effort": "high"}),
        ({"type": "adaptive", "display": "summarized"}, {"effort": "max"}),
        ({"type": "adaptive", "display": "updates"}, {"effort": "medium"}),
    ]
    line = one_line_usage_error(shell, capsys, "%%agent --think 10\nhi")
    assert "argument --think: a thinking budget is at least 1024 tokens" in line
    line = one_line_usage_error(shell, capsys, "%%agent --effort extreme\nhi")
    assert "argument --effort: invalid choice" in line
    shell.run_cell("%config AgentMagics.thinking_budget = 5")  # refused, not kept
    assert magics_of(shell).thinking_budget is None
    shell.run_cell("%config AgentMagics.effort = 'extreme'")  # refused, not kept
    assert magics_of(shell).effort == "medium"


def test_the_progress_between_tool_calls_shows_apart_from_the_answer(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32, fault 2: current models write progress text in thinking blocks; the cell shows
    it as it streams (the package asks for a display that returns it), apart from the answer."""
    fake = use_fake(
        shell, Reply([progress("Reading the data first."), {"type": "text", "text": "It is 42."}])
    )
    run_ok(shell, "%%agent\nWhat is it?")
    out = capsys.readouterr().out
    assert "… Reading the data first." in out
    assert "It is 42." in out and "Reading the data first.It is 42." not in out
    assert fake.requests[0]["thinking"]["display"] == "updates"


def test_think_with_the_offline_model_says_it_is_ignored(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    run_ok(shell, "%%agent --provider offline --think 2048\nhello")
    assert "extended thinking is for Claude; the offline provider answers without it" in (
        capsys.readouterr().out
    )


def test_limits_reach_every_chat_and_act(
    shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i:05d}\n" for i in range(2000)))
    fake = use_fake(
        shell,
        text("hi"),
        Reply([tool_use("t1", "read_file", {"file_path": "big.txt"})]),
        text("read"),
    )
    run_ok(shell, "%%agent\nhello")
    run_ok(shell, "%config AgentMagics.max_result_chars = 1000")
    run_ok(shell, "%config AgentMagics.tool_timeout = 7.5")
    run_ok(shell, "%config AgentMagics.context_window = 50000")
    run_ok(shell, "%%agent --chat other\nread big.txt")
    for name in ("default", "other"):
        agent = magics_of(shell).session.chat(name)
        limits = (agent.max_result_chars, agent.tool_timeout, agent.context_window)
        assert limits == (1000, 7.5, 50000)
    [result] = tool_results(fake.requests[2])
    assert len(result_text(result)) <= 1100 and "line 00000" in result_text(result)
    for bad in ("max_result_chars = 10", "tool_timeout = 0", "context_window = 5"):
        shell.run_cell(f"%config AgentMagics.{bad}")
    assert (magics_of(shell).max_result_chars, magics_of(shell).tool_timeout) == (1000, 7.5)


def test_max_turns_is_an_argument_of_the_chat(shell: InteractiveShell) -> None:
    use_fake(
        shell,
        Reply([tool_use("t1", "list_variables", {})]),
        Reply([tool_use("t2", "list_variables", {})]),
    )
    run_ok(shell, "%%agent --max-turns 1 --out ans\nLook around")
    assert "Stopped after 1 model turns, the `max_turns` limit" in shell.user_ns["ans"]
    assert magics_of(shell).agent.max_turns == 20  # the default, never flipped


def test_compact_shortens_a_conversation_on_demand(
    shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "big.txt").write_text("a line of words in a long file\n" * 1500)
    use_fake(
        shell,
        # usage as the API would count it: the agent calibrates its estimates with it
        Reply(
            [tool_use("t1", "read_file", {"file_path": "big.txt"})],
            usage={"input_tokens": 900, "output_tokens": 5},
        ),
        text("It is a long file of words.", usage={"input_tokens": 12900, "output_tokens": 5}),
        text("And that is all.", usage={"input_tokens": 12950, "output_tokens": 5}),
        text("Summary: the user read big.txt, a long file of words."),
    )
    capsys.readouterr()
    run_ok(shell, "%agent compact")
    assert "Nothing to compact in chat 'default'." in capsys.readouterr().out
    run_ok(shell, "%%agent\nread big.txt")
    run_ok(shell, "%%agent\nanything else?")
    before = magics_of(shell).agent.estimate_tokens()
    capsys.readouterr()
    run_ok(shell, "%agent compact")
    out = capsys.readouterr().out
    assert out.startswith("Compacted chat 'default': about ")
    assert out.rstrip().endswith("tokens (1 tool result made stubs)."), out  # and said so
    after = magics_of(shell).agent.estimate_tokens()
    assert after < before / 2
    assert "No chat named 'x'" in one_line_usage_error(shell, capsys, "%agent compact x")
