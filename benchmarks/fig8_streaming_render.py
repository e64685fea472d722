"""Figure 8: a streamed 2,000-token answer drawn by the notebook layer.

Ours is the notebook layer's real ``RichRenderer`` (what ``%%agent`` draws with in Jupyter), fed
``TextDelta`` events paced at a given model speed, then ``AgentFinished``; it throttles its
Markdown display updates. The alternative re-renders the answer on every token: the same
``IPython.display.DisplayHandle`` and the same Markdown object, one ``update`` per token. Both run
under a real ``InteractiveShell`` whose display publisher counts the messages and serialises each
to JSON, as a kernel does before sending it to the browser. CPU time is ``time.process_time``
summed over the calls that hand each token to the renderer (and the final flush), so the pacing
loop's sleeps and wake-ups are not counted; one update per token is paced the same way.
"""

from __future__ import annotations

import functools
import json
import random
import time
from typing import Any

from ._harness import BenchContext, Row, Stats, compare, limit, require

FIGURE = "8"


def _tokens(count: int) -> list[str]:
    """A Markdown answer cut into ``count`` token-sized pieces (about 4 characters each)."""
    rng = random.Random(3)
    words = [
        *("the", "data", "frame", "has", "rows", "columns", "values", "we", "group", "by"),
        *("region", "and", "sum", "the", "sales", "then", "plot", "a", "bar", "chart", "the"),
        *("total", "is", "higher", "in", "march", "than", "in", "april", "because", "of"),
    ]
    tokens: list[str] = []
    while len(tokens) < count:
        kind = rng.random()
        if kind < 0.08:
            tokens += ["\n\n## ", "Step ", f"{len(tokens) % 9 + 1}", "\n\n"]
        elif kind < 0.14:
            tokens += ["\n\n```", "python\n", "df.", "groupby(", '"region")', ".sum()", "\n```\n\n"]
        elif kind < 0.2:
            tokens += ["\n- ", "**", rng.choice(words), "**", ": "]
        else:
            tokens.append(" " + rng.choice(words))
    return tokens[:count]


def _counting_publisher(shell: Any) -> Any:
    """A display publisher that counts messages and serialises each like a kernel would."""
    from IPython.core import displaypub

    base: Any = displaypub.DisplayPublisher

    class CountingPublisher(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(shell=shell)
            self.messages = 0
            self.bytes = 0

        def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
            self.messages += 1
            content = {
                "data": data,
                "metadata": metadata or {},
                "transient": kwargs.get("transient") or {},
            }
            self.bytes += len(json.dumps(content))

        def clear_output(self, wait: bool = False) -> None:
            self.messages += 1

    return CountingPublisher()


def _pace(tokens: list[str], rate: float | None, emit: Any) -> float:
    """Feed ``tokens`` to ``emit`` at ``rate`` per second; the CPU seconds spent inside ``emit``."""
    cpu = 0.0
    started = time.perf_counter()
    for k, token in enumerate(tokens):
        if rate:
            delay = started + k / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        before = time.process_time()
        emit(token)
        cpu += time.process_time() - before
    return cpu


def run(ctx: BenchContext) -> list[Row]:
    render = require("jupyter_agent.notebook.render")
    events = require("jupyter_agent.agent.events")
    from IPython.core.interactiveshell import InteractiveShell

    # the DisplayHandle the renderer itself uses
    display_handle: Any = require("jupyter_agent.notebook._ipython").DisplayHandle

    count = ctx.size(2000, 200)
    tokens = _tokens(count)
    shell = InteractiveShell.instance()
    original_publisher = shell.display_pub

    def ours(rate: float | None) -> tuple[float, int]:
        publisher = _counting_publisher(shell)
        shell.display_pub = publisher
        renderer = render.RichRenderer()
        cpu = _pace(tokens, rate, lambda t: renderer.handle(events.TextDelta(t)))
        before = time.process_time()
        renderer.handle(events.AgentFinished("".join(tokens), "end_turn", 1))
        renderer.close(interrupted=False)
        cpu += time.process_time() - before
        if renderer.text != "".join(tokens):
            raise RuntimeError("the renderer lost text")
        return cpu * 1e3, publisher.messages

    def per_token(rate: float | None) -> tuple[float, int]:
        publisher = _counting_publisher(shell)
        shell.display_pub = publisher
        handle = display_handle()
        parts: list[str] = []

        def emit(token: str) -> None:
            parts.append(token)
            content = render.MarkdownText("".join(parts))
            if len(parts) == 1:
                handle.display(content)
            else:
                handle.update(content)

        cpu = _pace(tokens, rate, emit)
        return cpu * 1e3, publisher.messages

    interval = getattr(render, "DEFAULT_RENDER_INTERVAL_S", "?")
    rows: list[Row] = []
    try:
        ours(None)  # warm-up: imports, first display
        per_token(None)
        for rate, reps in ((100.0, ctx.reps(2, 1)), (400.0, ctx.reps(3, 1))):
            if ctx.quick:
                rate *= 10
            seconds = count / rate
            ctx.log(f"figure 8: {reps} answers per side at {rate:g} tokens/s, {seconds:.0f} s each")
            ours_cpu: list[float] = []
            ours_updates: list[float] = []
            base_cpu: list[float] = []
            base_updates: list[float] = []
            for _ in range(reps):
                cpu, updates = ours(rate)
                ours_cpu.append(cpu)
                ours_updates.append(updates)
                cpu, updates = per_token(rate)
                base_cpu.append(cpu)
                base_updates.append(updates)
            label = f"{count:,} tokens at {rate:g} tokens/s"
            rows.append(
                limit(
                    FIGURE,
                    f"streamed answer ({label}): display updates",
                    Stats(ours_updates, "updates"),
                    Stats(base_updates, "updates"),
                    "one update per token",
                    below=60.5,
                    goal_text="≤ 60 updates",
                    note=__doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else "",
                    miss_note=(
                        "The count is the throttle in `RichRenderer._flush` (notebook/render.py): "
                        f"at least {interval} s between updates and, since commit a3e69c1, "
                        "growth of a tenth of the text shown. With the interval alone it grew "
                        "with the answer's duration: 130 updates at 100 tokens/s, each re-sending "
                        "the whole answer so far."
                    ),
                )
            )
            rows.append(
                compare(
                    FIGURE,
                    f"streamed answer ({label}): CPU time",
                    Stats(ours_cpu, "ms"),
                    Stats(base_cpu, "ms"),
                    "one update per token",
                    min_speedup=10.0,
                    miss_note=(
                        "Since commit a3e69c1 the updates are few and no longer the bulk of our "
                        "CPU. A side measurement at 100 tokens/s split it: 36 updates cost "
                        "14.5 ms together; the other 1,964 `handle` calls cost 66 ms, ~33 µs "
                        "each, because each comes right after a 10 ms sleep (cold caches; hot, "
                        "the same calls take 2.6 µs), and ~6 µs of each is the CPU clock read "
                        "that measures it (a no-op costs that much). Every renderer pays that "
                        "per-token wake-up, the per-token baseline included, so the ratio is "
                        "bounded by it: better batching of events in the main-thread pump (several "
                        "tokens per wake-up), not a cheaper update, is what would move it."
                    ),
                    profile_target=functools.partial(ours, rate),
                )
            )
    finally:
        shell.display_pub = original_publisher
    return rows
