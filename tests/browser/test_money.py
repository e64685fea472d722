"""Dollar amounts read as dollar amounts in JupyterLab and Notebook 7 (issue 34, point 5).

The spend-cap message names two amounts: JupyterLab's LaTeX typesetter took the text between two
``$`` signs for math (``0.14,andthiscell′sbudgetis0.01`` in italics), and a $0.001 budget was
written ``$0.00``. Here tutorial 01's budget cell runs for real (the offline demo model, priced
by ``AgentMagics.prices``, under a budget of $0.001) in headless Chromium, and the text the page
shows must hold both amounts literally, with nothing typeset as math in the cell's output.

Servers and Chromium as in ``browser_jupyter.py``.
"""

from __future__ import annotations

import re
import time

import nbformat
import pytest
from browser_jupyter import CHROMIUM_ARGS, Jupyter, chromium_or_skip, open_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "money.ipynb"
SETUP = (
    "%load_ext jupyter_agent\n"
    "%config AgentMagics.provider = 'offline'\n"
    '%config AgentMagics.prices = {"offline-demo": {"input": 3, "output": 15}}'
)
CELL = "%%agent --budget 0.001\nSummarise data/sales.csv in one sentence."

#: Elements a LaTeX typesetter (MathJax 2 or 3, KaTeX) leaves behind in what it typeset.
MATH_IN_OUTPUT = """(cell) => [...cell.querySelectorAll(
    '.jp-OutputArea-output mjx-container, .jp-OutputArea-output .MathJax,'
    + ' .jp-OutputArea-output .MathJax_Preview, .jp-OutputArea-output .katex')].length"""


def test_the_spend_cap_message_shows_its_amounts_as_written(jupyter: Jupyter) -> None:
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(CELL)]
    nbformat.write(nb, jupyter.root / NOTEBOOK)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            open_notebook(page, jupyter, NOTEBOOK)
            for index in range(2):
                cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
                cell.locator(".jp-InputArea").click()
                page.keyboard.press("Shift+Enter")
                deadline = time.monotonic() + 90
                while (
                    re.search(r"\[\d+\]", str(cell.locator(".jp-InputPrompt").text_content()))
                    is None
                ):
                    assert time.monotonic() < deadline, f"cell {index} did not finish"
                    page.wait_for_timeout(50)
            budget_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
            output = budget_cell.locator(".jp-OutputArea")
            deadline = time.monotonic() + 30
            while "Stopped" not in (output.inner_text() or ""):
                assert time.monotonic() < deadline, output.inner_text()
                page.wait_for_timeout(100)
            page.wait_for_timeout(2000)  # a typesetter runs after the output is attached
            shown = output.inner_text()
            assert "budget is $0.001 " in shown, shown
            assert re.search(r"could cost up to \$0\.\d+, and this cell", shown), shown
            assert page.evaluate(MATH_IN_OUTPUT, budget_cell.element_handle()) == 0, shown
        finally:
            browser.close()
