"""``%agent replay on|off`` and ``AgentMagics.replay`` through a real ``InteractiveShell``."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import magics_of


def test_replay_is_on_by_default_and_switches_per_session(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    magics = magics_of(shell)
    assert magics.replay is True
    shell.run_line_magic("agent", "replay")
    assert capsys.readouterr().out.startswith("Replay is on:")
    shell.run_line_magic("agent", "replay off")
    assert magics.replay is False
    assert capsys.readouterr().out.startswith("Replay is off:")
    shell.run_line_magic("agent", "replay on")
    assert magics.replay is True


def test_replay_can_be_set_with_config(shell: InteractiveShell) -> None:
    shell.run_line_magic("config", "AgentMagics.replay = False")
    assert magics_of(shell).replay is False


def test_a_bad_word_is_one_usage_error(shell: InteractiveShell) -> None:
    with pytest.raises(UsageError, match=r"agent replay: .*invalid choice: 'maybe'"):
        shell.run_line_magic("agent", "replay maybe")
    assert magics_of(shell).replay is True
