"""Running a proposing ``%%agent`` cell again replaces its own unexecuted proposal (issue 25).

Tutorial 05 (``propose_cell``) added one more proposed cell on every run + save: the proposal went
through ``set_next_input``, which JupyterLab always answers with a new cell. With the co-authoring
extension connected the proposal is placed through the notebook model: a re-run replaces the
earlier proposal right below the cell — if it is the agent's, never run and not edited — instead
of adding another. JupyterLab and Notebook 7 in headless Chromium with the extension (as in
``test_browser_coauthor.py``), the model the fake Messages API on loopback: run the cell twice,
save — one proposed cell, holding the latest proposal.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    FrontEnd,
    chromium_or_skip,
    open_notebook,
    serve_jupyter,
    write_agent_notebook,
)
from coauthor_page import agent_cell, cell_with, connected, run, this_extension_path

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "proposal.ipynb"
FIRST = "revenue_per_unit = df['revenue'] / df['units']"
SECOND = "revenue_per_unit = (df['revenue'] / df['units']).round(2)"


def test_a_rerun_replaces_its_own_unexecuted_proposal(
    front_end: FrontEnd,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(
        Reply([tool_use("p1", "propose_cell", {"code": FIRST})]),
        text("Proposed."),
        Reply([tool_use("p2", "propose_cell", {"code": SECOND})]),
        text("Proposed again."),
        Reply([tool_use("p3", "propose_cell", {"code": SECOND})]),
        text("And again."),
    )
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(
            server.root / NOTEBOOK,
            base_url,
            # --fresh: each run asks the model again (a re-run of the same prompt would replay)
            nbformat.v4.new_code_cell("%%agent --fresh\nPropose the per-unit revenue"),
            nbformat.v4.new_code_cell("print('the last cell')"),
        )
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            asking = cell_with(page, "Propose the per-unit revenue")
            cells = page.locator(".jp-Notebook .jp-CodeCell")
            for shown in (FIRST, SECOND, SECOND):
                run(page, asking)
                expect(cells).to_have_count(4)  # the setup, the agent cell, one proposal, the last
                proposal = cells.nth(2)
                expect(proposal.locator(".jp-InputArea-editor")).to_have_text(shown)
            expect(agent_cell(page, SECOND)).to_be_visible()
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + 30
            while True:
                saved = nbformat.read(server.root / NOTEBOOK, as_version=4).cells
                if any(cell.source == SECOND for cell in saved):
                    break
                assert time.monotonic() < deadline, "the notebook was not saved"
                page.wait_for_timeout(100)
            sources = [cell.source for cell in saved]
            assert sources.count(SECOND) == 1 and FIRST not in sources, sources
            assert len(saved) == 4, sources
            assert sources[3] == "print('the last cell')"
        finally:
            browser.close()
