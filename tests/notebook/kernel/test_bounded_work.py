"""Nothing stalls the kernel on the way: image decoding and variable summaries.

"Image bombs" (small PNGs claiming 9400×9400 pixels) read through ``read_notebook`` and then
fitted and thumbnailed as the agent and the cell do; lazy frames (a real DuckDB relation whose
query would run for minutes, a real Polars ``LazyFrame`` whose function records its calls)
described by ``inspect_variable`` and ``list_variables``. The event loop is watched by a ticker.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import nbformat
import pytest
from loop_watch import LoopWatch

from jupyter_agent.agent.results import fit_result
from jupyter_agent.notebook.kernel.kernel_tools import InspectVariableTool, ListVariablesTool
from jupyter_agent.notebook.views.thumbnails import thumbnail_tags
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.image_fit import MAX_IMAGE_PIXELS


def _png(width: int, height: int) -> bytes:
    from PIL import Image as PillowImage

    out = io.BytesIO()
    PillowImage.new("L", (width, height)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    data = _png(9400, 9400)
    assert len(data) < 300_000 and MAX_IMAGE_PIXELS < 9400 * 9400
    return data


def _notebook(path: Path, pngs: list[bytes]) -> None:
    cells = []
    for index, png in enumerate(pngs):
        cell = nbformat.v4.new_code_cell(f"plot({index})", execution_count=index + 1)
        cell.outputs = [
            nbformat.v4.new_output(
                "display_data", data={"image/png": base64.b64encode(png).decode()}
            )
        ]
        cells.append(cell)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)


@pytest.mark.timeout(120)
async def test_image_bombs_in_a_notebook_do_not_stall_the_loop(tmp_path: Path, bomb: bytes) -> None:
    _notebook(tmp_path / "bombs.ipynb", [_png(3000, 1000)] + [bomb] * 4)  # 5 images a call
    registry = create_default_registry(ToolContext(tmp_path))
    async with LoopWatch() as watch:
        result = await registry.call("read_notebook", {"file_path": "bombs.ipynb"})
        fitted = fit_result(result, 100_000)  # what the agent does with every result
        thumbnails = thumbnail_tags(fitted.images)  # what the cell shows
    assert watch.longest < 0.5, watch.longest
    assert not fitted.is_error
    assert fitted.content.count("9400×9400 pixels was not read") == 4, fitted.content
    assert len(fitted.images) == 1 and len(thumbnails) == 1  # the ordinary plot, downscaled
    from PIL import Image as PillowImage

    with PillowImage.open(io.BytesIO(fitted.images[0].data)) as shown:
        assert shown.size == (1568, 523)


def test_a_bomb_is_named_not_decoded_by_the_thumbnailer(
    bomb: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import ImageFile

    from jupyter_agent import Image

    decoded: list[object] = []
    load = ImageFile.ImageFile.load

    def recording_load(image: ImageFile.ImageFile) -> object:
        decoded.append(image.size)
        return load(image)

    monkeypatch.setattr(ImageFile.ImageFile, "load", recording_load)
    (tag,) = thumbnail_tags((Image(bomb, "image/png"),))
    assert "not readable" in tag
    assert decoded == []  # its pixels were never decoded


def _slow_relation() -> Any:
    duckdb = pytest.importorskip("duckdb")
    connection = duckdb.connect()
    # minutes of work if anything runs it (shape, len, repr, head all do)
    return connection.sql(
        "select a.range % 7 as bucket, sum(hash(a.range * b.range)) as total "
        "from range(300000) a, range(300000) b group by bucket"
    )


@pytest.mark.timeout(60)
async def test_a_duckdb_relation_is_described_without_running_it(tmp_path: Path) -> None:
    namespace = {"sales": _slow_relation()}
    # running it takes minutes: the test's 60 s timeout stops that
    async with LoopWatch() as watch:
        shown = await InspectVariableTool(ToolContext(tmp_path), namespace).execute(
            {"name": "sales"}
        )
        listed = await ListVariablesTool(ToolContext(tmp_path), namespace).execute({})
    assert watch.longest < 0.5
    assert "lazy duckdb" in shown and "not computed" in shown
    assert "['bucket', 'total']" in shown  # its columns, from the plan
    assert "sales: " in listed and "(lazy: not computed)" in listed


async def test_a_polars_lazyframe_is_described_without_collecting_it(tmp_path: Path) -> None:
    polars = pytest.importorskip("polars")
    calls: list[int] = []

    def expensive(frame: Any) -> Any:
        calls.append(1)
        return frame

    lazy = polars.LazyFrame({"a": [1, 2, 3]}).map_batches(expensive)
    namespace = {"plan": lazy, "nested": {"inner": lazy}}
    tool = InspectVariableTool(ToolContext(tmp_path), namespace)
    shown = await tool.execute({"name": "plan"})
    nested = await tool.execute({"name": "nested"})
    assert "lazy polars" in shown and ".collect()" in shown
    assert "lazy polars, not computed" in nested
    assert calls == []
