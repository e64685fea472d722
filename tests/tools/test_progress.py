"""A tool's progress (``tools/progress.py``) comes out as ``ToolCallProgress`` of its own call.

Calls of one reply share one ``ToolContext``; the progress callback is per call, so each event
names the call that reported it. A ``@tool`` function runs in a worker thread: its reports cross
to the agent's loop. Liveness is shown by event order: the tools wait until the test has seen
their progress.
"""

from __future__ import annotations

import threading
from pathlib import Path

from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use

from jupyter_agent import Agent, ToolCallProgress, tool
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.tools.base import ToolCapabilities
from jupyter_agent.tools.progress import report_progress


async def test_parallel_calls_report_their_own_progress_from_worker_threads(
    tmp_path: Path,
) -> None:
    both_seen = threading.Event()

    @tool
    def step(n: int) -> str:
        """Report progress, then wait until both calls' progress was seen."""
        report_progress(1, 2, f"call {n} halfway")
        return "saw both" if both_seen.wait(timeout=10) else "never seen"

    step.capabilities = ToolCapabilities(validates_arguments=True, reports_progress=True)
    fake = FakeAnthropic(
        Reply([tool_use("toolu_a", "step", {"n": 1}), tool_use("toolu_b", "step", {"n": 2})]),
        text("done"),
    )
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    agent.add_tool(step)
    progress: list[ToolCallProgress] = []
    async for event in agent.stream_chat("step twice"):
        if isinstance(event, ToolCallProgress):
            progress.append(event)
            if len(progress) == 2:
                both_seen.set()
    assert sorted((p.call_id, p.message) for p in progress) == [
        ("toolu_a", "call 1 halfway"),
        ("toolu_b", "call 2 halfway"),
    ]
    assert [result_text(r) for r in tool_results(fake.requests[1])] == ["saw both"] * 2


async def test_a_lone_call_of_an_undeclared_tool_still_reports_before_it_ends(
    tmp_path: Path,
) -> None:
    """A reply's only call runs in the round's own task unless its tool declares
    ``reports_progress``: its progress comes late, but before its end, never lost."""

    @tool
    def quiet() -> str:
        """Report progress without declaring it."""
        report_progress(3, None, "three")
        return "ok"

    fake = FakeAnthropic(Reply([tool_use("toolu_q", "quiet", {})]), text("done"))
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    agent.add_tool(quiet)
    kinds = [type(e).__name__ async for e in agent.stream_chat("go")]
    start, end = kinds.index("ToolCallStarted"), kinds.index("ToolCallFinished")
    assert kinds[start : end + 1] == ["ToolCallStarted", "ToolCallProgress", "ToolCallFinished"]


def test_reporting_outside_a_call_does_nothing() -> None:
    report_progress(1, 2, "nobody listens")  # no error, no effect
