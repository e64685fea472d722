"""Fixtures of the MCP tests: an agent to add servers to, and the SDK's server over HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp_processes import SERVER

from jupyter_agent.agent.agent import Agent
from jupyter_agent.providers.offline import OfflineProvider


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    """An agent on the offline model; its MCP servers are closed at the end."""
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    yield agent

    await agent.toolbox.mcp.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_port() -> Iterator[int]:
    """The port of ``mcp_servers/sdk_server.py`` serving streamable HTTP on loopback."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        process.kill()
        process.wait(10)
