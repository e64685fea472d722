"""Where a re-run cell's turn record comes from: the page, else the saved notebook.

A ``RecordSource`` answers ``record_for(cell)`` with the value kept under
``"jupyter_agent.turn"`` for the running cell, or ``None``. Two sources, asked in order:

1. **the page** — the frontend extension keeps the record in the cell's metadata and hands it
   over the co-author comm (``{"op": "turn_record", "cell_id": ...}``). That source lives in
   ``page_source.py`` (the frontend side's module): it exposes ``page_record_source(shell)``,
   returning a ``RecordSource`` when a page is connected, else ``None``. Until that module
   exists this seam finds none and the saved notebook is asked alone;
2. **the saved notebook** that ``JPY_SESSION_NAME`` names (Jupyter Server sets it for the
   kernels it starts; a script running nbclient can set it): ``SavedNotebookSource``.

The saved file is hostile: it is read only when it is a regular file of at most
``MAX_NOTEBOOK_BYTES``, parsed with nbformat, and any error means no record. The cell is found by
the id the execute request carries in its metadata (``cellId``: JupyterLab and Notebook 7 send
it; nbclient sends none), else by its prompt — only when exactly one ``%%agent`` cell has it.
Whatever a source returns is only a candidate: ``record.verify_record`` decides.
"""

from __future__ import annotations

import importlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .record import TURN_KEY

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "CellRef",
    "RecordSource",
    "SavedNotebookSource",
    "cell_ref",
    "record_sources",
]

#: The largest saved notebook read for a record.
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CellRef:
    """The running cell: its id (from the execute request, if sent) and its ``%%agent`` body."""

    cell_id: str | None
    body: str


class RecordSource(Protocol):
    """Something that may hold the running cell's turn record."""

    def record_for(self, cell: CellRef) -> object | None:
        """The value kept under ``"jupyter_agent.turn"`` for ``cell``, or ``None``."""
        ...


def request_cell_id(shell: Any) -> str | None:
    """The ``cellId`` of the execute request being answered (JupyterLab, Notebook 7)."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent()
    except Exception:  # an old ipykernel without channels: no id
        return None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


def cell_ref(shell: Any, body: str) -> CellRef:
    return CellRef(request_cell_id(shell), body)


def _body(source: str) -> str | None:
    """An ``%%agent`` cell's body (its prompt), or ``None`` for any other cell."""
    first, _newline, rest = source.lstrip().partition("\n")
    if not first.startswith("%%agent"):
        return None
    return rest.strip()


def _source(cell: dict[str, Any]) -> str:
    """A saved cell's source: nbformat writes it as a list of lines."""
    source = cell.get("source")
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def _record_of(cell: Any) -> object | None:
    kept: object = (cell.get("metadata") or {}).get(TURN_KEY)
    if kept is not None:
        return kept
    for output in cell.get("outputs") or []:
        metadata = output.get("metadata") if isinstance(output, dict) else None
        if isinstance(metadata, dict) and TURN_KEY in metadata:
            found: object = metadata[TURN_KEY]
            return found
    return None


#: The last saved notebook parsed: its path -> (identity, size and time; its cells).
_parsed: dict[str, tuple[tuple[int, int, int, int], list[Any]]] = {}


class SavedNotebookSource:
    """The record kept in the saved notebook at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"SavedNotebookSource({str(self.path)!r})"

    def _cells(self) -> list[Any]:
        try:
            # opened without blocking (a FIFO put in its place must not hang the cell), then
            # checked on the descriptor: a regular file within the cap
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_NOTEBOOK_BYTES:
                    return []
                # a Run All asks once per agent cell: the file is parsed again only when it
                # changed (its identity, size and modification time)
                key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
                cached = _parsed.get(str(self.path))
                if cached is not None and cached[0] == key:
                    return cached[1]
                data = handle.read(MAX_NOTEBOOK_BYTES + 1)
            if len(data) > MAX_NOTEBOOK_BYTES:
                return []
            # plain JSON: finding one key needs no nbformat validation (a record read here is
            # checked on its own, signature first)
            notebook = json.loads(data)
        except (OSError, ValueError, RecursionError):  # unreadable, not JSON: no record
            return []
        cells = notebook.get("cells") if isinstance(notebook, dict) else None
        found = [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []
        _parsed.clear()  # one notebook per kernel: keep the last one only
        _parsed[str(self.path)] = (key, found)
        return found

    def record_for(self, cell: CellRef) -> object | None:
        cells = [c for c in self._cells() if c.get("cell_type") == "code"]
        if cell.cell_id is not None:
            found = [c for c in cells if c.get("id") == cell.cell_id]
        else:
            found = [c for c in cells if _body(_source(c)) == cell.body.strip()]
        return _record_of(found[0]) if len(found) == 1 else None


def _saved_notebook(environ: dict[str, str] | os._Environ[str]) -> Path | None:
    named = environ.get("JPY_SESSION_NAME", "")
    if not named.endswith(".ipynb"):
        return None
    path = Path(named)
    if path.is_absolute():
        return path
    # a URL path relative to the server's root: the kernel runs in the notebook's folder, so
    # where the kernel's folder ends in the notebook's, the notebook is there — and not a file
    # that anyone who can make ``<folder>/<folder>/`` would put a folder deeper
    cwd = Path.cwd()
    folder = path.parent.parts
    in_its_folder = bool(folder) and cwd.parts[-len(folder) :] == folder
    order = (cwd / path.name, cwd / path) if in_its_folder else (cwd / path, cwd / path.name)
    for candidate in order:
        if candidate.is_file():
            return candidate
    return None


def _page_source(shell: Any) -> RecordSource | None:
    """The page's source (``page_source.page_record_source``), when that module is there."""
    try:
        module = importlib.import_module(f"{__package__}.page_source")
    except ImportError:
        return None
    factory = getattr(module, "page_record_source", None)
    source = factory(shell) if callable(factory) else None
    return source if source is not None and hasattr(source, "record_for") else None


def record_sources(shell: Any) -> list[RecordSource]:
    """The sources to ask, in order: the page, then the saved notebook."""
    sources: list[RecordSource] = []
    page = _page_source(shell)
    if page is not None:
        sources.append(page)
    saved = _saved_notebook(os.environ)
    if saved is not None:
        sources.append(SavedNotebookSource(saved))
    return sources


def find_record(shell: Any, body: str) -> object | None:
    """The first record a source holds for the running cell (unverified), or ``None``."""
    cell = cell_ref(shell, body)
    for source in record_sources(shell):
        try:
            found = source.record_for(cell)
        except Exception:  # a source that fails has no record; the turn goes on
            found = None
        if found is not None:
            return found
    return None
