"""A server's tool schemas cannot make the client fetch, freeze the loop, or swamp the requests.

A real MCP server (``tests/mcp_servers/hostile_server.py``, the SDK's low-level ``Server`` over
stdio) offers schemas with a ``$ref`` to a loopback "attacker" URL and to a local file, patterns
that backtrack catastrophically, and more tools or schema bytes than any request should carry.
Calls go through ``agent.add_mcp_server`` and the registry, as the model's calls do.
"""

from __future__ import annotations

import asyncio
import http.server
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from loop_watch import LoopWatch

from jupyter_agent.agent.agent import Agent
from jupyter_agent.errors import MCPConfigError, MCPServerError
from jupyter_agent.mcp.schema import MAX_TOOLS_PER_SERVER

pytest.importorskip("mcp")

SERVER = str(Path(__file__).parents[1] / "mcp_servers" / "hostile_server.py")


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch) -> LoopWatch:
    """The loop's heartbeat and every pattern match (``regex``, the bounded engine) in order."""
    regex = pytest.importorskip("regex")
    watch = LoopWatch()
    monkeypatch.setattr(regex, "search", watch.wrap(regex.search))
    return watch


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Counting.hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[str]:
    """A loopback HTTP server that records every request it gets."""
    _Counting.hits = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/schema.json"
    finally:
        httpd.shutdown()
        httpd.server_close()


async def add_hostile(agent: Agent, *args: str, name: str = "hostile") -> list[str]:
    return await agent.add_mcp_server(name, command=[sys.executable, SERVER, *args])


async def test_a_remote_ref_is_never_fetched(agent: Agent, attacker: str) -> None:
    await add_hostile(agent, "schemas", attacker)
    result = await agent.registry.call("hostile__remote_ref", {"x": "anything"})
    assert _Counting.hits == []
    assert result.is_error and "never fetched" in result.content
    assert result.content.startswith("Error: invalid arguments for hostile__remote_ref")


async def test_a_file_ref_is_never_read(agent: Agent, tmp_path: Path) -> None:
    planted = tmp_path / "planted.json"
    planted.write_text('{"type": "integer"}')
    await add_hostile(agent, "schemas", planted.as_uri())
    result = await agent.registry.call("hostile__remote_ref", {"x": "anything"})
    assert result.is_error and "never fetched" in result.content
    assert "is not of type 'integer'" not in result.content


async def test_a_ref_to_dev_zero_is_an_error_at_once(agent: Agent) -> None:
    await add_hostile(agent, "schemas")
    # fetching /dev/zero would never end: 30 s only stops a hung test
    result = await asyncio.wait_for(agent.registry.call("hostile__dev_zero_ref", {"x": 1}), 30)
    assert result.is_error and "never fetched" in result.content


async def test_a_local_ref_still_checks_the_arguments(agent: Agent) -> None:
    await add_hostile(agent, "schemas")
    good = await agent.registry.call("hostile__local_ref", {"w": "abc"})
    assert (good.content, good.is_error) == ("called local_ref", False)
    bad = await agent.registry.call("hostile__local_ref", {"w": "ABC"})
    assert bad.is_error and "does not match '^[a-z]+$'" in bad.content
    missing = await agent.registry.call("hostile__local_ref", {})
    assert missing.is_error and "'w' is a required property" in missing.content


@pytest.mark.timeout(120)
async def test_a_backtracking_pattern_does_not_freeze_the_loop(
    agent: Agent, watch: LoopWatch
) -> None:
    """``re`` needs ~10 s for this one on this machine, holding the GIL all along."""
    await add_hostile(agent, "schemas")
    async with watch:
        result = await agent.registry.call("hostile__redos", {"s": "a" * 28 + "!"})
    assert result.is_error and "does not match" in result.content
    # ``regex`` matches this one at once (``re`` backtracks): no tick need fall inside
    watch.assert_the_loop_stayed_free(overlapped=False)


@pytest.mark.timeout(60)
async def test_a_pattern_that_never_ends_is_cut_at_the_calls_deadline(
    agent: Agent, watch: LoopWatch
) -> None:
    await add_hostile(agent, "schemas")
    agent.tool_timeout = 2  # after the start, which tool_timeout bounds too
    # the patterns never end: only the deadline ends the calls (the test's 60 s timeout, a hang)
    async with watch:
        value = await agent.registry.call("hostile__redos_forever", {"s": "a" * 5000 + "!"})
        key = await agent.registry.call("hostile__redos_keys", {"a" * 5000 + "!": "v"})
    watch.assert_the_loop_stayed_free()
    for result in (value, key):
        assert result.is_error and "took longer than" in result.content, result.content
    fine = await agent.registry.call("hostile__redos_forever", {"s": "aaa"})
    assert (fine.content, fine.is_error) == ("called redos_forever", False)


async def test_too_many_tools_are_refused_naming_the_cap(agent: Agent) -> None:
    with pytest.raises(MCPServerError, match=f"more than {MAX_TOOLS_PER_SERVER} tools"):
        await add_hostile(agent, "many-tools", "20000", name="many")
    assert not any(name.startswith("many__") for name in agent.registry.get_tool_names())
    names = await add_hostile(agent, "many-tools", "150", name="paged")
    assert len(names) == 150  # two pages of tools/list


async def test_megabytes_of_schemas_are_refused_naming_the_cap(agent: Agent) -> None:
    with pytest.raises(MCPServerError, match=r"more than 512 KB of schemas"):
        await add_hostile(agent, "big-schemas", name="big")
    assert not any(name.startswith("big__") for name in agent.registry.get_tool_names())


@pytest.mark.timeout(60)
async def test_a_draft3_type_cannot_smuggle_a_pattern_onto_the_loop(
    agent: Agent, watch: LoopWatch
) -> None:
    """Draft 3 lets ``type`` be a list of schemas; one holding a ``pattern`` was checked on the
    loop with no time limit (5.5 s for 25 characters, doubling with each one more)."""
    await add_hostile(agent, "schemas")
    agent.tool_timeout = 2
    async with watch:
        result = await agent.registry.call("hostile__draft3_type", {"q": "a" * 25 + "!"})
    watch.assert_the_loop_stayed_free()
    assert result.is_error and result.content.startswith(
        "Error: invalid arguments for hostile__draft3_type"
    ), result.content


async def test_a_nested_dialect_is_refused_when_the_server_is_added(agent: Agent) -> None:
    """A ``$schema`` inside a schema made ``jsonschema`` check that part with the dialect's stock
    class, without the bounds: its pattern ran under ``re``, past any deadline."""
    with pytest.raises(MCPConfigError, match="nested \\$schema"):
        await add_hostile(agent, "nested-dialect")
    assert not agent.registry.has_tool("hostile__nested_dialect")


@pytest.mark.timeout(60)
async def test_an_output_schema_pattern_does_not_freeze_the_loop(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK checked a result's structured content against the tool's ``outputSchema`` with
    ``re`` on the loop (2.8 s for this one, and the server was then marked down): the pattern is
    never matched now, by either engine, so nothing of it can hold the loop."""
    regex = pytest.importorskip("regex")
    matched: list[str] = []
    for module in (re, regex):
        search = module.search

        def recording(pattern: Any, *args: Any, _search: Any = search, **kwargs: Any) -> Any:
            matched.append(str(getattr(pattern, "pattern", pattern)))
            if matched[-1] == "^(a|a)*$":  # fail now, not after the minutes it would hold
                raise AssertionError("the output schema's pattern was matched")
            return _search(pattern, *args, **kwargs)

        monkeypatch.setattr(module, "search", recording)
    await add_hostile(agent, "schemas")
    result = await agent.registry.call("hostile__redos_output", {})
    assert "^(a|a)*$" not in matched
    assert not result.is_error, result.content
    assert "called redos_output" in result.content
