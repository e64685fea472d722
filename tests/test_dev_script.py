"""``./dev.sh demo`` as root: Jupyter refuses to start as root without ``--allow-root``.

The script is run for real with a venv of stand-ins: ``python`` that is never needed (the venv
is marked installed) and a ``jupyter`` that prints the arguments it was given.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
    assert "jupyter lab notebooks/01_quickstart.ipynb --no-browser --allow-root" in out
    assert "running as root" in out.lower()


@pytest.mark.skipif(os.geteuid() == 0, reason="plays the run as an ordinary user")
def test_demo_as_a_user_does_not_allow_root(tmp_path: Path) -> None:
    out = _demo(_fake_venv(tmp_path))
    assert "jupyter lab notebooks/01_quickstart.ipynb" in out
    assert "--allow-root" not in out
