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
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # a cold pip cache is slow

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = Path("notebooks") / "01_quickstart.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def repository_files() -> list[Path]:
    """Files a clone would have: tracked plus untracked-but-not-ignored (work in progress)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [Path(name) for name in listing.split("\0") if name and (REPO / name).is_file()]


def copy_repository(destination: Path) -> None:
    for relative in repository_files():
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, target)


def clean_environment() -> dict[str, str]:
    """The test's environment without a key or a forced provider: Binder's situation."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"ANTHROPIC_API_KEY", "JUPYTER_AGENT_PROVIDER", "VIRTUAL_ENV", "PYTHONPATH"}
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def outputs_of(nb: Any) -> list[dict[str, Any]]:
    return [output for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs]


def text_of(output: dict[str, Any]) -> str:
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    data = output.get("data", {})
    return "\n".join(str(data.get(mime, "")) for mime in ("text/plain", "text/markdown"))


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
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # exactly what repo2docker runs, from the repository root
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
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
    kernels = tmp_path / "kernels"
    (kernels / "binder").mkdir(parents=True)
    (kernels / "binder" / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Binder environment",
                "language": "python",
            }
        )
    )
    nb = nbformat.read(repo / QUICKSTART, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import jupyter_agent, sys\nprint('PACKAGE', jupyter_agent.__file__)\n"
            "print('PREFIX', sys.prefix)"
        )
    )
    km = AsyncKernelManager(
        kernel_name="binder", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)])
    )
    client = NotebookClient(
        nb, km=km, timeout=180, resources={"metadata": {"path": str(repo / "notebooks")}}
    )
    client.execute(env=env)  # the kernel's whole environment: no key, like Binder

    outputs = outputs_of(nb)
    texts = "\n".join(text_of(output) for output in outputs)
    assert not [o for o in outputs if o.get("output_type") == "error"], texts
    # the kernel ran the package installed from binder/requirements.txt, in the new venv
    assert f"PREFIX {venv}" in texts
    package_line = next(line for line in texts.splitlines() if line.startswith("PACKAGE "))
    assert str(venv) in package_line and "site-packages" in package_line, package_line
    # what a visitor sees: the offline notice, a tool-call view, a final answer
    assert "offline" in texts.lower() and "ANTHROPIC_API_KEY" in texts
    tool_views = [
        o
        for o in outputs
        if WIDGET_VIEW in o.get("data", {}) and "read_file" in o["data"].get("text/plain", "")
    ]
    assert tool_views, "no tool-call view for read_file in the quickstart's outputs"
    assert "341,854.20" in texts, "the quickstart's answer (total revenue) is missing"
