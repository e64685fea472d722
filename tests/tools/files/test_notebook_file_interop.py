"""Notebooks as others wrote them (issue 22, point 7).

Played faults: an nbformat 3 notebook (written here with nbformat's own v3 API, as the older
notebooks of public books are) was refused by ``read_notebook`` ("nbformat 4 expected");
``read_file`` on a 6 MB ``.ipynb`` returned a 256 KB page that the agent's result cap
(``max_result_chars``) then cut in the middle, while the page's note said "read further with
offset=N" — following it skipped lines the model never saw.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import nbformat
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from PIL import Image as PillowImage

from jupyter_agent import Image
from jupyter_agent.agent.agent import Agent
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.files.notebook_file import ReadNotebookTool


def _png(colour: tuple[int, int, int] = (10, 120, 200)) -> bytes:
    out = io.BytesIO()
    PillowImage.new("RGB", (30, 20), colour).save(out, format="PNG")
    return out.getvalue()


def _v3_notebook(png: bytes) -> str:
    """An nbformat 3 notebook, written by nbformat's own v3 API: a heading, markdown, a code
    cell with stdout and a result, a plot, an error, a raw cell."""
    v3 = nbformat.v3
    printed = v3.new_code_cell(
        input="print('hi')\n41 + 1",
        prompt_number=1,
        outputs=[
            v3.new_output("stream", output_text="hi\n", stream="stdout"),
            v3.new_output("pyout", output_text="42", prompt_number=1),
        ],
    )
    plot = v3.new_code_cell(
        input="plt.plot([1, 2])",
        prompt_number=2,
        outputs=[
            v3.new_output(
                "display_data",
                output_text="<matplotlib.figure.Figure at 0x10>",
                output_png=base64.b64encode(png).decode(),
            )
        ],
    )
    failing = v3.new_code_cell(
        input="{}['k']",
        prompt_number=3,
        outputs=[
            v3.new_output(
                "pyerr",
                ename="KeyError",
                evalue="'k'",
                traceback=["\x1b[31mKeyError\x1b[0m Traceback", "\x1b[31mKeyError\x1b[0m: 'k'"],
            )
        ],
    )
    cells = [
        v3.new_heading_cell("Sales", level=2),
        v3.new_text_cell("markdown", source="Some *notes*."),
        printed,
        plot,
        failing,
        v3.new_text_cell("raw", source="raw text"),
    ]
    notebook = v3.new_notebook(worksheets=[v3.new_worksheet(cells=cells)], name="old")
    return str(v3.writes_json(notebook))


async def test_an_nbformat_3_notebook_reads_like_its_nbformat_4_conversion(tmp_path: Path) -> None:
    png = _png()
    source = _v3_notebook(png)
    assert json.loads(source)["nbformat"] == 3
    (tmp_path / "old.ipynb").write_text(source)
    # nbformat's own converter is the reference: the v3 file must read as its v4 conversion
    converted = nbformat.reads(source, as_version=4)
    nbformat.write(converted, tmp_path / "converted.ipynb")
    tool = ReadNotebookTool(ToolContext(tmp_path))
    old = await tool.execute({"file_path": "old.ipynb"})
    new = await tool.execute({"file_path": "converted.ipynb"})
    # each image sits under its cell (text, image, text): the texts read as one
    old_text = "".join(part for part in old if isinstance(part, str))
    new_text = "".join(part for part in new if isinstance(part, str))
    assert [type(part) for part in old] == [type(part) for part in new] == [str, Image, str]
    assert old_text.split("\n", 1)[1] == new_text.split("\n", 1)[1]
    assert old_text.startswith("old.ipynb: 6 cells (python); nbformat 3")
    for expected in ("## Sales", "Some *notes*.", "[stdout]\nhi", "[result]\n42", "KeyError: 'k'"):
        assert expected in old_text
    assert "\x1b" not in old_text
    assert old[1] == Image(png, "image/png")


async def test_a_notebook_older_than_3_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "ancient.ipynb").write_text(json.dumps({"nbformat": 2, "worksheets": []}))
    registry = create_default_registry(ToolContext(tmp_path))
    result = await registry.call("read_notebook", {"file_path": "ancient.ipynb"})
    assert result.is_error and "nbformat 2" in result.content


def _big_notebook(path: Path, megabytes: int = 6) -> list[str]:
    """A notebook of about ``megabytes`` MB — cells with long text outputs and inline plots —
    written by nbformat; its lines."""
    nb = nbformat.v4.new_notebook()
    cells = []
    index = 0
    while sum(len(json.dumps(c)) for c in cells) < megabytes * 1_000_000:
        index += 1
        cell = nbformat.v4.new_code_cell(f"df{index}.describe()", execution_count=index)
        rows = "\n".join(f"row {index}.{r}: " + "value " * 12 for r in range(300))
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=rows)]
        if index % 10 == 0:
            noise = PillowImage.effect_noise((160, 120), 80).convert("RGB")
            buffer = io.BytesIO()
            noise.save(buffer, format="PNG")
            data = {"image/png": base64.b64encode(buffer.getvalue()).decode()}
            cell.outputs.append(nbformat.v4.new_output("display_data", data=data))
        cells.append(cell)
    nb.cells = cells
    nbformat.write(nb, path)
    return path.read_text().splitlines(keepends=True)


async def test_read_file_pages_of_a_6_mb_notebook_are_never_cut_by_the_agent(
    tmp_path: Path,
) -> None:
    lines = _big_notebook(tmp_path / "big.ipynb")
    assert sum(len(line) for line in lines) > 6_000_000
    pages = 4

    def next_page(body: dict[str, Any]) -> Reply:
        results = tool_results(body)
        if len(results) >= pages:
            return text("Read enough.")
        arguments: dict[str, Any] = {"file_path": "big.ipynb"}
        if results:
            found = re.search(r"offset=(\d+)", result_text(results[-1]))
            assert found, result_text(results[-1])[-500:]
            arguments["offset"] = int(found.group(1))
        return Reply([tool_use(f"toolu_{len(results)}", "read_file", arguments)])

    fake = FakeAnthropic(*[next_page] * (pages + 1))
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client(), cache=False)
    agent = Agent(provider, workspace=tmp_path, max_result_chars=100_000)
    assert await agent.chat("read big.ipynb") == "Read enough."
    seen = [result_text(r) for r in tool_results(fake.requests[-1])]
    assert len(seen) == pages
    next_line = 1
    for page in seen:
        assert "cut from the middle" not in page
        body, _, note = page.rpartition("\n\n[")
        shown = body.splitlines(keepends=True)
        expected = lines[next_line - 1 : next_line - 1 + len(shown)]
        # every line shown is the file's line, in order; the last may be cut in its middle
        assert shown[:-1] == expected[:-1]
        assert expected[-1].startswith(shown[-1].rstrip("\n"))
        found = re.search(r"offset=(\d+)", note)
        assert found is not None
        # the next page starts right after the last line shown (the rest of a line cut in its
        # middle is skipped, and the note says so)
        following = int(found.group(1))
        assert following == next_line + len(shown)
        next_line = following


async def test_read_notebook_pages_fit_a_small_result_cap(tmp_path: Path) -> None:
    """The same agreement for ``read_notebook``'s ``start_cell`` note, under a 10,000-character
    ``max_result_chars`` (its own page is 40,000 characters)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(f"cell_{i} = 1\n" + "# note\n" * 300) for i in range(1, 41)
    ]
    plot = nbformat.v4.new_code_cell("plot()")
    data = {"image/png": base64.b64encode(_png()).decode()}
    plot.outputs = [nbformat.v4.new_output("display_data", data=data)]
    nb.cells.insert(0, plot)
    nbformat.write(nb, tmp_path / "long.ipynb")

    def step(body: dict[str, Any]) -> Reply:
        results = tool_results(body)
        if len(results) == 2:
            return text("Done.")
        arguments: dict[str, Any] = {"file_path": "long.ipynb"}
        if results:
            found = re.search(r"start_cell=(\d+)", result_text(results[-1]))
            assert found
            arguments["start_cell"] = int(found.group(1))
        return Reply([tool_use(f"toolu_{len(results)}", "read_notebook", arguments)])

    fake = FakeAnthropic(step, step, step)
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client(), cache=False)
    agent = Agent(provider, workspace=tmp_path, max_result_chars=10_000)
    assert await agent.chat("read long.ipynb") == "Done."
    first, second = (result_text(r) for r in tool_results(fake.requests[-1]))
    for page in (first, second):
        assert "cut from the middle" not in page
    shown = re.findall(r"── cell (\d+):", first)
    resumed = re.search(r"start_cell=(\d+)", first)
    assert shown and resumed and int(resumed.group(1)) == int(shown[-1]) + 1
    assert re.findall(r"── cell (\d+):", second)[0] == resumed.group(1)
