"""Roots only when asked, against the real ``@modelcontextprotocol/server-filesystem`` (pinned).

That server serves the directories on its command line, and *replaces* them with the client's
roots when the client declares the roots capability. A user who writes ``%agent mcp add fs --
npx … /data/shared`` means ``/data/shared``: the client declares roots only for a server whose
entry names them (``"roots": [...]``, ``--roots``, ``add_mcp_server(roots=...)``).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from ipython_shell import magics_of
from npm_packages import SERVER_FILESYSTEM, npm_package, unavailable

from jupyter_agent import Agent
from jupyter_agent.errors import MCPConfigError
from jupyter_agent.providers.offline import OfflineProvider

pytest.importorskip("mcp")
pytestmark = pytest.mark.slow


def filesystem(*directories: Path) -> list[str]:
    node = shutil.which("node")
    if node is None:
        unavailable("node is not installed")
    return [node, str(npm_package(SERVER_FILESYSTEM) / "dist" / "index.js"), *map(str, directories)]


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The workspace, the user's shared folder (with a file), and a third folder."""
    workspace, shared, other = tmp_path / "workspace", tmp_path / "shared", tmp_path / "other"
    for folder in (workspace, shared, other):
        folder.mkdir()
    (shared / "report.txt").write_text("the shared report\n")
    (other / "elsewhere.txt").write_text("another folder\n")
    return workspace, shared, other


@pytest.fixture
async def agent(folders: tuple[Path, Path, Path]) -> AsyncIterator[Agent]:
    agent = Agent(OfflineProvider(), workspace=folders[0])
    try:
        yield agent
    finally:
        await agent.toolbox.aclose()


async def allowed(agent: Agent) -> str:
    result = await agent.registry.call("fs__list_allowed_directories", {})
    assert not result.is_error, result.content
    return result.content


async def settled(agent: Agent, wanted: Path) -> str:
    """The allowed directories once they name ``wanted`` (the server takes roots after the
    handshake, asynchronously), or as they are after 10 s."""
    text = await allowed(agent)
    async with asyncio.timeout(10):
        while str(wanted.resolve()) not in text:
            await asyncio.sleep(0.1)
            text = await allowed(agent)
    return text


async def test_the_directory_on_the_command_line_stands(
    agent: Agent, folders: tuple[Path, Path, Path]
) -> None:
    """The issue: the client declared roots = the workspace, and the server replaced
    ``shared`` with it ("Access denied")."""
    workspace, shared, _other = folders
    await agent.add_mcp_server("fs", command=filesystem(shared), policy="allow")
    await asyncio.sleep(1.0)  # long enough for the server to have asked for roots, if declared
    text = await allowed(agent)
    assert str(shared.resolve()) in text and str(workspace.resolve()) not in text, text
    read = await agent.registry.call("fs__read_text_file", {"path": str(shared / "report.txt")})
    assert not read.is_error and "the shared report" in read.content, read.content


async def test_roots_the_user_configured_are_what_the_server_gets(
    agent: Agent, folders: tuple[Path, Path, Path]
) -> None:
    _workspace, shared, other = folders
    await agent.add_mcp_server("fs", command=filesystem(shared), policy="allow", roots=[other])
    text = await settled(agent, other)
    assert str(shared.resolve()) not in text, text  # the server replaces its own with roots
    read = await agent.registry.call("fs__read_text_file", {"path": str(other / "elsewhere.txt")})
    assert not read.is_error and "another folder" in read.content, read.content


async def test_a_relative_root_is_in_the_workspace_and_a_missing_one_is_refused(
    agent: Agent, folders: tuple[Path, Path, Path]
) -> None:
    workspace, shared, _other = folders
    (workspace / "data").mkdir()
    with pytest.raises(MCPConfigError, match="nowhere"):
        await agent.add_mcp_server("bad", command=filesystem(shared), roots=["nowhere"])
    await agent.add_mcp_server("fs", command=filesystem(shared), policy="allow", roots=["data"])
    await settled(agent, workspace / "data")


def test_roots_from_the_magic_and_from_mcp_servers(
    shell: InteractiveShell, folders: tuple[Path, Path, Path]
) -> None:
    _workspace, shared, other = folders
    magics = magics_of(shell)
    command = " ".join(filesystem(shared))
    with capture_output():
        shell.run_line_magic("agent", f"mcp add fs --policy allow --roots {other} -- {command}")
    agent = magics.agent
    run = magics.session.bridge.background.run
    assert str(other.resolve()) in run(settled(agent, other))
    with capture_output() as listed:
        shell.run_line_magic("agent", "mcp list fs")
    assert f"roots: {other.resolve()}" in listed.stdout
    with capture_output():
        shell.run_line_magic("agent", "mcp remove fs")
    node, script, *_ = filesystem(shared)
    magics.mcp_servers = {
        "conf": {"command": node, "args": [script, str(shared)], "roots": [str(other)]}
    }
    with capture_output():
        shell.run_line_magic("agent", "mcp list")

    async def conf_allowed() -> str:
        text = ""
        async with asyncio.timeout(10):
            while str(other.resolve()) not in text:
                result = await agent.registry.call("conf__list_allowed_directories", {})
                text = result.content
                await asyncio.sleep(0.1)
        return text

    magics.session.set_policy("conf__list_allowed_directories", "allow")
    assert str(shared.resolve()) not in run(conf_allowed())
