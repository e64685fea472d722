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
from jupyter_agent.tools.files.notebook_file import ReadNotebookTool


def _png(size: tuple[int, int] = (30, 20)) -> bytes:
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", size, (10, 120, 200)).save(out, format="PNG")
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
    before, image, after = parts  # the plot under its own cell, before the next cell
    assert image == Image(png, "image/png")
    assert isinstance(before, str) and isinstance(after, str)
    assert before.endswith("[image/png image, sent with this result]")
    assert after.startswith("\n\n── cell 4: code [3] ──")
    text = before + after
    assert text.startswith("analysis.ipynb: 4 cells (python)")
    assert "── cell 1: markdown ──\n# Sales" in text
    assert "── cell 2: code [1] ──\nprint('hi')\n41 + 1\n[stdout]\nhi\n[result]\n42" in text
    assert "[image/png image, sent with this result]" in text
    assert "[error] KeyError: 'k'" in text and "\x1b[" not in text
    assert "base64" not in text and "iVBOR" not in text  # no image bytes as text


async def test_a_long_notebook_comes_in_parts(tmp_path: Path) -> None:
    _write_notebook(tmp_path / "long.ipynb", _png(), extra_cells=30)
    tool = ReadNotebookTool(ToolContext(tmp_path))
    [first, _image, _after] = await tool.execute({"file_path": "long.ipynb"})
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


def _plot_cell(png: bytes, source: str, count: int) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, execution_count=count)
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"},
        )
    ]
    return cell


async def test_each_plot_comes_under_the_cell_that_drew_it(tmp_path: Path) -> None:
    """Cell 1's text, its plot, cell 2's text, its plot — not every image after all the text,
    where a plot seems to belong to the last cell listed."""
    first, second = _png(), _png((60, 40))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _plot_cell(first, "plt.plot([1, 2])", 1),
        _plot_cell(second, "plt.bar([1, 2], [2, 1])", 2),
        nbformat.v4.new_markdown_cell("The end"),
    ]
    nbformat.write(nb, tmp_path / "plots.ipynb")
    parts = await ReadNotebookTool(ToolContext(tmp_path)).execute({"file_path": "plots.ipynb"})
    kinds = [part if isinstance(part, Image) else "text" for part in parts]
    assert kinds == ["text", Image(first, "image/png"), "text", Image(second, "image/png"), "text"]
    text_1, text_2, text_3 = (part for part in parts if isinstance(part, str))
    assert "plt.plot" in text_1 and "plt.bar" not in text_1
    assert "plt.bar" in text_2 and "The end" not in text_2
    assert "The end" in text_3


async def test_a_plot_of_a_cell_left_for_the_next_page_is_not_sent(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("z = 1\n" + "#" * 4000) for _ in range(9)]
    # the plot's cell is the one that does not fit: its plot was read before it was left out
    nb.cells.append(_plot_cell(_png(), "plt.plot([1, 2])\n" + "#" * 4000, 10))
    nbformat.write(nb, tmp_path / "long.ipynb")
    parts = await ReadNotebookTool(ToolContext(tmp_path)).execute({"file_path": "long.ipynb"})
    [text] = parts
    assert isinstance(text, str) and "call again with start_cell=" in text
    assert "plt.plot" not in text
