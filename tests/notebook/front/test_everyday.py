"""What a new user trips on (issue 25): which model answers, ``%agent model``, a ``--model`` the
offline model ignores, quoted option values, ``%agent?``.

Driven through a real ``InteractiveShell`` (the ``shell`` fixture of ``tests/conftest.py``); the
model is the offline demo model or the fake Messages API at the HTTP boundary.
"""

from __future__ import annotations

import pytest
from fake_anthropic import latest_instructions, text, user_texts
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import magics_of, run_ok, use_fake


def _first_config_line(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    run_ok(ip, "%agent config")
    return capsys.readouterr().out.splitlines()[0]


def test_config_says_first_which_model_will_answer(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the first cell, %agent config said "agent: not created yet" and nothing about
    which model would answer."""
    monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
    monkeypatch.delenv("JUPYTER_AGENT_MODEL", raising=False)
    line = _first_config_line(shell, capsys)
    assert line == "model: offline demo model — no ANTHROPIC_API_KEY"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    run_ok(shell, "%config AgentMagics.model = 'claude-haiku-4-5'")
    assert _first_config_line(shell, capsys) == "model: Claude (claude-haiku-4-5) — key found"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    run_ok(shell, "%config AgentMagics.provider = 'anthropic'")
    line = _first_config_line(shell, capsys)
    assert line.startswith("model: Claude (claude-haiku-4-5) — no ANTHROPIC_API_KEY")


def test_agent_model_sets_and_shows_the_model(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = use_fake(shell)
    run_ok(shell, "%agent model claude-opus-5")
    assert magics_of(shell).model == "claude-opus-5"
    out = capsys.readouterr().out
    assert "claude-opus-5" in out
    run_ok(shell, "%agent model")
    assert "claude-opus-5" in capsys.readouterr().out
    assert fake.requests == []


def test_the_offline_model_notes_a_model_it_ignores(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--model`` was silently ignored by the offline demo model."""
    monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
    run_ok(shell, "%%agent --model claude-opus-5\nhello")
    captured = capsys.readouterr()
    assert "ignores --model claude-opus-5" in captured.out + captured.err


def test_a_model_set_with_agent_model_is_not_called_a_flag_the_offline_model_ignores(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ``%agent model X`` every offline cell said it "ignores --model X", though no cell
    gave that flag; ``%agent model`` itself says the offline model answers until a key is set."""
    monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
    run_ok(shell, "%agent model claude-opus-5")
    said = capsys.readouterr().out
    assert "offline demo model" in said and "claude-opus-5 once a key is set" in said, said
    for prompt in ("hello", "and again"):
        run_ok(shell, f"%%agent\n{prompt}")
        captured = capsys.readouterr()
        assert "--model" not in captured.out + captured.err, captured.err
    run_ok(shell, "%%agent --model claude-haiku-4-5\nonce more")  # a flag given: said once
    captured = capsys.readouterr()
    assert "ignores --model claude-haiku-4-5" in captured.out + captured.err


def test_quoted_option_values_lose_their_quotes(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--chat "mine"`` made a chat named '"mine"' (refused: quotes are not allowed)."""
    fake = use_fake(shell, text("One."), text("Two."))
    run_ok(shell, '%%agent --chat "mine"\nhello')
    run_ok(shell, "%%agent --chat 'mine' --system \"Be terse.\"\nagain")
    names = [chat.name for chat in magics_of(shell).session.chats()]
    assert "mine" in names and not [name for name in names if "'" in name or '"' in name]
    assert user_texts(fake.requests[1])[-1] == "again"
    assert latest_instructions(fake.requests[1]).endswith("\n\nBe terse.")


def test_agent_help_is_plain_text_not_restructured_text(shell: InteractiveShell) -> None:
    """``%agent?`` showed the docstring's reStructuredText (````%agent reset````)."""
    doc = magics_of(shell).agent_magic.__doc__ or ""
    assert "``" not in doc
    assert "%agent reset [NAME]" in doc


def test_a_failed_model_request_is_one_line_and_not_a_usage_error(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every API failure read ``UsageError: The model request failed: …``: the user made no
    usage mistake. It is one line naming what failed, and the cell fails (a notebook run by
    nbconvert or papermill stops there)."""
    from fake_anthropic import ErrorReply
    from IPython.core.error import UsageError

    use_fake(shell, ErrorReply(401, "authentication_error", "invalid x-api-key"))
    capsys.readouterr()
    result = shell.run_cell("%%agent\nhello")
    assert result.error_in_exec is not None
    assert not isinstance(result.error_in_exec, UsageError)
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("ModelRequestError: ")
    assert "401" in lines[0] and "invalid x-api-key" in lines[0]
    assert "UsageError" not in lines[0] and "The model request failed" not in lines[0]
