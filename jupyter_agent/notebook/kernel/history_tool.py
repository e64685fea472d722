"""``notebook_history``: the agent reads the cells the user ran, their outputs, errors and plots.

It reads the session's ``CellRecorder`` (``recorder.py``) and renders the chosen cells oldest
first, newest kept when the size budget runs out: each cell's execution count and source, its
printed text, results, errors with their traceback, and its images as ``jupyter_agent.Image``
parts (decoded from what the notebook displayed; the agent downscales them when it sends them),
each image right after the text of the cell that showed it, so the model sees every plot under
its own cell (``ToolResult.parts`` keeps that order up to the request).
The ``%%agent`` cell that asks is still running, so it is never among them; a cell answered
beside a running cell (on a subshell) sees that running cell last, with its output so far.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, ClassVar

from ...tools.base import BuiltinTool, Image, ToolFailure
from ...tools.context import ToolContext
from ..text import clip
from .recorder import CellRecorder, RecordedCell

#: Characters of text the result holds at most (sources, outputs, tracebacks).
MAX_HISTORY_CHARS = 30_000
#: Characters of one cell's source, and of one output, shown at most.
MAX_PART_CHARS = 4_000
#: Images returned at most (the newest cells' first).
MAX_HISTORY_IMAGES = 5
#: Cells one call may ask for.
MAX_CELLS = 100


def render_cell(cell: RecordedCell, image_room: int) -> list[str | Image]:
    """One cell as text and, each under the output that showed it, its images (at most
    ``image_room`` of them)."""
    label = cell.execution_count if cell.execution_count is not None else "?"
    parts: list[str | Image] = []
    lines = [f"── cell [{label}] ──", clip(cell.source.rstrip("\n"), MAX_PART_CHARS)]
    for output in cell.outputs:
        text = output.full_text().rstrip("\n")
        if output.kind == "stream":
            lines.append(f"[{output.name}]\n{clip(text, MAX_PART_CHARS)}")
        elif output.kind == "error":
            lines.append(f"[error]\n{clip(text, MAX_PART_CHARS)}")
        else:
            head = "[result]" if output.kind == "result" else "[display]"
            if text and not (output.images and text.startswith("<Figure")):
                lines.append(f"{head}\n{clip(text, MAX_PART_CHARS)}")
            elif text:
                lines.append(f"{head} {clip(text, 200)}")
        for media_type, encoded in output.images:
            if image_room <= 0:
                lines.append(f"[{media_type} image not sent: at most {MAX_HISTORY_IMAGES} a call]")
                continue
            try:
                image = Image(base64.b64decode(encoded, validate=False), media_type)
            except (binascii.Error, ValueError):
                lines.append(f"[{media_type} image unreadable]")
                continue
            lines.append(f"[{media_type} image of cell [{label}], sent with this result]")
            parts += ["\n".join(lines), image]
            lines = []
            image_room -= 1
    if cell.truncated:
        lines.append("[this cell's output was longer; the record keeps its first 2 MB]")
    if lines:
        parts.append("\n".join(lines))
    return parts


def _text_size(parts: list[str | Image]) -> int:
    return sum(len(part) for part in parts if isinstance(part, str))


def _joined(cells: list[list[str | Image]]) -> list[str | Image]:
    """The cells' parts in one list, a blank line between cells, adjacent texts merged."""
    joined: list[str | Image] = []
    for parts in cells:
        for index, part in enumerate(parts):
            if isinstance(part, str) and joined and isinstance(joined[-1], str):
                joined[-1] += ("\n\n" if index == 0 else "\n") + part
            elif isinstance(part, str) and index == 0 and joined:
                joined.append("\n" + part)  # after an image: the blank line between cells
            else:
                joined.append(part)
    return joined


class NotebookHistoryTool(BuiltinTool):
    name = "notebook_history"
    description = (
        "Read the cells the user ran in this notebook session, oldest first: each cell's "
        "execution count [n], source, printed output, results, errors with traceback, and the "
        "images (plots) it displayed. Use it to see what the user did, the error they just got "
        "or the plot they made. Default: the last 10 cells; 'cells' picks execution counts."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "last": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_CELLS,
                "description": "How many of the most recent cells (default 10)",
            },
            "cells": {
                "type": "array",
                "items": {"type": "integer"},
                "maxItems": MAX_CELLS,
                "description": "Execution counts of the cells to show, e.g. [3, 4]",
            },
        },
    }

    def __init__(
        self, context: ToolContext, recorder: CellRecorder, *, include_running: bool = False
    ) -> None:
        super().__init__(context)
        self.recorder = recorder
        #: Add the cell the main shell runs now, its output so far (for a cell answered
        #: beside it on a subshell: ``front/ask_beside.py``).
        self.include_running = include_running

    async def execute(self, args: dict[str, object]) -> list[str | Image]:
        counts = args.get("cells")
        if counts is not None:
            if not isinstance(counts, list) or not all(
                isinstance(c, int) and not isinstance(c, bool) for c in counts
            ):
                raise ToolFailure("'cells' must be a list of execution counts (integers)")
            cells = self.recorder.cells(counts=counts[:MAX_CELLS])
            if not cells:
                known = [c.execution_count for c in self.recorder.cells()]
                raise ToolFailure(
                    f"no recorded cell has execution count {counts}; recorded: {known[-30:]}"
                )
        else:
            last = args.get("last", 10)
            if not isinstance(last, int) or isinstance(last, bool) or last < 1:
                raise ToolFailure("'last' must be a positive integer")
            cells = self.recorder.cells(last=min(last, MAX_CELLS))
            running = self.recorder.running() if self.include_running else None
            if running is not None:
                keep = min(last, MAX_CELLS) - 1  # the running cell is the newest
                cells = [*(cells[-keep:] if keep else []), running]
        if not cells:
            return ["No cells have run in this session since the extension was loaded."]
        rendered: list[list[str | Image]] = []
        used = 0
        room = MAX_HISTORY_IMAGES
        for cell in reversed(cells):  # newest first, so the budget keeps the recent ones
            parts = render_cell(cell, room)
            size = _text_size(parts)
            if used + size > MAX_HISTORY_CHARS and rendered:
                left_out = len(cells) - len(rendered)
                rendered.append([f"[{left_out} older cells left out: size budget]"])
                break
            rendered.append(parts)
            used += size
            room -= sum(isinstance(part, Image) for part in parts)
        rendered.reverse()
        return _joined(rendered)
