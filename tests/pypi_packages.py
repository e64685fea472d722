"""PyPI programs the tests run (the reference MCP servers written in Python), pinned.

Each ``name==version`` is installed once into its own virtual environment under a cache
(``$JUPYTER_AGENT_TEST_CACHE`` or ``~/.cache/jupyter-agent-tests``, folder ``pypi``), as
``npm_packages.py`` does for npm: the servers bring their own dependencies, which need not fit
the project's ``.venv``, so they are not installed there. Their dependencies are held to the
project's ``constraints.txt`` where it names them (the same ``mcp`` SDK as ours). Without pip or
the registry a test skips with the reason — and fails on CI (``CI=true``), where it must run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from npm_packages import unavailable

#: ``mcp-server-time``: get_current_time, convert_time (IANA time zones).
SERVER_TIME = "mcp-server-time==2026.10.19"
#: ``mcp-server-fetch``: fetch (a URL as markdown; robots.txt and private addresses refused
#: unless ``--ignore-robots-txt`` / ``--allow-private-ips``).
SERVER_FETCH = "mcp-server-fetch==2026.10.24"

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"


def cache_root() -> Path:
    base = os.environ.get("JUPYTER_AGENT_TEST_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "jupyter-agent-tests"
    return root / "pypi"


def pypi_program(spec: str, program: str | None = None) -> Path:
    """The console script ``program`` (default: the package's name) of ``spec`` installed in its
    own cached virtual environment; installs it the first time."""
    name, version = spec.split("==", 1)
    folder = cache_root() / spec
    script = folder / "venv" / "bin" / (program or name)
    python = folder / "venv" / "bin" / "python"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time (xdist, parallel runs)
        if not (folder / "installed").exists():
            shutil.rmtree(folder / "venv", ignore_errors=True)
            steps = [
                [sys.executable, "-m", "venv", str(folder / "venv")],
                [str(python), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), spec],
            ]
            for step in steps:
                result = subprocess.run(step, capture_output=True, text=True, timeout=600)
                if result.returncode != 0:
                    unavailable(f"could not install {spec}: {result.stderr.strip()[-500:]}")
            (folder / "installed").write_text(version)
    if not os.access(script, os.X_OK):
        unavailable(f"{spec} has no program {script.name}")
    return script
