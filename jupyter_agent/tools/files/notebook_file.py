"""``read_notebook``: a Jupyter notebook file (``.ipynb``) read compactly, images included.

``read_file`` on an ``.ipynb`` gives the model JSON: base64 images as text, every output's
metadata, escaped sources. This renders it as a reader sees it — each cell's kind, execution
count, source, its text outputs, errors (without terminal colours) and its images as
``jupyter_agent.Image`` parts (at most ``MAX_NOTEBOOK_IMAGES``), each right after its cell's text
so that a plot is seen under its own cell — within a size budget, with
``start_cell`` to page on. The file is opened beneath the workspace like every file tool's read
(``_read_notebook_bytes``, one function, so the descriptor-safe read can be swapped in one place);
it is parsed with the standard library's ``json`` (no nbformat, no IPython in the core). Its
images are fitted within the call, in a worker (``image_fit.prepare_off_loop``): one past the
pixel cap is named and never decoded. nbformat 3 notebooks (older books and courses) are read
too, upgraded in memory as nbformat's own converter does (``_upgrade_v3``); older ones are
refused with a clear error.
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

from ..arguments import optional_int_arg, str_arg
from ..base import IMAGE_MEDIA_TYPES, BuiltinTool, Image, ToolFailure
from ..cut_mark import cut_mark
from ..guard.beneath import WorkspaceRoot
from ..image_fit import prepare_off_loop
from ..result_budget import page_chars

#: Largest notebook file read, in bytes.
MAX_NOTEBOOK_BYTES = 50_000_000
#: Characters of text the result holds at most.
MAX_NOTEBOOK_CHARS = 40_000
#: Characters of one source or one output shown at most.
MAX_CELL_PART_CHARS = 5_000
#: Images returned at most.
MAX_NOTEBOOK_IMAGES = 5

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _joined(value: object) -> str:
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} {cut_mark(len(text) - limit)}"


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


def _output_lines(output: dict[str, Any], images: list[Image]) -> list[str | Image]:
    """An output's lines, each image right after the line that names it; ``images`` holds the
    images taken so far (at most ``MAX_NOTEBOOK_IMAGES``)."""
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
    lines: list[str | Image] = []
    label = "[result]" if kind == "execute_result" else "[display]"
    image_type = next((t for t in IMAGE_MEDIA_TYPES if t in data), None)
    text = _joined(data.get("text/plain")) or _joined(data.get("text/markdown"))
    if text and not (image_type and text.startswith("<Figure")):
        lines.append(f"{label}\n{_clip(text.rstrip(), MAX_CELL_PART_CHARS)}")
    if image_type is not None:
        if len(images) >= MAX_NOTEBOOK_IMAGES:
            lines.append(f"[{image_type} image not sent: at most {MAX_NOTEBOOK_IMAGES} a call]")
        else:
            try:
                image = Image(base64.b64decode(_joined(data[image_type])), image_type)
            except (binascii.Error, ValueError):
                lines.append(f"[{image_type} image unreadable]")
            else:
                images.append(image)
                lines += [f"[{image_type} image, sent with this result]", image]
    elif not text and data:
        lines.append(f"{label} ({', '.join(sorted(data))})")
    return lines


#: nbformat 3's short names of output data (``png``) and their MIME types (nbformat 4's keys).
_V3_MIME = {
    "text": "text/plain",
    "html": "text/html",
    "svg": "image/svg+xml",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "latex": "text/latex",
    "json": "application/json",
    "javascript": "application/javascript",
    "pdf": "application/pdf",
}
_V3_OUTPUT_FIELDS = frozenset({"output_type", "prompt_number", "metadata"})


def _upgrade_v3(notebook: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """An nbformat 3 notebook as the nbformat 4 shape this module reads, and its language.

    What nbformat's own ``v4.convert.upgrade`` does, for reading (nbformat is not a runtime
    dependency): the worksheets' cells in one list; a heading cell becomes a markdown ``#``
    line; a code cell's ``input``/``prompt_number`` become ``source``/``execution_count``;
    ``pyout`` and ``pyerr`` outputs become ``execute_result`` and ``error``, their short data
    keys (``png``, ``text``) MIME types; a stream's ``stream`` becomes its ``name``.
    """
    cells: list[dict[str, Any]] = []
    language = ""
    worksheets = notebook.get("worksheets")
    for sheet in worksheets if isinstance(worksheets, list) else []:
        sheet_cells = sheet.get("cells") if isinstance(sheet, dict) else None
        for cell in sheet_cells if isinstance(sheet_cells, list) else []:
            if not isinstance(cell, dict):
                continue
            kind = cell.get("cell_type")
            if kind == "code":
                language = language or str(cell.get("language") or "")
                outputs = cell.get("outputs")
                cells.append(
                    {
                        "cell_type": "code",
                        "source": cell.get("input", ""),
                        "execution_count": cell.get("prompt_number"),
                        "outputs": [
                            _upgrade_v3_output(output)
                            for output in (outputs if isinstance(outputs, list) else [])
                            if isinstance(output, dict)
                        ],
                    }
                )
            elif kind == "heading":
                level = cell.get("level", 1)
                hashes = "#" * (level if isinstance(level, int) and 0 < level < 7 else 1)
                line = " ".join(_joined(cell.get("source")).splitlines())
                cells.append({"cell_type": "markdown", "source": f"{hashes} {line}"})
            else:
                cells.append(
                    {
                        "cell_type": "markdown" if kind == "html" else kind,
                        "source": cell.get("source", ""),
                    }
                )
    return {"cells": cells, "metadata": notebook.get("metadata") or {}}, language


def _upgrade_v3_output(output: dict[str, Any]) -> dict[str, Any]:
    kind = output.get("output_type")
    if kind in ("pyout", "display_data"):
        data = {
            _V3_MIME.get(key, key): value
            for key, value in output.items()
            if key not in _V3_OUTPUT_FIELDS
        }
        return {
            "output_type": "execute_result" if kind == "pyout" else "display_data",
            "data": data,
        }
    if kind == "pyerr":
        return {**output, "output_type": "error"}
    if kind == "stream":
        return {"output_type": "stream", "name": output.get("stream", "stdout"), **output}
    return output


def render_notebook(raw: bytes, shown: str, start_cell: int = 1) -> list[str | Image]:
    """The notebook in ``raw`` as text and image parts, from cell ``start_cell`` (1-based)."""
    try:
        notebook = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ToolFailure(f"{shown} is not a notebook (not valid JSON: {exc})") from None
    version = notebook.get("nbformat") if isinstance(notebook, dict) else None
    language = ""
    if isinstance(notebook, dict) and version == 3 and "cells" not in notebook:
        notebook, language = _upgrade_v3(notebook)
    elif isinstance(version, int) and version < 3:
        raise ToolFailure(
            f"{shown} is an nbformat {version} notebook; read_notebook reads nbformat 3 and 4 "
            "(open and save it in Jupyter to upgrade it, or read it with read_file)"
        )
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ToolFailure(f"{shown} is not a notebook (no 'cells' list; nbformat 3 or 4 expected)")
    metadata = notebook.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("kernelspec"), dict):
        language = str(metadata["kernelspec"].get("language", "")) or language
    images: list[Image] = []
    blocks: list[list[str | Image]] = []
    used = 0
    # within what the agent passes on uncut, so that "start_cell=N" follows what was seen
    limit = page_chars(MAX_NOTEBOOK_CHARS, with_images=True)
    last_shown = start_cell - 1
    for index, cell in enumerate(cells[start_cell - 1 :], start=start_cell):
        if not isinstance(cell, dict):
            continue
        kind = str(cell.get("cell_type", "?"))
        count = cell.get("execution_count")
        head = f"── cell {index}: {kind}" + (f" [{count}]" if kind == "code" and count else "")
        lines: list[str | Image] = [
            head + " ──",
            _clip(_joined(cell.get("source")), MAX_CELL_PART_CHARS),
        ]
        taken = len(images)
        for output in cell.get("outputs") or []:
            if isinstance(output, dict):
                lines.extend(_output_lines(output, images))
        block = _merged(lines, "\n")
        size = sum(len(part) for part in block if isinstance(part, str))
        if used + size > limit and blocks:
            del images[taken:]  # this cell is left for the next page, its images with it
            break
        blocks.append(block)
        used += size
        last_shown = index
    total = len(cells)
    header = f"{shown}: {total} cells" + (f" ({language})" if language else "")
    if version == 3:
        header += "; nbformat 3"
    if start_cell > total:
        header += f"; start_cell {start_cell} is past the end"
    elif last_shown < total:
        header += (
            f"; showing cells {start_cell}–{last_shown} (size budget): call again with "
            f"start_cell={last_shown + 1} for the rest"
        )
    # each cell's images under that cell's text, so that a plot is seen under its own cell
    parts: list[str | Image] = [header]
    for block in blocks:
        first, *rest = block
        parts += ["\n\n" + first, *rest] if isinstance(first, str) else block
    return _merged(parts, "")


def _merged(parts: list[str | Image], between: str) -> list[str | Image]:
    """``parts`` with each run of adjacent text parts joined by ``between``."""
    merged: list[str | Image] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += between + part
        else:
            merged.append(part)
    return merged


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
        # decoded and downscaled here, in a worker within this call (and its deadline), past
        # the pixel cap not at all; the agent then finds them fitted. Each stays in its place,
        # under its cell, or a note takes it.
        fitted: list[str | Image] = []
        for part in parts:
            if isinstance(part, str):
                fitted.append(part)
                continue
            prepared = await prepare_off_loop([part], None, max_images=1)
            fitted += [*prepared.images, *prepared.notes]
        return _merged(fitted, "\n")
