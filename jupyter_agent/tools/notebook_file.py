"""``read_notebook``: a Jupyter notebook file (``.ipynb``) read compactly, images included.

``read_file`` on an ``.ipynb`` gives the model JSON: base64 images as text, every output's
metadata, escaped sources. This renders it as a reader sees it — each cell's kind, execution
count, source, its text outputs, errors (without terminal colours) and its images as
``jupyter_agent.Image`` parts (at most ``MAX_NOTEBOOK_IMAGES``) — within a size budget, with
``start_cell`` to page on. The file is opened beneath the workspace like every file tool's read
(``_read_notebook_bytes``, one function, so the descriptor-safe read can be swapped in one place);
it is parsed with the standard library's ``json`` (no nbformat, no IPython in the core). Its
images are fitted within the call, in a worker (``image_fit.prepare_off_loop``): one past the
pixel cap is named and never decoded.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import re
from pathlib import Path
from typing import Any, ClassVar

from .arguments import optional_int_arg, str_arg
from .base import BuiltinTool, Image, ToolFailure
from .beneath import WorkspaceRoot
from .image_fit import prepare_off_loop

#: Largest notebook file read, in bytes.
MAX_NOTEBOOK_BYTES = 50_000_000
#: Characters of text the result holds at most.
MAX_NOTEBOOK_CHARS = 40_000
#: Characters of one source or one output shown at most.
MAX_CELL_PART_CHARS = 5_000
#: Images returned at most.
MAX_NOTEBOOK_IMAGES = 5

_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _joined(value: object) -> str:
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def _read_notebook_bytes(held: WorkspaceRoot, path: Path, shown: str) -> bytes:
    """The file's bytes, opened beneath the workspace root (no symlink or FIFO escapes)."""
    try:
        fd = held.open_regular(path, shown)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(f"File not found: {shown}") from None
    except OSError as exc:
        raise ToolFailure(f"Cannot read {shown}: {exc.strerror or exc}") from None
    with open(fd, "rb") as raw:
        size = os.fstat(raw.fileno()).st_size
        if size > MAX_NOTEBOOK_BYTES:
            raise ToolFailure(
                f"{shown} is {size} bytes; read_notebook reads notebooks up to "
                f"{MAX_NOTEBOOK_BYTES} bytes"
            )
        return raw.read(MAX_NOTEBOOK_BYTES + 1)


def _output_lines(output: dict[str, Any], images: list[Image]) -> list[str]:
    kind = output.get("output_type")
    if kind == "stream":
        text = _joined(output.get("text")).rstrip("\n")
        return [f"[{output.get('name', 'stdout')}]\n{_clip(text, MAX_CELL_PART_CHARS)}"]
    if kind == "error":
        trace = "\n".join(_ANSI.sub("", str(line)) for line in output.get("traceback") or [])
        head = f"[error] {output.get('ename', '')}: {output.get('evalue', '')}"
        tail = trace[-MAX_CELL_PART_CHARS:] if trace else ""
        return [head + ("\n" + tail if tail else "")]
    if kind not in ("display_data", "execute_result"):
        return []
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    assert isinstance(data, dict)
    lines = []
    label = "[result]" if kind == "execute_result" else "[display]"
    image_type = next((t for t in _IMAGE_TYPES if t in data), None)
    text = _joined(data.get("text/plain")) or _joined(data.get("text/markdown"))
    if text and not (image_type and text.startswith("<Figure")):
        lines.append(f"{label}\n{_clip(text.rstrip(), MAX_CELL_PART_CHARS)}")
    if image_type is not None:
        if len(images) >= MAX_NOTEBOOK_IMAGES:
            lines.append(f"[{image_type} image not sent: at most {MAX_NOTEBOOK_IMAGES} a call]")
        else:
            try:
                images.append(Image(base64.b64decode(_joined(data[image_type])), image_type))
                lines.append(f"[{image_type} image, sent with this result]")
            except (binascii.Error, ValueError):
                lines.append(f"[{image_type} image unreadable]")
    elif not text and data:
        lines.append(f"{label} ({', '.join(sorted(data))})")
    return lines


def render_notebook(raw: bytes, shown: str, start_cell: int = 1) -> list[str | Image]:
    """The notebook in ``raw`` as text and image parts, from cell ``start_cell`` (1-based)."""
    try:
        notebook = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ToolFailure(f"{shown} is not a notebook (not valid JSON: {exc})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ToolFailure(f"{shown} is not a notebook (no 'cells' list; nbformat 4 expected)")
    language = ""
    metadata = notebook.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("kernelspec"), dict):
        language = str(metadata["kernelspec"].get("language", ""))
    images: list[Image] = []
    blocks: list[str] = []
    used = 0
    last_shown = start_cell - 1
    for index, cell in enumerate(cells[start_cell - 1 :], start=start_cell):
        if not isinstance(cell, dict):
            continue
        kind = str(cell.get("cell_type", "?"))
        count = cell.get("execution_count")
        head = f"── cell {index}: {kind}" + (f" [{count}]" if kind == "code" and count else "")
        lines = [head + " ──", _clip(_joined(cell.get("source")), MAX_CELL_PART_CHARS)]
        for output in cell.get("outputs") or []:
            if isinstance(output, dict):
                lines.extend(_output_lines(output, images))
        block = "\n".join(lines)
        if used + len(block) > MAX_NOTEBOOK_CHARS and blocks:
            break
        blocks.append(block)
        used += len(block)
        last_shown = index
    total = len(cells)
    header = f"{shown}: {total} cells" + (f" ({language})" if language else "")
    if start_cell > total:
        header += f"; start_cell {start_cell} is past the end"
    elif last_shown < total:
        header += (
            f"; showing cells {start_cell}–{last_shown} (size budget): call again with "
            f"start_cell={last_shown + 1} for the rest"
        )
    parts: list[str | Image] = ["\n\n".join([header, *blocks])]
    parts.extend(images)
    return parts


class ReadNotebookTool(BuiltinTool):
    name = "read_notebook"
    description = (
        "Read a Jupyter notebook (.ipynb) in the workspace compactly: each cell's kind, "
        "execution count and source, its text outputs and errors, and its plots as images. "
        "Prefer it to read_file for notebooks. Long notebooks come in parts: start_cell pages on."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Path of the .ipynb file"},
            "start_cell": {
                "type": "integer",
                "minimum": 1,
                "description": "First cell to show, 1-based (default 1)",
            },
        },
        "required": ["file_path"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> list[str | Image]:
        file_path = str_arg(args, "file_path")
        start_cell = optional_int_arg(args, "start_cell", minimum=1) or 1
        path = self.context.resolve(file_path)
        held = self.context.confinement.held
        raw = await asyncio.to_thread(_read_notebook_bytes, held, path, file_path)
        parts = await asyncio.to_thread(render_notebook, raw, file_path, start_cell)
        images = [part for part in parts if isinstance(part, Image)]
        if not images:
            return parts
        # decoded and downscaled here, in a worker within this call (and its deadline), past
        # the pixel cap not at all; the agent then finds them fitted
        prepared = await prepare_off_loop(images, None, max_images=len(images))
        texts = [part for part in parts if isinstance(part, str)]
        return [*texts, *prepared.notes, *prepared.images]
