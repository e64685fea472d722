"""The agent co-authors the notebook, in JupyterLab and Notebook 7 (headless Chromium).

The frontend extension (``labextension/``, built into ``jupyter_agent/labextension``) is served
to the page through ``JUPYTER_PATH``; the model is the fake Messages API on loopback. In one
notebook the agent inserts three code cells and runs them (outputs, a plot and execution counts
appear in them, not in the ``%%agent`` cell), writes a Markdown conclusion holding hostile
HTML/JS (it renders inert), and proposes two edits shown as diffs: the test accepts one and
rejects the other. The notebook is saved and reopened: the cells, their outputs and their marks
stay. A slow ``run_cell`` is ended by the agent cell's Stop button within a second, and
``%agent undo`` takes out the cell that turn inserted.

``test_the_built_wheel_co_authors_in_a_fresh_environment`` does the same first part against the
wheel built from a copy of the repository, installed into a fresh virtual environment: the
extension found where ``pip install`` put it, nothing from this checkout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_jupyter import (
    CHROMIUM_ARGS,
    LAB,
    FrontEnd,
    Jupyter,
    chromium_or_skip,
    open_notebook,
    reopen_notebook,
    serve_jupyter,
    wait_kernel_ready,
    write_agent_notebook,
)
from coauthor_page import (
    agent_cell,
    cell_with,
    connected,
    prompt_done,
    run,
    this_extension_path,
    wait_done,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "coauthor.ipynb"
LOAD = "data = [3, 1, 2]\nprint('loaded', len(data))"
TOTAL = "total = sum(data)\ntotal"
PLOT = (
    "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 2))\nplt.plot(data, marker='o')\n"
    "plt.title('Data')\nplt.show()"
)
HOSTILE = (
    "# Conclusion\n\nThe total is **6**.\n\n"
    '<img src="x" onerror="window.__agentPwned = 1">\n\n'
    "<script>window.__agentPwned = 2</script>\n"
)
SLOW = "import time\ntime.sleep(30)"


def ids_inserted(body: dict[str, Any]) -> list[str]:
    """The ids of the cells the agent inserted, in order, from the results it was sent."""
    return re.findall(r"Inserted (?:code|markdown) cell (\S+) \(at", json.dumps(body["messages"]))


def script(fake: Any) -> None:
    from fake_anthropic import Reply, text, tool_use

    def run(index: int, call: str) -> Any:
        return lambda body: Reply(
            [tool_use(call, "run_cell", {"cell_id": ids_inserted(body)[index]})]
        )

    def edit(index: int, call: str, old: str, new: str) -> Any:
        return lambda body: Reply(
            [
                tool_use(
                    call,
                    "edit_cell",
                    {"cell_id": ids_inserted(body)[index], "old_string": old, "new_string": new},
                )
            ]
        )

    fake.add(
        Reply([tool_use("t1", "insert_cell", {"source": LOAD})]),
        Reply([tool_use("t2", "insert_cell", {"source": TOTAL})]),
        Reply([tool_use("t3", "insert_cell", {"source": PLOT})]),
        run(0, "t4"),
        run(1, "t5"),
        run(2, "t6"),
        Reply([tool_use("t7", "insert_cell", {"source": HOSTILE, "cell_type": "markdown"})]),
        edit(0, "t8", "[3, 1, 2]", "[3, 1, 2, 5]"),
        edit(1, "t9", "sum(data)", "max(data)"),
        Reply([tool_use("t9b", "notebook_cells", {})]),
        text("The analysis is in the notebook."),
        # the slow turn
        Reply([tool_use("t10", "insert_cell", {"source": SLOW})]),
        lambda body: Reply([tool_use("t11", "run_cell", {"cell_id": ids_inserted(body)[-1]})]),
        text("unreachable: Stop ends the turn"),
    )


def write_notebook(root: Path, base_url: str) -> None:
    write_agent_notebook(
        root / NOTEBOOK,
        base_url,
        "%agent_tools policy run_cell allow\n%agent config",
        "%%agent\nBuild a small analysis of data",
        "%%agent\nRun something slow",
        "%agent undo",
    )


STDOUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"]'


def cells_seen(fake: Any) -> str:
    """What ``notebook_cells`` told the agent after the edits."""
    from fake_anthropic import result_text, tool_results

    for body in fake.requests:
        for block in tool_results(body):
            if block["tool_use_id"] == "t9b":
                return result_text(block)
    raise AssertionError("notebook_cells was not answered")


def co_author(page: Any, server: Jupyter) -> Any:
    """The first part: build, run, edit; save and reopen. Returns the page showing it."""
    from playwright.sync_api import expect

    notebook = page.locator(".jp-Notebook")
    run(page, cell_with(page, "%load_ext jupyter_agent"))
    connected(page)
    run(page, cell_with(page, "%agent_tools policy"))
    expect(cell_with(page, "%agent_tools policy")).to_contain_text(
        re.compile(r"notebook co-authoring +on \(coauthor.ipynb\)")
    )
    build = cell_with(page, "Build a small analysis")
    build.locator(".jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")

    # the edits come as diffs in the notebook: accept the first, reject the second
    diff = notebook.locator(".jp-agent-diff")
    expect(diff).to_have_count(1, timeout=90_000)
    expect(diff).to_contain_text("+ data = [3, 1, 2, 5]")
    expect(diff).to_contain_text("- data = [3, 1, 2]")
    diff.locator(".jp-agent-diff-accept").click()
    expect(diff.filter(has_text="max(data)")).to_have_count(1, timeout=60_000)
    diff.locator(".jp-agent-diff-reject").click()
    wait_done(page, build)
    expect(diff).to_have_count(0)

    # three code cells and a Markdown one, after the %%agent cell, marked as the agent's
    agent_cells = notebook.locator(".jp-Cell.jp-agent-cell")
    expect(agent_cells).to_have_count(4)
    load, total, plot = (
        agent_cell(page, text) for text in ("print('loaded'", "total = sum(data)", "plt.title")
    )
    expect(load.locator(STDOUT)).to_have_text("loaded 3")
    expect(total.locator(".jp-OutputArea")).to_contain_text("6")
    expect(plot.locator(".jp-OutputArea img")).to_have_count(1)
    for cell in (load, total, plot):
        assert prompt_done(cell), cell.locator(".jp-InputPrompt").first.text_content()
    counts = [
        int(re.sub(r"\D", "", cell.locator(".jp-InputPrompt").first.text_content() or ""))
        for cell in (load, total, plot)
    ]
    agent_count = int(
        re.sub(r"\D", "", build.locator(".jp-InputPrompt").first.text_content() or "")
    )
    assert counts == [counts[0], counts[0] + 1, counts[0] + 2], counts
    assert agent_count == counts[-1] + 1  # no number shown twice
    # their printed text went into their cell, not the %%agent cell's (it has the record only)
    expect(build.locator(STDOUT).filter(has_text="loaded 3")).to_have_count(0)
    # the accepted edit is in the cell, the rejected one is not
    expect(load.locator(".jp-InputArea")).to_contain_text("data = [3, 1, 2, 5]")
    expect(total.locator(".jp-InputArea")).to_contain_text("total = sum(data)")
    # the hostile Markdown renders inert
    conclusion = notebook.locator(".jp-MarkdownCell.jp-agent-cell")
    expect(conclusion.locator(".jp-RenderedMarkdown h1")).to_contain_text("Conclusion")
    expect(conclusion.locator("script")).to_have_count(0)
    expect(conclusion.locator("img[onerror]")).to_have_count(0)
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.__agentPwned") is None

    # save, reopen: the cells, their outputs and their marks stay
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    saved_path = server.root / NOTEBOOK
    deadline = time.monotonic() + 30
    while True:
        try:
            saved = nbformat.read(saved_path, as_version=4).cells
        except Exception:  # half written
            saved = []
        marked = [c for c in saved if c.metadata.get("jupyter_agent", {}).get("author") == "agent"]
        if len(marked) == 4:
            break
        assert time.monotonic() < deadline, "the notebook was not saved with the agent's cells"
        time.sleep(0.2)
    saved_load = next(c for c in marked if "loaded" in c.source)
    assert saved_load.outputs[0]["text"] == "loaded 3\n"
    assert isinstance(saved_load.execution_count, int)
    page = reopen_notebook(page, server, NOTEBOOK)
    notebook = page.locator(".jp-Notebook")
    expect(notebook.locator(".jp-Cell.jp-agent-cell")).to_have_count(4)
    expect(agent_cell(page, "print('loaded'").locator(STDOUT)).to_have_text("loaded 3")
    expect(agent_cell(page, "plt.title").locator(".jp-OutputArea img")).to_have_count(1)
    connected(page)
    return page


def stop_and_undo(page: Any) -> float:
    """The second part: Stop ends a slow run_cell; after a kernel restart (the extension loaded
    again), ``%agent undo`` removes the cell that turn inserted."""
    from playwright.sync_api import expect

    notebook = page.locator(".jp-Notebook")
    slow_turn = cell_with(page, "Run something slow")
    slow_turn.locator(".jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")
    running = notebook.locator(".jp-agent-running")
    expect(running).to_have_count(1, timeout=60_000)
    page.wait_for_timeout(500)
    stop = slow_turn.locator("button:has-text('Stop')")
    started = time.monotonic()
    stop.click()
    wait_done(page, slow_turn, 10)
    took = time.monotonic() - started
    expect(running).to_have_count(0)
    slow_cell = agent_cell(page, "time.sleep(30)")
    expect(slow_cell.locator(".jp-OutputArea")).to_contain_text("KeyboardInterrupt")

    # the frontend keeps the cell journal: a kernel restart does not lose it
    page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()"
    )
    expect(page.locator(".jp-NotebookPanel[data-jupyter-agent='connected']")).to_have_count(0)
    wait_kernel_ready(page)
    run(page, cell_with(page, "%load_ext jupyter_agent"))
    connected(page)
    undo = cell_with(page, "%agent undo")
    run(page, undo)
    expect(undo.locator(".jp-OutputArea")).to_contain_text("Undid the cell changes of cell")
    expect(notebook.locator(".jp-agent-cell").filter(has_text="time.sleep(30)")).to_have_count(0)
    expect(notebook.locator(".jp-Cell.jp-agent-cell")).to_have_count(4)
    return took


def test_the_agent_writes_runs_and_edits_cells(
    front_end: FrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic
    from notebook_fake_server import serve
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("JUPYTER_PATH", this_extension_path(tmp_path))
    fake = FakeAnthropic()
    script(fake)
    with (
        serve_jupyter(front_end, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_notebook(server.root, base_url)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            page = co_author(page, server)
            shot = tmp_path / f"coauthor_{front_end.name}.png"
            agent_cell(page, "print('loaded'").evaluate("c => c.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(shot))  # for a person to look at: the marks, the outputs
            print(f"screenshot: {shot}")
            seen = cells_seen(fake)
            # the accepted edit came after the cell ran: it is edited since; its output excerpt
            assert re.search(
                r"id=\S+ code, ran as \[\d+\], edited since it ran, written by you", seen
            )
            assert "data = [3, 1, 2, 5]" in seen and "loaded 3" in seen and "[image/png]" in seen
            # the 30 s cell ended within wait_done's 10 s with a KeyboardInterrupt: Stop ended it
            took = stop_and_undo(page)
            print(f"Stop ended the run_cell in {took:.2f} s ({front_end.name})")
        finally:
            browser.close()


def test_the_built_wheel_co_authors_in_a_fresh_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pip install`` of the wheel, built from a clone's files (the JavaScript from its
    sources), is all it takes: JupyterLab of a fresh environment finds the extension."""
    chromium = chromium_or_skip()
    from fake_anthropic import FakeAnthropic
    from fresh_env import clean_environment, copy_repository, new_venv, pip_install
    from notebook_fake_server import serve
    from playwright.sync_api import sync_playwright

    repo = tmp_path / "repo"
    copy_repository(repo)
    assert not (repo / "jupyter_agent" / "labextension").exists()  # ignored: built, not kept
    env = clean_environment()
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), "."],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("jupyter_claude_agent-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    shared = "jupyter_claude_agent-0.1.0.data/data/share/jupyter/labextensions/jupyter-agent/"
    assert f"{shared}package.json" in names and f"{shared}install.json" in names
    assert any(name.startswith(f"{shared}static/remoteEntry.") for name in names)

    python = new_venv(tmp_path / "venv")
    constraints = str(repo / "constraints.txt")
    pip_install(
        python, "-c", constraints, f"{wheel}[tutorials]", "jupyterlab", cwd=tmp_path, env=env
    )
    listed = subprocess.run(
        [str(python), "-m", "jupyter", "labextension", "list"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    listing = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    # the extension's own name, and the distribution that installed it (install.json)
    assert re.search(
        r"jupyter-agent v0\.1\.0 enabled\s+OK\s+\(python, jupyter-claude-agent\)", listing
    ), listing

    for name in ("PYTHONPATH", "JUPYTER_PATH", "VIRTUAL_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "executable", str(python))  # serve_jupyter runs this interpreter
    fake = FakeAnthropic()
    script(fake)
    with (
        serve_jupyter(LAB, tmp_path) as server,
        serve(fake) as base_url,
        sync_playwright() as playwright,
    ):
        write_notebook(server.root, base_url)
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.set_default_timeout(60_000)
            open_notebook(page, server, NOTEBOOK)
            page = co_author(page, server)
            stop_and_undo(page)
        finally:
            browser.close()


def tutorial_07_screenshot(tmp_path: Path) -> Path:
    """Where tutorial 07's picture goes: ``docs/screenshot_coauthor.png``, the one the docs show,
    with ``JUPYTER_AGENT_REFRESH_SCREENSHOT=1`` (as ``test_tutorials.py`` refreshes its own);
    otherwise the test's temporary folder."""
    if os.environ.get("JUPYTER_AGENT_REFRESH_SCREENSHOT", "") == "1":
        return REPO / "docs" / "screenshot_coauthor.png"
    return tmp_path / "tutorial07.png"


def test_tutorial_07_inserts_and_runs_its_cells_in_lab(tmp_path: Path) -> None:
    """Tutorial 07 as a reader runs it in JupyterLab, offline: its recorded session inserts four
    cells and runs the three code cells (their outputs, the plot and execution counts appear in
    them). The recorded ``run_cell`` calls name cells whose ids exist only in this notebook: the
    replay takes them from this run's ``insert_cell`` results."""
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    jupyter_path = this_extension_path(tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", jupyter_path)
        with serve_jupyter(LAB, tmp_path) as server, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 1400})
                page.set_default_timeout(60_000)
                open_notebook(page, server, "07_coauthor.ipynb")
                for source in ("offline_cassette", "co_authoring = notebook_connected"):
                    run(page, cell_with(page, source))
                    if source == "offline_cassette":
                        connected(page)
                assert "notebook co-authoring: on" in (
                    cell_with(page, "co_authoring = notebook_connected").text_content() or ""
                )
                run(page, cell_with(page, "Build a small analysis of data/sales.csv"), 180)
                made = page.locator(".jp-Notebook .jp-Cell.jp-agent-cell")
                assert made.count() == 4
                for index in range(3):
                    cell = made.nth(index)
                    assert prompt_done(cell), cell.text_content()
                    assert cell.locator(".jp-OutputArea-output").count() > 0
                    assert not cell.locator(
                        '[data-mime-type="application/vnd.jupyter.stderr"]'
                    ).count()
                assert "revenue" in (made.nth(1).locator(".jp-OutputArea").text_content() or "")
                assert made.nth(2).locator(".jp-OutputArea img").count() == 1
                assert "Conclusion" in (made.nth(3).text_content() or "")
                page.screenshot(path=str(tutorial_07_screenshot(tmp_path)))

                # one %%agent cell is one undo step, however many cells it ran (issue 34.2: it
                # was four, and the first undo left three code cells); named as the cell shows
                asked = cell_with(page, "Build a small analysis of data/sales.csv")
                own = re.sub(r"\D", "", asked.locator(".jp-InputPrompt").first.text_content() or "")
                run(page, cell_with(page, "back to asking before each run"))
                undo = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="%agent undo").last
                run(page, undo)
                assert made.count() == 0, undo.text_content()
                assert f"Undid the cell changes of cell {own}." in (undo.text_content() or "")
            finally:
                browser.close()
