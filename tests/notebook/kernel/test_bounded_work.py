"""Nothing stalls the kernel on the way: image decoding and variable summaries.

"Image bombs" (small PNGs claiming 9400×9400 pixels) read through ``read_notebook`` and then
fitted and thumbnailed as the agent and the cell do; lazy frames (a real DuckDB relation whose
query would run for minutes, a real Polars ``LazyFrame`` whose function records its calls)
described by ``inspect_variable`` and ``list_variables``. Nothing can stall because the slow work
is never done: Pillow's decoding and the query's rows are recorded, and must not happen.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import nbformat
import pytest

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


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The sizes of the images whose pixels Pillow decoded, in this process."""
    from PIL import ImageFile

    sizes: list[tuple[int, int]] = []
    load = ImageFile.ImageFile.load

    def recording_load(image: ImageFile.ImageFile) -> object:
        sizes.append(image.size)
        return load(image)

    monkeypatch.setattr(ImageFile.ImageFile, "load", recording_load)
    return sizes


@pytest.mark.timeout(120)
async def test_image_bombs_in_a_notebook_do_not_stall_the_loop(
    tmp_path: Path, bomb: bytes, decoded: list[tuple[int, int]]
) -> None:
    _notebook(tmp_path / "bombs.ipynb", [_png(3000, 1000)] + [bomb] * 4)  # 5 images a call
    registry = create_default_registry(ToolContext(tmp_path))
    result = await registry.call("read_notebook", {"file_path": "bombs.ipynb"})
    fitted = fit_result(result, 100_000)  # what the agent does with every result
    thumbnails = thumbnail_tags(fitted.images)  # what the cell shows
    # nothing can stall on a bomb: its pixels are never decoded, on the loop or anywhere here
    assert (9400, 9400) not in decoded, decoded
    assert not fitted.is_error
    assert fitted.content.count("9400×9400 pixels was not read") == 4, fitted.content
    assert len(fitted.images) == 1 and len(thumbnails) == 1  # the ordinary plot, downscaled
    from PIL import Image as PillowImage

    with PillowImage.open(io.BytesIO(fitted.images[0].data)) as shown:
        assert shown.size == (1568, 523)


def test_a_bomb_is_named_not_decoded_by_the_thumbnailer(
    bomb: bytes, decoded: list[tuple[int, int]]
) -> None:
    from jupyter_agent import Image

    (tag,) = thumbnail_tags((Image(bomb, "image/png"),))
    assert "not readable" in tag
    assert decoded == []  # its pixels were never decoded


def _watched_relation(rows: list[int]) -> Any:
    """A relation whose every row passes through a function that records it: anything that
    runs the query (shape, len, repr, head all do) leaves rows behind."""
    duckdb = pytest.importorskip("duckdb")
    connection = duckdb.connect()

    def seen(value: int) -> int:
        rows.append(value)
        return value

    connection.create_function("seen", seen, ["BIGINT"], "BIGINT", side_effects=True)
    return connection.sql(
        "select seen(a.range) % 7 as bucket, sum(hash(a.range * b.range)) as total "
        "from range(3000) a, range(3000) b group by bucket"
    )


@pytest.mark.timeout(60)
async def test_a_duckdb_relation_is_described_without_running_it(tmp_path: Path) -> None:
    rows: list[int] = []
    namespace = {"sales": _watched_relation(rows)}
    shown = await InspectVariableTool(ToolContext(tmp_path), namespace).execute({"name": "sales"})
    listed = await ListVariablesTool(ToolContext(tmp_path), namespace).execute({})
    assert rows == []  # never run, so it could not hold the loop however long it would take
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
