"""Figure 12: a 200-turn session with a 20 KB tool result each turn — does it stay bounded?

One chat of 200 model turns against the zero-latency loopback Messages API (another process; it
reports the prompt's size as its input tokens, about four bytes a token, as the API would). Each
turn the model calls one tool that returns 20 KB. Measured per turn on the client: the request
body's size (an HTTP event hook reads its length) and the client process's CPU time
(``time.process_time`` between one ``TurnStarted`` and the next; each turn's CPU is the median of
three runs of the same session). With compaction (the default 200,000-token window) the largest
request and the CPU per turn over turns 150–200 should stay within 1.2× of those over turns
100–150; the same session with compaction out of reach (a window of 100 M tokens) keeps
growing — printed as context rows, with the conversation's length in messages.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from typing import Any

from ._harness import BenchContext, Row, Stats, compare, require
from ._loopback import LoopbackServer

FIGURE = "12"
RESULT_BYTES = 20_000


def _session(base_url: str, turns: int, window: int) -> tuple[list[int], list[float], list[int]]:
    """Request bytes, client CPU ms and conversation length (messages) per turn of one chat."""
    import anthropic
    import httpx2

    agent_module = require("jupyter_agent.agent.agent")
    provider_module = require("jupyter_agent.providers.anthropic")
    decorator = require("jupyter_agent.tools.decorator")
    registry_module = require("jupyter_agent.tools.registry")
    events = require("jupyter_agent.events")
    sizes: list[int] = []
    lengths: list[int] = []

    async def record(request: httpx2.Request) -> None:
        sizes.append(len(request.content))

    payload = ("0123456789abcdef" * (RESULT_BYTES // 16 + 1))[:RESULT_BYTES]

    async def work(i: int) -> str:
        """Return 20 KB.

        Args:
            i: which call this is
        """
        return payload

    async def go() -> list[float]:
        client = anthropic.AsyncAnthropic(
            api_key="sk-test",
            base_url=base_url,
            max_retries=0,
            http_client=httpx2.AsyncClient(event_hooks={"request": [record]}),
        )
        registry = registry_module.ToolRegistry()
        registry.register(decorator.tool(name="work")(work))
        # whole requests (no server-side thread): the figure is about the conversation the
        # model sees, which compaction must bound; a thread would hide it from the body size
        provider = provider_module.AnthropicProvider(
            f"bench-t{turns}-c1", client=client, threads=False
        )
        agent = agent_module.Agent(
            provider,
            workspace=tempfile.mkdtemp(prefix="jabench-long-"),
            registry=registry,
            max_turns=turns + 5,
            context_window=window,
        )
        cpu: list[float] = []
        started = time.process_time()
        try:
            async for event in agent.stream_chat("Go."):
                if isinstance(event, events.TurnStarted) and event.turn > 1:
                    now = time.process_time()
                    cpu.append((now - started) * 1e3)
                    lengths.append(len(agent.messages))
                    started = now
        finally:
            await client.close()
        return cpu

    cpu = asyncio.run(go())
    return sizes, cpu, lengths


def _per_turn_median(runs: list[list[float]]) -> list[float]:
    return [statistics.median(turn) for turn in zip(*runs, strict=False)]


def run(ctx: BenchContext) -> list[Row]:
    turns = ctx.size(200, 24)
    # quick: a window small enough that 24 turns reach it
    window = ctx.size(200_000, 30_000)
    runs = ctx.reps(3, 1)
    with LoopbackServer() as server:
        ctx.log(f"figure 12: {runs} × {turns}-turn session with compaction")
        sessions = [_session(server.base_url, turns, window) for _ in range(runs)]
        ctx.log(f"figure 12: {runs} × {turns}-turn session without compaction")
        raw_sessions = [_session(server.base_url, turns, 100_000_000) for _ in range(runs)]
    # The session is the same every time; each turn's CPU is its median over the runs, so that
    # a pause of the machine during one run does not stand for that turn.
    sizes, cpu, lengths = (
        sessions[0][0],
        _per_turn_median([c for _, c, _ in sessions]),
        sessions[0][2],
    )
    raw_sizes, raw_cpu = raw_sessions[0][0], _per_turn_median([c for _, c, _ in raw_sessions])
    raw_lengths = raw_sessions[0][2]

    half, three_quarters = turns // 2, turns * 3 // 4

    def turns_of(values: list[Any], start: int, end: int) -> list[float]:
        return [float(v) for v in values[start:end]]

    early, late = turns_of(sizes, half, three_quarters), turns_of(sizes, three_quarters, turns)
    early_cpu, late_cpu = turns_of(cpu, half, three_quarters), turns_of(cpu, three_quarters, turns)
    raw_early, raw_late = (
        turns_of(raw_sizes, half, three_quarters),
        turns_of(raw_sizes, three_quarters, turns),
    )
    raw_early_cpu = turns_of(raw_cpu, half, three_quarters)
    raw_late_cpu = turns_of(raw_cpu, three_quarters, turns)
    span = f"turns {three_quarters}–{turns} vs {half}–{three_quarters}"
    ctx.log(
        f"figure 12: largest request {max(late) / 1e3:.0f} KB late vs {max(early) / 1e3:.0f} KB; "
        f"without compaction {max(raw_late) / 1e3:.0f} KB vs {max(raw_early) / 1e3:.0f} KB; "
        f"CPU/turn {statistics.median(late_cpu):.2f} vs {statistics.median(early_cpu):.2f} ms "
        f"(without: {statistics.median(raw_late_cpu):.2f} vs "
        f"{statistics.median(raw_early_cpu):.2f} ms)"
    )
    late_length, early_length = max(lengths[three_quarters:]), max(lengths[half:three_quarters])
    raw_late_length = max(raw_lengths[three_quarters:])
    raw_early_length = max(raw_lengths[half:three_quarters])
    note = __doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else ""
    return [
        compare(
            FIGURE,
            f"largest request body, {span} (compaction on)",
            Stats([max(late) / 1e3], "KB"),
            Stats([max(early) / 1e3], "KB"),
            f"the same session, {half}–{three_quarters}",
            max_ratio=1.2,
            note=note,
        ),
        compare(
            FIGURE,
            f"client CPU per turn, {span} (compaction on)",
            Stats(late_cpu, "ms/turn"),
            Stats(early_cpu, "ms/turn"),
            f"the same session, {half}–{three_quarters}",
            max_ratio=1.2,
            note=(
                "The whole session is one prompt and 200 tool rounds. Compaction stubs the older "
                "results and folds the stubbed rounds into a note on the turn's first round, so "
                "the conversation's length is bounded too, not only its bytes (before folding, "
                "each round added two messages — 381 by turn 190 — and this row ranged from "
                "0.93× to 1.42×). The CPU per turn rises and falls between compactions."
            ),
        ),
        compare(
            FIGURE,
            f"most messages in the conversation, {span} (context)",
            Stats([late_length], "messages"),
            Stats([early_length], "messages"),
            f"the same session, {half}–{three_quarters}",
        ),
        compare(
            FIGURE,
            f"most messages in the conversation, {span}, compaction out of reach (context)",
            Stats([raw_late_length], "messages"),
            Stats([raw_early_length], "messages"),
            f"the same session, {half}–{three_quarters}",
        ),
        compare(
            FIGURE,
            f"largest request body, {span}, compaction out of reach (context)",
            Stats([max(raw_late) / 1e3], "KB"),
            Stats([max(raw_early) / 1e3], "KB"),
            f"the same session, {half}–{three_quarters}",
        ),
        compare(
            FIGURE,
            f"client CPU per turn, {span}, compaction out of reach (context)",
            Stats(raw_late_cpu, "ms/turn"),
            Stats(raw_early_cpu, "ms/turn"),
            f"the same session, {half}–{three_quarters}",
        ),
    ]
