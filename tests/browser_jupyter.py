"""A Jupyter server (JupyterLab or Notebook 7) on loopback and Debian's Chromium, for the browser
tests in ``tests/browser/``: the server over a fresh copy of ``notebooks/``, the two front ends'
differences, and the page helpers that wait for a notebook's kernel.

It is a module of its own, not a test file, so that every browser test imports the same server
and page helpers; the ``jupyter`` fixture that serves each front end in turn is in
``tests/browser/conftest.py``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
QUICKSTART = "01_quickstart.ipynb"
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


@dataclass(frozen=True)
class FrontEnd:
    """What differs between JupyterLab and Notebook 7 here: the ``jupyter`` subcommand that
    serves it, its extra options and the address of a notebook's page. The rest — the notebook
    widget, its cells, menus, dialogs and the toolbar's kernel indicator — both share."""

    name: str
    app: str
    options: tuple[str, ...]
    notebook_page: str  # formatted with ``path``

    def url_of(self, server: Jupyter, path: str) -> str:
        return f"{server.url}{self.notebook_page.format(path=path)}?token={server.token}"


#: ``expose_app_in_browser``: ``window.jupyterapp``, to ask the page whether its kernel is ready.
LAB = FrontEnd(
    "lab", "lab", ("--LabApp.news_url=", "--LabApp.expose_app_in_browser=True"), "/lab/tree/{path}"
)
NOTEBOOK7 = FrontEnd(
    "notebook7",
    "notebook",
    ("--JupyterNotebookApp.expose_app_in_browser=True",),
    "/notebooks/{path}",
)


@dataclass
class Jupyter:
    url: str
    token: str
    root: Path
    log: Path
    front_end: FrontEnd


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
    """No news or update pop-ups over the notebook (and no request to the internet for them);
    Notebook 7 reads the same settings folder."""
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )


#: Real-time collaboration (jupyter-collaboration, a dev dependency) stays off unless a test asks
#: for it: the other browser tests see the single-page JupyterLab users have without it (and its
#: file-id service keeps its database in memory, not in the user's Jupyter data folder).
RTC_OFF = ("--YDocExtension.disable_rtc=True", "--BaseFileIdManager.db_path=:memory:")


@contextmanager
def serve_jupyter(
    front_end: FrontEnd, tmp_path: Path, *, options: tuple[str, ...] = RTC_OFF
) -> Iterator[Jupyter]:
    """``jupyter lab`` or ``jupyter notebook`` over a fresh copy of notebooks/, until the end;
    ``options`` go to the server too (``collab_pages.py`` passes the collaboration ones)."""
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
        front_end.app,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        *front_end.options,
        *options,
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = tmp_path / f"jupyter-{front_end.app}.log"
    with log.open("w") as log_file:
        server = subprocess.Popen(
            command, env=env, cwd=root, stdout=log_file, stderr=subprocess.STDOUT
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                pytest.fail(f"jupyter {front_end.app} exited early:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"jupyter {front_end.app} did not start:\n{log.read_text()[-3000:]}"
                    )
                time.sleep(0.25)
        yield Jupyter(url, token, root, log, front_end)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


#: True when the open notebook's kernel is connected to this page and idle. The toolbar's status
#: circle can say "idle" before the page has even connected (and a cell run then asks which
#: kernel to start), so the page's own session is asked, in both front ends alike.
KERNEL_READY = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return Boolean(kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle');
}"""


def wait_kernel_ready(page: object) -> None:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.wait_for_function(KERNEL_READY)


def open_notebook(page: object, server: Jupyter, path: str) -> None:
    """Open ``path`` in the server's front end and wait for its kernel to be ready."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.goto(server.front_end.url_of(server, path))
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    wait_kernel_ready(page)


def reopen_notebook(page: object, server: Jupyter, path: str) -> object:
    """Open ``path`` afresh, the way a person would, and return the page that shows it.

    JupyterLab: reload the page (its workspace reopens the notebook). Notebook 7: leave for its
    file browser, the ``/tree`` page, where a double click opens the notebook in a new tab.
    """
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    if server.front_end is not NOTEBOOK7:
        page.reload()
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        wait_kernel_ready(page)
        return page
    page.goto(f"{server.url}/tree?token={server.token}")
    item = page.locator(".jp-DirListing-item").filter(has=page.get_by_text(path, exact=True))
    with page.context.expect_page() as opened:
        item.dblclick()
    notebook_page = opened.value  # the /tree tab stays open behind it, as it would for a person
    notebook_page.set_default_timeout(60_000)
    notebook_page.wait_for_selector(".jp-Notebook .jp-Cell")
    wait_kernel_ready(notebook_page)
    assert f"/notebooks/{path}" in notebook_page.url
    return notebook_page


def write_agent_notebook(
    path: Path, base_url: str, *cells: str | nbformat.NotebookNode, setup: str = ""
) -> None:
    """A notebook at ``path``: a first cell that loads the extension with the fake Messages API at
    ``base_url`` as its model (and runs ``setup``), then ``cells`` (a string is a code cell's
    source; a cell made with ``nbformat.v4`` goes in as it is)."""
    first = (
        "%load_ext jupyter_agent\nimport os\n"
        f"os.environ.update(ANTHROPIC_BASE_URL={base_url!r}, ANTHROPIC_API_KEY='sk-test')\n"
        "%config AgentMagics.provider = 'anthropic'"
    )
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(first + (f"\n{setup}" if setup else "")),
        *(nbformat.v4.new_code_cell(c) if isinstance(c, str) else c for c in cells),
    ]
    nbformat.write(nb, path)


FAILED_OUTPUTS = """[...document.querySelectorAll(
    '.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .map(o => o.textContent).filter(t => /Error|Traceback/.test(t))"""
#: True when every code cell has run, or when one failed (Run All then stops at that cell).
RUN_ALL_OVER = f"""() => {{
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
    const done = prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
    return done || {FAILED_OUTPUTS}.length > 0;
}}"""


#: A rendered widget view (the live tool-call views and the Stop button of a running turn).
WIDGET_VIEW = ".jp-OutputArea-output .jupyter-widgets"


class SlowGate:
    """``Reply.gate``: the story trickles, one piece every 0.3 s, so there is time to stop it."""

    async def wait(self) -> None:
        import asyncio

        await asyncio.sleep(0.3)
