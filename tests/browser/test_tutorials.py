"""The tutorials and the notebook canvas in a real browser: JupyterLab and Notebook 7, headless
Chromium, widgets as a person sees them.

nbval proves the notebooks run in a kernel; only a browser proves the front end renders them. The
tests start a Jupyter server on loopback (random port, a token, its own settings folders) over a
copy of ``notebooks/`` with the outputs cleared and drive Debian's Chromium with Playwright.

Each test runs twice: in JupyterLab and in Notebook 7 (the ``notebook`` package: the same server
and notebook widget, its own pages, menus and toolbar).

The first test opens the quickstart, runs every cell from the Run menu and then looks at the page:
the answer, the tool-call records and the ``%agent_tools`` checkboxes. It ticks a checkbox and
runs a new cell to prove the click reached the kernel's registry.

The second test is the notebook as canvas: an ``%%agent`` cell (the model a fake Messages API on
loopback) reads the notebook's history, plot included, and proposes a cell, which the front end
inserts below it; the notebook is saved, the kernel restarted and the notebook reopened (Lab
reloads the page, Notebook 7 goes through its ``/tree`` file browser), and the finished cell
still reads as a record of its tool calls with no "Error displaying widget"; then a slow turn
shows its live tool-call view and Stop button, the button ends it within a second, its record
stays, and the next cell runs.

Screenshots go to a temporary folder; with ``JUPYTER_AGENT_REFRESH_SCREENSHOT=1`` they replace
``docs/screenshot.png`` and ``docs/screenshot_canvas.png``, the pictures the README shows (taken
in JupyterLab).

Chromium comes from Debian (``apt-get install chromium``); Playwright's own browser download is not
used. Without it the test skips locally and fails on CI (``CI=true``), where it must run.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    FAILED_OUTPUTS,
    LAB,
    QUICKSTART,
    REPO,
    RUN_ALL_OVER,
    WIDGET_VIEW,
    Jupyter,
    SlowGate,
    chromium_or_skip,
    open_notebook,
    reopen_notebook,
    wait_kernel_ready,
    write_agent_notebook,
)

DOCS = REPO / "docs"
#: Set to 1 to refresh the README's screenshots in docs/ (otherwise they go to a temp folder).
REFRESH_SCREENSHOTS = os.environ.get("JUPYTER_AGENT_REFRESH_SCREENSHOT", "") == "1"
#: The tool whose checkbox the test ticks (disabled by default, so a tick is a real change).
TOGGLED_TOOL = "run_bash"
#: A figure from the quickstart's recorded answer (total revenue of sales.csv).
ANSWER_TEXT = "341,854.20"

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]


def test_quickstart_renders_and_drives_the_kernel_in_chromium(jupyter: Jupyter) -> None:
    chromium = chromium_or_skip()
    from playwright.sync_api import Page, expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1150})
            page.set_default_timeout(60_000)
            open_notebook(page, jupyter, QUICKSTART)

            page.click(".lm-MenuBar-item:has-text('Run')")
            page.click(".lm-Menu-item:has-text('Run All Cells')")
            page.wait_for_function(RUN_ALL_OVER, timeout=240_000)
            failures = page.evaluate(f"() => {FAILED_OUTPUTS}")
            assert not failures, "a cell failed in the browser:\n" + "\n".join(failures)
            notebook = page.locator(".jp-Notebook")

            # the answer, with the offline model saying it is the one answering
            expect(notebook).to_contain_text(ANSWER_TEXT)
            expect(notebook).to_contain_text("ANTHROPIC_API_KEY")
            # the finished cell keeps a static record of its tool calls (the live widgets were
            # for the turn only): the title and an excerpt of the result, as HTML
            records = notebook.locator(".jp-RenderedHTMLCommon").filter(has_text="read_file(")
            expect(records.first).to_be_visible()
            expect(records.filter(has_text="month,region").first).to_be_visible()

            # Run All went on past the %agent_tools panel: its cell holds the tools' table, no
            # widget (a saved notebook reopened with "Error displaying widget: model not found")
            panel_cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="%agent_tools")
            expect(panel_cell.first).to_contain_text(re.compile(r"enabled\s+policy"))
            expect(panel_cell.first.locator(WIDGET_VIEW)).to_have_count(0)

            def new_cell(code: str) -> None:
                page.locator(".jp-Notebook .jp-Cell").last.click()
                page.keyboard.press("Escape")
                page.keyboard.press("b")
                page.keyboard.press("Enter")
                page.keyboard.type(code)
                page.keyboard.press("Shift+Enter")

            # the panel of the last cell run is live: a checkbox per tool, acting on the registry
            new_cell("%agent_tools")
            toggle = notebook.locator(".widget-checkbox").filter(
                has=page.locator(f"text='{TOGGLED_TOOL}'")
            )
            expect(toggle).to_have_count(1, timeout=30_000)
            checkbox = toggle.locator("input[type=checkbox]")
            expect(checkbox).not_to_be_checked()
            checkbox.scroll_into_view_if_needed()
            checkbox.check()
            expect(checkbox).to_be_checked()

            # a new cell, typed and run in the browser, reads the registry in the kernel; once it
            # has run, the panel above is its table (showing the tool ticked)
            new_cell(f"print('ENABLED', agent.registry.is_tool_enabled({TOGGLED_TOOL!r}))")
            expect(notebook).to_contain_text("ENABLED True", timeout=30_000)
            expect(toggle).to_have_count(0, timeout=30_000)
            expect(notebook.locator(WIDGET_VIEW)).to_have_count(0)

            take_screenshot(page, screenshot_path("screenshot.png", jupyter))

            # save, restart the kernel, reopen: no widget error anywhere
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + 30
            while "ENABLED True" not in (saved := (jupyter.root / QUICKSTART).read_text()):
                assert time.monotonic() < deadline, "the notebook was not saved"
                page.wait_for_timeout(100)
            assert "widget-view" not in saved
            page.click(".lm-MenuBar-item:has-text('Kernel')")
            page.click(".lm-Menu-item:has-text('Restart Kernel…')")
            page.click(".jp-Dialog-button.jp-mod-accept")
            wait_kernel_ready(page)
            reopened = reopen_notebook(page, jupyter, QUICKSTART)
            assert isinstance(reopened, Page)
            expect(reopened.locator(".jp-Notebook")).to_contain_text(
                re.compile(r"enabled\s+policy")
            )
            expect(reopened.locator(".jp-Notebook")).not_to_contain_text("Error displaying widget")
        finally:
            browser.close()


def screenshot_path(name: str, server: Jupyter) -> Path:
    """``docs/NAME`` when refreshing the README's pictures (JupyterLab's), else a file in the
    test's temporary folder."""
    if REFRESH_SCREENSHOTS and server.front_end is LAB:
        return DOCS / name
    return server.root.parent / f"{server.front_end.name}_{name}"


def take_screenshot(page: object, path: Path, cell_text: str = "%%agent") -> None:
    """The first cell holding ``cell_text``, with what follows it, sidebar closed."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.keyboard.press("Escape")
    if page.locator(".jp-SideBar.lm-TabBar .lm-mod-current").count():
        page.keyboard.press("Control+b")
    cell = page.locator(".jp-CodeCell").filter(has_text=re.compile(re.escape(cell_text))).first
    cell.scroll_into_view_if_needed()
    cell.evaluate("cell => cell.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000


CANVAS = "canvas.ipynb"
#: The code the agent proposes in the canvas test, which the front end puts in a new cell.
PROPOSED = "weekly_sales.append(27)"
AGENT_CELL_ERRORS = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')]
    .filter(c => c.textContent.includes('%%agent'))
    .map(c => (c.querySelector('.jp-OutputArea') || {textContent: ''}).textContent)
    .filter(t => /Error displaying widget|model not found/.test(t))"""


def _canvas_notebook(root: Path, base_url: str) -> None:
    write_agent_notebook(
        root / CANVAS,
        base_url,
        "import matplotlib.pyplot as plt\nweekly_sales = [12, 15, 11, 19, 24]\n"
        "plt.figure(figsize=(5, 2.5))\nplt.plot(weekly_sales, marker='o')\n"
        "plt.title('Weekly sales')\nplt.show()",
        "%%agent\nWhat does my plot show?",
        "%%agent\nTell me a long story",
        "print('next cell works')",
    )


def _script_canvas(fake: object) -> None:
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use

    assert isinstance(fake, FakeAnthropic)
    fake.add(
        Reply(
            [
                {"type": "text", "text": "Let me look at your recent cells."},
                tool_use("toolu_1", "notebook_history", {"last": 2}),
            ]
        ),
        Reply([tool_use("toolu_2", "propose_cell", {"code": PROPOSED})]),
        text(
            "Your plot of `weekly_sales` rises from **12** to **24** over five weeks, with one "
            "dip in week 3 (11). The last two weeks grew fastest."
        ),
        Reply([tool_use("toolu_3", "list_dir", {"path": "."})]),
        Reply([{"type": "text", "text": "Once upon a time " * 300}], chunk=6, gate=SlowGate()),  # type: ignore[arg-type]
    )


def _saved_cells(path: Path) -> list[nbformat.NotebookNode]:
    try:
        return list(nbformat.read(path, as_version=4).cells)
    except Exception:  # half written, or not yet
        return []


def test_agent_cells_survive_a_restart_and_stop_ends_a_turn(jupyter: Jupyter) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, tool_results
    from notebook_fake_server import serve
    from playwright.sync_api import Page, expect, sync_playwright

    fake = FakeAnthropic()
    _script_canvas(fake)

    def prompt_of(page: Page, index: int) -> str:
        return str(
            page.locator(".jp-Notebook .jp-CodeCell")
            .nth(index)
            .locator(".jp-InputPrompt")
            .text_content()
        )

    def run_cell(page: Page, index: int) -> None:
        page.locator(".jp-Notebook .jp-CodeCell").nth(index).locator(".jp-InputArea").click()
        page.keyboard.press("Shift+Enter")

    def wait_done(page: Page, index: int, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while re.search(r"\[\d+\]", prompt_of(page, index)) is None:
            assert time.monotonic() < deadline, f"cell {index} did not finish"
            page.wait_for_timeout(50)

    with serve(fake) as base_url, sync_playwright() as playwright:
        _canvas_notebook(jupyter.root, base_url)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, jupyter, CANVAS)
            notebook = page.locator(".jp-Notebook")
            for index in range(3):
                run_cell(page, index)
                wait_done(page, index)
            agent_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
            expect(agent_cell).to_contain_text("rises from 12 to 24")
            record = agent_cell.locator(".jp-RenderedHTMLCommon").filter(
                has_text="notebook_history("
            )
            expect(record).to_be_visible()
            expect(record.locator("img")).to_have_count(1)  # the plot's thumbnail
            expect(agent_cell.locator(WIDGET_VIEW)).to_have_count(0)  # the live views are gone
            [result] = tool_results(fake.requests[1])
            assert [b["type"] for b in result["content"]].count("image") == 1
            # propose_cell: a new cell right below the agent's, holding the code, not run
            proposed = page.locator(".jp-Notebook .jp-CodeCell").nth(3)
            expect(proposed.locator(".jp-InputArea-editor")).to_have_text(PROPOSED)
            assert re.search(r"\[\d+\]", prompt_of(page, 3)) is None
            expect(page.locator(".jp-Notebook .jp-CodeCell").nth(4)).to_contain_text("long story")
            take_screenshot(page, screenshot_path("screenshot_canvas.png", jupyter), "weekly_sales")

            # save: the file holds the record and the proposed cell, and no widget view
            page.keyboard.press("Control+s")
            deadline = time.monotonic() + 30
            while len(saved := _saved_cells(jupyter.root / CANVAS)) != 6:
                assert time.monotonic() < deadline, "the notebook was not saved"
                page.wait_for_timeout(100)
            saved_agent = saved[2]
            assert saved[3].source == PROPOSED
            bundles = [o.get("data", {}) for o in saved_agent.outputs]
            assert not [b for b in bundles if "application/vnd.jupyter.widget-view+json" in b]
            assert any("notebook_history(" in b.get("text/html", "") for b in bundles)

            # restart the kernel, reopen: the record is still there, no widget error
            page.click(".lm-MenuBar-item:has-text('Kernel')")
            page.click(".lm-Menu-item:has-text('Restart Kernel…')")
            page.click(".jp-Dialog-button.jp-mod-accept")
            wait_kernel_ready(page)
            reopened = reopen_notebook(page, jupyter, CANVAS)
            assert isinstance(reopened, Page)
            page = reopened
            notebook = page.locator(".jp-Notebook")
            agent_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
            expect(agent_cell).to_contain_text("notebook_history(")
            expect(agent_cell).to_contain_text("rises from 12 to 24")
            assert page.evaluate(AGENT_CELL_ERRORS) == []

            # a slow turn: its live tool-call view and Stop button; a click ends it ("Stopped"),
            # its record stays, and the next cell works
            run_cell(page, 0)
            wait_done(page, 0)
            run_cell(page, 4)
            story_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(4)
            stop = story_cell.locator("button:has-text('Stop')")
            expect(stop).to_be_visible(timeout=60_000)  # the first cell after a restart is slow
            expect(story_cell).to_contain_text("Once upon a time", timeout=30_000)
            live = story_cell.locator(f"{WIDGET_VIEW}.widget-toggle-button")
            expect(live.filter(has_text="list_dir(").first).to_be_visible()
            clicked = time.monotonic()
            stop.click()
            wait_done(page, 4, timeout_s=10)
            stopped_after = time.monotonic() - clicked
            expect(story_cell).to_contain_text("Stopped")  # the click ended it, not the story
            story_record = story_cell.locator(".jp-RenderedHTMLCommon").filter(has_text="list_dir(")
            expect(story_record.first).to_be_visible()
            expect(story_cell.locator(WIDGET_VIEW)).to_have_count(0)
            run_cell(page, 5)
            expect(notebook).to_contain_text("next cell works", timeout=30_000)
            assert page.evaluate(AGENT_CELL_ERRORS) == []
            assert len(fake.requests) == 5
            print(f"{jupyter.front_end.name}: stopped {stopped_after:.2f} s after the click")
        finally:
            browser.close()
