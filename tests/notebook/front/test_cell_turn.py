"""``CellTurn`` (one ``%%agent`` cell's wiring) and the ``%agent_tools`` subcommands' parsers, in a
real ``InteractiveShell`` with the offline model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent.notebook.front.cell_turn import CellTurn
from jupyter_agent.notebook.front.extension import get_magics
from jupyter_agent.notebook.front.magics import AgentMagics


@pytest.fixture
def magics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentMagics]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ip = InteractiveShell.instance()
    ip.config.pop("AgentMagics", None)
    ip.run_line_magic("load_ext", "jupyter_agent")
    found = get_magics(ip)
    assert isinstance(found, AgentMagics)
    found.workspace = str(tmp_path)
    found.provider = "offline"
    yield found
    ip.run_line_magic("unload_ext", "jupyter_agent")
    ip.config.pop("AgentMagics", None)


def test_a_cell_turn_runs_in_text_and_leaves_nothing_wired(magics: AgentMagics) -> None:
    session = magics.session
    turn = CellTurn(session, magics.shell, rich=False, render_interval=0.05)
    assert turn.poller is None  # a terminal: no widgets, nothing to poll
    with capture_output() as out:
        outcome = turn.run("hello")
    assert outcome.answer and not outcome.interrupted
    assert outcome.answer.splitlines()[0] in out.stdout
    assert session.bridge.comm_waiter is None


def test_every_agent_tools_command_has_a_parser_and_a_usage_line_in_the_help() -> None:
    assert set(AgentMagics.TOOLS_COMMANDS) == {"list", "enable", "disable", "policy"}
    help_text = AgentMagics.agent_tools.__doc__ or ""
    for handler in AgentMagics.TOOLS_COMMANDS.values():
        assert handler.parser is not None  # type: ignore[attr-defined]
    assert "%agent_tools policy NAME allow|ask|deny" in help_text
    assert "%agent_tools enable NAME [NAME ...]" in help_text


def test_a_bad_agent_tools_line_is_one_usage_error_with_the_usage(magics: AgentMagics) -> None:
    with pytest.raises(UsageError) as info:
        magics.shell.run_line_magic("agent_tools", "list extra")
    assert str(info.value) == (
        "%agent_tools list: unrecognized arguments: extra; usage: %agent_tools list"
    )
