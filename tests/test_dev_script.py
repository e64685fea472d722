"""``./dev.sh``, run for real: as root (Jupyter refuses to start as root without
``--allow-root``), and with Debian's ``python3`` lacking ``venv``'s ensurepip.

The ``demo`` tests use a venv of stand-ins: ``python`` that is never needed (the venv is marked
installed) and a ``jupyter`` that prints the arguments it was given. Debian's ``python3`` without
the python3-venv package is played with ``bwrap`` hiding ensurepip's folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: How dev.sh starts JupyterLab: the quickstart's page is the one its printed URL opens.
LAB = "jupyter lab --LabApp.default_url=/lab/tree/notebooks/01_quickstart.ipynb"


def _fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, body in (("python", "exit 0"), ("jupyter", 'echo "jupyter $*"')):
        script = venv / "bin" / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    stamp = venv / ".jupyter-agent-installed"
    stamp.touch()
    later = (ROOT / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (later, later))
    return venv


def _demo(venv: Path, *args: str) -> str:
    env = {**os.environ, "JUPYTER_AGENT_VENV": str(venv)}
    done = subprocess.run(
        ["bash", str(ROOT / "dev.sh"), "demo", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout + done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="plays the run as root (Docker, cloud images)")
def test_demo_as_root_passes_allow_root_and_says_so(tmp_path: Path) -> None:
    out = _demo(_fake_venv(tmp_path), "--no-browser")
    assert f"{LAB} --no-browser --allow-root" in out
    assert "running as root" in out.lower()


@pytest.mark.skipif(os.geteuid() == 0, reason="plays the run as an ordinary user")
def test_demo_as_a_user_does_not_allow_root(tmp_path: Path) -> None:
    out = _demo(_fake_venv(tmp_path))
    assert LAB in out
    assert "--allow-root" not in out


DEBIAN_PYTHON = Path("/usr/bin/python3")


def _ensurepip_folder() -> str | None:
    """Where Debian's python3 has ensurepip (the python3-venv package), if it has it."""
    done = subprocess.run(
        [
            str(DEBIAN_PYTHON),
            "-c",
            "import ensurepip, os; print(os.path.dirname(ensurepip.__file__))",
        ],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


@pytest.mark.skipif(
    not DEBIAN_PYTHON.exists() or shutil.which("bwrap") is None,
    reason="needs Debian's /usr/bin/python3 and bwrap",
)
def test_a_python_without_venv_is_one_line_naming_python3_venv(tmp_path: Path) -> None:
    """Debian's python3 without python3-venv: ``venv`` printed eight lines and left a venv with no
    pip, and the next run then failed with "No module named pip"."""
    venv = tmp_path / "venv"
    hide = _ensurepip_folder()
    sandbox = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if hide is not None:
        sandbox += ["--tmpfs", hide]
    env = {**os.environ, "PYTHON": str(DEBIAN_PYTHON), "JUPYTER_AGENT_VENV": str(venv)}
    for attempt in ("first", "second"):
        done = subprocess.run(
            [*sandbox, "bash", str(ROOT / "dev.sh"), "demo"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = (done.stdout + done.stderr).splitlines()
        said = [line for line in lines if line.strip() and not line.startswith("==> creating")]
        assert done.returncode != 0, (attempt, said)
        assert len(said) == 1 and "sudo apt install python3-venv" in said[0], (attempt, said)
        assert not (venv / "bin" / "pip").exists()
