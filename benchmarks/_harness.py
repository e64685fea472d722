"""The small harness every figure shares: repeated samples, rows of the table, peak memory.

A figure measures *ours* and *theirs* alternately in one process (so drift on a shared machine
hits both), keeps every sample, and reports min / median / max. A ``Row`` knows its goal and
whether the measurement met it; the runner turns rows into the Markdown table.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

REPO_ROOT = Path(__file__).resolve().parent.parent


class NotLanded(Exception):
    """The code a figure measures does not exist yet (its module is missing)."""


def require(module: str) -> Any:
    """Import one of our modules, or raise ``NotLanded`` naming it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise NotLanded(f"{module} has not landed yet") from None
        raise


# -- statistics ------------------------------------------------------------------------------


@dataclass
class Stats:
    """Repeated samples of one quantity."""

    samples: list[float]
    unit: str

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    def format(self) -> str:
        if len(self.samples) == 1:
            return f"{format_number(self.median)} {self.unit}"
        low, high = format_number(self.min), format_number(self.max)
        return (
            f"{format_number(self.median)} {self.unit} "
            f"<sub>({low}–{high}, n={len(self.samples)})</sub>"
        )


def format_number(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


# -- rows ------------------------------------------------------------------------------------

GoalKind = Literal["max_ratio", "min_speedup", "max_value", "median_value", "info"]


@dataclass
class Row:
    """One line of the table: ours against theirs, and the goal."""

    figure: str
    what: str
    theirs_label: str = ""
    ours: Stats | None = None
    theirs: Stats | None = None
    goal_kind: GoalKind = "info"
    goal_value: float = 0.0
    goal_text: str = ""
    #: Methodology or caveats, printed under Notes.
    note: str = ""
    #: Why a goal was missed and what would close it (printed only when missed).
    miss_note: str = ""
    not_measured: str = ""
    #: Runs "ours" once; the runner profiles it with pyinstrument when the goal is missed by >2×.
    profile_target: Callable[[], Any] | None = field(default=None, repr=False)
    profile_text: str = ""

    # ratio: always ours / theirs for "max_ratio" and theirs / ours for "min_speedup"
    @property
    def ratio(self) -> float | None:
        if self.ours is None or self.theirs is None or self.theirs.median == 0:
            return None
        if self.goal_kind == "min_speedup":
            return self.theirs.median / self.ours.median if self.ours.median else None
        return self.ours.median / self.theirs.median

    def ratio_text(self) -> str:
        ratio = self.ratio
        if ratio is None:
            return "—"
        if self.goal_kind == "min_speedup":
            return f"{ratio:.2f}× faster"
        return f"{ratio:.2f}×"

    @property
    def met(self) -> bool | None:
        if self.not_measured or self.ours is None:
            return None
        if self.goal_kind == "max_value":
            return self.ours.max < self.goal_value
        if self.goal_kind == "median_value":
            return self.ours.median <= self.goal_value
        ratio = self.ratio
        if ratio is None or self.goal_kind == "info":
            return None
        if self.goal_kind == "max_ratio":
            return ratio <= self.goal_value
        return ratio >= self.goal_value

    @property
    def miss_factor(self) -> float:
        """How far from the goal a miss is (1.0 = on it; 2.5 = off by 2.5×)."""
        if self.met is not False:
            return 1.0
        if self.goal_kind == "max_value":
            assert self.ours is not None
            return self.ours.max / self.goal_value
        if self.goal_kind == "median_value":
            assert self.ours is not None
            return self.ours.median / self.goal_value
        ratio = self.ratio
        assert ratio is not None
        if self.goal_kind == "max_ratio":
            return ratio / self.goal_value
        return self.goal_value / ratio if ratio else float("inf")


def compare(
    figure: str,
    what: str,
    ours: Stats,
    theirs: Stats,
    theirs_label: str,
    *,
    max_ratio: float | None = None,
    min_speedup: float | None = None,
    note: str = "",
    miss_note: str = "",
    profile_target: Callable[[], Any] | None = None,
) -> Row:
    """A row whose goal is a ratio (``ours/theirs <= max_ratio`` or ``theirs/ours >= ...``)."""
    if max_ratio is not None:
        kind: GoalKind = "max_ratio"
        value = max_ratio
        text = f"≤ {max_ratio:g}×"
    elif min_speedup is not None:
        kind = "min_speedup"
        value = min_speedup
        text = f"≥ {min_speedup:g}× faster"
    else:
        kind, value, text = "info", 0.0, "(context)"
    return Row(
        figure,
        what,
        theirs_label,
        ours,
        theirs,
        kind,
        value,
        text,
        note=note,
        miss_note=miss_note,
        profile_target=profile_target,
    )


def limit(
    figure: str,
    what: str,
    ours: Stats,
    theirs: Stats | None,
    theirs_label: str,
    *,
    below: float,
    goal_text: str = "",
    note: str = "",
    miss_note: str = "",
    on_median: bool = False,
) -> Row:
    """A row whose goal is an absolute bound on ours: every sample below ``below``, or with
    ``on_median`` the median at or below it (for a goal stated as a median)."""
    return Row(
        figure,
        what,
        theirs_label,
        ours,
        theirs,
        "median_value" if on_median else "max_value",
        below,
        goal_text or f"< {format_number(below)} {ours.unit}",
        note=note,
        miss_note=miss_note,
    )


def not_measured(figure: str, what: str, reason: str, goal_text: str = "") -> Row:
    return Row(figure, what, goal_text=goal_text, not_measured=reason)


# -- running samples ---------------------------------------------------------------------------


def paired(
    ours: Callable[[], float],
    theirs: Callable[[], float],
    repetitions: int,
    *,
    warmup: int = 1,
) -> tuple[list[float], list[float]]:
    """Run two sample functions alternately (order flipped every round); each returns a value."""
    for _ in range(warmup):
        ours()
        theirs()
    ours_samples: list[float] = []
    theirs_samples: list[float] = []
    for i in range(repetitions):
        if i % 2 == 0:
            ours_samples.append(ours())
            theirs_samples.append(theirs())
        else:
            theirs_samples.append(theirs())
            ours_samples.append(ours())
    return ours_samples, theirs_samples


async def paired_async(
    ours: Callable[[], Awaitable[float]],
    theirs: Callable[[], Awaitable[float]],
    repetitions: int,
    *,
    warmup: int = 1,
) -> tuple[list[float], list[float]]:
    """``paired`` for sample coroutines that share one event loop."""
    for _ in range(warmup):
        await ours()
        await theirs()
    ours_samples: list[float] = []
    theirs_samples: list[float] = []
    for i in range(repetitions):
        if i % 2 == 0:
            ours_samples.append(await ours())
            theirs_samples.append(await theirs())
        else:
            theirs_samples.append(await theirs())
            ours_samples.append(await ours())
    return ours_samples, theirs_samples


def timed(fn: Callable[[], Any]) -> float:
    """Wall time of one call, in seconds."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


async def timed_async(fn: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await fn()
    return time.perf_counter() - started


def run_in_loop(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine to completion on a fresh event loop (for sample functions)."""
    return asyncio.run(_call(coro_fn))


async def _call(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    return await coro_fn()


# -- subprocesses and memory -------------------------------------------------------------------


@dataclass
class ChildRun:
    """A finished child process: its wall time, peak resident memory, output."""

    wall_s: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """The last line of stdout, parsed as JSON (child scripts report their own timings)."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        if not lines:
            raise RuntimeError(f"child printed nothing; stderr:\n{self.stderr[-2000:]}")
        return json.loads(lines[-1])


# A small launcher process starts the measured command and reports *its* rusage. Measuring a child
# of this (big) runner directly would be wrong: Linux carries a process's peak RSS across exec, so a
# child forked from a 200 MB parent reports at least 200 MB. The launcher (``python -S``) is ~8 MB,
# which is therefore the floor of any peak reported here.
_LAUNCHER = """
import json, os, sys, time
report, argv = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - started
with open(report, "w") as f:
    json.dump({"wall": wall, "maxrss_kb": usage.ru_maxrss,
               "code": os.waitstatus_to_exitcode(status)}, f)
"""


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdout_to_devnull: bool = False,
    check: bool = True,
) -> ChildRun:
    """Run ``argv`` through the launcher; wall time and peak RSS are those of ``argv`` alone.

    Output goes to temp files, not pipes, so a chatty child can't make *us* the bottleneck.
    """
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile(suffix=".json") as report,
    ):
        subprocess.run(
            [sys.executable, "-S", "-c", _LAUNCHER, report.name, *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if stdout_to_devnull else out,
            stderr=err,
            check=False,
        )
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
        try:
            measured = json.loads(Path(report.name).read_text())
        except ValueError:
            raise RuntimeError(f"the launcher failed for {argv!r}: {stderr[-2000:]}") from None
    run = ChildRun(measured["wall"], measured["maxrss_kb"] / 1024, measured["code"], stdout, stderr)
    if check and run.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)[:200]} exited {run.returncode}; stderr:\n{run.stderr[-2000:]}"
        )
    return run


def python_child(code: str, *, cwd: Path | None = None, check: bool = True) -> ChildRun:
    """Run ``code`` in a fresh interpreter of this venv (the repo importable)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTHONSTARTUP", None)
    return run_child([sys.executable, "-c", code], cwd=cwd, env=env, check=check)


def rg_binary() -> str:
    """The ripgrep our search tool uses: the one installed with the venv, else PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.exists():
        return str(beside)
    found = shutil.which("rg")
    if found is None:
        raise NotLanded("ripgrep (rg) is not installed")
    return found


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temp folder for generated fixtures, deleted afterwards however the figure ends."""
    path = Path(tempfile.mkdtemp(prefix=f"jabench-{prefix}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- profiling -----------------------------------------------------------------------------------


def profile_top_frames(target: Callable[[], Any], *, lines: int = 40) -> str:
    """Run ``target`` under pyinstrument and return the top of its call tree as text."""
    try:
        from pyinstrument import Profiler
    except ImportError:  # pragma: no cover - pyinstrument is a dev dependency
        return "(pyinstrument is not installed)"
    profiler = Profiler(interval=0.0005, async_mode="enabled")
    profiler.start()
    try:
        target()
    finally:
        profiler.stop()
    text = profiler.output_text(unicode=True, color=False, show_all=False)
    body = text.splitlines()
    # drop pyinstrument's banner: the call tree starts at the first line with a time
    start = next((i for i, line in enumerate(body) if line[:1].isdigit()), 0)
    tree = [line for line in body[start:] if line.strip()]
    session = profiler.last_session
    summary = [f"wall {session.duration:.3f} s, CPU {session.cpu_time:.3f} s"] if session else []
    return "\n".join(summary + tree[:lines])


# -- the context a figure runs in -------------------------------------------------------------


#: A goal missed by more than this factor gets a pyinstrument profile in the notes.
PROFILE_WHEN_MISSED_BY = 2.0


@dataclass
class BenchContext:
    """What a figure needs from the runner: quick or full, and a way to say what it is doing."""

    quick: bool
    verbose: bool = True
    profile: bool = True

    def finish(self, rows: list[Row]) -> list[Row]:
        """Profile ours for every goal missed by more than 2× (a figure calls this while its
        fixtures still exist; the runner calls it again, which does nothing the second time)."""
        if self.quick or not self.profile:
            return rows
        for row in rows:
            missed_badly = row.met is False and row.miss_factor > PROFILE_WHEN_MISSED_BY
            if missed_badly and row.profile_target is not None and not row.profile_text:
                self.log(f"profiling figure {row.figure} (goal missed by {row.miss_factor:.1f}×)")
                try:
                    row.profile_text = profile_top_frames(row.profile_target)
                except Exception as exc:  # the profile is a bonus, never fatal
                    row.profile_text = f"(profiling failed: {exc!r})"
        return rows

    def reps(self, full: int, quick: int = 1) -> int:
        return quick if self.quick else full

    def size(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def log(self, message: str) -> None:
        if self.verbose:
            print(f"  … {message}", file=sys.stderr, flush=True)


def per_call_us(call: Callable[[], Awaitable[Any]], n: int) -> Callable[[], Awaitable[float]]:
    """A sampler for ``paired_async``: ``n`` awaited calls, the mean in microseconds per call."""

    async def sample() -> float:
        started = time.perf_counter()
        for _ in range(n):
            await call()
        return (time.perf_counter() - started) / n * 1e6

    return sample
