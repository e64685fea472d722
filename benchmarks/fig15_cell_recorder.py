"""Figure 15: the cell recorder's cost per cell (what ``notebook_history`` reads).

Each sample is the mean, over 20 cells, of the recorder's own work for one cell that prints
100 KB of text and displays a PNG (about 80 KB as base64): the ``pre_run_cell`` and
``post_run_cell`` handlers, what the stream-write wrapper adds (``_add_stream``), and the
display-publisher hook receiving the ``display_data`` message as ipykernel hands it over. The
text and the image are kept by reference (no copy, no re-encoding), so the cost should not grow
with the output's size.
"""

from __future__ import annotations

import base64
import io
import os
import time
from typing import Any

from ._harness import BenchContext, Row, Stats, limit, require

FIGURE = "15"
_CELLS_PER_SAMPLE = 20


class _Info:
    raw_cell = "df.plot()\nprint(report)"


class _Result:
    execution_count = 1
    result = None
    error_in_exec = None
    error_before_exec = None


class _Sink:
    """A stream whose ``write`` the recorder wraps (the kernel's would send the text on)."""

    def write(self, text: str) -> int:
        return len(text)


def _png_base64() -> str:
    try:
        from PIL import Image as PILImage

        image = PILImage.frombytes("RGB", (200, 100), os.urandom(200 * 100 * 3))
        out = io.BytesIO()
        image.save(out, format="PNG")
        return base64.b64encode(out.getvalue()).decode("ascii")
    except ImportError:
        return base64.b64encode(os.urandom(45_000)).decode("ascii")


def run(ctx: BenchContext) -> list[Row]:
    recorder_module: Any = require("jupyter_agent.notebook.kernel.recorder")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    recorder = recorder_module.CellRecorder(shell)
    sink = _Sink()
    text = ("x" * 99 + "\n") * 1_000  # 100 KB printed
    message = {
        "msg_type": "display_data",
        "content": {
            "data": {"image/png": _png_base64(), "text/plain": "<Figure size 640x480>"},
            "metadata": {},
        },
    }
    info, result = _Info(), _Result()

    def one_cell() -> None:
        recorder._pre_run_cell(info)
        recorder._add_stream("stdout", text)
        sink.write(text)
        recorder._message_hook(message)
        recorder._post_run_cell(result)

    samples: list[float] = []
    for _ in range(ctx.reps(30, 3)):
        started = time.perf_counter()
        for _ in range(_CELLS_PER_SAMPLE):
            one_cell()
        samples.append((time.perf_counter() - started) / _CELLS_PER_SAMPLE * 1e3)
    kept = len(recorder.cells())
    ctx.log(f"figure 15: {len(samples)} samples; {kept} cells kept within the memory cap")
    return [
        limit(
            FIGURE,
            "cell recorder per cell (100 KB printed + a PNG)",
            Stats(samples, "ms"),
            None,
            "",
            below=1.0,
            note=(__doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else "")
            + f" Cells kept after the run: {kept} (the 20 MB cap drops the oldest).",
            miss_note="The recorder copies or re-encodes outputs; it should keep references.",
        )
    ]
