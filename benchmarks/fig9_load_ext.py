"""Figure 9: ``%load_ext jupyter_agent`` in a fresh process, against ``import anthropic``.

Each sample is a fresh interpreter that first creates an IPython ``InteractiveShell`` (in a
notebook the kernel has one before any cell runs), then times, inside the process, either
``%load_ext jupyter_agent`` or ``import anthropic``. The extension should import the SDK only
when the first ``%%agent`` cell needs it.
"""

from __future__ import annotations

from ._harness import BenchContext, Row, Stats, compare, python_child, require, scratch_dir

FIGURE = "9"

_CHILD = """
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
started = time.perf_counter()
{statement}
elapsed = time.perf_counter() - started
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"s": elapsed, "heavy": heavy}}))
"""
_HEAVY = ("anthropic", "ipywidgets", "httpx2", "pydantic", "jsonschema")
_OURS = 'shell.run_line_magic("load_ext", "jupyter_agent")'
_THEIRS = "import anthropic"


def run(ctx: BenchContext) -> list[Row]:
    require("jupyter_agent.notebook.front.extension")
    repetitions = ctx.reps(9, 1)
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    heavy: set[str] = set()
    ctx.log(f"figure 9: {repetitions} fresh interpreters per side")
    with scratch_dir("loadext") as cwd:  # a neutral folder: no stray jupyter_agent/ on sys.path
        python_child(
            _CHILD.format(statement=_THEIRS, heavy=_HEAVY), cwd=cwd
        )  # warm the OS file cache
        python_child(_CHILD.format(statement=_OURS, heavy=_HEAVY), cwd=cwd)
        for i in range(repetitions):
            order = (True, False) if i % 2 == 0 else (False, True)
            for ours in order:
                child = python_child(
                    _CHILD.format(statement=_OURS if ours else _THEIRS, heavy=_HEAVY), cwd=cwd
                )
                report = child.json()
                if ours:
                    ours_ms.append(report["s"] * 1e3)
                    heavy.update(report["heavy"])
                else:
                    theirs_ms.append(report["s"] * 1e3)
    loaded = ", ".join(sorted(heavy)) or f"none of {', '.join(_HEAVY)}"
    return [
        compare(
            FIGURE,
            "`%load_ext jupyter_agent` in a fresh process",
            Stats(ours_ms, "ms"),
            Stats(theirs_ms, "ms"),
            "`import anthropic`",
            max_ratio=1.2,
            note=(
                (__doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else "")
                + f" Heavy modules `%load_ext` imported: {loaded}."
            ),
            miss_note=(
                "Loading the extension imports more than registering the magics needs; "
                f"it pulled in: {loaded}. Deferring those imports to the first `%%agent` cell "
                "would close it."
            ),
        )
    ]
