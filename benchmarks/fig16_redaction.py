"""Figure 16: what redaction costs — every tool result passes it (``tools/redact.py``) — and what
web_fetch's per-host egress question costs before each call (``tools/guard/egress.py``).

Ours: ``redactor().redact(text)`` on a result without secrets (the common case: each pattern runs
only where its literal anchor occurs, found at memory speed), with a credential-named variable in
the environment. Theirs: the least any redaction could do, one ``str.replace`` pass of that
variable's value over the same text. The text is Python source and prose, the kind of thing
``read_file`` and ``notebook_history`` return.
"""

from __future__ import annotations

import inspect
import os
import time
from typing import Any

from ._harness import BenchContext, Row, Stats, compare, limit, paired, require

FIGURE = "16"
_SECRET_NAME = "BENCH_SERVICE_TOKEN"
_SECRET_VALUE = "bench-" + "Zq9" * 12


def _text(size: int) -> str:
    """``size`` characters of Python source and its docstrings (the standard library's)."""
    source = inspect.getsource(inspect) + inspect.getsource(os)
    return (source * (size // len(source) + 1))[:size]


def run(ctx: BenchContext) -> list[Row]:
    redact_module: Any = require("jupyter_agent.tools.redact")
    previous = os.environ.get(_SECRET_NAME)
    os.environ[_SECRET_NAME] = _SECRET_VALUE
    try:
        redactor = redact_module.redactor()
        big = _text(ctx.size(1_000_000, 100_000))
        result = _text(100_000)
        if redactor.redact(big)[1] or _SECRET_VALUE in big:
            raise RuntimeError("the benchmark text holds a secret; the figure is moot")
        if redactor.redact(f"x {_SECRET_VALUE} y")[0] != f"x [redacted: {_SECRET_NAME}] y":
            raise RuntimeError("the redactor did not redact the planted value")

        def ours() -> float:
            started = time.perf_counter()
            redactor.redact(big)
            return (time.perf_counter() - started) * 1e3

        def theirs() -> float:
            started = time.perf_counter()
            big.replace(_SECRET_VALUE, "[redacted]")
            return (time.perf_counter() - started) * 1e3

        ours_ms, theirs_ms = paired(ours, theirs, ctx.reps(21, 3))

        def per_result() -> float:
            started = time.perf_counter()
            redactor.redact(result)
            return (time.perf_counter() - started) * 1e3

        per_result()
        small = [per_result() for _ in range(ctx.reps(21, 3))]
        egress = _egress_check_ms(ctx)
    finally:
        if previous is None:
            os.environ.pop(_SECRET_NAME, None)
        else:
            os.environ[_SECRET_NAME] = previous
    ctx.log(f"figure 16: {len(ours_ms)} paired samples over {len(big):,} characters")
    note = __doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else ""
    return [
        compare(
            FIGURE,
            f"redaction of a {len(big) // 1000:,} KB tool result without secrets",
            Stats(ours_ms, "ms"),
            Stats(theirs_ms, "ms"),
            "one `str.replace` pass of the secret value over the same text",
            note=note
            + " Context, not a goal: a single replace is the floor; the redactor looks for every "
            "credential value and some fifteen token shapes, each anchor one scan.",
        ),
        limit(
            FIGURE,
            f"redaction of a {len(big) // 1000:,} KB tool result without secrets (bound)",
            Stats(ours_ms, "ms"),
            None,
            "",
            below=10.0,
            note="Linear in the text: ten times the 100 KB bound below.",
            miss_note="A pattern runs over the whole text although its anchor is absent, or the "
            "environment part is rebuilt on every call.",
        ),
        limit(
            FIGURE,
            "redaction of a 100 KB tool result without secrets",
            Stats(small, "ms"),
            None,
            "",
            below=1.0,
            note="Every tool result passes the redactor; 100 KB is the default result cap.",
        ),
        limit(
            FIGURE,
            "web_fetch's per-host egress check (`needs_approval`: parse the URL, look the host up)",
            Stats(egress, "ms"),
            None,
            "",
            below=1.0,
            note="The gate asks it before every web_fetch call, before any DNS lookup; a URL "
            "parse and a set lookup, per call.",
        ),
    ]


def _egress_check_ms(ctx: BenchContext) -> list[float]:
    """Milliseconds per ``needs_approval`` of web_fetch over 200 URLs (a third allowed)."""
    import tempfile

    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.guard.egress import EgressHosts
    from jupyter_agent.tools.web import WebFetchTool

    hosts = [f"host{i}.example.org" for i in range(200)]
    egress = EgressHosts(hosts[::3])
    with tempfile.TemporaryDirectory() as workspace:
        tool = WebFetchTool(ToolContext(workspace), egress=egress)
        urls = [{"url": f"https://{host}/path?q={i}"} for i, host in enumerate(hosts)]
        samples = []
        for _ in range(ctx.reps(21, 3)):
            started = time.perf_counter()
            for args in urls:
                tool.needs_approval(args)
            samples.append((time.perf_counter() - started) * 1e3 / len(urls))
    return samples
