"""The page that ran the cell is the one the agent works in (JupyterLab and Notebook 7).

Three pages on one kernel, in one browser: page A and page B show the same notebook (without
real-time collaboration each page has its own copy of it and its own kernel connection), page C
another notebook whose kernel is switched to A's. B and C connect after A — the last to open the
comm used to become "the notebook". A runs a ``%%agent`` cell: the agent's cell and its edit's
diff appear in A, never in B or C. Then A is closed while a diff waits there: the review and
the next cell tool fail at once, saying the page went away. A, opened again, connects without
``%load_ext`` and the next turn works in it.
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
    FrontEnd,
    Jupyter,
    chromium_or_skip,
    open_notebook,
    serve_jupyter,
    write_agent_notebook,
)
from coauthor_page import (
    agent_cell,
    cell_with,
    connected,
    run,
    this_extension_path,
    wait_done,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "pages.ipynb"
OTHER = "other.ipynb"
FIRST = "print('written in the page that asked')"
LATE = "print('too late')"
BACK = "print('back again')"


def script(fake: Any) -> None:
    from fake_anthropic import Reply, text, tool_use

    def edit(call: str) -> Any:
        def reply(body: dict[str, Any]) -> Any:
            import re

            ids = re.findall(r"Inserted code cell (\S+) \(at", json.dumps(body["messages"]))
            cell = ids[-1] if ids else "missing"
            return Reply(
                [
                    tool_use(
                        call,
                        "edit_cell",
                        {"cell_id": cell, "old_string": "asked", "new_string": "asked, edited"},
                    )
                ]
            )

        return reply

    fake.add(
        Reply([tool_use("a1", "insert_cell", {"source": FIRST})]),
        edit("a2"),
        text("Done in A."),
        # the turn whose page goes away while its diff is shown
        Reply([tool_use("g1", "insert_cell", {"source": FIRST})]),
        edit("g2"),
        Reply([tool_use("g3", "insert_cell", {"source": LATE})]),
        text("The page went away."),
        # the page, opened again
        Reply([tool_use("b1", "insert_cell", {"source": BACK})]),
        text("Back."),
    )


def result_of(fake: Any, call: str) -> str | None:
    from fake_anthropic import result_text, tool_results

    for body in fake.requests:
        for block in tool_results(body):
            if block["tool_use_id"] == call:
                return result_text(block)
    return None


KERNEL_ID = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id"
USE_KERNEL = """async id => {
    const context = window.jupyterapp.shell.currentWidget.sessionContext;
    await context.changeKernel({id});
}"""


def open_page(browser_context: Any, server: Jupyter, path: str) -> Any:
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    open_notebook(page, server, path)
    return page


def test_the_page_that_ran_the_cell_is_the_one_the_agent_works_in(
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
        write_agent_notebook(
            server.root / NOTEBOOK,
            base_url,
            "%%agent\nWork in this page",
            "%%agent\nEdit while I leave",
            "%%agent\nAgain",
        )
        other = nbformat.v4.new_notebook()
        other.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        other.cells = [nbformat.v4.new_code_cell("y = 2")]
        nbformat.write(other, server.root / OTHER)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 1200})
            a = open_page(context, server, NOTEBOOK)
            run(a, cell_with(a, "%load_ext jupyter_agent"))
            connected(a)
            kernel = a.evaluate(KERNEL_ID)
            b = open_page(context, server, NOTEBOOK)  # the same notebook, a second page
            connected(b)
            c = open_page(context, server, OTHER)  # another notebook, on A's kernel
            c.evaluate(USE_KERNEL, kernel)
            connected(c)
            assert c.evaluate(KERNEL_ID) == kernel and b.evaluate(KERNEL_ID) == kernel

            ask = cell_with(a, "Work in this page")
            ask.locator(".jp-InputArea").first.click()
            a.keyboard.press("Shift+Enter")
            diff = a.locator(".jp-Notebook .jp-agent-diff")
            expect(diff).to_have_count(1, timeout=30_000)  # shown where the cell ran
            expect(diff).to_contain_text("asked, edited")
            diff.locator(".jp-agent-diff-accept").click()
            wait_done(a, ask)
            expect(agent_cell(a, "asked, edited")).to_have_count(1)
            for elsewhere in (b, c):
                expect(elsewhere.locator(".jp-agent-diff")).to_have_count(0)
                expect(elsewhere.locator(".jp-Cell.jp-agent-cell")).to_have_count(0)

            # A goes away while the next turn's diff is shown there
            leave = cell_with(a, "Edit while I leave")
            leave.locator(".jp-InputArea").first.click()
            a.keyboard.press("Shift+Enter")
            expect(diff).to_have_count(1, timeout=30_000)
            closed = time.monotonic()
            a.close()
            while result_of(fake, "g3") is None:  # 60 s only stops a hung test
                assert time.monotonic() - closed < 60, "the cell tools never failed"
                time.sleep(0.1)
            took = time.monotonic() - closed
            review, late = result_of(fake, "g2") or "", result_of(fake, "g3") or ""
            assert "went away" in review and "went away" in late, (review, late)
            # at once: the close answered the review in flight, not the 15 s exchange timeout
            assert "did not answer" not in review, review
            print(f"{front_end.name}: the tools failed {took:.2f} s after the page closed")
            for elsewhere in (b, c):
                expect(elsewhere.locator(".jp-agent-diff")).to_have_count(0)
                expect(elsewhere.locator(".jp-Cell.jp-agent-cell")).to_have_count(0)

            # A, opened again: connected without %load_ext; the next turn works in it
            a = open_page(context, server, NOTEBOOK)
            connected(a)
            again = cell_with(a, "Again")
            run(a, again)
            expect(agent_cell(a, BACK)).to_have_count(1)
            for elsewhere in (b, c):
                expect(elsewhere.locator(".jp-Cell.jp-agent-cell")).to_have_count(0)
        finally:
            browser.close()
