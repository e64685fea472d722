"""create_default_registry: every built-in tool, in order, remove and run_bash off (seed 000)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from jupyter_agent.tools.base import BuiltinTool, ExecutableTool
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry

ORDER = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "mkdir",
    "move",
    "remove",
    "search_text",
    "search_files",
    "save_session_context",
    "run_bash",
    "web_fetch",
    "git_commit",
    "read_notebook",
]


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    return ToolContext(tmp_path, session_context="so far")


def test_registers_every_builtin_in_order(context: ToolContext) -> None:
    registry = create_default_registry(context)
    assert registry.get_tool_names() == ORDER
    seed_ten = {
        "read_file",
        "write_file",
        "save_session_context",
        "list_dir",
        "mkdir",
        "remove",
        "move",
        "search_text",
        "search_files",
        "run_bash",
    }
    assert seed_ten <= set(registry.get_tool_names())


def test_destructive_tools_start_disabled(context: ToolContext) -> None:
    registry = create_default_registry(context)
    assert registry.is_tool_enabled("remove") is False
    assert registry.is_tool_enabled("run_bash") is False
    for name in ORDER:
        if name not in ("remove", "run_bash"):
            assert registry.is_tool_enabled(name) is True, name
    assert [s["name"] for s in registry.get_enabled_schemas()] == [
        n for n in ORDER if n not in ("remove", "run_bash")
    ]


def test_schemas_are_valid_and_tools_share_the_context(context: ToolContext) -> None:
    registry = create_default_registry(context)
    for tool in registry.list_tools():
        assert isinstance(tool, ExecutableTool)
        assert isinstance(tool, BuiltinTool)
        assert tool.context is context
        schema = tool.get_schema()
        assert schema["name"] == tool.name
        assert schema["description"].strip()
        assert schema["input_schema"]["type"] == "object"
    assert registry.get_tool("remove").destructive is True  # type: ignore[union-attr]
    assert registry.get_tool("run_bash").destructive is True  # type: ignore[union-attr]


def test_each_call_builds_a_fresh_registry(context: ToolContext) -> None:
    first = create_default_registry(context)
    first.enable("remove")
    second = create_default_registry(context)
    assert second.is_tool_enabled("remove") is False


async def test_default_registry_runs_tools_end_to_end(context: ToolContext) -> None:
    registry = create_default_registry(context)
    assert not (
        await registry.call("write_file", {"file_path": "a.txt", "content": "hi\n"})
    ).is_error
    assert await registry.execute("read_file", {"file_path": "a.txt"}) == "hi\n"
    assert await registry.execute("search_text", {"pattern": "hi"}) == "a.txt:1: hi"
    assert "not available" in await registry.execute("remove", {"path": "a.txt"})
    assert "not available" in await registry.execute("run_bash", {"command": "ls"})
    saved = await registry.execute("save_session_context", {"reason": "test"})
    assert saved.startswith("Session context saved")
    registry.enable("remove")
    assert await registry.execute("remove", {"path": "a.txt"}) == "Removed a.txt"


@pytest.fixture
def loopback_url() -> Iterator[str]:
    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"hello from loopback"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


async def test_allow_private_network_reaches_web_fetch(
    context: ToolContext, loopback_url: str
) -> None:
    refused = await create_default_registry(context).call("web_fetch", {"url": loopback_url})
    assert refused.is_error and "hello from loopback" not in refused.content
    for setting in (True, ["127.0.0.1"]):
        registry = create_default_registry(context, allow_private_network=setting)
        result = await registry.call("web_fetch", {"url": loopback_url})
        assert not result.is_error, result.content
        assert "hello from loopback" in result.content
