"""Figure 24: bounds the tests used to hold as wall-clock thresholds: input written to be slow,
a cancel, the pace of the main-thread pump and of a tool's progress.

Each row was a wall-clock threshold in the tests, which now check what is shown and in what
order. Hostile input, where an algorithm once backtracked or rescanned: the terminal's Markdown
renderer fed a paragraph whose mark never closes (``2 * 3``, a lone backtick or ``**``: 10,000
characters took 12 s, 24,000 took 143 s) and a line of brackets (the link pattern tried every
``[`` to the end of the line); ``search_files`` and ``search_text`` given a glob of many stars
(``*a*a*…*b`` as a backtracking regex ran for minutes on a 200-character name). A cancel:
``web_fetch``'s converter child cancelled at each moment of its start (cancelled while
bubblewrap was still setting the sandbox up, the call waited 5 s for a converter blocked on a
stdin nobody closed). Pace: the pump that hands a ``%%agent`` turn's events to the main thread,
as shares of poll intervals (it woke every poll) and as hand-over times; the progress a turn
yields for a tool that reports thousands of times (it was one event a report). No "theirs": the
goal is a bound far above what the code needs and far below what the old code took.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

from ._harness import BenchContext, Row, Stats, limit, require, scratch_dir

FIGURE = "24"

#: What the terminal renderer's tests fed it (``tests/notebook/views/test_terminal_markdown.py``).
UNCLOSED = [
    ("Cost is 2 * 3 dollars " + "word " * 2400, 8),  # 12,000 characters
    ("Note `" + "ab " * 4000, 3),
    ("Note **" + "ab " * 4000, 3),
]
BRACKETS = ["[" * 60_000, "[a](" * 15_000, "[a](b" * 12_000]


def _unclosed_ms() -> float:
    """The slowest of the three unclosed-mark paragraphs, streamed as the model sends them."""
    from jupyter_agent.notebook.views.terminal_markdown import MarkdownLines

    slowest = 0.0
    for text, piece in UNCLOSED:
        lines = MarkdownLines()
        started = time.perf_counter()
        for at in range(0, len(text), piece):
            lines.feed(text[at : at + piece])
        lines.flush()
        slowest = max(slowest, time.perf_counter() - started)
    return slowest * 1e3


def _brackets_ms() -> float:
    from jupyter_agent.notebook.views.terminal_markdown import inline

    slowest = 0.0
    for hostile in BRACKETS:
        started = time.perf_counter()
        inline(hostile)
        slowest = max(slowest, time.perf_counter() - started)
    return slowest * 1e3


def _glob_ms(folder: Path, backend: str) -> float:
    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.search.search import SearchFilesTool, SearchTextTool

    context = ToolContext(folder)
    files = SearchFilesTool(context, backend=backend)  # type: ignore[arg-type]
    text = SearchTextTool(context, backend=backend)  # type: ignore[arg-type]
    stars = "*a" * 8 + "*b"

    async def calls() -> None:
        await files.execute({"pattern": stars})
        await files.execute({"pattern": "**/" + stars})
        await files.execute({"pattern": "*a" * 8})
        await text.execute({"pattern": "needle", "glob": stars})

    started = time.perf_counter()
    asyncio.run(calls())
    return (time.perf_counter() - started) * 1e3


def _cancelled_conversions_ms(tries: int) -> list[float]:
    """For each try, the time from cancelling ``convert_in_child`` (0-9 ms into its start) to
    the call's end."""
    import contextlib

    from jupyter_agent.tools.web import convert_in_child

    async def tries_ms() -> list[float]:
        took = []
        for attempt in range(tries):
            task = asyncio.ensure_future(
                convert_in_child({"kind": "html", "charset": "utf-8"}, b"<p>x</p>" * 50_000, "u")
            )
            await asyncio.sleep(0.001 * (attempt % 10))
            task.cancel()
            started = time.perf_counter()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)
            took.append((time.perf_counter() - started) * 1e3)
        return took

    return asyncio.run(tries_ms())


def _pump_shares(seconds: float) -> tuple[float, float]:
    """The main-thread pump (``notebook/runtime/bridge.py``) under two streams, as shares of
    their allowance: batches of a fast stream (~2,000 tokens/s) against one per poll interval
    plus the run's start and end; wake-ups of a steady 100 tokens/s stream against every poll
    interval (what the old pump did)."""
    from jupyter_agent.events import TextDelta
    from jupyter_agent.notebook.runtime import bridge as main_bridge

    poll = main_bridge.POLL_INTERVAL_S
    loop = main_bridge.BackgroundLoop()
    try:
        fast = main_bridge.MainThreadBridge(loop)
        tokens = [f"t{i}{' ' if i % 7 else chr(10)}" for i in range(int(2000 * seconds))]

        async def fast_stream() -> None:
            for k, token in enumerate(tokens):
                fast.post(TextDelta(token))
                if k % 10 == 9:
                    await asyncio.sleep(0.005)

        started = time.monotonic()
        fast.run(fast_stream(), lambda event: None)
        batches = fast.batches / (((time.monotonic() - started) / poll) + 2)

        steady = main_bridge.MainThreadBridge(loop)
        words = ["x" * 3000] + [f" w{i:03d}" for i in range(int(100 * seconds))]

        async def steady_stream() -> None:
            begun = asyncio.get_running_loop().time()
            for k, word in enumerate(words):
                now = asyncio.get_running_loop().time()
                await asyncio.sleep(max(0.0, begun + k / 100 - now))
                steady.post(TextDelta(word))

        started = time.monotonic()
        steady.run(steady_stream(), lambda event: None)
        wakeups = steady.wakeups / ((time.monotonic() - started) / poll)
    finally:
        loop.close()
    return batches, wakeups


def _pump_pace() -> tuple[float, float, float, float]:
    """Seconds: the first text of a segment to its hand-over; text that grew during the
    renderer's pause, posted 20 ms after it, to its hand-over while the model then pauses; the
    largest gap between idle wake-ups of a quiet run; the largest gap between hand-overs to a
    terminal renderer (no growth rule) of a 100 tokens/s stream."""
    from jupyter_agent.events import TextDelta
    from jupyter_agent.notebook.runtime import bridge as main_bridge

    loop = main_bridge.BackgroundLoop()
    try:
        paced = main_bridge.MainThreadBridge(loop)
        posted: list[float] = []
        arrivals: list[float] = []

        async def pausing() -> None:
            posted.append(time.monotonic())
            paced.post(TextDelta("x" * 1000))
            await asyncio.sleep(0.02)
            posted.append(time.monotonic())
            paced.post(TextDelta("y" * 150))
            await asyncio.sleep(1.0)

        paced.run(pausing(), lambda event: arrivals.append(time.monotonic()))
        first, second = arrivals[0] - posted[0], arrivals[1] - posted[1]

        idle = main_bridge.MainThreadBridge(loop)
        idles: list[float] = []

        async def quiet() -> None:
            await asyncio.sleep(2.1)

        idle.run(quiet(), lambda event: None, on_idle=lambda: idles.append(time.monotonic()))
        idle_gap = max(b - a for a, b in itertools.pairwise(idles))

        terminal = main_bridge.MainThreadBridge(loop)
        handed: list[float] = []
        tokens = ["x" * 3000] + [f" w{i:03d}" for i in range(150)]

        async def steady() -> None:
            begun = asyncio.get_running_loop().time()
            for k, token in enumerate(tokens):
                now = asyncio.get_running_loop().time()
                await asyncio.sleep(max(0.0, begun + k / 100 - now))
                terminal.post(TextDelta(token))

        terminal.run(steady(), lambda event: handed.append(time.monotonic()), text_growth=0)
        terminal_gap = max(b - a for a, b in itertools.pairwise(handed))
    finally:
        loop.close()
    return first, second, idle_gap, terminal_gap


def _progress_share(reports: int) -> float:
    """``ToolCallProgress`` events a turn yields while its one tool reports ``reports`` times
    over about a second, as a share of the allowance: one per ``PROGRESS_INTERVAL_S`` plus three
    (the first, the last, and one due at the call's end)."""
    import tempfile

    from jupyter_agent.agent.agent import Agent
    from jupyter_agent.agent.tool_round import PROGRESS_INTERVAL_S
    from jupyter_agent.events import ToolCallFinished, ToolCallProgress, ToolCallStarted
    from jupyter_agent.providers.anthropic import AnthropicProvider
    from jupyter_agent.tools.base import ToolCapabilities
    from jupyter_agent.tools.decorator import tool
    from jupyter_agent.tools.progress import report_progress
    from jupyter_agent.tools.registry import ToolRegistry

    from ._agents import sdk_client
    from ._loopback import LoopbackServer

    async def flood(i: int) -> str:
        """Report progress many times.

        Args:
            i: which call this is
        """
        for k in range(reports):
            report_progress(k + 1, reports, f"step {k}")
            if k % 5 == 4:
                await asyncio.sleep(0.001)
        return "flooded"

    work = tool(name="work")(flood)
    work.capabilities = ToolCapabilities(validates_arguments=True, reports_progress=True)

    async def measure() -> float:
        with LoopbackServer() as server, tempfile.TemporaryDirectory() as workspace:
            client = sdk_client(server.base_url)
            registry = ToolRegistry()
            registry.register(work)
            provider = AnthropicProvider("bench-t1-c1", client=client)
            agent = Agent(provider, workspace=workspace, registry=registry, max_turns=3)
            events, started, ended = 0, 0.0, 0.0
            try:
                async for event in agent.stream_chat("Go."):
                    if isinstance(event, ToolCallStarted):
                        started = time.monotonic()
                    elif isinstance(event, ToolCallProgress):
                        events += 1
                    elif isinstance(event, ToolCallFinished):
                        ended = time.monotonic()
            finally:
                await client.close()
        if not events or not ended:
            raise RuntimeError("the turn reported no progress or never finished its call")
        return events / (3 + (ended - started) / PROGRESS_INTERVAL_S)

    return asyncio.run(measure())


def run(ctx: BenchContext) -> list[Row]:
    require("jupyter_agent.notebook.views.terminal_markdown")
    require("jupyter_agent.tools.search.search")
    reps = ctx.reps(7, 1)
    unclosed = [_unclosed_ms() for _ in range(reps)]
    brackets = [_brackets_ms() for _ in range(reps)]
    globs: dict[str, list[float]] = {}
    with scratch_dir("fig24") as folder:
        (folder / ("a" * 200)).write_text("needle\n")
        (folder / "sub").mkdir()
        (folder / "sub" / ("a" * 150 + "b")).write_text("needle\n")
        for backend in ("ripgrep", "python"):
            globs[backend] = [_glob_ms(folder, backend) for _ in range(reps)]
    require("jupyter_agent.notebook.runtime.bridge")
    shares = [_pump_shares(ctx.size(3.0, 0.5)) for _ in range(ctx.reps(3, 1))]
    pace = [_pump_pace() for _ in range(ctx.reps(3, 1))]
    require("jupyter_agent.tools.progress")
    progress = [_progress_share(ctx.size(5_000, 500)) for _ in range(ctx.reps(3, 1))]
    require("jupyter_agent.tools.web")
    cancelled = _cancelled_conversions_ms(ctx.reps(30, 10))
    ctx.log(f"figure 24: {reps} samples of each, {len(cancelled)} cancelled conversions")
    note = __doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else ""
    rows = [
        limit(
            FIGURE,
            "terminal Markdown: a 12,000-character paragraph whose mark never closes, streamed",
            Stats(unclosed, "ms"),
            None,
            "",
            below=2000.0,
            note=note,
            miss_note="The renderer rescans the unfinished line at each feed again.",
        ),
        limit(
            FIGURE,
            "terminal Markdown: a 60,000-character line of `[` (and of `[a](`, `[a](b`)",
            Stats(brackets, "ms"),
            None,
            "",
            below=1000.0,
            miss_note="The link pattern tries every `[` to the end of the line again.",
        ),
    ]
    rows.append(
        limit(
            FIGURE,
            "`web_fetch`'s converter cancelled 0-9 ms into its start: cancel to the call's end",
            Stats(cancelled, "ms"),
            None,
            "",
            below=2000.0,
            miss_note="A cancelled conversion waits for a converter that is still starting "
            "(blocked on its stdin) instead of killing it at once.",
        )
    )
    rows.append(
        limit(
            FIGURE,
            "the main-thread pump under a ~2,000 tokens/s stream: batches per allowance "
            "(one per poll interval, plus the start and the end)",
            Stats([batches for batches, _ in shares], "×"),
            None,
            "",
            below=1.0,
            goal_text="< 1×",
            miss_note="The pump wakes more than once per poll interval while text streams.",
        )
    )
    rows.append(
        limit(
            FIGURE,
            "the main-thread pump under a steady 100 tokens/s stream: wake-ups per poll interval",
            Stats([wakeups for _, wakeups in shares], "×"),
            None,
            "",
            below=0.5,
            goal_text="< 0.5×",
            miss_note="The pump wakes every poll interval again, not when the renderer has "
            "something to show.",
        )
    )
    rows.append(
        limit(
            FIGURE,
            "a tool reporting progress 5,000 times in about a second: progress events per "
            "allowance (one per interval, plus three)",
            Stats(progress, "×"),
            None,
            "",
            below=1.0,
            goal_text="< 1×",
            miss_note="The tool round yields progress more often than once per "
            "PROGRESS_INTERVAL_S (moved from tests/mcp/test_progress.py).",
        )
    )
    from jupyter_agent.notebook.runtime.bridge import IDLE_WAKE_S, POLL_INTERVAL_S

    paces = [
        ("the first text of a segment, posted to handed to the main thread", 0.1),
        (
            "text that grew during the renderer's pause, then the model pauses: posted to "
            "handed over (by a timer when the pause ends, not at the next idle wake-up)",
            IDLE_WAKE_S - 0.1,
        ),
        ("a quiet run: the largest gap between idle wake-ups", IDLE_WAKE_S + 0.2),
        (
            "a terminal renderer (no growth rule), 100 tokens/s: the largest gap between "
            "hand-overs",
            POLL_INTERVAL_S + 0.1,
        ),
    ]
    for index, (what, below) in enumerate(paces):
        rows.append(
            limit(
                FIGURE,
                f"the main-thread pump: {what}",
                Stats([sample[index] * 1e3 for sample in pace], "ms"),
                None,
                "",
                below=below * 1e3,
                miss_note="Moved from tests/notebook/runtime/test_bridge_pace.py, where it was "
                "a wall-clock threshold.",
            )
        )
    for backend, samples in globs.items():
        rows.append(
            limit(
                FIGURE,
                f"`search_files`/`search_text` with a glob of 9 stars, 200-character names "
                f"({backend})",
                Stats(samples, "ms"),
                None,
                "",
                below=3000.0,
                miss_note="The glob is matched by a backtracking regular expression again.",
            )
        )
    return rows
