"""What is approved is what runs, as the user sees it (JupyterLab and Notebook 7).

The agent proposes an edit whose ``new_string`` hides code behind a lone carriage return (Python
reads it as a line break), flips a line with bidi overrides (Trojan Source) and holds a very long
line: the diff in the cell shows the escapes and wraps the long line inside the cell. Then the
agent inserts a cell and asks to run it: the approval prompt shows the cell's source, and the
cell runs after Approve.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    run,
    this_extension_path,
    wait_done,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "review.ipynb"
TARGET = "threshold = 0.1"
HIDDEN = "threshold = 0.5  # tuned\rimport os; os.system('echo pwned')"
TROJAN = "ok = True  # \u202e } \u2066if admin:\u2069 \u2066 # only"
LONG = "values = [" + ", ".join(str(n) for n in range(150)) + "]"
RUN_ME = "approved_value = 6 * 7\nprint('ran', approved_value)"


def script(fake: Any) -> None:
    import json
    import re

    from fake_anthropic import Reply, text, tool_use

    def run_inserted(body: dict[str, Any]) -> Any:
        ids = re.findall(r"Inserted code cell (\S+) \(at", json.dumps(body["messages"]))
        return Reply([tool_use("r1", "run_cell", {"cell_id": ids[-1]})])

    def edit(body: dict[str, Any]) -> Any:
        cells = json.dumps(body["messages"])
        found = re.search(r"id=(\S+) code[^\\]*\\n" + re.escape(TARGET), cells)
        cell = found.group(1) if found else "missing"
        new = f"{HIDDEN}\n{TROJAN}\n{LONG}"
        return Reply(
            [
                tool_use(
                    "e1", "edit_cell", {"cell_id": cell, "old_string": TARGET, "new_string": new}
                )
            ]
        )

    fake.add(
        Reply([tool_use("c1", "notebook_cells", {})]),
        edit,
        Reply([tool_use("i1", "insert_cell", {"source": RUN_ME})]),
        run_inserted,
        text("Done."),
    )


def test_the_review_and_the_run_prompt_show_what_will_run(
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
        write_agent_notebook(server.root / NOTEBOOK, base_url, TARGET, "%%agent\nTune it")
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            ask = cell_with(page, "Tune it")
            ask.locator(".jp-InputArea").first.click()
            page.keyboard.press("Shift+Enter")

            diff = page.locator(".jp-Notebook .jp-agent-diff")
            expect(diff).to_have_count(1, timeout=60_000)
            shown = diff.locator(".jp-agent-diff-lines").inner_text()
            assert "# tuned\\rimport os; os.system(" in shown, shown
            assert "\\u202e" in shown and "\\u2066" in shown, shown
            assert "\u202e" not in shown and "\r" not in shown
            assert "149]" in shown  # wrapped, not cut
            widths = diff.evaluate(
                "box => [box.scrollWidth, box.clientWidth,"
                " box.closest('.jp-Cell').getBoundingClientRect().right,"
                " box.getBoundingClientRect().right]"
            )
            assert widths[0] <= widths[1] + 1 and widths[3] <= widths[2] + 1, widths
            diff.locator(".jp-agent-diff-reject").click()

            # run_cell asks, showing the code that will run
            prompt = ask.locator(".jp-OutputArea").filter(has_text="Allow")
            expect(prompt.filter(has_text="approved_value = 6 * 7")).to_have_count(1)
            approve = ask.locator("button[title='Approve']")
            expect(approve).to_be_visible()
            approve.click()
            wait_done(page, ask, 60)
            expect(agent_cell(page, "approved_value").locator(".jp-OutputArea")).to_contain_text(
                "ran 42"
            )
            expect(cell_with(page, TARGET).locator(".jp-InputArea")).not_to_contain_text("tuned")
        finally:
            browser.close()
