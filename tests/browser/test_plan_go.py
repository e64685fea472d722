"""A "Go" button under a ``%%agent --plan`` answer, in JupyterLab and Notebook 7 (issue 25).

With the co-authoring extension connected the plan ends with a Go button; a click inserts a
``%agent go`` cell right after the plan cell and runs it through the front end, so the run has a
cell of its own for its output. Without the extension there is no button (a click would run
outside any cell): the plan says to run ``%agent go``. The button carries the nonce the kernel
made for the plan, and the extension answers only a button in a code cell's outputs: a forged
``jp-agent-go`` button (in a Markdown cell, or an output without the nonce) inserts and runs
nothing. Headless Chromium with the extension, the model the fake Messages API on loopback (as in
``test_browser_coauthor.py``).
"""

from __future__ import annotations

import re
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
from coauthor_page import (
    cell_with,
    connected,
    prompt_done,
    run,
    this_extension_path,
    wait_done,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "plan.ipynb"


def test_go_under_a_plan_inserts_and_runs_an_agent_go_cell(
    front_end: FrontEnd,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, text, user_texts
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(
        text("1. Read data/sales.csv\n2. Add the revenue per unit"),
        text("Carried out: the revenue per unit is in place."),
    )
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(
            server.root / NOTEBOOK,
            base_url,
            nbformat.v4.new_markdown_cell('Forged: <button class="jp-agent-go">Go</button>'),
            nbformat.v4.new_code_cell("%%agent --plan\nAdd the revenue per unit"),
            nbformat.v4.new_code_cell(
                "from IPython.display import HTML\n"
                "HTML(\"<button class='jp-agent-go' id='forged-output'>Go</button>\")"
            ),
            nbformat.v4.new_code_cell("print('the last cell')"),
        )
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            plan = cell_with(page, "Add the revenue per unit")
            run(page, plan)
            expect(plan).to_contain_text("Add the revenue per unit")
            go = plan.locator("button.jp-agent-go")
            expect(go).to_have_count(1)
            cells = page.locator(".jp-Notebook .jp-CodeCell")
            expect(cells).to_have_count(4)
            # forged buttons: in a Markdown cell, and in an output without the plan's nonce
            forged = page.locator(".jp-MarkdownCell button.jp-agent-go")
            expect(forged).to_have_count(1)
            forged.click()
            output = cell_with(page, "forged-output")
            run(page, output)
            output.locator("#forged-output").click()
            page.wait_for_timeout(2000)
            expect(cells).to_have_count(4)  # no cell inserted
            assert len(fake.requests) == 1  # the plan stays pending, nothing ran

            go.click()
            expect(cells).to_have_count(5)
            go_cell = cells.nth(2)
            expect(go_cell.locator(".jp-InputArea-editor")).to_have_text(
                re.compile(r"^%agent go --plan [0-9a-f]{32}$")
            )
            wait_done(page, go_cell)
            expect(go_cell).to_contain_text("Carried out: the revenue per unit is in place.")
            assert not prompt_done(cells.nth(4))  # only the go cell ran
            assert len(fake.requests) == 2
            assert "Go ahead" in user_texts(fake.requests[1])[-1]
        finally:
            browser.close()
