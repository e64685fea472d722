"""A kernel restart during a ``%%agent`` turn (34.4), in a real ipykernel.

The turn waits at an approval prompt when the user restarts the kernel. The cell used to end
with an internal ``ZMQError`` traceback from the comm poller, its Stop and Approve buttons dead,
its saved record "running" and, reopened, "Error displaying widget: model not found". Now the
turn ends as the kernel is asked to restart: the record is static and says so, no widget view
is left in the cell's outputs, no traceback.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use
from kernel_frontend import WIDGET_VIEW, Kernel

pytestmark = pytest.mark.slow


def test_a_restart_during_a_turn_leaves_a_static_record_that_says_so(
    kernel: Kernel, fake_api: FakeAnthropic
) -> None:
    fake_api.add(
        Reply([tool_use("toolu_1", "run_bash", {"command": "echo hi"})]),
        text("unreachable"),
    )
    reply, outputs = kernel.execute("%agent_tools enable run_bash")
    assert reply["status"] == "ok", outputs
    msg_id = kernel.client.execute("%%agent\nSay hi", allow_stdin=True)
    shown: dict[str, dict[str, Any]] = {}  # display id -> its last bundle
    texts: list[str] = []
    restarted = threading.Event()
    restart_at = 0.0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            message = kernel.client.get_iopub_msg(timeout=0.2)
        except Exception:
            if restarted.is_set() and time.monotonic() > restart_at + 8:
                break
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind in ("display_data", "update_display_data"):
            display = (content.get("transient") or {}).get("display_id", f"anon{len(shown)}")
            shown[display] = content["data"]
        if kind in ("stream", "error"):
            texts.append(json.dumps(content))
        if kind == "comm_open":
            data = content["data"].get("state", {})
            if data.get("description") == "Approve" and not restarted.is_set():
                restarted.set()
                restart_at = time.monotonic()
                # what a restart sends first (JupyterLab's restart, through the server)
                kernel.client.shutdown(restart=True)
        if kind == "status" and content["execution_state"] == "idle":
            break
    assert restarted.is_set(), "no approval prompt was shown"
    assert not [t for t in texts if "Traceback" in t or "ZMQError" in t], texts
    live = [d for d, bundle in shown.items() if WIDGET_VIEW in bundle]
    assert not live, {d: shown[d] for d in live}
    record = json.dumps(list(shown.values()))
    assert "restarted" in record, record
