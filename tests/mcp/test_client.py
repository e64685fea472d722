"""MCP servers through the agent: real servers (the SDK's own ``MCPServer``) in subprocesses.

Each test starts ``tests/mcp_servers/sdk_server.py`` (stdio, or streamable HTTP on loopback) and
goes through ``agent.add_mcp_server`` and the registry, the way the model's calls go.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from mcp_processes import SERVER, processes_with, server_command

from jupyter_agent import Image
from jupyter_agent.agent.agent import Agent
from jupyter_agent.errors import MCPConfigError, MCPServerError
from jupyter_agent.mcp import parse_servers
from jupyter_agent.mcp.config import registry_name
from jupyter_agent.providers.offline import OfflineProvider

pytest.importorskip("mcp")


@pytest.fixture
async def stdio_agent(agent: Agent) -> Agent:
    await agent.add_mcp_server("test", command=server_command())
    return agent


async def test_tools_join_the_registry_with_the_server_schema_and_policy_ask(
    stdio_agent: Agent,
) -> None:
    names = stdio_agent.registry.get_tool_names()
    assert "test__echo" in names and "test__add" in names
    schema = next(s for s in stdio_agent.get_tools() if s["name"] == "test__add")
    assert schema["input_schema"]["properties"]["a"]["type"] == "integer"
    assert "Add two integers" in schema["description"]
    assert stdio_agent.get_policy("test__echo") == "ask"
    assert stdio_agent.registry.is_tool_enabled("test__echo")


async def test_text_structured_image_and_error_results(stdio_agent: Agent) -> None:
    registry = stdio_agent.registry
    echo = await registry.call("test__echo", {"text": "hello"})
    assert (echo.content, echo.is_error) == ("hello", False)
    added = await registry.call("test__add", {"a": 2, "b": 3})
    assert not added.is_error and '"sum": 5' in added.content
    picture = await registry.call("test__picture", {})
    assert picture.content == "a red dot"
    assert len(picture.images) == 1 and isinstance(picture.images[0], Image)
    assert picture.images[0].media_type == "image/png"
    assert picture.images[0].data.startswith(b"\x89PNG")
    failed = await registry.call("test__fail", {"reason": "disk full"})
    assert failed.is_error and "failed: disk full" in failed.content and "'test'" in failed.content


async def test_arguments_are_validated_against_the_server_schema(stdio_agent: Agent) -> None:
    result = await stdio_agent.registry.call("test__add", {"a": "two"})
    assert result.is_error
    assert result.content.startswith("Error: invalid arguments for test__add")
    assert "'b' is a required property" in result.content


async def test_resource_links_are_shown_unless_reading_is_allowed(agent: Agent) -> None:
    await agent.add_mcp_server("shown", command=server_command())
    shown = await agent.registry.call("shown__link", {})
    assert "resource link: notes <file:///notes.txt>" in shown.content
    assert "the notes say hello" not in shown.content
    await agent.add_mcp_server("read", command=server_command(), read_resources=True)
    read = await agent.registry.call("read__link", {})
    assert "the notes say hello" in read.content


def test_tool_names_fit_the_api_rule_or_fail_naming_the_tool() -> None:
    assert registry_name("docs", "search.files") == "docs__search_files"
    with pytest.raises(MCPConfigError, match="'" + "x" * 70 + "'"):
        registry_name("docs", "x" * 70)


def test_mcp_servers_entries_parse_in_the_shared_shape() -> None:
    configs = parse_servers(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}},
                "docs": {"url": "http://localhost:8000/mcp", "policy": "allow"},
            }
        }
    )
    assert configs[0].command == ("npx", "-y", "srv") and configs[0].env == {"A": "1"}
    assert configs[0].policy == "ask"
    assert configs[1].url == "http://localhost:8000/mcp" and configs[1].policy == "allow"
    with pytest.raises(MCPConfigError, match=r"'bad'.*policy"):
        parse_servers({"bad": {"command": "x", "policy": "maybe"}})
    with pytest.raises(MCPConfigError, match="either a command"):
        parse_servers({"none": {}})


async def test_policy_from_the_entry_applies_to_all_its_tools(agent: Agent) -> None:
    await agent.add_mcp_server("trusted", command=server_command(), policy="allow")
    assert agent.get_policy("trusted__echo") == "allow"
    assert agent.get_policy("trusted__die") == "allow"


async def test_a_server_that_fails_to_start_gives_one_line_naming_command_and_stderr(
    agent: Agent,
) -> None:
    command = server_command("--bad-start")
    with pytest.raises(MCPServerError) as info:
        await agent.add_mcp_server("broken", command=command)
    message = str(info.value)
    assert "\n" not in message
    assert "'broken'" in message and SERVER in message
    assert "missing configuration FOO" in message
    assert not any(name.startswith("broken__") for name in agent.registry.get_tool_names())


async def test_a_program_that_is_not_an_mcp_server_fails_within_the_timeout(agent: Agent) -> None:
    # an hour's sleep: the start ends (within the test's timeout) only at its own deadline
    garbage = "print('hello, I am not an MCP server', flush=True); import time; time.sleep(3600)"
    with pytest.raises(MCPServerError) as info:
        await agent.add_mcp_server("garbage", command=[sys.executable, "-c", garbage], timeout=2)
    message = str(info.value)
    assert "\n" not in message and "'garbage' failed to start" in message
    assert "TimeoutError" in message


async def test_a_missing_command_is_a_clear_error(agent: Agent) -> None:
    with pytest.raises(MCPServerError, match=r"failed to start.*no-such-mcp-server"):
        await agent.add_mcp_server("gone", command=["no-such-mcp-server-xyz"])


async def test_a_server_that_dies_gives_an_error_naming_it_and_restarts_next_call(
    stdio_agent: Agent,
) -> None:
    registry = stdio_agent.registry
    first_pid = (await registry.call("test__pid", {})).content
    died = await registry.call("test__die", {})
    assert died.is_error and "'test'" in died.content and "restarted" in died.content
    assert "dying now" in died.content  # its last stderr line
    again = await registry.call("test__echo", {"text": "back"})
    assert (again.content, again.is_error) == ("back", False)
    second_pid = (await registry.call("test__pid", {})).content
    assert second_pid != first_pid
    assert not processes_with_pid(int(first_pid))


def processes_with_pid(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


async def test_a_hang_ends_at_the_timeout_and_the_server_still_answers(agent: Agent) -> None:
    await agent.add_mcp_server("slow", command=server_command(), timeout=1.0)
    result = await agent.registry.call("slow__hang", {})  # never answered: only the timeout
    assert result.is_error and "'slow' did not answer hang within 1 s" in result.content
    echo = await agent.registry.call("slow__echo", {"text": "still here"})
    assert echo.content == "still here"


async def test_the_agents_tool_timeout_caps_the_call(agent: Agent) -> None:
    await agent.add_mcp_server("capped", command=server_command())
    # set after the start, which tool_timeout bounds too (tests/mcp/test_local_servers.py)
    agent.tool_timeout = 0.5  # type: ignore[attr-defined]  # Agent(tool_timeout=...) on main
    result = await agent.registry.call("capped__hang", {})
    assert result.is_error and "within 0.5 s" in result.content


async def test_stderr_is_kept_bounded_not_printed(
    stdio_agent: Agent, capfd: pytest.CaptureFixture[str]
) -> None:

    result = await stdio_agent.registry.call("test__noisy", {"lines": 5000})
    assert result.content == "done"
    connection = stdio_agent.toolbox.mcp.servers["test"]
    assert connection.stderr is not None
    await asyncio.sleep(0.2)
    text = connection.stderr.text()
    assert "noise line 4999" in text
    assert len(connection.stderr.lines) <= 200
    out, err = capfd.readouterr()
    assert "noise line" not in out + err
    listing = stdio_agent.toolbox.mcp.describe("test")
    assert "noise line 4999" in listing and "A test server" in listing


async def test_the_server_gets_a_scrubbed_environment_plus_named_variables(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-should-not-leak")
    monkeypatch.setenv("SOME_TOKEN", "also-secret")
    await agent.add_mcp_server("env", command=server_command(), env={"DB_NAME": "sales"})
    registry = agent.registry
    assert (await registry.call("env__getenv", {"name": "ANTHROPIC_API_KEY"})).content == "<unset>"
    assert (await registry.call("env__getenv", {"name": "SOME_TOKEN"})).content == "<unset>"
    assert (await registry.call("env__getenv", {"name": "DB_NAME"})).content == "sales"


async def test_remove_unregisters_the_tools_and_leaves_no_process(agent: Agent) -> None:
    marker = uuid.uuid4().hex
    await agent.add_mcp_server("gone", command=server_command(marker=marker))
    assert processes_with(marker)
    await agent.remove_mcp_server("gone")
    assert not any(name.startswith("gone__") for name in agent.registry.get_tool_names())
    assert not processes_with(marker)
    with pytest.raises(MCPServerError, match="No MCP server named 'gone'"):
        await agent.remove_mcp_server("gone")


async def test_remove_while_a_call_hangs_leaves_no_process(agent: Agent) -> None:
    marker = uuid.uuid4().hex
    await agent.add_mcp_server("stuck", command=server_command(marker=marker))
    call = asyncio.create_task(agent.registry.call("stuck__hang", {}))
    await asyncio.sleep(0.5)
    await agent.remove_mcp_server("stuck")
    result = await asyncio.wait_for(call, 10)
    assert result.is_error
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert not processes_with(marker)


async def test_duplicate_server_names_are_refused(stdio_agent: Agent) -> None:
    with pytest.raises(MCPServerError, match="already added"):
        await stdio_agent.add_mcp_server("test", command=server_command())


async def test_mcp_tools_run_through_the_agent_loop_under_their_policy(tmp_path: Path) -> None:
    """The model's calls go through the gate like any tool's: allow runs, deny refuses."""
    from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use

    from jupyter_agent.providers.anthropic import AnthropicProvider

    fake = FakeAnthropic(
        Reply(
            [
                tool_use("toolu_1", "srv__echo", {"text": "through the loop"}),
                tool_use("toolu_2", "srv__add", {"a": 1, "b": 2}),
            ]
        ),
        text("done"),
    )
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    try:
        await agent.add_mcp_server("srv", command=server_command(), policy="allow")
        agent.set_policy("srv__add", "deny")
        assert await agent.chat("use the tools") == "done"
        offered = [tool["name"] for tool in fake.requests[0]["tools"]]
        assert "srv__echo" in offered and "srv__add" in offered
        results = {r["tool_use_id"]: r for r in tool_results(fake.requests[1])}
        assert result_text(results["toolu_1"]) == "through the loop"
        assert results["toolu_2"].get("is_error") and "deny" in result_text(results["toolu_2"])
    finally:
        await agent.toolbox.mcp.aclose()


# -- streamable HTTP ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_server(http_port: int) -> str:
    return f"http://127.0.0.1:{http_port}/mcp"


async def test_http_server_on_loopback_is_the_users_choice(agent: Agent, http_server: str) -> None:
    # SPEC "The server is the user's choice": no allow_private_network needed (web_fetch stays
    # closed: tests/mcp/test_local_servers.py)
    names = await agent.add_mcp_server("web", url=http_server)
    assert "web__echo" in names
    result = await agent.registry.call("web__add", {"a": 20, "b": 22})
    assert '"sum": 42' in result.content
    picture = await agent.registry.call("web__picture", {})
    assert picture.images and picture.images[0].media_type == "image/png"


async def test_http_server_is_the_users_choice_with_web_fetch_open_too(
    tmp_path: Path, http_server: str
) -> None:
    """The other half of the user's choice: opening ``web_fetch`` to private networks changes
    nothing for a server the user added."""
    from jupyter_agent.tools.factory import create_default_registry

    agent = Agent(OfflineProvider(), workspace=tmp_path)
    agent.registry = create_default_registry(agent.context, allow_private_network=True)
    try:
        await agent.add_mcp_server("web", url=http_server, headers={"X-Test": "1"})
        assert (await agent.registry.call("web__echo", {"text": "hi"})).content == "hi"
    finally:
        await agent.toolbox.mcp.aclose()


def test_no_server_outlives_the_interpreter(tmp_path: Path) -> None:
    """A script that never removes its server: the server ends with the interpreter.

    ``daemon``: the agent's loop lives in a daemon thread (as in the notebook) and is never
    closed, so only the exit hook can stop the server.
    """
    marker = uuid.uuid4().hex
    script = tmp_path / "script.py"
    script.write_text(
        "import asyncio, os, sys\n"
        "from jupyter_agent.agent.agent import Agent\n"
        "from jupyter_agent.providers.offline import OfflineProvider\n"
        "from jupyter_agent.notebook.runtime.bridge import BackgroundLoop\n"
        "async def main():\n"
        "    agent = Agent(OfflineProvider(), workspace='.')\n"
        f"    await agent.add_mcp_server('s', command={server_command(marker=marker)!r})\n"
        "    print('added', flush=True)\n"
        "    if 'daemon' in sys.argv:  # a call the server is stuck in when the kernel exits\n"
        "        asyncio.ensure_future(agent.registry.call('s__hang', {}))\n"
        "        await asyncio.sleep(0.5)\n"
        "if 'daemon' in sys.argv:\n"
        "    BackgroundLoop().run(main())  # the loop thread dies with the interpreter\n"
        "else:\n"
        "    asyncio.run(main())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    for mode in ("asyncio-run", "daemon"):
        done = subprocess.run(
            [sys.executable, str(script), mode], env=env, capture_output=True, text=True, timeout=60
        )
        assert "added" in done.stdout, done.stderr
        deadline = time.monotonic() + 10
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not processes_with(marker)


def test_a_call_from_another_event_loop_is_handed_to_the_sessions_loop(tmp_path: Path) -> None:
    """In a notebook the server lives on the session's loop; a cell may await a tool on its own."""
    from jupyter_agent.notebook.runtime.bridge import BackgroundLoop

    background = BackgroundLoop()
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    try:
        background.run(agent.add_mcp_server("loop", command=server_command()), timeout=60)
        result = asyncio.run(agent.registry.call("loop__echo", {"text": "across loops"}))
        assert (result.content, result.is_error) == ("across loops", False)
    finally:
        background.run(agent.toolbox.mcp.aclose(), timeout=60)
        background.close()
