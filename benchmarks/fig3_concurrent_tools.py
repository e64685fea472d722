"""Figure 3: one reply asking for 8 tool calls that each wait 0.25 s.

Our agent runs the calls of one reply concurrently; the SDK's tool runner runs them one after the
other. Same loopback server, same tool body (``asyncio.sleep``), wall time of the whole chat (the
reply with the 8 calls, then the final answer).
"""

from __future__ import annotations

import asyncio

from ._agents import OurSide, TheirSide, sleeper
from ._harness import BenchContext, Row, Stats, compare, paired_async, timed_async
from ._loopback import LoopbackServer

FIGURE = "3"


def run(ctx: BenchContext) -> list[Row]:
    calls = 8
    seconds = 0.25 if not ctx.quick else 0.02
    repetitions = ctx.reps(5, 1)
    model = f"bench-t1-c{calls}"

    async def measure() -> tuple[list[float], list[float]]:
        with LoopbackServer() as server:
            body = sleeper(seconds)
            ours = OurSide(server.base_url, model, body, max_turns=5)
            theirs = TheirSide(server.base_url, model, body)
            try:

                async def ours_sample() -> float:
                    return await timed_async(ours.chat)

                async def theirs_sample() -> float:
                    return await timed_async(theirs.chat)

                return await paired_async(ours_sample, theirs_sample, repetitions)
            finally:
                await ours.aclose()
                await theirs.aclose()

    ctx.log(f"figure 3: {repetitions} chats per side, {calls} calls of {seconds} s")
    ours_s, theirs_s = asyncio.run(measure())
    return [
        compare(
            FIGURE,
            f"wall time of one reply with {calls} tool calls of {seconds:g} s each",
            Stats(ours_s, "s"),
            Stats(theirs_s, "s"),
            "SDK `tool_runner(stream=True)` (runs them in turn)",
            min_speedup=6.0,
            note=(
                "Wall time of the whole chat: the reply with the calls, the tools, the final "
                f"answer. The floor is {seconds:g} s concurrent, {calls * seconds:g} s sequential."
            ),
        )
    ]
