"""notebook_history puts each output under the cell that made it (issue 25), in a real kernel.

A figure matplotlib's inline backend flushes at ``post_execute`` belongs to the cell that drew
it; a cell magic that runs its body as a nested cell (``%%capture``) is one cell, with its own
execution count and source — it took the next cell's number and lost its ``%%capture`` line, so
what followed was listed under the wrong number. Each image is named after its cell, so the
model can tell which cell's plot it is looking at.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from nbclient import NotebookClient

pytestmark = pytest.mark.slow


def test_each_output_is_listed_under_the_cell_that_made_it(
    tmp_path: Path,
    fake_api: FakeAnthropic,
) -> None:
    fake_api.add(Reply([tool_use("toolu_1", "notebook_history", {"last": 10})]), text("Seen."))
    cells = [
        "%load_ext jupyter_agent",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]);",  # flushed at post_execute
        "%%capture\nprint('kept quiet')",
        "x = 1",
        "print('after the plot')",
        "%%agent\nWhat did my cells do?",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    counts = [cell.get("execution_count") for cell in nb.cells]
    assert counts[:5] == [1, 2, 3, 4, 5]
    body = result_text(tool_results(fake_api.requests[1])[0])
    header = r"── cell \[(\d+)\] ──\n(.*?)(?=\n── cell \[|\Z)"
    blocks = {int(number): block for number, block in re.findall(header, body, re.S)}
    assert sorted(blocks) == [2, 3, 4, 5], body
    assert "plt.plot" in blocks[2] and "image/png image" in blocks[2]
    assert blocks[3].startswith("%%capture\nprint('kept quiet')"), body
    assert blocks[4].startswith("x = 1") and "image" not in blocks[4]
    assert "after the plot" in blocks[5] and "image" not in blocks[5]
    assert "[image/png image of cell [2], sent with this result]" in blocks[2]


def test_each_plot_reaches_the_model_under_the_cell_that_drew_it(
    tmp_path: Path,
    fake_api: FakeAnthropic,
) -> None:
    """The request holds cell 1's text, its plot, cell 2's text, its plot — in that order, not
    every image after the last cell's text (where a plot seems to belong to the last cell)."""
    fake_api.add(Reply([tool_use("toolu_1", "notebook_history", {"last": 10})]), text("Seen."))
    cells = [
        "%load_ext jupyter_agent",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]); print('first plot drawn')",
        "plt.bar([1, 2], [3, 1]); print('second plot drawn')",
        "%%agent\nWhat did my cells draw?",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    [result] = tool_results(fake_api.requests[1])
    content = result["content"]
    assert isinstance(content, list), content
    order: list[str] = []
    for block in content:
        if block["type"] == "image":
            order.append("image")
        elif "first plot drawn" in block["text"] and "second plot drawn" in block["text"]:
            order.append("text of both cells")
        elif "first plot drawn" in block["text"]:
            order.append("text of cell 2")
        elif "second plot drawn" in block["text"]:
            order.append("text of cell 3")
    assert order == ["text of cell 2", "image", "text of cell 3", "image"], content
    first, second = (block["text"] for block in content if block["type"] == "text")
    assert "── cell [2] ──" in first and "── cell [3] ──" not in first
    assert first.rstrip().endswith("[image/png image of cell [2], sent with this result]")
    assert second.lstrip().startswith("── cell [3] ──")
    assert second.rstrip().endswith("[image/png image of cell [3], sent with this result]")


def test_the_running_cell_is_listed_under_its_own_number(tmp_path: Path) -> None:
    """IPython 9.8 counts a cell before ``pre_run_cell`` fires (earlier versions after it); the
    running cell — what an answer beside it reads — took the next cell's number."""
    cells = [
        "%load_ext jupyter_agent",
        "x = 1",
        "from jupyter_agent.notebook.kernel.recorder import recorder_for\n"
        "print(recorder_for(get_ipython()).running().execution_count)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    running = nb.cells[2]
    assert running.outputs[0]["text"].strip() == str(running.execution_count)
