"""``read_notebook``: a real .ipynb (written with nbformat) read compactly, images as parts, the
workspace confinement and bad files refused with a clear error."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

import nbformat
import pytest

from jupyter_agent import Image
from jupyter_agent.tools.base import ToolFailure
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.notebook_file import ReadNotebookTool


def _png() -> bytes:
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", (30, 20), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def _write_notebook(path: Path, png: bytes, extra_cells: int = 0) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    plot = nbformat.v4.new_code_cell("plt.plot([1, 2])", execution_count=2)
    plot.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"},
        )
    ]
    failing = nbformat.v4.new_code_cell("{}['k']", execution_count=3)
    failing.outputs = [
        nbformat.v4.new_output(
            "error",
            ename="KeyError",
            evalue="'k'",
            traceback=["\x1b[31mKeyError\x1b[0m Traceback", "\x1b[31mKeyError\x1b[0m: 'k'"],
        )
    ]
    printed = nbformat.v4.new_code_cell("print('hi')\n41 + 1", execution_count=1)
    printed.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="hi\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "42"}, execution_count=1),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# Sales"), printed, plot, failing]
    nb.cells += [nbformat.v4.new_code_cell("z = 1\n" + "#" * 4000) for _ in range(extra_cells)]
    nbformat.write(nb, path)


async def test_a_notebook_reads_as_cells_outputs_errors_and_images(tmp_path: Path) -> None:
    png = _png()
    _write_notebook(tmp_path / "analysis.ipynb", png)
    registry = create_default_registry(ToolContext(tmp_path))
    assert registry.is_tool_enabled("read_notebook")
    parts = await ReadNotebookTool(ToolContext(tmp_path)).execute({"file_path": "analysis.ipynb"})
    text, *images = parts
    assert images == [Image(png, "image/png")]
    assert isinstance(text, str)
    assert text.startswith("analysis.ipynb: 4 cells (python)")
    assert "── cell 1: markdown ──\n# Sales" in text
    assert "── cell 2: code [1] ──\nprint('hi')\n41 + 1\n[stdout]\nhi\n[result]\n42" in text
    assert "[image/png image, sent with this result]" in text
    assert "[error] KeyError: 'k'" in text and "\x1b[" not in text
    assert "base64" not in text and "iVBOR" not in text  # no image bytes as text


async def test_a_long_notebook_comes_in_parts(tmp_path: Path) -> None:
    _write_notebook(tmp_path / "long.ipynb", _png(), extra_cells=30)
    tool = ReadNotebookTool(ToolContext(tmp_path))
    [first, _image] = await tool.execute({"file_path": "long.ipynb"})
    assert isinstance(first, str) and "call again with start_cell=" in first
    assert len(first) < 45_000
    start = int(first.split("start_cell=")[1].split()[0])
    [rest] = await tool.execute({"file_path": "long.ipynb", "start_cell": start})
    assert isinstance(rest, str) and f"── cell {start}: code" in rest


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"not json", "not valid JSON"), (b'{"cells": 3}', "no 'cells' list")],
)
async def test_a_file_that_is_not_a_notebook_is_refused(
    tmp_path: Path, content: bytes, message: str
) -> None:
    (tmp_path / "bad.ipynb").write_bytes(content)
    with pytest.raises(ToolFailure, match=message):
        await ReadNotebookTool(ToolContext(tmp_path)).execute({"file_path": "bad.ipynb"})


async def test_a_notebook_outside_the_workspace_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _write_notebook(outside / "secret.ipynb", _png())
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.symlink(outside / "secret.ipynb", workspace / "link.ipynb")
    registry = create_default_registry(ToolContext(workspace))
    for path in ("../outside/secret.ipynb", "link.ipynb", str(outside / "secret.ipynb")):
        result = await registry.call("read_notebook", {"file_path": path})
        assert result.is_error, path
        assert "Sales" not in result.content
