"""MCP servers die with the kernel however it ends — also when it is SIGKILLed.

A real kernel (``jupyter_client``) loads the extension and adds a stdio server with
``%agent mcp add`` (started from the session's background-loop thread, as in a notebook); then
``shutdown_kernel(now=True)`` kills the kernel outright, so no exit hook runs. The server,
found by a marker in its command line, must be gone within seconds.
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel
from mcp_processes import SERVER, processes_with

pytest.importorskip("mcp")


def run(client: object, code: str) -> str:
    """Execute ``code`` in the kernel; its stdout and errors as text."""
    msg_id = client.execute(code)  # type: ignore[attr-defined]
    text: list[str] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=0.5)  # type: ignore[attr-defined]
        except Exception:
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        content = message["content"]
        if message["msg_type"] == "stream":
            text.append(content["text"])
        elif message["msg_type"] == "error":
            text.append("\n".join(content["traceback"]))
        elif message["msg_type"] == "status" and content["execution_state"] == "idle":
            return "".join(text)
    raise AssertionError(f"timed out running {code!r}: {''.join(text)}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and prctl")
@pytest.mark.timeout(180)
@pytest.mark.parametrize("busy", [False, True], ids=["idle", "mid-call"])
def test_a_killed_kernel_leaves_no_mcp_server(tmp_path: Path, busy: bool) -> None:
    command = [sys.executable, SERVER]
    marker = uuid.uuid4().hex
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        shown = run(
            client,
            "%load_ext jupyter_agent\n"
            f"%agent mcp add killed -- {' '.join(command)} --marker={marker}\n",
        )
        assert "added" in shown, shown
        assert processes_with(marker), "the server should be running"
        if busy:
            # a call in flight when the kernel dies ("Restart" under load): the server's
            # worker thread keeps it alive after its stdin closes
            shown = run(
                client,
                "from jupyter_agent.notebook.runtime.bridge import BackgroundLoop\n"
                "from jupyter_agent.agent.agent import Agent\n"
                "from jupyter_agent.providers.offline import OfflineProvider\n"
                "loop = BackgroundLoop()\n"
                "agent = Agent(OfflineProvider(), workspace='.')\n"
                f"busy = {[*command, '--marker=' + marker]!r}\n"
                "loop.run(agent.add_mcp_server('busy', command=busy), 60)\n"
                "call = loop.submit(agent.registry.call('busy__hang', {}))\n"
                "import time; time.sleep(1); print('calling', call.done())\n",
            )
            assert "calling False" in shown, shown
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_with(marker)
