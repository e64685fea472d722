"""The Binder environment works: rebuilt from ``binder/`` alone, it runs the quickstart offline.

repo2docker builds a Binder image by running ``pip install -r binder/requirements.txt`` from the
repository root and then ``binder/postBuild`` if there is one. This test does the same in a fresh
virtual environment, on a copy of the repository (so nothing from the dev ``.venv`` or the
editable install leaks in), then executes ``notebooks/01_quickstart.ipynb`` with nbclient in a
kernel of that environment, with no API key, and checks what a Binder visitor would see: the
offline model's notice, a tool-call view and a final answer.

pip's cache is shared with the rest of the machine, so after the first run the install is quick;
pip here reads a local package mirror, so the test needs no internet.
"""

from __future__ import annotations

import http.client
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from fresh_env import (
    clean_environment,
    copy_repository,
    new_venv,
    outputs_of,
    pip_install,
    run_notebook,
    text_of,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # a cold pip cache is slow

QUICKSTART = Path("notebooks") / "01_quickstart.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def landing_page(venv: Path, repo: Path, env: dict[str, str]) -> str:
    """Where the environment's ``jupyter lab`` redirects ``/`` (the page a Binder link opens)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    token = secrets.token_hex(16)
    command = [
        str(venv / "bin" / "jupyter"),
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={repo}",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    server = subprocess.Popen(
        command, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, "jupyter lab exited early"
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                connection.request("GET", f"/?token={token}")
                response = connection.getresponse()
                assert response.status in (301, 302), f"/ answered {response.status}"
                return str(response.getheader("Location", "")).split("?")[0]
            except OSError:
                assert time.monotonic() < deadline, "jupyter lab did not start"
                time.sleep(0.25)
            finally:
                connection.close()
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_binder_environment_runs_the_quickstart_offline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    copy_repository(repo)
    assert (repo / "binder" / "requirements.txt").is_file()
    env = clean_environment()

    venv = tmp_path / "venv"
    python = new_venv(venv)
    # exactly what repo2docker runs, from the repository root
    pip_install(python, "-r", "binder/requirements.txt", cwd=repo, env=env)
    post_build = repo / "binder" / "postBuild"
    if post_build.exists():
        env_with_venv = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
        subprocess.run([str(post_build)], cwd=repo, env=env_with_venv, check=True)

    # Binder opens JupyterLab with the widget manager (tool-call views and toggles render)
    lab = subprocess.run(
        [str(venv / "bin" / "jupyter"), "lab", "--version"], capture_output=True, text=True
    )
    assert lab.returncode == 0, lab.stderr
    assert (venv / "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager").is_dir()
    # ... and lands in the quickstart when the link names no notebook (postBuild's default_url)
    assert landing_page(venv, repo, env).endswith("/lab/tree/notebooks/01_quickstart.ipynb")

    # a kernel of the new environment, not of the dev venv
    nb = nbformat.read(repo / QUICKSTART, as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import importlib.metadata, jupyter_agent, sys\n"
            "print('PACKAGE', jupyter_agent.__file__)\nprint('PREFIX', sys.prefix)\n"
            "print('DIST', importlib.metadata.packages_distributions()['jupyter_agent'])"
        )
    )
    run_notebook(nb, python, tmp_path / "kernels", cwd=repo / "notebooks", env=env)

    outputs = outputs_of(nb)
    texts = "\n".join(text_of(output) for output in outputs)
    assert not [o for o in outputs if o.get("output_type") == "error"], texts
    # the kernel ran the package installed from binder/requirements.txt, in the new venv
    assert f"PREFIX {venv}" in texts
    package_line = next(line for line in texts.splitlines() if line.startswith("PACKAGE "))
    assert str(venv) in package_line and "site-packages" in package_line, package_line
    # installed under the distribution's own name (``jupyter-agent`` on PyPI is another project)
    assert "DIST ['jupyter-claude-agent']" in texts, texts
    # what a visitor sees: the offline notice, a tool-call view, a final answer
    assert "offline" in texts.lower() and "ANTHROPIC_API_KEY" in texts
    # nbclient answers no widget, so the calls show as their static record (docs/guide/context.md:
    # "A notebook run with nobody at a frontend ... opens no widget at all"); the check used to be
    # met only by the %agent_tools panel's widget, whose plain text also names read_file
    tool_views = [
        o
        for o in outputs
        if "text/html" in o.get("data", {})
        and o["data"].get("text/plain", "").startswith("✓ read_file(")
    ]
    assert tool_views, "no tool-call record for read_file in the quickstart's outputs"
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})], "a widget under nbclient"
    assert "341,854.20" in texts, "the quickstart's answer (total revenue) is missing"
