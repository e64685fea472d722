"""An MCP server is the user's choice: local URLs work, pinned to the checked address, and its
start is bounded by ``tool_timeout``.

Real servers: ``tests/mcp_servers/sdk_server.py`` over streamable HTTP on loopback, and
``hostile_server.py garbage`` (prints non-JSON-RPC lines on stdout) over stdio. DNS is faked at
its boundary (``socket.getaddrinfo``) to play a rebinding answer.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agent.agent import Agent
from jupyter_agent.errors import MCPServerError
from jupyter_agent.tools.factory import create_default_registry

pytest.importorskip("mcp")

HERE = Path(__file__).parents[1] / "mcp_servers"


@pytest.fixture
def agent(agent: Agent) -> Agent:
    """The shared agent with the default registry (web_fetch: public hosts only)."""
    agent.registry = create_default_registry(agent.context)
    return agent


async def test_a_loopback_server_the_user_added_works_and_web_fetch_stays_closed(
    agent: Agent, http_port: int
) -> None:
    url = f"http://127.0.0.1:{http_port}/mcp"
    names = await agent.add_mcp_server("local", url=url)
    assert "local__echo" in names
    assert (await agent.registry.call("local__echo", {"text": "hi"})).content == "hi"
    fetched = await agent.registry.call("web_fetch", {"url": url})
    assert fetched.is_error and "loopback" in fetched.content


async def test_the_session_stays_on_the_address_that_was_checked(
    agent: Agent, http_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'localhost' first resolves to the server, then (rebinding) to an address nobody serves.

    (The SDK's server accepts only a local name in ``Host``, so the name played is localhost.)
    """
    real = socket.getaddrinfo
    answers: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("localhost", b"localhost"):  # anyio passes the name IDNA-encoded
            return real(host, port, *args, **kwargs)
        answers.append("127.0.0.1" if not answers else "127.0.0.2")
        return real(answers[-1], port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    names = await agent.add_mcp_server("rebind", url=f"http://localhost:{http_port}/mcp")
    assert "rebind__echo" in names
    for word in ("one", "two", "three"):
        result = await agent.registry.call("rebind__echo", {"text": word})
        assert (result.content, result.is_error) == (word, False)
    assert answers == ["127.0.0.1"]  # resolved once, when the server was added


@pytest.mark.timeout(120)
async def test_starting_a_server_is_bounded_by_tool_timeout(agent: Agent) -> None:
    agent.tool_timeout = 2
    with pytest.raises(MCPServerError) as info:
        await agent.add_mcp_server(
            "garbage", command=[sys.executable, str(HERE / "hostile_server.py"), "garbage"]
        )
    message = str(info.value)
    assert "'garbage' failed to start" in message and "TimeoutError" in message
    assert "\n" not in message
