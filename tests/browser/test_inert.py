"""A hostile answer and a hostile tool result run nothing in JupyterLab and Notebook 7 (issue 20,
point 2), in headless Chromium.

The front ends render the output of a cell the user ran as trusted: no sanitizer, and the
``<script>`` tags of HTML output are even run on purpose. A model (or a page it read) that
writes ``<img src=x onerror=...>`` into its answer, or a file whose first 200 characters reach
``%agent history``, ran JavaScript in the Jupyter origin, which can drive the server's REST API.
Here the model (a fake Messages API on loopback) answers with every such trick and reads a file
that holds them; each payload would set ``window.__pwned`` or the page's title. The test asserts
that nothing did, that no output holds a ``javascript:`` link, a script, an iframe or an SVG,
that the hostile text is visible as text and that the Markdown still renders (a heading).

Servers and Chromium as in ``browser_jupyter.py``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    Jupyter,
    chromium_or_skip,
    open_notebook,
    write_agent_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "hostile_output.ipynb"

#: Each payload sets ``window.__pwned`` (or the title) to its name if it ever runs.
PAYLOADS = [
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<script>window.__pwned='script'</script>",
    "<svg onload=\"window.__pwned='svg'\"><circle r='1'/></svg>",
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    "<details open ontoggle=\"window.__pwned='details'\"><summary>s</summary></details>",
    "<a href=\"javascript:window.__pwned='a'\">raw link</a>",
    "<style onload=\"document.title='pwned'\"></style>",
]
ANSWER = "# Findings\n\n" + "\n\n".join(
    [
        *PAYLOADS,
        "[md link](javascript:window.__pwned='md') and <javascript:window.__pwned='auto'>",
        "![pic](javascript:window.__pwned='image')",
        "The end.",
    ]
)
#: The file the agent reads: its first characters reach the record and ``%agent history``.
PAGE = " ".join(PAYLOADS[:3]) + " page tail\n"

#: What a payload that ran left behind (``None`` when nothing ran).
PWNED = "() => window.__pwned === undefined ? null : String(window.__pwned)"

#: Everything in the notebook's outputs that could run or load something.
ACTIVE_IN_OUTPUTS = """() => {
    const outputs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
    const found = [];
    for (const output of outputs) {
        for (const el of output.querySelectorAll('script, iframe, object, embed, form, svg')) {
            found.push(el.tagName);
        }
        for (const el of output.querySelectorAll('*')) {
            for (const attr of el.attributes) {
                if (/^on/i.test(attr.name)) found.push(el.tagName + ' ' + attr.name);
            }
        }
        for (const a of output.querySelectorAll('a[href]')) {
            if (!/^(https?:|mailto:|[^:]*$)/i.test(a.getAttribute('href').trim())) {
                found.push('a href=' + a.getAttribute('href'));
            }
        }
    }
    return found;
}"""


def _hostile_notebook(root: Path, base_url: str) -> None:
    write_agent_notebook(
        root / NOTEBOOK,
        base_url,
        "%%agent\nSummarise page.html",
        "%agent history",
        setup=f"import pathlib\npathlib.Path('page.html').write_text({PAGE!r})",
    )


def test_hostile_answer_and_history_run_nothing(jupyter: Jupyter) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use
    from notebook_fake_server import serve
    from playwright.sync_api import Page, expect, sync_playwright

    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "read_file", {"file_path": "page.html"})]), text(ANSWER)
    )

    def run_cell(page: Page, index: int) -> None:
        cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
        cell.locator(".jp-InputArea").click()
        page.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + 90
        prompt = cell.locator(".jp-InputPrompt")
        while re.search(r"\[\d+\]", str(prompt.text_content())) is None:
            assert time.monotonic() < deadline, f"cell {index} did not finish"
            page.wait_for_timeout(50)

    with serve(fake) as base_url, sync_playwright() as playwright:
        _hostile_notebook(jupyter.root, base_url)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, jupyter, NOTEBOOK)
            for index in range(3):
                run_cell(page, index)
            answer_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
            history_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
            expect(answer_cell).to_contain_text("The end.")
            expect(history_cell).to_contain_text("page tail")
            page.wait_for_timeout(500)  # an onerror or onload would have fired by now
            assert page.evaluate(PWNED) is None, page.evaluate(PWNED)
            assert "pwned" not in page.title()
            assert page.evaluate(ACTIVE_IN_OUTPUTS) == []
            # the text is there, as text: in the answer, the tool's record and the history
            for cell in (answer_cell, history_cell):
                expect(cell).to_contain_text("<img src=x onerror=")
                expect(cell).to_contain_text("<svg onload=")
            expect(answer_cell).to_contain_text("<script>window.__pwned='script'</script>")
            # … and the Markdown is still rendered
            expect(answer_cell.locator(".jp-OutputArea-output h1")).to_have_text("Findings")
            # a click on what was a javascript: link does nothing either
            answer_cell.get_by_text("md link").click()
            page.wait_for_timeout(300)
            assert page.evaluate(PWNED) is None, page.evaluate(PWNED)
        finally:
            browser.close()
