"""The benchmark suite still runs: ``python -m benchmarks --quick`` ends cleanly with a full table.

Quick mode uses tiny sizes and one or two repetitions, so nothing here looks at the timings; it
checks that every figure either measured something or says why it was not measured, that the
results file describes the machine, and that the table's verdicts follow from the numbers.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks._harness import Stats, compare, limit
from benchmarks.run import FIGURES

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_run_prints_and_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert table[0] == "| # | what | ours | theirs | ratio | goal | met? |"
    rows = table[2:]
    figures = {line.split("|")[1].strip() for line in rows}
    assert figures == {number for number, _module, _title in FIGURES}
    for line in rows:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        assert len(cells) == 7, line
        verdict = cells[-1]
        assert verdict.startswith(("✅", "❌", "—", "not measured:")), line
        assert "benchmark failed" not in verdict, line
        if not verdict.startswith("not measured"):
            assert re.search(r"\d", cells[2]), f"no number for ours: {line}"

    written = out.read_text()
    assert "## Machine" in written and "CPU:" in written and "Python:" in written
    assert "anthropic" in written and "ripgrep" in written
    assert "\n".join(table) in written


def test_verdicts_follow_from_the_numbers() -> None:
    slower = compare("x", "w", Stats([3.0, 2.0, 4.0], "ms"), Stats([1.0], "ms"), "t", max_ratio=1.0)
    assert slower.ratio == pytest.approx(3.0)
    assert slower.met is False and slower.miss_factor == pytest.approx(3.0)

    faster = compare("x", "w", Stats([0.25], "s"), Stats([2.0], "s"), "t", min_speedup=6.0)
    assert faster.ratio == pytest.approx(8.0) and faster.met is True
    assert faster.ratio_text() == "8.00× faster"

    too_slow = compare("x", "w", Stats([1.0], "s"), Stats([3.0], "s"), "t", min_speedup=6.0)
    assert too_slow.met is False and too_slow.miss_factor == pytest.approx(2.0)

    memory = limit("x", "w", Stats([40.0, 120.0], "MB"), None, "t", below=100.0)
    assert memory.met is False  # the worst sample counts, not the median

    # a goal stated as a median (figure 17) is judged on the median, and misses by it
    median_goal = limit(
        "x", "w", Stats([4.0, 4.5, 9.0], "ms"), None, "t", below=5.0, on_median=True
    )
    assert median_goal.met is True
    slow_median = limit(
        "x", "w", Stats([6.0, 7.5, 4.0], "ms"), None, "t", below=5.0, on_median=True
    )
    assert slow_median.met is False and slow_median.miss_factor == pytest.approx(1.2)
