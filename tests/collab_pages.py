"""One notebook open in two browser pages with real-time collaboration on (jupyter-collaboration
5, a dev dependency): for the tests of what each collaborator sees.

``collaborative_jupyter`` serves JupyterLab (or Notebook 7) with collaboration enabled — only for
the tests that use it; ``serve_jupyter`` keeps it off for the others (``browser_jupyter.RTC_OFF``)
— on loopback, its collaboration store, session file and file-id database in the test's temporary
folder (none in the served notebooks or the user's home), the shared document saved half a second
after a change. ``two_pages`` opens a notebook in two headless Chromium pages, each in a browser
context of its own (two cookies: two collaborators, as two people would be) and, in JupyterLab, a
workspace of its own, page A first, and waits until both are connected to the notebook's one
kernel and show the same cells.

``rendered_outputs`` is what a page shows in a cell's output area, output by output (the MIME type
the page chose and the text it shows); ``saved_outputs`` the same cell's outputs in the file on
disk; ``wait_for_same_outputs`` waits (bounded) until the two pages show the same thing — the
shared document reaches page B a moment after page A.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
from browser_jupyter import (
    CHROMIUM_ARGS,
    LAB,
    FrontEnd,
    Jupyter,
    serve_jupyter,
    wait_kernel_ready,
)

#: How long the shared document may take to reach the other page (it takes well under a second
#: on loopback; the bound keeps a broken sync from hanging the test).
SYNC_TIMEOUT_S = 20.0


def collaboration_options(tmp_path: Path) -> tuple[str, ...]:
    """The server options that turn collaboration on, its state kept under ``tmp_path``."""
    return (
        "--YDocExtension.disable_rtc=False",
        "--YDocExtension.document_save_delay=0.5",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--BaseFileIdManager.db_path={tmp_path / 'file_id_manager.db'}",
    )


@contextmanager
def collaborative_jupyter(tmp_path: Path, front_end: FrontEnd = LAB) -> Iterator[Jupyter]:
    """JupyterLab (or Notebook 7: it collaborates too) with real-time collaboration, over a
    fresh copy of notebooks/."""
    with serve_jupyter(front_end, tmp_path, options=collaboration_options(tmp_path)) as server:
        yield server


#: The number of cells the page's notebook model holds (the shared document's, with RTC).
CELL_COUNT = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    return panel && panel.content && panel.content.model ? panel.content.model.cells.length : -1;
}"""


@contextmanager
def two_pages(playwright: Any, chromium: Path, server: Jupyter, path: str) -> Iterator[Any]:
    """Pages A and B on ``path``, each connected to its kernel, both showing the same cells.
    Yields ``(page_a, page_b)``; the browser is closed at the end."""
    browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
    try:
        pages = []
        for name in ("a", "b"):
            context = browser.new_context(viewport={"width": 1280, "height": 1400})
            page = context.new_page()
            page.set_default_timeout(60_000)
            if server.front_end is LAB:
                # a workspace of its own: JupyterLab's default one would reopen, beside this
                # notebook, the notebooks an earlier test opened on the same server
                workspace = f"{name}-{secrets.token_hex(4)}"
                page.goto(
                    f"{server.url}/lab/workspaces/{workspace}/tree/{path}?token={server.token}"
                )
            else:
                page.goto(server.front_end.url_of(server, path))
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            wait_kernel_ready(page)
            pages.append(page)
        page_a, page_b = pages
        page_b.wait_for_function(f"() => ({CELL_COUNT})() === {page_a.evaluate(CELL_COUNT)}")
        kernels = [p.evaluate(KERNEL_ID) for p in pages]
        assert kernels[0] and kernels[0] == kernels[1], f"two kernels: {kernels}"
        yield page_a, page_b
    finally:
        browser.close()


KERNEL_ID = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    return panel.sessionContext.session.kernel.id;
}"""


def cell_index(page: Any, source: str) -> int:
    """The index of the first cell whose source starts with ``source``, in the page's model."""
    index = page.evaluate(
        """(source) => {
            const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
            for (let i = 0; i < cells.length; i++) {
                if (cells.get(i).sharedModel.getSource().startsWith(source)) { return i; }
            }
            return -1;
        }""",
        source,
    )
    assert index >= 0, f"no cell starts with {source!r}"
    return int(index)


#: Each rendered output of cell ``i``: the MIME type the page rendered and the text it shows.
RENDERED = """(i) => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
    return [...cell.node.querySelectorAll('.jp-OutputArea-child .jp-OutputArea-output')].map(
        o => [o.getAttribute('data-mime-type') || '', (o.innerText || '').trim()]);
}"""


def rendered_outputs(page: Any, source: str) -> list[tuple[str, str]]:
    """What the page shows in the output area of the cell whose source starts with ``source``."""
    return [(mime, text) for mime, text in page.evaluate(RENDERED, cell_index(page, source))]


def wait_for_same_outputs(
    page_a: Any, page_b: Any, source: str, timeout_s: float = SYNC_TIMEOUT_S
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Both pages' outputs of the cell, once they agree — or, at the deadline, as they are."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen_a, seen_b = rendered_outputs(page_a, source), rendered_outputs(page_b, source)
        if seen_a == seen_b or time.monotonic() > deadline:
            return seen_a, seen_b
        page_a.wait_for_timeout(100)


def output_texts(outputs: list[tuple[str, str]]) -> list[str]:
    """The texts alone, with runs of whitespace as one space (rendering may wrap differently)."""
    return [" ".join(text.split()) for _mime, text in outputs]


def saved_outputs(path: Path, source: str) -> list[dict[str, Any]]:
    """The outputs the file on disk holds for the cell whose source starts with ``source``."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(source):
            return list(cell.outputs)
    raise AssertionError(f"{path.name}: no cell starts with {source!r}")


def wait_saved(path: Path, source: str, count: int, timeout_s: float = SYNC_TIMEOUT_S) -> None:
    """Wait until the file on disk holds ``count`` outputs for the cell (collaboration saves the
    shared document shortly after each change)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = len(saved_outputs(path, source))
        except Exception:  # half written, or not yet holding the cell
            found = -1
        if found == count:
            return
        assert time.monotonic() < deadline, f"{path.name}: {found} outputs saved, not {count}"
        time.sleep(0.1)


def squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def wait_outputs(
    page: Any, source: str, expected: list[tuple[str, str]], timeout_s: float = SYNC_TIMEOUT_S
) -> list[tuple[str, str]]:
    """The cell's outputs once they are ``expected`` — or, at the deadline, as they are."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = rendered_outputs(page, source)
        if seen == expected or time.monotonic() > deadline:
            return seen
        page.wait_for_timeout(100)
