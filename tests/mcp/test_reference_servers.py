"""Results as the model should see them, from the official reference MCP servers.

``@modelcontextprotocol/server-everything`` and ``server-filesystem`` are installed pinned with
npm into a cache folder on first use (``npm_packages.py``), as the browser tests use Chromium; the
tests skip, saying why, only when npm or node is missing or the install fails (on CI they fail).
The model is ``FakeAnthropic`` (the real SDK over a mock transport), so what is asserted is the
request the model would receive.
"""

from __future__ import annotations

import base64
import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from npm_packages import SERVER_EVERYTHING, SERVER_FILESYSTEM, npm_package, unavailable

from jupyter_agent.agent.agent import Agent

pytest.importorskip("mcp")


def server(spec: str, *args: str) -> list[str]:
    """The command that runs the pinned reference server ``spec`` with ``args``."""
    node = shutil.which("node")
    if node is None:
        unavailable("node is not installed")
    return [str(node), str(npm_package(spec) / "dist" / "index.js"), *args]


async def run_one_call(tmp_path: Path, command: list[str], tool: str, args: dict[str, Any]) -> Any:
    """One model turn that calls ``tool``; the tool_result block the model then receives."""
    from fake_anthropic import FakeAnthropic, Reply, text, tool_results, tool_use

    from jupyter_agent.providers.anthropic import AnthropicProvider

    fake = FakeAnthropic(Reply([tool_use("toolu_1", tool, args)]), text("done"))
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    try:
        await agent.add_mcp_server("ref", command=command, policy="allow")
        assert await agent.chat("call it") == "done"
    finally:
        await agent.toolbox.mcp.aclose()
    (result,) = tool_results(fake.requests[1])
    return result


def blocks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    content = result["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def all_text(result: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in blocks_of(result) if b["type"] == "text")


def png_size(block: dict[str, Any]) -> tuple[int, int]:
    from PIL import Image as PillowImage

    data = base64.b64decode(block["source"]["data"])
    with PillowImage.open(io.BytesIO(data)) as picture:
        picture.load()
        return picture.size


async def test_everythings_logo_with_a_damaged_optional_chunk_reaches_the_model(
    tmp_path: Path,
) -> None:
    """The logo's iCCP chunk has a wrong CRC: the picture must survive it."""
    result = await run_one_call(
        tmp_path, server(SERVER_EVERYTHING, "stdio"), "ref__get-tiny-image", {}
    )
    assert "could not be read" not in all_text(result)
    images = [block for block in blocks_of(result) if block["type"] == "image"]
    assert len(images) == 1
    assert png_size(images[0]) == (20, 20)
    assert not result.get("is_error")


async def test_filesystems_media_file_is_one_image_and_no_base64_text(tmp_path: Path) -> None:
    from PIL import Image as PillowImage

    picture = PillowImage.new("RGB", (300, 200), (200, 30, 30))
    picture.save(tmp_path / "plot.png")
    encoded = base64.b64encode((tmp_path / "plot.png").read_bytes()).decode()
    result = await run_one_call(
        tmp_path,
        server(SERVER_FILESYSTEM, str(tmp_path)),
        "ref__read_media_file",
        {"path": str(tmp_path / "plot.png")},
    )
    images = [block for block in blocks_of(result) if block["type"] == "image"]
    assert len(images) == 1 and png_size(images[0]) == (300, 200)
    text = all_text(result)
    assert encoded[:200] not in text
    assert len(text) < 200, text


async def test_filesystems_text_results_arrive_once(tmp_path: Path) -> None:
    marker = "a line only this file has: 7f3c9e"
    (tmp_path / "notes.txt").write_text(f"first\n{marker}\nlast\n")
    (tmp_path / "sub").mkdir()
    read = await run_one_call(
        tmp_path,
        server(SERVER_FILESYSTEM, str(tmp_path)),
        "ref__read_text_file",
        {"path": str(tmp_path / "notes.txt")},
    )
    assert all_text(read).count(marker) == 1, all_text(read)
    listed = await run_one_call(
        tmp_path,
        server(SERVER_FILESYSTEM, str(tmp_path)),
        "ref__list_directory",
        {"path": str(tmp_path)},
    )
    assert all_text(listed).count("notes.txt") == 1, all_text(listed)
