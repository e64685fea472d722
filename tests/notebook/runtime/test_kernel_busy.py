"""While a ``%%agent`` cell runs, the kernel stays "busy" for the frontend (issue 25).

A widget message handled while the cell runs used to leave "idle" as the last status on iopub —
JupyterLab's status bar then said Idle while the cell still ran. JupyterLab 4 sends widget
messages to a kernel subshell (ipykernel 7), which handles them at once, on its own thread, and
publishes busy and idle for each; the test sends them the same way. After each such message the
kernel says "busy" again, with the running ``execute_request`` as parent; "idle" comes once, when
the cell ends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply
from kernel_frontend import Kernel

from jupyter_agent.notebook.inert import is_answer

pytestmark = pytest.mark.slow


def test_a_widget_message_mid_cell_leaves_the_kernel_busy(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    class SlowGate:
        async def wait(self) -> None:
            await asyncio.sleep(0.05)

    fake_api.add(Reply([{"type": "text", "text": "word " * 300}], chunk=5, gate=SlowGate()))  # type: ignore[arg-type]
    seen: dict[str, Any] = {"button": None, "sent": 0, "statuses": []}
    client = kernel.client
    client.control_channel.send(client.session.msg("create_subshell_request", {}))
    subshell = client.get_control_msg(timeout=10)["content"]["subshell_id"]

    def send_comm(comm_id: str, data: dict[str, Any]) -> None:
        message = client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        message["header"]["subshell_id"] = subshell  # as JupyterLab 4 sends widget messages
        client.shell_channel.send(message)

    def watch(message: dict[str, Any]) -> None:
        kind = message["msg_type"]
        if kind == "comm_open":
            state = message["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") == "Stop":
                seen["button"] = message["content"]["comm_id"]
        if kind == "status":
            parent = message["parent_header"]
            seen["statuses"].append(
                (message["content"]["execution_state"], parent.get("msg_type"), seen["sent"])
            )
        if (
            seen["button"] is not None
            and seen["sent"] < 3
            and kind in ("display_data", "update_display_data")
            and is_answer(message["content"].get("metadata"))
        ):
            seen["sent"] += 1  # what a widget view asks when it is drawn: harmless, answered
            send_comm(seen["button"], {"method": "request_state"})

    reply, outputs = kernel.execute("%%agent\nTell me a long story", watch)
    assert reply["status"] == "ok", outputs
    assert seen["sent"] == 3, "no widget message was sent during the cell"
    statuses = seen["statuses"]
    # Everything before the cell's own final idle: the last word must be "busy".
    *during, last = statuses
    assert last[:2] == ("idle", "execute_request"), statuses
    after_first_message = [s for s in during if s[2] >= 1]
    assert after_first_message, statuses
    assert after_first_message[-1][0] == "busy", statuses
    assert after_first_message[-1][1] == "execute_request", statuses
