"""The quickstart in a real browser: JupyterLab, headless Chromium, widgets as a person sees them.

nbval proves the notebooks run in a kernel; only a browser proves the front end renders them. This
test starts JupyterLab on loopback (random port, a token, its own settings folders) over a copy of
``notebooks/`` with the outputs cleared, opens the quickstart in Debian's Chromium driven by
Playwright, runs every cell from the Run menu and then looks at the page: the answer, the tool-call
views (rendered widgets, not their text fallback) and the ``%agent_tools`` checkboxes. It ticks a
checkbox and runs a new cell to prove the click reached the kernel's registry, and saves
``docs/screenshot.png`` — the picture the README shows.

Chromium comes from Debian (``apt-get install chromium``); Playwright's own browser download is not
used. Without it the test skips locally and fails on CI (``CI=true``), where it must run.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
QUICKSTART = "01_quickstart.ipynb"
SCREENSHOT = REPO / "docs" / "screenshot.png"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: The tool whose checkbox the test ticks (disabled by default, so a tick is a real change).
TOGGLED_TOOL = "run_bash"
#: A figure from the quickstart's recorded answer (total revenue of sales.csv).
ANSWER_TEXT = "341,854.20"


def chromium_or_skip() -> Path:
    if CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    reason = f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI must run the browser test")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path


def prepare_root(root: Path) -> None:
    """A copy of notebooks/ whose quickstart has no outputs: whatever renders, ran just now."""
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "scratch"))
    path = root / QUICKSTART
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)


def lab_settings(settings: Path) -> None:
    """No news or update pop-ups over the notebook (and no request to the internet for them)."""
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    root = tmp_path / "notebooks"
    prepare_root(root)
    lab_settings(tmp_path / "settings")
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k not in {"ANTHROPIC_API_KEY", "JUPYTER_TOKEN"}}
    env.pop("JUPYTER_AGENT_PROVIDER", None)
    env.update(
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = tmp_path / "jupyterlab.log"
    with log.open("w") as log_file:
        server = subprocess.Popen(
            command, env=env, cwd=root, stdout=log_file, stderr=subprocess.STDOUT
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited early:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.25)
        yield Lab(url, token, root, log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


FAILED_OUTPUTS = """[...document.querySelectorAll(
    '.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .map(o => o.textContent).filter(t => /Error|Traceback/.test(t))"""
#: True when every code cell has run, or when one failed (Run All then stops at that cell).
RUN_ALL_OVER = f"""() => {{
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
    const done = prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
    return done || {FAILED_OUTPUTS}.length > 0;
}}"""


def test_quickstart_renders_and_drives_the_kernel_in_chromium(lab: Lab) -> None:
    chromium = chromium_or_skip()
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1150})
            page.set_default_timeout(60_000)
            page.goto(f"{lab.url}/lab/tree/{QUICKSTART}?token={lab.token}")
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            page.wait_for_selector("#jp-main-statusbar >> text=Idle")

            page.click(".lm-MenuBar-item:has-text('Run')")
            page.click(".lm-Menu-item:has-text('Run All Cells')")
            page.wait_for_function(RUN_ALL_OVER, timeout=240_000)
            failures = page.evaluate(f"() => {FAILED_OUTPUTS}")
            assert not failures, "a cell failed in the browser:\n" + "\n".join(failures)
            notebook = page.locator(".jp-Notebook")

            # the answer, with the offline model saying it is the one answering
            expect(notebook).to_contain_text(ANSWER_TEXT)
            expect(notebook).to_contain_text("ANTHROPIC_API_KEY")
            # the tool calls render as widgets (toggle buttons), not as their text fallback
            tool_views = notebook.locator(".jupyter-widgets.widget-toggle-button")
            expect(tool_views.filter(has_text="read_file").first).to_be_visible()
            # open one call: its arguments and result show; close it again for the screenshot
            read_view = tool_views.filter(has_text="read_file").first
            read_view.click()
            expect(
                notebook.locator(".widget-html pre").filter(has_text="month,region")
            ).to_have_count(1, timeout=10_000)

            read_view.click()

            # the %agent_tools panel: one checkbox per tool, acting on the kernel's registry
            toggle = notebook.locator(".widget-checkbox").filter(
                has=page.locator(f"text='{TOGGLED_TOOL}'")
            )
            expect(toggle).to_have_count(1)
            checkbox = toggle.locator("input[type=checkbox]")
            expect(checkbox).not_to_be_checked()
            checkbox.scroll_into_view_if_needed()
            checkbox.check()
            expect(checkbox).to_be_checked()

            # a new cell, typed and run in the browser, reads the registry in the kernel
            page.locator(".jp-Notebook .jp-Cell").last.click()
            page.keyboard.press("Escape")
            page.keyboard.press("b")
            page.keyboard.press("Enter")
            page.keyboard.type(
                f"print('ENABLED', agent.registry.is_tool_enabled({TOGGLED_TOOL!r}))"
            )
            page.keyboard.press("Shift+Enter")
            expect(notebook).to_contain_text("ENABLED True", timeout=30_000)

            take_screenshot(page)
        finally:
            browser.close()


def take_screenshot(page: object) -> None:
    """The first agent cell with its streamed answer and tool calls, sidebar closed."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.keyboard.press("Escape")
    if page.locator(".jp-SideBar.lm-TabBar .lm-mod-current").count():
        page.keyboard.press("Control+b")
    first_agent_cell = page.locator(".jp-CodeCell").filter(has_text=re.compile("%%agent")).first
    first_agent_cell.scroll_into_view_if_needed()
    first_agent_cell.evaluate("cell => cell.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000
