"""The front end's kernel status says Busy for as long as an ``%%agent`` cell runs (issue 25).

JupyterLab's status bar (and Notebook 7's kernel indicator) said Idle during a running
``%%agent`` cell once the cell had handled a widget message — a click on a live tool-call view.
Real JupyterLab and Notebook 7 in headless Chromium, the model a fake Messages API on loopback
(see ``test_browser.py`` for the set-up): a slow turn, a click on its tool-call toggle, then the
page's own session is asked for its kernel's display status: busy while the story streams,
idle once the cell has finished.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    WIDGET_VIEW,
    Jupyter,
    SlowGate,
    chromium_or_skip,
    open_notebook,
    write_agent_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

STATUS = "status.ipynb"
#: What the page shows as the kernel's state (the status bar and Notebook 7's indicator read it).
DISPLAY_STATUS = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    return panel.sessionContext.kernelDisplayStatus;
}"""


#: Every status message the page's kernel connection receives, with its parent's type.
RECORD_STATUSES = """() => {
    window.__statuses = [];
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    kernel.anyMessage.connect((_, args) => {
        const msg = args.msg;
        if (msg.header.msg_type === 'status' || args.direction === 'send') {
            window.__statuses.push([args.direction, msg.header.msg_type,
                (msg.content || {}).execution_state, (msg.parent_header || {}).msg_type]);
        }
    });
}"""


def _status_notebook(root: Path, base_url: str) -> None:
    write_agent_notebook(
        root / STATUS,
        base_url,
        nbformat.v4.new_code_cell("%%agent\nTell me a long story"),
    )


def test_the_kernel_reads_busy_while_an_agent_cell_handles_a_click(jupyter: Jupyter) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, Reply, tool_use
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "list_dir", {"path": "."})]),
        Reply([{"type": "text", "text": "Once upon a time " * 40}], chunk=6, gate=SlowGate()),  # type: ignore[arg-type]
    )
    with serve(fake) as base_url, sync_playwright() as playwright:
        _status_notebook(jupyter.root, base_url)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, jupyter, STATUS)
            cells = page.locator(".jp-Notebook .jp-CodeCell")

            def run(index: int) -> None:
                cells.nth(index).locator(".jp-InputArea").click()
                page.keyboard.press("Shift+Enter")

            def finished(index: int) -> bool:
                prompt = str(cells.nth(index).locator(".jp-InputPrompt").text_content())
                return re.search(r"\[\d+\]", prompt) is not None

            run(0)
            deadline = time.monotonic() + 60
            while not finished(0):
                assert time.monotonic() < deadline, "the first cell did not finish"
                page.wait_for_timeout(50)
            page.evaluate(RECORD_STATUSES)
            run(1)
            story = cells.nth(1)
            expect(story).to_contain_text("Once upon a time", timeout=60_000)
            assert page.evaluate(DISPLAY_STATUS) == "busy"
            toggle = story.locator(f"{WIDGET_VIEW}.widget-toggle-button").filter(
                has_text="list_dir("
            )
            toggle.first.click()  # a widget message the running cell handles
            page.wait_for_timeout(1500)
            assert not finished(1), "the story ended before the status was read"
            shown = [page.evaluate(DISPLAY_STATUS)]
            for _ in range(5):
                page.wait_for_timeout(200)
                shown.append(page.evaluate(DISPLAY_STATUS))
            statuses = page.evaluate("() => window.__statuses")
            assert set(shown) == {"busy"}, (shown, statuses)
            deadline = time.monotonic() + 90
            while not finished(1):
                assert time.monotonic() < deadline, "the story did not finish"
                page.wait_for_timeout(100)
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext"
                ".kernelDisplayStatus === 'idle'"
            )
        finally:
            browser.close()
