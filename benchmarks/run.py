"""Run the benchmark figures, print the Markdown table, write ``benchmarks/RESULTS.md``.

python -m benchmarks              # full run (about 10 minutes on 2 cores), writes RESULTS.md
python -m benchmarks --quick      # tiny sizes, 1–2 repetitions: checks the suite still runs
python -m benchmarks --only 1,4   # some figures
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):  # `python benchmarks/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._harness import (
    REPO_ROOT,
    BenchContext,
    NotLanded,
    Row,
    format_number,
    not_measured,
    rg_binary,
)

FIGURES: list[tuple[str, str, str]] = [
    ("1", "benchmarks.fig1_registry_call", "`registry.call` overhead"),
    ("2", "benchmarks.fig2_agent_turns", "client-side overhead per agent turn"),
    ("3", "benchmarks.fig3_concurrent_tools", "8 tool calls of 0.25 s in one reply"),
    ("4", "benchmarks.fig4_search_text", "`search_text` on 20,000 files"),
    ("5", "benchmarks.fig5_search_files", "`search_files **/*.csv` on 100,000 files"),
    ("6", "benchmarks.fig6_read_file", "`read_file` near the end of a 1 GB file"),
    ("7", "benchmarks.fig7_run_bash", "`run_bash`"),
    ("8", "benchmarks.fig8_streaming_render", "streamed 2,000-token answer in the notebook"),
    ("9", "benchmarks.fig9_load_ext", "`%load_ext jupyter_agent` in a fresh process"),
    ("10", "benchmarks.fig10_web_fetch", "`web_fetch` of a 5 MB HTML page"),
    ("12", "benchmarks.fig12_long_session", "200-turn session, 20 KB tool result per turn"),
    ("14", "benchmarks.fig14_mcp", "MCP tool call through the registry; stdio connect"),
    ("15", "benchmarks.fig15_cell_recorder", "cell recorder per cell (100 KB printed + a PNG)"),
    ("16", "benchmarks.fig16_redaction", "redaction of a 1 MB tool result"),
    ("17", "benchmarks.fig17_serve", "`inspect_variable` through `%agent serve` (MCP over HTTP)"),
    ("18", "benchmarks.fig18_first_token", "first token of a fresh kernel's first `%%agent` cell"),
    ("19", "benchmarks.fig19_widget_round_trip", "widget round trip during a `%%agent` turn"),
    ("20", "benchmarks.fig20_run_cell", "`run_cell` end to end vs a plain cell execution"),
    ("21", "benchmarks.fig21_model_contract", "prompt cache across a tool toggle; a whole session"),
    ("22", "benchmarks.fig22_subshell", "a `%%agent` cell on a subshell beside a CPU-bound cell"),
    ("23", "benchmarks.fig23_replay", "replay of a recorded 10-call turn vs its tools alone"),
]
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "RESULTS.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1–2 repetitions (CI)")
    parser.add_argument("--only", default="", help="comma-separated figure numbers, e.g. 1,4")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"where to write the results (default: {DEFAULT_OUT.relative_to(REPO_ROOT)} for a "
        "full run; a quick run writes nothing unless given)",
    )
    parser.add_argument("--no-profile", action="store_true", help="skip pyinstrument on misses")
    args = parser.parse_args(argv)

    wanted = {f.strip() for f in args.only.split(",") if f.strip()}
    ctx = BenchContext(quick=args.quick, profile=not args.no_profile)
    started = time.perf_counter()
    rows: list[Row] = []
    errors = 0
    for number, module_name, title in FIGURES:
        if wanted and number not in wanted:
            continue
        print(f"figure {number}: {title}", file=sys.stderr, flush=True)
        figure_started = time.perf_counter()
        try:
            module = importlib.import_module(module_name)
            figure_rows: list[Row] = module.run(ctx)
        except NotLanded as exc:
            figure_rows = [not_measured(number, title, str(exc))]
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                figure_rows = [not_measured(number, title, "benchmark not written yet")]
            else:
                errors += 1
                traceback.print_exc()
                figure_rows = [not_measured(number, title, f"benchmark failed: {exc!r}")]
        except Exception as exc:
            errors += 1
            traceback.print_exc()
            figure_rows = [not_measured(number, title, f"benchmark failed: {exc!r}")]
        ctx.finish(figure_rows)
        print(f"  done in {time.perf_counter() - figure_started:.1f} s", file=sys.stderr)
        rows.extend(figure_rows)
    elapsed = time.perf_counter() - started

    table = render_table(rows)
    print(table)
    out = args.out if args.out is not None else (None if args.quick else DEFAULT_OUT)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_results(rows, table, quick=args.quick, elapsed_s=elapsed))
        print(f"wrote {out}", file=sys.stderr)
    return 1 if errors else 0


# -- rendering ---------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_table(rows: list[Row]) -> str:
    lines = [
        "| # | what | ours | theirs | ratio | goal | met? |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        if row.not_measured:
            lines.append(
                f"| {row.figure} | {_cell(row.what)} | — | — | — | {_cell(row.goal_text) or '—'} "
                f"| not measured: {_cell(row.not_measured)} |"
            )
            continue
        ours = row.ours.format() if row.ours else "—"
        theirs = f"{row.theirs_label}: {row.theirs.format()}" if row.theirs else row.theirs_label
        met = row.met
        if met is None:
            verdict = "—"
        elif met:
            verdict = "✅ yes"
        else:
            verdict = f"❌ no ({row.miss_factor:.2f}× off)"
        lines.append(
            f"| {row.figure} | {_cell(row.what)} | {_cell(ours)} | {_cell(theirs or '—')} "
            f"| {row.ratio_text()} | {_cell(row.goal_text)} | {verdict} |"
        )
    return "\n".join(lines)


def render_results(rows: list[Row], table: str, *, quick: bool, elapsed_s: float) -> str:
    parts = [
        "# Benchmark results",
        "",
        (
            "Generated by `python -m benchmarks --quick` (tiny sizes: the timings mean nothing)"
            if quick
            else "Generated by `python -m benchmarks`"
        )
        + f" on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, in {elapsed_s / 60:.1f} minutes.",
        "Every figure measures ours and the alternative in the same run, alternately, on the same",
        "machine; cells show the median with (min–max, number of samples). The ratio is median",
        "ours ÷ median theirs (or theirs ÷ ours for a speed-up).",
        "",
        "Run it again with `.venv/bin/python -m benchmarks` (4–6 minutes on this machine;",
        "`--only 4,5` for some figures, `--quick` for the smoke test CI runs).",
        "",
        "## Machine",
        "",
        *[f"- {line}" for line in describe_machine()],
        "",
        "## Results",
        "",
        _summary(rows),
        "",
        table,
        "",
        "## Notes",
        "",
    ]
    seen: set[str] = set()
    for row in rows:
        key = f"{row.figure}:{row.note}"
        if row.note and key not in seen:
            seen.add(key)
            parts.append(f"- **{row.figure}.** {row.note}")
    missed = [row for row in rows if row.met is False]
    if missed:
        parts += ["", "### Goals missed", ""]
        for row in missed:
            if row.goal_kind == "max_value" and row.ours is not None:
                measured = f"{format_number(row.ours.max)} {row.ours.unit} (worst sample)"
            elif row.goal_kind == "median_value" and row.ours is not None:
                measured = f"{format_number(row.ours.median)} {row.ours.unit} (median)"
            else:
                measured = row.ratio_text()
            parts.append(
                f"- **{row.figure}. {row.what}** — {measured} against a goal of "
                f"{row.goal_text} ({row.miss_factor:.2f}× off). "
                + (row.miss_note or "(no analysis recorded)")
            )
            if row.profile_text:
                parts += [
                    "",
                    "  pyinstrument, top frames of ours:",
                    "",
                    "  ```",
                    *[f"  {line}" for line in row.profile_text.splitlines()],
                    "  ```",
                ]
    unmeasured = [row for row in rows if row.not_measured]
    if unmeasured:
        parts += ["", "### Not measured", ""]
        parts += [f"- **{row.figure}. {row.what}** — {row.not_measured}" for row in unmeasured]
    parts.append("")
    return "\n".join(parts)


def _summary(rows: list[Row]) -> str:
    judged = [row for row in rows if row.met is not None]
    met = sum(1 for row in judged if row.met)
    unmeasured = sum(1 for row in rows if row.not_measured)
    text = f"{met} of {len(judged)} goals met"
    if unmeasured:
        text += f"; {unmeasured} figure{'s' if unmeasured != 1 else ''} not measured"
    return text + "."


def describe_machine() -> list[str]:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    versions = []
    for package in ("anthropic", "ipython", "jsonschema", "pydantic", "httpx2"):
        versions.append(f"{package} {_version(package)}")
    try:
        rg = subprocess.run(
            [rg_binary(), "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0]
    except Exception:
        rg = "ripgrep not found"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "jupyter_agent", "benchmarks"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if commit and dirty:
        commit += " (plus uncommitted changes)"
    return [
        f"CPU: {cpu}, {os.cpu_count()} cores; RAM: {ram}",
        f"OS: {platform.platform()}",
        f"Python: {platform.python_implementation()} {platform.python_version()}",
        f"Packages: {', '.join(versions)}; {rg}",
        f"jupyter-agent commit: {commit or 'unknown'}",
    ]


def _version(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
