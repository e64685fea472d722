"""The reference MCP servers published on PyPI, run as a user would: ``mcp-server-time`` and
``mcp-server-fetch`` (pinned in ``pypi_packages.py``, installed into a cached virtual environment
of their own on first use).

What is checked is what the model and the user would meet: the tools' names and schemas as the
servers declare them, real calls and their results as text (once, not also as JSON), the servers'
own error results, and a call that outlives ``tool_timeout`` or is stopped with the cell's Stop.
The fetches go to a loopback HTTP server started here; nothing reaches the internet. A stdio
server is a program of the user's: its own fetches are its business (mcp-server-fetch refuses
private addresses and obeys robots.txt unless started with ``--allow-private-ips`` and
``--ignore-robots-txt``), and our ``web_fetch`` rules (private networks, pinning) are not in its
way — nor asked to be.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from pypi_packages import SERVER_FETCH, SERVER_TIME, pypi_program

from jupyter_agent.agent.agent import Agent
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.offline import OfflineProvider

pytest.importorskip("mcp")

pytestmark = pytest.mark.slow

PAGE = (
    b"<html><head><title>Notes</title></head><body><h1>Quarterly notes</h1>"
    b"<p>Sales grew <b>12%</b> in the West.</p></body></html>"
)


class _Site(ThreadingHTTPServer):
    daemon_threads = True
    #: Set when a request for /slow arrives; /slow answers when ``release`` is set.
    slow_started: threading.Event
    release: threading.Event


class _Handler(BaseHTTPRequestHandler):
    server: _Site

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.server.slow_started.set()
            self.server.release.wait(60)
        if self.path == "/robots.txt":
            self._send(200, "text/plain", b"User-agent: *\nDisallow: /private\n")
        elif self.path in ("/page", "/private", "/slow"):
            self._send(200, "text/html", PAGE)
        else:
            self._send(404, "text/plain", b"not here")

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the fetch was abandoned (timeout, Stop)
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[_Site, str]]:
    server = _Site(("127.0.0.1", 0), _Handler)
    server.slow_started = threading.Event()
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    yield agent
    await agent.toolbox.mcp.aclose()


def time_server() -> list[str]:
    return [str(pypi_program(SERVER_TIME)), "--local-timezone", "UTC"]


def fetch_server(*flags: str) -> list[str]:
    return [str(pypi_program(SERVER_FETCH)), *flags]


def schema_of(agent: Agent, name: str) -> dict[str, Any]:
    [schema] = [t["input_schema"] for t in agent.get_tools() if t["name"] == name]
    return schema


# -- mcp-server-time ---------------------------------------------------------------------------


async def test_time_servers_tools_have_its_names_and_schemas(agent: Agent) -> None:
    names = await agent.add_mcp_server("time", command=time_server())
    assert names == ["time__get_current_time", "time__convert_time"]
    assert all(agent.get_policy(name) == "ask" for name in names)
    current = schema_of(agent, "time__get_current_time")
    assert current["required"] == ["timezone"]
    assert current["properties"]["timezone"]["type"] == "string"
    convert = schema_of(agent, "time__convert_time")
    assert convert["required"] == ["source_timezone", "time", "target_timezone"]
    assert "HH:MM" in convert["properties"]["time"]["description"]


async def test_time_servers_answers_are_right(agent: Agent) -> None:
    await agent.add_mcp_server("time", command=time_server())
    now = await agent.registry.call("time__get_current_time", {"timezone": "Europe/Paris"})
    assert not now.is_error, now.content
    reported = json.loads(now.content)
    assert reported["timezone"] == "Europe/Paris"
    moment = datetime.fromisoformat(reported["datetime"])
    assert abs(moment - datetime.now(ZoneInfo("UTC"))) < timedelta(minutes=2)
    assert moment.utcoffset() == moment.astimezone(ZoneInfo("Europe/Paris")).utcoffset()

    arguments = {
        "source_timezone": "America/New_York",
        "time": "14:30",
        "target_timezone": "Asia/Tokyo",
    }
    converted = await agent.registry.call("time__convert_time", arguments)
    assert not converted.is_error, converted.content
    answer = json.loads(converted.content)
    source = datetime.fromisoformat(answer["source"]["datetime"])
    assert (source.hour, source.minute) == (14, 30)
    target = datetime.fromisoformat(answer["target"]["datetime"])
    assert target == source  # the same instant, in Tokyo's offset
    assert target.utcoffset() == source.astimezone(ZoneInfo("Asia/Tokyo")).utcoffset()


async def test_time_servers_result_reaches_the_model_once_as_text(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "time__get_current_time", {"timezone": "Asia/Tokyo"})]),
        text("done"),
    )
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    try:
        await agent.add_mcp_server("time", command=time_server(), policy="allow")
        assert await agent.chat("what time is it in Tokyo?") == "done"
    finally:
        await agent.toolbox.mcp.aclose()
    [result] = tool_results(fake.requests[1])
    assert not result.get("is_error")
    blocks = result["content"]
    blocks = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else blocks
    assert [b["type"] for b in blocks] == ["text"], blocks
    assert json.loads(blocks[0]["text"])["timezone"] == "Asia/Tokyo"
    assert result_text(result).count('"timezone"') == 1  # the structured copy is not added


async def test_time_servers_errors_are_error_results_naming_it(agent: Agent) -> None:
    await agent.add_mcp_server("time", command=time_server())
    bad_zone = await agent.registry.call("time__get_current_time", {"timezone": "Mars/Olympus"})
    assert bad_zone.is_error and "'time'" in bad_zone.content
    assert "Invalid timezone" in bad_zone.content and "Mars/Olympus" in bad_zone.content
    bad_time = await agent.registry.call(
        "time__convert_time",
        {"source_timezone": "UTC", "time": "25:99", "target_timezone": "UTC"},
    )
    assert bad_time.is_error and "Invalid time format" in bad_time.content
    missing = await agent.registry.call("time__convert_time", {"time": "10:00"})
    assert missing.is_error and "invalid arguments for time__convert_time" in missing.content
    still = await agent.registry.call("time__get_current_time", {"timezone": "UTC"})
    assert not still.is_error and json.loads(still.content)["timezone"] == "UTC"


async def test_the_server_list_counts_their_tools_in_words(agent: Agent) -> None:
    await agent.add_mcp_server("time", command=time_server())
    await agent.add_mcp_server("fetch", command=fetch_server())
    listing = agent.toolbox.mcp.describe().splitlines()
    assert "running" in listing[0] and "  2 tools  stdio: " in listing[0], listing
    assert "running" in listing[1] and "  1 tool   stdio: " in listing[1], listing


# -- mcp-server-fetch --------------------------------------------------------------------------


async def test_fetch_servers_tool_has_its_name_and_schema(agent: Agent) -> None:
    names = await agent.add_mcp_server("fetch", command=fetch_server())
    assert names == ["fetch__fetch"]
    schema = schema_of(agent, "fetch__fetch")
    assert schema["required"] == ["url"]
    assert set(schema["properties"]) == {"url", "max_length", "start_index", "raw"}
    assert schema["properties"]["max_length"]["default"] == 5000


async def test_fetch_servers_own_rules_decide_what_it_fetches(
    agent: Agent, site: tuple[_Site, str]
) -> None:
    _, url = site
    # our web_fetch's private-network setting is off; the server's own fetches are its business
    await agent.add_mcp_server("strict", command=fetch_server())
    refused = await agent.registry.call("strict__fetch", {"url": f"{url}/page"})
    assert refused.is_error and "'strict'" in refused.content
    assert "not a public address" in refused.content and "--allow-private-ips" in refused.content

    await agent.add_mcp_server("polite", command=fetch_server("--allow-private-ips"))
    page = await agent.registry.call("polite__fetch", {"url": f"{url}/page"})
    assert not page.is_error, page.content
    disallowed = await agent.registry.call("polite__fetch", {"url": f"{url}/private"})
    assert disallowed.is_error and "robots.txt" in disallowed.content

    flags = ("--allow-private-ips", "--ignore-robots-txt")
    await agent.add_mcp_server("open", command=fetch_server(*flags))
    private = await agent.registry.call("open__fetch", {"url": f"{url}/private"})
    assert not private.is_error, private.content
    assert "## Quarterly notes" in private.content and "Sales grew **12%**" in private.content


async def test_fetch_servers_results_and_errors(agent: Agent, site: tuple[_Site, str]) -> None:
    _, url = site
    flags = ("--allow-private-ips", "--ignore-robots-txt")
    await agent.add_mcp_server("fetch", command=fetch_server(*flags))
    call = agent.registry.call
    page = await call("fetch__fetch", {"url": f"{url}/page"})
    markdown = "## Quarterly notes\n\nSales grew **12%** in the West."
    assert page.content == f"Contents of {url}/page:\n{markdown}"
    cut = await call("fetch__fetch", {"url": f"{url}/page", "max_length": 10})
    assert not cut.is_error and "start_index of 10" in cut.content
    raw = await call("fetch__fetch", {"url": f"{url}/page", "raw": True})
    assert not raw.is_error and "<h1>Quarterly notes</h1>" in raw.content
    missing = await call("fetch__fetch", {"url": f"{url}/nothing"})
    assert missing.is_error and "status code 404" in missing.content
    nonsense = await call("fetch__fetch", {"url": "not a url"})
    assert nonsense.is_error and "'fetch'" in nonsense.content
    out_of_range = await call("fetch__fetch", {"url": f"{url}/page", "max_length": 0})
    assert out_of_range.is_error and "invalid arguments for fetch__fetch" in out_of_range.content


async def test_a_fetch_that_outlives_the_tool_timeout_is_an_error_and_the_server_goes_on(
    agent: Agent, site: tuple[_Site, str]
) -> None:
    server, url = site
    await agent.add_mcp_server(
        "fetch", command=fetch_server("--allow-private-ips", "--ignore-robots-txt")
    )
    warm = await agent.registry.call("fetch__fetch", {"url": f"{url}/page"})  # imports done
    assert not warm.is_error, warm.content
    agent.tool_timeout = 2
    # the page takes 60 s: an error result saying the deadline is what ended the call sooner
    slow = await agent.registry.call("fetch__fetch", {"url": f"{url}/slow"})
    assert server.slow_started.is_set()
    assert slow.is_error and "'fetch' did not answer fetch within 2 s" in slow.content
    agent.tool_timeout = 60  # a page can take the server seconds on a busy machine
    page = await agent.registry.call("fetch__fetch", {"url": f"{url}/page"})
    assert not page.is_error and "Quarterly notes" in page.content


def test_stop_during_a_fetch_ends_the_turn_and_the_server_goes_on(
    tmp_path: Path, site: tuple[_Site, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings

    server, url = site
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    command = fetch_server("--allow-private-ips", "--ignore-robots-txt")
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "fetch__fetch", {"url": f"{url}/slow"})]), text("unused")
    )
    session = NotebookSession(SessionSettings(workspace=str(tmp_path)), namespace={})
    try:
        session.use_provider(AnthropicProvider(client=fake.client()))
        mcp = session.toolbox.mcp
        session.bridge.background.run(mcp.add_server("fetch", command=command, policy="allow"))

        def press_stop() -> None:
            if server.slow_started.wait(30):
                time.sleep(0.2)
                session.bridge.request_stop()

        presser = threading.Thread(target=press_stop, daemon=True)
        presser.start()
        outcome = session.run("read the slow page")
        presser.join(5)
        assert server.slow_started.is_set()
        # the page would have taken 60 s and the turn then asked the model again: Stop ended it
        assert outcome.interrupted, outcome
        assert len(fake.requests) == 1  # nothing more was asked of the model
        page = session.bridge.background.run(
            session.registry.call("fetch__fetch", {"url": f"{url}/page"})
        )
        assert not page.is_error and "Quarterly notes" in page.content
    finally:
        session.close()
