"""Racing calls cannot escape the workspace (issue 11, point 2).

The tool calls of one model reply run concurrently, so one call can swap a folder for a symlink
pointing outside between another call's path check and its use. Here a swapper in its own process
exchanges, as fast as it can, a real folder ``dir`` of the workspace with a symlink to an outside
folder (``renameat2(RENAME_EXCHANGE)``: at every instant one of the two names is the symlink)
while each file tool is called hundreds of times on paths through ``dir``. Nothing of the outside
folder may show in any result, and nothing there may be created, changed, moved or removed. The
review that found this read the outside secret and wrote ``outside/.bashrc`` in under 2 s with the
old tools.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use
from race_arena import CALLS, SECRET, restore_inside

from jupyter_agent.agent.agent import Agent
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.registry import ToolRegistry

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux"),
    pytest.mark.timeout(180),
]

CALLS_PER_TOOL = 300


@pytest.mark.parametrize("tool", CALLS)
async def test_a_racing_swap_never_reaches_outside(arena: tuple[Path, Path], tool: str) -> None:
    workspace, _outside = arena
    registry = create_default_registry(ToolContext(workspace))
    registry.enable("remove")
    calls = CALLS[tool]
    leaked: list[str] = []
    for batch in range(CALLS_PER_TOOL // 10):
        results = await asyncio.gather(
            *(registry.call(tool, calls[(batch + i) % len(calls)]) for i in range(10))
        )
        leaked += [r.content for r in results if SECRET in r.content]
        # put back what the tool may have moved or removed inside, so the next round has a target
        restore_inside(workspace)
    assert not leaked, f"{tool} returned outside content: {leaked[0][:300]}"


@pytest.mark.parametrize("tool", ["search_text", "search_files"])
async def test_searches_hold_without_the_sandbox(
    arena: tuple[Path, Path], tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where bubblewrap is missing (macOS, some containers) ripgrep would walk by path with nothing
    # around it: the default backend must then be one that holds by itself.
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "subreaper")
    await test_a_racing_swap_never_reaches_outside(arena, tool)


async def test_one_reply_of_racing_calls_through_the_agent(arena: tuple[Path, Path]) -> None:
    """End to end: a scripted model's single reply holds many calls that aim at ``dir``."""
    workspace, _outside = arena
    calls = []
    for i in range(40):
        calls.append(
            tool_use(f"toolu_w{i}", "write_file", {"file_path": "dir/.bashrc", "content": "evil"})
        )
        calls.append(tool_use(f"toolu_r{i}", "read_file", {"file_path": "dir/secret.txt"}))
        calls.append(tool_use(f"toolu_m{i}", "mkdir", {"path": f"dir/made{i}"}))
    fake = FakeAnthropic(Reply(calls), text("Done."))
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client())
    registry: ToolRegistry = create_default_registry(ToolContext(workspace))
    agent = Agent(provider, workspace=workspace, registry=registry)
    answer = await agent.chat("Set up my shell")
    assert answer.strip() == "Done."
    results = [
        block
        for message in agent.messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 120
    assert not [r for r in results if SECRET in str(r.get("content"))]
