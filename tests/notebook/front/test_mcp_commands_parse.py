"""``%agent mcp``'s subcommands parsed with ``magic_arguments``: the words after ``--`` are the
server's command line as typed; each mistake is one line naming the command and its usage."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.error import UsageError

from jupyter_agent.agent.agent import Agent
from jupyter_agent.notebook.front.mcp_commands import MCPCommands, parse_add
from jupyter_agent.providers.offline import OfflineProvider


def test_add_reads_options_before_the_double_dash_and_leaves_the_command_as_typed() -> None:
    line = "srv --env A=1 --env B=x=y --policy allow --timeout 2.5 --read-resources "
    config = parse_add([*line.split(), "--", "python", "-m", "server", "--flag", "--", "--not"])
    assert config.name == "srv" and config.policy == "allow"
    assert config.command == ("python", "-m", "server", "--flag", "--", "--not")
    assert config.env == {"A": "1", "B": "x=y"}
    assert config.timeout == 2.5 and config.read_resources


def test_add_over_http_takes_headers() -> None:
    config = parse_add(["web", "--url", "https://example.test/mcp", "--header", "X-K=v"])
    assert config.url == "https://example.test/mcp" and config.headers == {"X-K": "v"}


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["x", "--timeout", "soon", "--", "cmd"], "%agent mcp add: argument --timeout: needs "),
        (["x", "--env", "NOPE", "--", "cmd"], "%agent mcp add: --env needs KEY=VALUE"),
        (["x", "--bogus", "--", "cmd"], "%agent mcp add: unrecognized arguments: --bogus"),
    ],
)
def test_add_mistakes_are_one_line(words: list[str], expected: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_add(words)
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("words", "usage"),
    [
        (["list", "a", "b"], "%agent mcp list [NAME]"),
        (["remove"], "%agent mcp remove NAME"),
        (["logout"], "%agent mcp logout NAME"),
    ],
)
def test_every_mcp_subcommand_names_its_usage_on_a_mistake(
    tmp_path: Path, words: list[str], usage: str
) -> None:
    toolbox = Agent(OfflineProvider(), workspace=tmp_path).toolbox
    with pytest.raises(UsageError) as info:
        MCPCommands(lambda work: work).command(toolbox, words)
    said = str(info.value)
    assert said.startswith(f"%agent mcp {words[0]}: ") and "\n" not in said, said
    assert said.endswith(f"; usage: {usage}"), said
