"""The SDK's own MCP server (``mcp_servers/sdk_server.py``) as a command line, and a ``/proc`` scan
for the processes that carry a marker: how the MCP tests start a server and see it gone.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

SERVER = str(Path(__file__).parent / "mcp_servers" / "sdk_server.py")


def server_command(*extra: str, marker: str | None = None) -> list[str]:
    return [sys.executable, SERVER, *extra, f"--marker={marker or uuid.uuid4().hex}"]


def processes_with(marker: str) -> list[int]:
    """Pids (not zombies, not dead) whose command line contains ``marker`` (a /proc scan)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rindex(")") + 2] not in "ZX":
            found.append(int(entry.name))
    return found
