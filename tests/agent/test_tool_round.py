"""``ToolRound``: one reply's calls, bounded in how many run at once, answered in the model's order.

A reply of 150 searches used to start 150 sandboxed processes at once. The round runs at most
``max_parallel_tools`` at a time; concurrency is shown by counting calls inside the tool, not by
the clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use

from jupyter_agent import Agent, tool
from jupyter_agent.providers.anthropic import AnthropicProvider


async def test_a_wide_reply_runs_at_most_max_parallel_tools_at_once(tmp_path: Path) -> None:
    inside = 0
    most = 0
    release = asyncio.Event()
    arrived = asyncio.Condition()

    @tool
    async def probe(n: int) -> str:
        """Count the calls running now."""
        nonlocal inside, most
        async with arrived:
            inside += 1
            most = max(most, inside)
            arrived.notify_all()
        await release.wait()
        inside -= 1
        return f"probe {n}"

    calls = [tool_use(f"toolu_{n}", "probe", {"n": n}) for n in range(40)]
    fake = FakeAnthropic(Reply(calls), text("done"))
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path, max_parallel_tools=3)
    agent.add_tool(probe)

    async def open_the_gate_once_three_wait() -> None:
        async with arrived:
            await arrived.wait_for(lambda: inside == 3)
        await asyncio.sleep(0)  # let any fourth call that could start, start
        release.set()

    opener = asyncio.create_task(open_the_gate_once_three_wait())
    assert await agent.chat("probe them all") == "done"
    await opener
    assert most == 3
    results = tool_results(fake.requests[1])
    assert [r["tool_use_id"] for r in results] == [f"toolu_{n}" for n in range(40)]
    assert [result_text(r) for r in results] == [f"probe {n}" for n in range(40)]
