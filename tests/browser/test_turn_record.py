"""A finished ``%%agent`` cell keeps its turn in the cell and replays it, in JupyterLab and
Notebook 7 (issue 38, the frontend's half).

The kernel writes the turn's record (``jupyter_agent.turn``) into the metadata of the answer's
output; the page clears a cell's outputs as it runs it again, so the frontend extension moves the
record into the cell's metadata as it arrives and hands it to the kernel on the re-run (the
``turn_record`` comm operation). Here an ``%%agent`` cell is answered by the fake Messages API
(a ``read_file`` call, then the answer); the record is in the cell's metadata and in none of its
outputs; the outputs are cleared (the command a person uses) and the cell is run again: it reads
"replayed", the tool ran again, and no request reached the model; so does it after a kernel
restart and Run All (the page's comm connects only after the first cell, the agent cell's record
comes with its request). Saved, the file holds the
record once, in the cell. Autosave is off, so the saved notebook (the kernel's other source of a
record, ``JPY_SESSION_NAME``) holds no record during the re-run: the page alone supplies it.

``test_a_record_left_in_an_output_replays_from_the_page``: a notebook executed by nbclient keeps
the record in the answer's output; opened in the page and run, the page moves it into the cell
before the run clears the outputs, and the cell replays (the file on disk no longer holds it).

``test_under_collaboration_one_page_moves_the_record``: two pages share the notebook
(jupyter-collaboration); page A runs a cell whose output carries a record. Both pages hold it in
the cell's metadata, the cell has its one output (without the record) in both pages and in the
file: only the page that ran the cell moved it (each page counts its moves), so the shared
document was changed once.

Servers and Chromium as in ``browser_jupyter.py``; the model as in ``test_plan_go.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    LAB,
    FrontEnd,
    chromium_or_skip,
    open_notebook,
    serve_jupyter,
    wait_kernel_ready,
    write_agent_notebook,
)
from coauthor_page import cell_with, connected, run, this_extension_path

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

NOTEBOOK = "replay.ipynb"
KEY = "jupyter_agent.turn"
PROMPT = "How many rows does data/sales.csv have?"
ANSWER = "The file has a header and its rows of monthly sales."

#: The cell whose source starts with ``source``, as the page's model holds it: its record (the
#: cell's metadata) and, per output, the keys of the output's metadata.
CELL_STATE = """(source) => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
        const cell = cells.get(i);
        if (cell.sharedModel.getSource().startsWith(source)) {
            const outputs = cell.type === 'code' ? cell.outputs.toJSON() : [];
            return {
                record: cell.getMetadata('jupyter_agent.turn') ?? null,
                outputs: outputs.map(o => Object.keys(o.metadata || {})),
            };
        }
    }
    return null;
}"""


def cell_state(page: Any, source: str) -> dict[str, Any]:
    state = page.evaluate(CELL_STATE, source)
    assert state is not None, f"no cell starts with {source!r}"
    return dict(state)


def no_autosave(settings: Path) -> None:
    """Turn JupyterLab's (and Notebook 7's) autosave off: the file changes only when saved."""
    folder = settings / "@jupyterlab" / "docmanager-extension"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.jupyterlab-settings").write_text('{"autosave": false}')


#: Count the runs of the cell whose source starts with ``source`` from now on (its execution count
#: set again; the count alone may repeat, as in a fresh kernel).
COUNT_RUNS = """(source) => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
        const cell = cells.get(i);
        if (cell.sharedModel.getSource().startsWith(source)) {
            window.__cellRuns = 0;
            cell.stateChanged.connect((_, change) => {
                if (change.name === 'executionCount' && change.newValue !== null) {
                    window.__cellRuns += 1;
                }
            });
            return true;
        }
    }
    return false;
}"""


def run_again(page: Any, cell: Any, source: str) -> None:
    """Run a cell that ran before (here or elsewhere) and wait until it has run."""
    assert page.evaluate(COUNT_RUNS, source)
    cell.locator(".jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function("() => window.__cellRuns > 0", timeout=90_000)


def script(fake: Any) -> None:
    from fake_anthropic import Reply, text, tool_use

    fake.add(
        Reply([tool_use("r1", "read_file", {"file_path": "data/sales.csv", "limit": 3})]),
        text(ANSWER),
    )


def test_an_agent_cell_replays_from_the_record_its_page_keeps(
    front_end: FrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic()
    script(fake)
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        no_autosave(tmp_path / "settings")
        write_agent_notebook(server.root / NOTEBOOK, base_url, f"%%agent\n{PROMPT}")
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            agent = cell_with(page, PROMPT)
            run(page, agent)
            expect(agent.locator(".jp-OutputArea")).to_contain_text(ANSWER)
            assert len(fake.requests) == 2

            # the record is in the cell, in none of its outputs (it comes with the turn's end,
            # a moment after the answer's text shows)
            page.wait_for_function(
                "() => { const c = window.jupyterapp.shell.currentWidget.content.model.cells;"
                " for (let i = 0; i < c.length; i++) { if (c.get(i).getMetadata("
                "'jupyter_agent.turn')) { return true; } } return false; }"
            )
            state = cell_state(page, "%%agent")
            record = state["record"]
            assert isinstance(record, dict), state
            assert record.get("signature"), sorted(record)
            assert all(KEY not in keys for keys in state["outputs"]), state["outputs"]

            # outputs cleared as a person clears them: the record stays in the cell
            agent.locator(".jp-InputArea").first.click()
            page.keyboard.press("Escape")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-cell-output')")
            expect(agent.locator(".jp-OutputArea-output")).to_have_count(0)
            assert cell_state(page, "%%agent")["record"] == record

            # run again: replayed from the page's record, the tool ran, no request was made
            run_again(page, agent, "%%agent")
            output = agent.locator(".jp-OutputArea")
            expect(output).to_contain_text("replayed")
            expect(output).to_contain_text(ANSWER)
            expect(output).to_contain_text("read_file")
            assert len(fake.requests) == 2, "the re-run asked the model"
            assert cell_state(page, "%%agent")["record"] == record

            # restart the kernel and Run All: the extension is loaded again by the first cell
            # while the agent cell waits behind it, so the page's comm is not connected yet as
            # that cell starts; it is replayed all the same
            page.evaluate(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()"
            )
            wait_kernel_ready(page)
            assert page.evaluate(COUNT_RUNS, "%%agent")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function("() => window.__cellRuns > 0", timeout=90_000)
            expect(output).to_contain_text("replayed")
            expect(output).to_contain_text(ANSWER)
            assert len(fake.requests) == 2, "Run All asked the model"
            assert cell_state(page, "%%agent")["record"] == record

            # saved: the record once, in the cell
            agent.locator(".jp-InputArea").first.click()
            page.keyboard.press("Escape")
            page.keyboard.press("Control+s")
            path = server.root / NOTEBOOK
            deadline = time.monotonic() + 30
            while True:
                saved = nbformat.read(path, as_version=4)
                cell = next(c for c in saved.cells if c.source.startswith("%%agent"))
                if KEY in cell.metadata:
                    break
                assert time.monotonic() < deadline, "the notebook was not saved"
                time.sleep(0.2)
            assert cell.metadata[KEY] == record
            assert all(KEY not in output.get("metadata", {}) for output in cell.outputs)
            assert path.read_text().count(str(record["signature"])) == 1
        finally:
            browser.close()


def test_a_record_left_in_an_output_replays_from_the_page(
    front_end: FrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook executed by nbclient (``nbconvert --execute``) keeps the record in the answer's
    output; opened in the page, the cell's outputs are cleared as it runs — the page moves the
    record into the cell first and answers it. The file on disk loses its record once the page
    has the notebook open, so the saved notebook cannot supply it: only the page can."""
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic
    from nbclient import NotebookClient
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic()
    script(fake)
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        no_autosave(tmp_path / "settings")
        path = server.root / NOTEBOOK
        write_agent_notebook(path, base_url, f"%%agent\n{PROMPT}")
        executed = nbformat.read(path, as_version=4)
        NotebookClient(
            executed, timeout=120, resources={"metadata": {"path": str(server.root)}}
        ).execute()
        nbformat.write(executed, path)
        assert len(fake.requests) == 2
        assert any(KEY in o.get("metadata", {}) for o in executed.cells[1].outputs)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            assert cell_state(page, "%%agent")["record"] is None  # still in the output
            for output in executed.cells[1].outputs:
                output.get("metadata", {}).pop(KEY, None)
            nbformat.write(executed, path)  # the saved notebook holds no record now
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            agent = cell_with(page, PROMPT)
            run_again(page, agent, "%%agent")
            expect(agent.locator(".jp-OutputArea")).to_contain_text("replayed")
            expect(agent.locator(".jp-OutputArea")).to_contain_text(ANSWER)
            assert len(fake.requests) == 2, "the re-run asked the model"
            assert isinstance(cell_state(page, "%%agent")["record"], dict)
        finally:
            browser.close()


#: A cell whose output carries a record, as the kernel writes one (the page does not check it).
CARRIER = (
    "from IPython.display import display\n"
    "display({'text/plain': 'the answer'}, raw=True,\n"
    "        metadata={'jupyter_agent.turn': {'format': 'test', 'signature': 'abc123'}})"
)


def test_under_collaboration_one_page_moves_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from collab_pages import collaborative_jupyter, saved_outputs, two_pages, wait_saved
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    with collaborative_jupyter(tmp_path, LAB) as server, sync_playwright() as playwright:
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.cells = [nbformat.v4.new_code_cell(CARRIER)]
        nbformat.write(nb, server.root / NOTEBOOK)
        with two_pages(playwright, chromium, server, NOTEBOOK) as (page_a, page_b):
            run(page_a, cell_with(page_a, "from IPython.display"))
            want = {"format": "test", "signature": "abc123"}
            deadline = time.monotonic() + 20
            while True:
                states = [cell_state(p, "from IPython.display") for p in (page_a, page_b)]
                if all(s["record"] == want and len(s["outputs"]) == 1 for s in states):
                    break
                assert time.monotonic() < deadline, states
                page_a.wait_for_timeout(100)
            page_a.wait_for_timeout(1000)  # a second page moving it too would show by now
            kept = "() => Number(document.body.dataset.jupyterAgentRecordsKept || 0)"
            assert [page_a.evaluate(kept), page_b.evaluate(kept)] == [1, 0]
            for state in (cell_state(p, "from IPython.display") for p in (page_a, page_b)):
                assert state["record"] == want
                assert state["outputs"] == [[]], state["outputs"]
            path = server.root / NOTEBOOK
            wait_saved(path, "from IPython.display", 1)
            deadline = time.monotonic() + 20
            while KEY not in nbformat.read(path, as_version=4).cells[0].metadata:
                assert time.monotonic() < deadline, "the record did not reach the file"
                time.sleep(0.2)
            outputs = saved_outputs(path, "from IPython.display")
            assert [KEY in o.get("metadata", {}) for o in outputs] == [False]
            assert json.dumps(nbformat.read(path, as_version=4).cells[0].metadata[KEY]) == (
                json.dumps(want)
            )
