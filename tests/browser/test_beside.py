"""A ``%%agent`` cell run while another cell runs is answered beside it, in JupyterLab and
Notebook 7 (issue 37).

The extension sends such a cell to a kernel subshell (JEP 91, ipykernel 7) instead of letting
it queue behind the running cell (``labextension/src/beside.ts``). Real JupyterLab and Notebook 7
in headless Chromium, the model the fake Messages API on loopback (as in ``test_coauthor.py``).
The running cell loops, printing a counter, until the test writes the file ``done``: the answer
must appear, with its one-line note, while that cell still runs — its prompt still ``[*]``, its
counter still advancing afterwards — and the cell must then finish unharmed. Stop on the beside
answer, clicked while the agent's own ``run_cell`` runs a slow cell on the main shell, must end
the answer only: no kernel interrupt reaches that cell. A ``%%agent`` cell run behind a cell that
is itself still waiting keeps its turn, and the page says it is queued. In JupyterLab, a
console on the notebook's kernel (File > New Console for Notebook) is another connection to the
same kernel: its ``%agent ask`` or ``%%agent``, typed while the notebook's loop runs, is answered
in the console while the loop still runs (``labextension/src/console.ts``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    LAB,
    FrontEnd,
    SlowGate,
    chromium_or_skip,
    open_notebook,
    serve_jupyter,
    write_agent_notebook,
)
from coauthor_page import (
    cell_with,
    connected,
    inserted_cell_id,
    run,
    this_extension_path,
    wait_done,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

NOTEBOOK = "beside.ipynb"
#: A loop that prints a counter until the file ``done`` appears (at most ~3 minutes).
LOOP = """\
import os, time
counter = 0
while not os.path.exists("done") and counter < 3600:
    counter += 1
    print(f"tick {counter}", flush=True)
    time.sleep(0.05)
print("loop finished", flush=True)
"""
QUESTION = "%%agent\nHow is the loop doing?"
#: Where the loop's cell is looked for: any code cell in the first test; the agent's running
#: cell in the second (the turn's own outputs may quote the loop's source).
LOOP_CELL = ".jp-Notebook .jp-CodeCell"
RUNNING = ".jp-Notebook .jp-Cell.jp-agent-running"
ANSWER = "The loop is counting and doing well."


def _ticks(cell: Any) -> int:
    found = re.findall(r"tick (\d+)", cell.locator(".jp-OutputArea").first.inner_text())
    return int(found[-1]) if found else 0


def _loop_cell(page: Any, selector: str) -> Any:
    """The cell among those ``selector`` finds whose source is the loop."""
    source = page.locator(".jp-InputArea", has_text="counter < 3600")
    return page.locator(selector).filter(has=source).first


def _start(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")


def _still_running(page: Any, selector: str, running: Any) -> None:
    """The cell ``running`` still runs (its prompt says ``[*]``), and the loop's counter, in the
    cell among those ``selector`` finds, still advances."""
    prompt = running.locator(".jp-InputPrompt").first.text_content() or ""
    assert "*" in prompt, f"the running cell's prompt is {prompt!r}"
    cell = _loop_cell(page, selector)
    before = _ticks(cell)
    page.wait_for_function(
        """([selector, before]) => {
            const cell = [...document.querySelectorAll(selector)].find(c =>
                c.querySelector('.jp-InputArea').textContent.includes('counter < 3600'));
            const ticks = [...cell.querySelector('.jp-OutputArea').textContent
                .matchAll(/tick (\\d+)/g)].map(m => Number(m[1]));
            return ticks.length > 0 && ticks[ticks.length - 1] > before;
        }""",
        arg=[selector, before],
    )


def _browser_page(playwright: Any, chromium: Path) -> tuple[Any, Any]:
    browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(60_000)
    return browser, page


def test_an_agent_cell_is_answered_while_another_cell_runs(
    front_end: FrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, text
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(text(ANSWER))
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(server.root / NOTEBOOK, base_url, LOOP, QUESTION)
        browser, page = _browser_page(playwright, chromium)
        try:
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            loop = _loop_cell(page, LOOP_CELL)
            _start(page, loop)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("tick 3")

            question = cell_with(page, "How is the loop doing?")
            _start(page, question)
            outputs = question.locator(".jp-OutputArea")
            expect(outputs).to_contain_text(ANSWER, timeout=60_000)
            expect(outputs).to_contain_text("ran beside a running cell")
            wait_done(page, question, 60)
            _still_running(page, LOOP_CELL, loop)
            assert "loop finished" not in loop.locator(".jp-OutputArea").inner_text()

            (server.root / "done").write_text("")
            wait_done(page, loop, 60)
            loop_output = loop.locator(".jp-OutputArea")
            expect(loop_output).to_contain_text("loop finished")
            expect(loop_output).not_to_contain_text("KeyboardInterrupt")
            assert len(fake.requests) == 1
        finally:
            browser.close()


def test_stop_on_the_answer_beside_leaves_the_agents_run_cell_running(
    front_end: FrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    story = " ".join(f"w{index}" for index in range(300))
    fake = FakeAnthropic(
        Reply([tool_use("t1", "insert_cell", {"source": LOOP})]),
        lambda body: Reply([tool_use("t2", "run_cell", {"cell_id": inserted_cell_id(body)})]),
        Reply([{"type": "text", "text": story}], chunk=6, gate=SlowGate()),  # type: ignore[arg-type]
        text("The loop ran to its end."),
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
            "%%agent\nRun a slow loop",
            QUESTION,
        )
        browser, page = _browser_page(playwright, chromium)
        try:
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            run(page, cell_with(page, "%agent_tools policy"))
            turn = cell_with(page, "Run a slow loop")
            _start(page, turn)
            loop = page.locator(RUNNING)
            expect(loop).to_have_count(1, timeout=60_000)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("tick 3")

            question = cell_with(page, "How is the loop doing?")
            _start(page, question)
            stop = question.locator("button.jp-agent-stop")
            expect(stop).to_have_count(1, timeout=60_000)
            expect(question.locator(".jp-OutputArea")).to_contain_text("w3")
            stop.click()
            wait_done(page, question, 60)
            expect(question.locator(".jp-OutputArea")).not_to_contain_text("w299")

            # the agent's run_cell runs the loop inside the %%agent cell's own run
            _still_running(page, RUNNING, turn)
            (server.root / "done").write_text("")
            wait_done(page, turn, 90)
            slow = _loop_cell(page, ".jp-Notebook .jp-Cell.jp-agent-cell")
            expect(slow.locator(".jp-OutputArea")).to_contain_text("loop finished")
            expect(slow.locator(".jp-OutputArea")).not_to_contain_text("KeyboardInterrupt")
            expect(turn).to_contain_text("The loop ran to its end.")
        finally:
            browser.close()


def test_an_agent_cell_behind_a_waiting_cell_keeps_its_turn_and_says_so(
    front_end: FrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, text
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(text(ANSWER))
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(
            server.root / NOTEBOOK, base_url, LOOP, "after_loop = counter", QUESTION
        )
        browser, page = _browser_page(playwright, chromium)
        try:
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            loop = _loop_cell(page, LOOP_CELL)
            _start(page, loop)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("tick 3")
            waiting = cell_with(page, "after_loop = counter")
            _start(page, waiting)
            question = cell_with(page, "How is the loop doing?")
            _start(page, question)

            # it waits behind the cell run before it, and says so while it waits
            expect(question).to_contain_text("Queued behind a running cell")
            _still_running(page, LOOP_CELL, loop)
            assert fake.requests == []
            (server.root / "done").write_text("")
            wait_done(page, question, 60)
            expect(question).not_to_contain_text("Queued behind a running cell")
            outputs = question.locator(".jp-OutputArea")
            expect(outputs).to_contain_text(ANSWER)
            expect(outputs).not_to_contain_text("ran beside")
            expect(loop.locator(".jp-OutputArea")).to_contain_text("loop finished")
            assert prompt_number(waiting) < prompt_number(question)
        finally:
            browser.close()


def prompt_number(cell: Any) -> int:
    prompt = cell.locator(".jp-InputPrompt").first.text_content() or ""
    found = re.search(r"\[(\d+)\]", prompt)
    assert found, prompt
    return int(found.group(1))


#: True when the console in front has its own connection to the kernel, connected.
CONSOLE_READY = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.console && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return Boolean(kernel && kernel.connectionStatus === 'connected');
}"""


def _open_console(page: Any) -> Any:
    """File > New Console for Notebook: a console on the notebook's kernel, below it."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:create-console')")
    page.wait_for_selector(".jp-CodeConsole .jp-CodeConsole-promptCell .cm-content")
    page.wait_for_function(CONSOLE_READY)
    return page.locator(".jp-CodeConsole").first


def _type_in(page: Any, console: Any, source: str) -> None:
    """Type ``source`` at the console's prompt and run it (Shift+Enter)."""
    console.locator(".jp-CodeConsole-promptCell .cm-content").first.click()
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")


@pytest.mark.parametrize(
    ("question", "opened_while_busy"),
    [
        ('%agent ask "How is the loop doing?"', False),
        ("%%agent\nHow is the loop doing?", False),
        ('%agent ask "How is the loop doing?"', True),
    ],
    ids=["ask-line", "agent-cell", "console-opened-while-busy"],
)
def test_a_question_in_a_console_is_answered_while_a_notebook_cell_runs(
    question: str, opened_while_busy: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, text
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(text(ANSWER))
    with (
        serve_jupyter(LAB, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(server.root / NOTEBOOK, base_url, LOOP)
        browser, page = _browser_page(playwright, chromium)
        try:
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            console = None if opened_while_busy else _open_console(page)
            loop = _loop_cell(page, LOOP_CELL)
            _start(page, loop)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("tick 3")
            if console is None:
                # the main shell cannot answer the console's kernel_info_request: the extension
                # asks on the control channel, and makes the console's subshell from that
                console = _open_console(page)
                page.wait_for_selector(".jp-ConsolePanel[data-jupyter-agent-beside='ready']")

            _type_in(page, console, question)
            asked = console.locator(".jp-CodeConsole-content .jp-Cell").filter(
                has_text="How is the loop doing?"
            )
            outputs = asked.first.locator(".jp-OutputArea")
            expect(outputs).to_contain_text(ANSWER, timeout=60_000)
            expect(outputs).to_contain_text("ran beside a running cell")
            wait_done(page, asked.first, 60)
            _still_running(page, LOOP_CELL, loop)
            assert "loop finished" not in loop.locator(".jp-OutputArea").inner_text()

            (server.root / "done").write_text("")
            wait_done(page, loop, 60)
            loop_output = loop.locator(".jp-OutputArea")
            expect(loop_output).to_contain_text("loop finished")
            expect(loop_output).not_to_contain_text("KeyboardInterrupt")
            assert len(fake.requests) == 1
        finally:
            browser.close()


def test_a_console_question_that_cannot_go_beside_waits_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, text
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(text(ANSWER))
    with (
        serve_jupyter(LAB, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(server.root / NOTEBOOK, base_url, LOOP)
        browser, page = _browser_page(playwright, chromium)
        try:
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            console = _open_console(page)
            loop = _loop_cell(page, LOOP_CELL)
            _start(page, loop)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("tick 3")

            # --new changes the chat, which is not done beside a running cell: it waits its turn
            _type_in(page, console, "%%agent --new\nHow is the loop doing?")
            asked = console.locator(".jp-CodeConsole-content .jp-Cell").filter(
                has_text="How is the loop doing?"
            )
            expect(asked.first).to_contain_text("Queued behind a running cell")
            _still_running(page, LOOP_CELL, loop)
            assert fake.requests == []

            (server.root / "done").write_text("")
            wait_done(page, asked.first, 60)
            expect(asked.first).not_to_contain_text("Queued behind a running cell")
            outputs = asked.first.locator(".jp-OutputArea")
            expect(outputs).to_contain_text(ANSWER)
            expect(outputs).not_to_contain_text("ran beside")
            expect(loop.locator(".jp-OutputArea")).to_contain_text("loop finished")
        finally:
            browser.close()


def test_a_standalone_console_asks_about_its_own_running_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A console of its own (no notebook open): the agent loaded in it, a loop run in it, and a
    question typed below the loop while it runs — answered before the loop ends."""
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, text
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic(text(ANSWER))
    with (
        serve_jupyter(LAB, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        browser, page = _browser_page(playwright, chromium)
        try:
            page.goto(f"{server.url}/lab?token={server.token}")
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('console:create')"
            )
            page.evaluate(
                """() => window.jupyterapp.commands.execute('console:create',
                    {kernelPreference: {name: 'python3'}})"""
            )
            page.wait_for_selector(".jp-CodeConsole .jp-CodeConsole-promptCell .cm-content")
            page.wait_for_function(CONSOLE_READY)
            console = page.locator(".jp-CodeConsole").first
            cells = console.locator(".jp-CodeConsole-content .jp-Cell")
            _type_in(
                page,
                console,
                "%load_ext jupyter_agent\nimport os\n"
                f"os.environ.update(ANTHROPIC_BASE_URL={base_url!r}, ANTHROPIC_API_KEY='sk-test')\n"
                "%config AgentMagics.provider = 'anthropic'",
            )
            wait_done(page, cells.filter(has_text="%load_ext jupyter_agent").first, 90)
            page.wait_for_selector(".jp-ConsolePanel[data-jupyter-agent-beside='ready']")

            _type_in(page, console, LOOP)
            loop = cells.filter(has_text="counter < 3600").first
            expect(loop.locator(".jp-OutputArea")).to_contain_text("tick 3")
            _type_in(page, console, '%agent ask "How is the loop doing?"')
            asked = cells.filter(has_text="How is the loop doing?").first
            outputs = asked.locator(".jp-OutputArea")
            expect(outputs).to_contain_text(ANSWER, timeout=60_000)
            expect(outputs).to_contain_text("ran beside a running cell")
            wait_done(page, asked, 60)
            assert "loop finished" not in loop.locator(".jp-OutputArea").inner_text()
            prompt = loop.locator(".jp-InputPrompt").first.text_content() or ""
            assert "*" in prompt, f"the loop's prompt is {prompt!r}"

            (server.root / "done").write_text("")
            wait_done(page, loop, 60)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("loop finished")
            assert len(fake.requests) == 1
        finally:
            browser.close()


def test_stop_on_a_console_answer_beside_leaves_the_notebook_cell_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic, Reply
    from notebook_fake_server import serve
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    story = " ".join(f"w{index}" for index in range(300))
    fake = FakeAnthropic(
        Reply([{"type": "text", "text": story}], chunk=6, gate=SlowGate()),  # type: ignore[arg-type]
    )
    with (
        serve_jupyter(LAB, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_agent_notebook(server.root / NOTEBOOK, base_url, LOOP)
        browser, page = _browser_page(playwright, chromium)
        try:
            open_notebook(page, server, NOTEBOOK)
            run(page, cell_with(page, "%load_ext jupyter_agent"))
            connected(page)
            console = _open_console(page)
            loop = _loop_cell(page, LOOP_CELL)
            _start(page, loop)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("tick 3")

            _type_in(page, console, '%agent ask "Tell me a long story"')
            asked = console.locator(".jp-CodeConsole-content .jp-Cell").filter(
                has_text="Tell me a long story"
            )
            stop = asked.first.locator("button.jp-agent-stop")
            expect(stop).to_have_count(1, timeout=60_000)
            expect(asked.first.locator(".jp-OutputArea")).to_contain_text("w3")
            stop.click()
            wait_done(page, asked.first, 60)
            expect(asked.first.locator(".jp-OutputArea")).not_to_contain_text("w299")
            _still_running(page, LOOP_CELL, loop)

            (server.root / "done").write_text("")
            wait_done(page, loop, 60)
            expect(loop.locator(".jp-OutputArea")).to_contain_text("loop finished")
            expect(loop.locator(".jp-OutputArea")).not_to_contain_text("KeyboardInterrupt")
        finally:
            browser.close()
