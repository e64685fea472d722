"""Figure 23: replaying a recorded 10-call turn against running its 10 tool calls alone.

A reproducible ``%%agent`` cell re-run replays its recorded turn: no model request, the tools run
for real and each result's digest is checked against the record (``notebook/replay/``). The turn
here is ten model replies of one ``read_file`` call each (the first 2,000 lines of a 20,000-line
CSV each time, about 40 KB a result) and a final answer, recorded from a live run and signed.
Ours: a fresh ``Agent`` answering through ``TurnReplay`` over the verified record — the agent
loop, the replay engine, the ten calls, the ten digests. Theirs: the same ten ``read_file``
calls through the same registry, awaited one after another, nothing else. Side by side, each
sample after a ``gc.collect()``. A second row, for context, puts the replay beside the same turn
played from a cassette by the offline provider (the agent loop and the tools, without checks):
what the record's verification and digests add.
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ._harness import BenchContext, Row, Stats, compare, paired_async, require

FIGURE = "23"
CALLS = 10


def _csv(folder: Path, lines: int) -> None:
    rows = (f"{i},{i % 97},{(i * 7919) % 10007},region-{i % 13}" for i in range(lines))
    (folder / "data.csv").write_text("id,a,b,region\n" + "\n".join(rows) + "\n")


def run(ctx: BenchContext) -> list[Row]:
    agent_module = require("jupyter_agent.agent.agent")
    record_module = require("jupyter_agent.notebook.replay.record")
    replay_module = require("jupyter_agent.notebook.replay.turn_provider")
    offline = require("jupyter_agent.providers.offline")
    lines = ctx.size(20_000, 2_000)
    repetitions = ctx.reps(41, 1)
    workspace = Path(tempfile.mkdtemp(prefix="jabench-replay-"))
    _csv(workspace, lines)
    limit = max(1, lines // 10)
    inputs = [{"file_path": "data.csv", "offset": 1, "limit": limit} for _ in range(CALLS)]
    script: list[dict[str, Any]] = [
        {
            "prompt": "Go.",
            "responses": [
                {
                    "content": [
                        {"type": "tool_use", "id": f"toolu_{i}", "name": "read_file", "input": arg}
                    ],
                    "stop_reason": "tool_use",
                }
                for i, arg in enumerate(inputs)
            ]
            + [{"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}],
        }
    ]

    async def record() -> Any:
        """A live run (the offline provider plays the model) kept by ``TurnCapture``."""
        capture = replay_module.TurnCapture(offline.OfflineProvider(script, notice=False))
        agent = agent_module.Agent(capture, workspace=workspace, max_turns=CALLS + 2)
        await agent.chat("Go.")
        signed = record_module.sign_record(
            record_module.build_record(
                prompt="Go.",
                options={},
                model=capture.model,
                replies=capture.replies,
                calls=capture.calls,
                usage={},
                cost_micro_usd=0,
            )
        )
        turn, problem = record_module.read_record(signed)
        if turn is None or len(turn.calls) != CALLS:
            raise RuntimeError(f"the recorded turn is not usable: {problem}")
        return turn

    async def measure() -> dict[str, tuple[list[float], list[float]]]:
        turn = await record()
        tools_agent = agent_module.Agent(
            offline.OfflineProvider(notice=False), workspace=workspace, max_turns=CALLS + 2
        )
        registry = tools_agent.registry

        async def ours() -> float:
            gc.collect()
            replay = replay_module.TurnReplay(turn)
            agent = agent_module.Agent(replay, workspace=workspace, max_turns=CALLS + 2)
            started = time.perf_counter()
            text = await agent.chat("Go.")
            elapsed = (time.perf_counter() - started) * 1e3
            if replay.diverged is not None or not replay.finished or "Done." not in text:
                raise RuntimeError(f"the replay did not finish as recorded: {text!r}")
            return elapsed

        async def theirs() -> float:
            gc.collect()
            started = time.perf_counter()
            for arguments in inputs:
                result = await registry.call("read_file", arguments)
                if result.is_error:
                    raise RuntimeError(f"read_file failed: {result.content!r}")
            return (time.perf_counter() - started) * 1e3

        async def cassette() -> float:
            gc.collect()
            agent = agent_module.Agent(
                offline.OfflineProvider(script, notice=False),
                workspace=workspace,
                max_turns=CALLS + 2,
            )
            started = time.perf_counter()
            text = await agent.chat("Go.")
            elapsed = (time.perf_counter() - started) * 1e3
            if "Done." not in text:
                raise RuntimeError(f"the cassette did not play as recorded: {text!r}")
            return elapsed

        return {
            "tools": await paired_async(ours, theirs, repetitions),
            "cassette": await paired_async(ours, cassette, repetitions),
        }

    ctx.log(f"figure 23: {repetitions} replays of a {CALLS}-call turn ({lines:,}-line CSV)")
    try:
        result = asyncio.run(measure())
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    ours_ms, theirs_ms = result["tools"]
    ours_again, cassette_ms = result["cassette"]
    return [
        compare(
            FIGURE,
            f"replay of a recorded {CALLS}-call turn (`read_file` of {limit:,} CSV lines each), "
            "digests checked, no model request",
            Stats(ours_ms, "ms"),
            Stats(theirs_ms, "ms"),
            f"the same {CALLS} `read_file` calls through the registry alone",
            max_ratio=1.2,
            note=__doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else "",
            miss_note=(
                "What a replay adds to the tools is the agent loop's own per-turn work (figure 2: "
                "the conversation, the tool round, the events) for eleven model turns, plus the "
                "replay engine and a SHA-256 per result (a text result is hashed as its bytes, "
                "without a JSON pass); the loop is the live one on purpose — the tools run "
                "under the same policies and approvals — so it is not skipped."
            ),
        ),
        compare(
            FIGURE,
            f"the same replay beside the turn played from a cassette ({CALLS} calls, no checks)",
            Stats(ours_again, "ms"),
            Stats(cassette_ms, "ms"),
            "the offline provider playing the turn's replies (agent loop and tools, no digests)",
        ),
    ]
