"""Helpers for tests that install jupyter-agent into a fresh virtual environment.

The Binder test (``binder/requirements.txt``) and the wheel test (``pip install`` of a built
wheel, as a data scientist would into their own environment) both work on a copy of the
repository as a clone would have it, with no key in the environment, and run notebooks in a
kernel of the new environment — never the dev ``.venv`` or its editable install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]


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
    """The test's environment without a key or a forced provider: a newcomer's situation."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"ANTHROPIC_API_KEY", "JUPYTER_AGENT_PROVIDER", "VIRTUAL_ENV", "PYTHONPATH"}
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def new_venv(path: Path) -> Path:
    """A fresh virtual environment at ``path``; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def pip_install(python: Path, *args: str, cwd: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def outputs_of(nb: Any) -> list[dict[str, Any]]:
    return [output for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs]


def text_of(output: dict[str, Any]) -> str:
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    data = output.get("data", {})
    return "\n".join(str(data.get(mime, "")) for mime in ("text/plain", "text/markdown"))


def run_notebook(
    nb: Any, python: Path, kernels: Path, *, cwd: Path, env: dict[str, str], timeout: int = 180
) -> None:
    """Execute ``nb`` (outputs cleared first) in a kernel run by ``python``, in place."""
    spec = kernels / "fresh"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "fresh environment",
                "language": "python",
            }
        )
    )
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    km = AsyncKernelManager(
        kernel_name="fresh", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)])
    )
    client = NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": str(cwd)}})
    client.execute(env=env)  # the kernel's whole environment


__all__ = [
    "REPO",
    "clean_environment",
    "copy_repository",
    "new_venv",
    "outputs_of",
    "pip_install",
    "repository_files",
    "run_notebook",
    "text_of",
]
