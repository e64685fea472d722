"""A widget message that reaches the kernel just as a ``%%agent`` cell starts is answered during
the turn, not after it.

ipykernel 7 reads the main shell socket one message per event-loop pass and wraps each in a task;
the task of a message read right after an ``execute_request`` is only queued when that cell
starts running — and the cell blocks the loop until it ends. The cell's widget poller reads the
socket, so it never saw that message: a click made while an earlier cell ran (Run All queued the
``%%agent`` cell before it) waited for the whole turn. The poller now takes such messages from
the kernel's queue when the turn starts and handles them at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import time
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply
from jupyter_client.manager import start_new_kernel
from kernel_frontend import Kernel

pytestmark = pytest.mark.slow


class LoggedKernel(Kernel):
    """A kernel whose own log (its stderr) goes to ``kernel.log`` in its folder."""

    def __init__(self, cwd: Path) -> None:
        self.log_path = cwd / "kernel.log"
        with self.log_path.open("w") as log:
            self.manager, self.client = start_new_kernel(
                kernel_name="python3", cwd=str(cwd), stderr=log
            )


@pytest.fixture
def kernel_class() -> type[Kernel]:
    return LoggedKernel


class SlowGate:
    async def wait(self) -> None:
        await asyncio.sleep(0.05)


def test_a_click_queued_behind_an_agent_cell_is_answered_when_its_turn_starts(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    # a turn of about 5 s: 100 chunks, 50 ms apart
    fake_api.add(Reply([{"type": "text", "text": "word " * 100}], chunk=5, gate=SlowGate()))  # type: ignore[arg-type]
    opened: list[str] = []

    def on_open(message: dict[str, Any]) -> None:
        state = message["content"].get("data", {}).get("state", {})
        if message["msg_type"] == "comm_open" and state.get("_model_name") == "IntSliderModel":
            opened.append(message["content"]["comm_id"])

    reply, _ = kernel.execute("import ipywidgets\nslider = ipywidgets.IntSlider()\nslider", on_open)
    assert reply["status"] == "ok" and opened
    client = kernel.client
    # Run All: an ordinary cell runs, the %%agent cell waits behind it; then a click comes.
    busy = client.execute("import time; time.sleep(0.5)", allow_stdin=True)
    agent = client.execute("%%agent\nTell me a long story", allow_stdin=True)
    time.sleep(0.1)
    clicked = time.time()
    for _ in range(3):  # the first one read after the cell's request is the one it kept waiting
        kernel.send_comm(opened[0], {"method": "request_state"})
    answered: list[float] = []
    idle: list[float] = []  # when the %%agent cell ended, by the kernel's clock

    def watch(message: dict[str, Any]) -> None:
        content = message["content"]
        if (
            message["parent_header"].get("msg_id") == agent
            and content.get("execution_state") == "idle"
        ):
            idle.append(message["header"]["date"].timestamp())
        if (
            message["msg_type"] == "comm_msg"
            and content.get("comm_id") == opened[0]
            and content.get("data", {}).get("method") == "update"
        ):
            answered.append(message["header"]["date"].timestamp())

    kernel.collect(busy, watch)
    started = time.time()
    reply, outputs = kernel.collect(agent, watch)
    ended = time.time()
    assert reply["status"] == "ok", outputs
    assert ended - started > 4, "the turn was too short to tell"
    deadline = time.monotonic() + 2
    while len(answered) < 3 and time.monotonic() < deadline:  # a late answer, to say how late
        with contextlib.suppress(queue.Empty):
            watch(client.get_iopub_msg(timeout=0.1))
    assert len(answered) == 3, answered  # each once: taken from the queue, not run twice
    # answered as the turn started (after the earlier cell's last 0.4 s), not as it ended
    waited = [round(at - clicked, 2) for at in answered]
    assert max(answered) < idle[0] - 3, (waited, round(idle[0] - clicked, 2))


def test_the_kernel_log_stays_quiet_and_later_cells_run(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    """The message taken from the kernel's queue is not handled again later (a replayed signature
    would be refused as "Invalid Message"), its dropped task leaves no error in a cell or the
    kernel's log, and the queue keeps working for what follows."""
    fake_api.add(Reply([{"type": "text", "text": "word " * 40}], chunk=5, gate=SlowGate()))  # type: ignore[arg-type]
    opened: list[str] = []

    def on_open(message: dict[str, Any]) -> None:
        state = message["content"].get("data", {}).get("state", {})
        if message["msg_type"] == "comm_open" and state.get("_model_name") == "ButtonModel":
            opened.append(message["content"]["comm_id"])

    reply, _ = kernel.execute(
        "import ipywidgets\nclicks = []\nbutton = ipywidgets.Button()\n"
        "button.on_click(lambda b: clicks.append(1))\nbutton",
        on_open,
    )
    assert reply["status"] == "ok" and opened
    client = kernel.client
    busy = client.execute("import time; time.sleep(0.5)", allow_stdin=True)
    agent = client.execute("%%agent\nTell me a story", allow_stdin=True)
    time.sleep(0.1)
    for _ in range(3):
        kernel.send_comm(opened[0], {"method": "custom", "content": {"event": "click"}})
    after = client.execute("print(len(clicks))", allow_stdin=True)
    streams: list[str] = []  # every cell's printed output, whichever cell it went to

    def watch(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            streams.append(message["content"]["text"])

    kernel.collect(busy, watch)
    reply, outputs = kernel.collect(agent, watch)
    assert reply["status"] == "ok", outputs
    reply, outputs = kernel.collect(after, watch)
    assert reply["status"] == "ok", outputs
    assert "".join(o.get("text", "") for o in outputs if o["type"] == "stream") == "3\n"
    time.sleep(0.2)
    with contextlib.suppress(queue.Empty):
        while True:
            watch(client.get_iopub_msg(timeout=0.1))
    for noise in ("Invalid Message", "Exception in callback", "Traceback"):
        assert noise not in "".join(streams), streams
    assert isinstance(kernel, LoggedKernel)
    log = kernel.log_path.read_text()
    for noise in ("Invalid Message", "Exception in callback", "Traceback"):
        assert noise not in log, log
