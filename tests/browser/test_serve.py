"""``%agent serve`` in JupyterLab and Notebook 7, in headless Chromium: what a person sees while
another agent uses their kernel.

The kernel tests prove the messages are sent; only a front end proves they land. Here the serve
cell has finished and the kernel is idle when the outside agent (the ``mcp`` SDK's client, in the
test) calls a tool whose policy is ``ask``: the Approve / Deny prompt must appear in the serve
cell's output, a click on Approve must reach the kernel (no cell runs to pump it), the call must
return its result, and the serve cell must show the call's record — then keep it after the
notebook is saved.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    FAILED_OUTPUTS,
    LAB,
    NOTEBOOK7,
    RUN_ALL_OVER,
    FrontEnd,
    chromium_or_skip,
    open_notebook,
    serve_jupyter,
)

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "serve_in_lab.ipynb"
CLAUDE_LINE = re.compile(
    r"claude mcp add --transport http \S+ (http://\S+) --header "
    r".Authorization: Bearer \$\(cat (~/)?'([^']+)'\)"
)


def _notebook(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "%load_ext jupyter_agent\nanswer_of_the_day = 41 + 1\n"
            "%agent_tools policy inspect_variable ask"
        ),
        nbformat.v4.new_code_cell("%agent serve"),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, root / NOTEBOOK)


def _call(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def go() -> Any:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with (
            client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool(name, arguments)

    return asyncio.run(go())


@pytest.mark.parametrize("front_end", [LAB, NOTEBOOK7], ids=lambda front_end: front_end.name)
def test_an_outside_call_is_approved_in_the_serve_cell(front_end: FrontEnd, tmp_path: Path) -> None:
    chromium = chromium_or_skip()
    from playwright.sync_api import expect, sync_playwright

    with serve_jupyter(front_end, tmp_path) as jupyter, sync_playwright() as playwright:
        _notebook(jupyter.root)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            page.set_default_timeout(60_000)
            open_notebook(page, jupyter, NOTEBOOK)
            page.click(".lm-MenuBar-item:has-text('Run')")
            page.click(".lm-Menu-item:has-text('Run All Cells')")
            page.wait_for_function(RUN_ALL_OVER, timeout=120_000)
            assert not page.evaluate(f"() => {FAILED_OUTPUTS}")
            serve_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
            expect(serve_cell).to_contain_text("claude mcp add")
            printed = serve_cell.inner_text()
            match = CLAUDE_LINE.search(printed + "\n")
            assert match is not None, printed
            url, home, token_file = match.groups()
            # the line names the file that keeps the token; the token is never shown
            token = Path(os.path.expanduser((home or "") + token_file)).read_text().strip()
            assert token not in printed

            outcome: dict[str, Any] = {}

            def outside_agent() -> None:
                try:
                    outcome["result"] = _call(
                        url, token, "inspect_variable", {"name": "answer_of_the_day"}
                    )
                except BaseException as exc:  # reported below, on the test's thread
                    outcome["error"] = exc

            caller = threading.Thread(target=outside_agent)
            caller.start()
            approve = serve_cell.get_by_role("button", name="Approve")
            expect(approve).to_be_visible(timeout=60_000)
            approve.click()
            caller.join(60)
            assert "error" not in outcome, outcome.get("error")
            result = outcome["result"]
            assert not result.is_error
            assert "42" in result.content[0].text

            expect(serve_cell).to_contain_text("Approved: inspect_variable runs")
            expect(serve_cell).to_contain_text("inspect_variable(name='answer_of_the_day')")
            expect(
                serve_cell.locator(".jp-RenderedHTMLCommon").filter(has_text="42").first
            ).to_be_visible()

            page.keyboard.press("Control+s")
            page.wait_for_timeout(1500)
            saved = nbformat.read(jupyter.root / NOTEBOOK, as_version=4)
            record = "".join(
                output.get("data", {}).get("text/plain", "") for output in saved.cells[1].outputs
            )
            assert "inspect_variable(name='answer_of_the_day')" in record
            assert "Approved: inspect_variable runs" in record
        finally:
            browser.close()
