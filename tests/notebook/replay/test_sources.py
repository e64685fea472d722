"""Where a re-run cell's record comes from: the saved notebook named by ``JPY_SESSION_NAME``,
read as a hostile file; the cell found by the request's ``cellId``, else by a unique prompt."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.notebook.replay import sources
from jupyter_agent.notebook.replay.record import TURN_KEY
from jupyter_agent.notebook.replay.sources import (
    CellRef,
    SavedNotebookSource,
    find_record,
    record_sources,
    request_cell_id,
)


def _notebook(path: Path, cells: list[tuple[str, str, object]]) -> None:
    """Cells of (id, source, record kept in an output's metadata)."""
    nb = nbformat.v4.new_notebook()
    for cell_id, source, record in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        output = nbformat.v4.new_output("display_data", data={"text/plain": "answer"})
        output.metadata = {TURN_KEY: record}
        cell.outputs = [output]
        nb.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


class _Kernel:
    """What ipykernel offers: the parent header of the request being answered."""

    def __init__(self, metadata: dict[str, Any]) -> None:
        self._parent = {"header": {"msg_type": "execute_request"}, "metadata": metadata}

    def get_parent(self) -> dict[str, Any]:
        return self._parent


class _Shell:
    def __init__(self, metadata: dict[str, Any] | None = None) -> None:
        self.kernel = _Kernel(metadata) if metadata is not None else None


def test_the_cell_id_of_the_request_finds_the_cell(tmp_path: Path) -> None:
    path = tmp_path / "a.ipynb"
    _notebook(path, [("one", "%%agent\nHi", {"n": 1}), ("two", "%%agent\nHi", {"n": 2})])
    source = SavedNotebookSource(path)
    assert source.record_for(CellRef("two", "Hi")) == {"n": 2}
    assert source.record_for(CellRef("three", "Hi")) is None
    assert request_cell_id(_Shell({"cellId": "two"})) == "two"
    assert request_cell_id(_Shell({})) is None  # nbclient sends no cellId
    assert request_cell_id(_Shell()) is None  # a terminal has no kernel


def test_without_an_id_only_a_unique_prompt_matches(tmp_path: Path) -> None:
    path = tmp_path / "a.ipynb"
    _notebook(
        path,
        [
            ("a", "%%agent\nHi", {"n": 1}),
            ("b", "%%agent --model x\nHi", {"n": 2}),
            ("c", "%%agent\n  Bye  \n", {"n": 3}),
            ("d", "print('Bye')", {"n": 4}),
        ],
    )
    source = SavedNotebookSource(path)
    assert source.record_for(CellRef(None, "Bye")) == {"n": 3}
    assert source.record_for(CellRef(None, "Hi")) is None  # two cells: no guess


@pytest.mark.parametrize(
    "content", [b"{not json", b'{"cells": 3}', b"\xff\xfe", b'{"nbformat": 4, "cells": [1]}']
)
def test_a_broken_notebook_has_no_record(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "a.ipynb"
    path.write_bytes(content)
    assert SavedNotebookSource(path).record_for(CellRef(None, "Hi")) is None


def test_a_notebook_over_the_cap_or_not_a_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "a.ipynb"
    _notebook(path, [("a", "%%agent\nHi", {"n": 1})])
    assert SavedNotebookSource(path).record_for(CellRef("a", "Hi")) == {"n": 1}
    valid = path.read_bytes()  # the same notebook after a cap's worth of whitespace
    path.write_bytes(b" " * sources.MAX_NOTEBOOK_BYTES + valid)
    assert SavedNotebookSource(path).record_for(CellRef("a", "Hi")) is None
    assert SavedNotebookSource(tmp_path).record_for(CellRef("a", "Hi")) is None
    fifo = tmp_path / "fifo.ipynb"  # nobody writes to it: a blocking read would hang
    os.mkfifo(fifo)
    assert SavedNotebookSource(fifo).record_for(CellRef("a", "Hi")) is None
    assert SavedNotebookSource(tmp_path / "gone.ipynb").record_for(CellRef("a", "Hi")) is None


def test_jpy_session_name_names_the_saved_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.ipynb"
    _notebook(path, [("a", "%%agent\nHi", {"n": 1})])
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert record_sources(_Shell({})) == []
    assert find_record(_Shell({}), "Hi") is None
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    assert find_record(_Shell({"cellId": "a"}), "Hi") == {"n": 1}
    monkeypatch.chdir(tmp_path)  # a path relative to the server's root: the kernel's folder
    monkeypatch.setenv("JPY_SESSION_NAME", "work/a.ipynb")
    assert find_record(_Shell({}), "Hi") == {"n": 1}
    monkeypatch.setenv("JPY_SESSION_NAME", "a session id, not a notebook")
    assert find_record(_Shell({}), "Hi") is None


def test_a_relative_session_name_is_the_notebook_in_the_kernels_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jupyter Server names ``sub/a.ipynb`` and starts the kernel in ``sub/``: the notebook is
    ``sub/a.ipynb`` there, not a ``sub/sub/a.ipynb`` someone else planted a folder deeper."""
    folder = tmp_path / "sub"
    _notebook(folder / "a.ipynb", [("a", "%%agent\nHi", {"n": 1})])
    _notebook(folder / "sub" / "a.ipynb", [("a", "%%agent\nHi", {"planted": True})])
    monkeypatch.chdir(folder)
    monkeypatch.setenv("JPY_SESSION_NAME", "sub/a.ipynb")
    assert find_record(_Shell({"cellId": "a"}), "Hi") == {"n": 1}


def test_a_record_in_the_cells_metadata_is_found_first(tmp_path: Path) -> None:
    """Where the frontend extension keeps it (moved there from the output's metadata)."""
    path = tmp_path / "a.ipynb"
    _notebook(path, [("a", "%%agent\nHi", {"in": "output"})])
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].metadata[TURN_KEY] = {"in": "cell"}
    nbformat.write(nb, path)
    assert SavedNotebookSource(path).record_for(CellRef("a", "Hi")) == {"in": "cell"}


def test_run_all_parses_the_saved_notebook_once_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every agent cell of a Run All asks the saved notebook for its record: parsing a large
    notebook again for each cell cost most of a second per cell (9 MB: 0.8 s)."""
    path = tmp_path / "a.ipynb"
    _notebook(path, [("a", "%%agent\nHi", {"n": 1}), ("b", "%%agent\nBye", {"n": 2})])
    parsed: list[int] = []
    real_loads = sources.json.loads
    monkeypatch.setattr(sources.json, "loads", lambda data: parsed.append(1) or real_loads(data))
    source = SavedNotebookSource(path)
    assert source.record_for(CellRef("a", "Hi")) == {"n": 1}
    assert source.record_for(CellRef("b", "Bye")) == {"n": 2}
    assert len(parsed) == 1
    _notebook(path, [("a", "%%agent\nHi", {"n": 3})])  # saved again
    os.utime(path, ns=(1, 1))  # a time of its own, whatever the clock's resolution
    assert source.record_for(CellRef("a", "Hi")) == {"n": 3}
    assert len(parsed) == 2
