"""``./dev.sh demo --no-browser``, run as a newcomer runs it: the URL it prints, opened in Chromium,
shows the quickstart notebook (it showed JupyterLab's Launcher: the file named on the command line
is opened only in the browser Jupyter starts itself).

The script runs for real from this checkout with the venv running the tests (already installed),
and JupyterLab's settings and workspaces in a temporary folder, so the page starts from nothing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_jupyter import CHROMIUM_ARGS, REPO, chromium_or_skip, free_port, lab_settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: What the page's main area holds: a document's path, another tab's label ("Launcher").
SHOWN = """() => Array.from(window.jupyterapp.shell.widgets('main')).map(
    widget => widget.context ? widget.context.path : widget.title.label)"""
#: JupyterLab has restored its layout and opened what the URL asks for (or its Launcher).
SETTLED = """async () => {
    if (!window.jupyterapp) return false;
    await window.jupyterapp.restored;
    return Array.from(window.jupyterapp.shell.widgets('main')).length > 0;
}"""


def test_the_url_demo_prints_opens_the_quickstart(tmp_path: Path) -> None:
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    lab_settings(tmp_path / "settings")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"ANTHROPIC_API_KEY", "JUPYTER_TOKEN"}}
    env.update(
        JUPYTER_AGENT_VENV=sys.prefix,
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    command = [
        "bash",
        str(REPO / "dev.sh"),
        "demo",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--LabApp.news_url=",
        "--LabApp.expose_app_in_browser=True",
        # jupyter-collaboration (a dev dependency) keeps its state where Jupyter runs: the
        # checkout, for ./dev.sh demo — a test keeps it in its own folder
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
    ]
    log = tmp_path / "demo.log"
    with log.open("w") as out:
        demo = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        # the token Jupyter made up, as the user copies it (a token given to it is printed "...")
        printed = re.compile(rf"http://127\.0\.0\.1:{port}/\S*\?token=[0-9a-f]+")
        deadline = time.monotonic() + 120
        while not (found := printed.search(log.read_text())):
            assert demo.poll() is None, f"./dev.sh demo exited:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no URL printed:\n{log.read_text()[-3000:]}"
            time.sleep(0.25)
        url = found.group(0)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.set_default_timeout(60_000)
                page.goto(url)
                page.wait_for_function(SETTLED)
                page.wait_for_timeout(2000)  # anything opened after the first tab
                shown = page.evaluate(SHOWN)
            finally:
                browser.close()
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        try:
            demo.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    assert shown == ["notebooks/01_quickstart.ipynb"], (url, shown)
