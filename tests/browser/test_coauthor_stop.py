"""Only the agent's Stop button interrupts a ``run_cell``, in JupyterLab and Notebook 7 (issue 36).

While the agent runs a cell the kernel is busy, so the extension itself interrupts the kernel
when the agent's Stop button is clicked. It used to do so for any button whose label started with
"Stop": a user's own button in another cell's output ended the agent's run with a
KeyboardInterrupt. The agent's Stop widget now carries the class ``jp-agent-stop`` and only that
is matched. Here a user's "Stop the pump" button is clicked during a slow ``run_cell``: the cell
runs to its end. Headless Chromium with the extension, the model the fake Messages API on
loopback (as in ``test_coauthor.py``).
"""

from __future__ import annotations

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
    agent_cell,
    cell_with,
    connected,
    inserted_cell_id,
    run,
    this_extension_path,
    wait_done,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "stop.ipynb"
SLOW = "import time\ntime.sleep(4)\nprint('slept to the end')"
USERS_BUTTON = (
    "from IPython.display import HTML\nHTML(\"<button id='users-stop'>Stop the pump</button>\")"
)


def test_a_users_stop_button_does_not_interrupt_the_agents_run_cell(
    front_end: FrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(
        Reply([tool_use("t1", "insert_cell", {"source": SLOW})]),
        lambda body: Reply([tool_use("t2", "run_cell", {"cell_id": inserted_cell_id(body)})]),
        text("The slow cell ran."),
    )
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(
            server.root / NOTEBOOK,
            base_url,
            "%agent_tools policy run_cell allow",
            nbformat.v4.new_code_cell(USERS_BUTTON),
            "%%agent\nRun something slow",
        )
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            run(page, cell_with(page, "%agent_tools policy"))
            run(page, cell_with(page, "users-stop"))
            users_stop = page.locator("#users-stop")
            expect(users_stop).to_have_count(1)

            turn = cell_with(page, "Run something slow")
            turn.locator(".jp-InputArea").first.click()
            page.keyboard.press("Shift+Enter")
            expect(page.locator(".jp-agent-running")).to_have_count(1, timeout=60_000)
            # the agent's own Stop button is there, carrying the class the page matches
            expect(turn.locator("button.jp-agent-stop")).to_have_count(1)
            page.wait_for_timeout(500)
            users_stop.click()

            wait_done(page, turn, 60)
            slow = agent_cell(page, "time.sleep(4)")
            expect(slow.locator(".jp-OutputArea")).to_contain_text("slept to the end")
            expect(slow.locator(".jp-OutputArea")).not_to_contain_text("KeyboardInterrupt")
            expect(turn).to_contain_text("The slow cell ran.")
        finally:
            browser.close()
