"""A real ipykernel driven the way a notebook frontend drives it: execute cells, watch iopub, send
widget ``comm_msg`` messages while a cell runs — for the kernel tests of every folder (the
``kernel`` fixture that starts one with the extension loaded is in ``tests/notebook/conftest.py``);
and a whole notebook run by nbclient, as ``jupyter nbconvert --execute`` runs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


class Kernel:
    """A kernel driven like a frontend: execute cells, watch iopub, send comm messages."""

    def __init__(self, cwd: Path) -> None:
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd))

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def execute(
        self,
        code: str,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 60,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        msg_id = self.client.execute(code, allow_stdin=True)
        return self.collect(msg_id, on_message, timeout, code)

    def collect(
        self,
        msg_id: str,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 60,
        code: str = "",
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The reply and outputs of the execution ``msg_id``."""
        outputs: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, f"timed out running {code!r}: {outputs}"
            try:
                message = self.client.get_iopub_msg(timeout=0.2)
            except Exception:
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                if on_message is not None:
                    on_message(message)
                continue
            if on_message is not None:
                on_message(message)
            kind = message["msg_type"]
            if kind in ("stream", "display_data", "update_display_data", "error"):
                outputs.append({"type": kind, **message["content"]})
            if kind == "status" and message["content"]["execution_state"] == "idle":
                break
        while True:
            reply = self.client.get_shell_msg(timeout=10)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], outputs

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> None:
        message = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.client.shell_channel.send(message)


def run_notebook(folder: Path, cells: list[str]) -> nbformat.NotebookNode:
    """Run ``cells`` as a notebook in ``folder`` (nbclient, a fresh kernel); the notebook as it
    was saved and read back."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute()
    saved = folder / "executed.ipynb"
    nbformat.write(nb, saved)
    return nbformat.read(saved, as_version=4)


# -- several executions at once, as a frontend that speaks subshells sends them -------------


def create_subshell(kernel: Kernel) -> str:
    client = kernel.client
    client.control_channel.send(client.session.msg("create_subshell_request", {}))
    reply = client.get_control_msg(timeout=10)
    return str(reply["content"]["subshell_id"])


def send_execute(kernel: Kernel, code: str, subshell_id: str | None) -> str:
    client = kernel.client
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    message = client.session.msg("execute_request", content)
    if subshell_id is not None:
        message["header"]["subshell_id"] = subshell_id
    client.shell_channel.send(message)
    return str(message["header"]["msg_id"])


class Cells:
    """The iopub outputs and the replies of several executions running at once."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.outputs: dict[str, list[dict[str, Any]]] = {}
        self.idle: dict[str, float] = {}
        self.replies: dict[str, dict[str, Any]] = {}
        #: Stop buttons opened: comm id -> the execution that showed it.
        self.stop_buttons: dict[str, str] = {}

    def pump(self, until: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            assert time.monotonic() < deadline, f"timed out: {self.outputs}"
            try:
                message = self.kernel.client.get_iopub_msg(timeout=0.05)
            except Exception:
                message = None
            if message is not None:
                parent = message["parent_header"].get("msg_id", "")
                kind = message["msg_type"]
                if kind in ("stream", "display_data", "update_display_data", "error"):
                    self.outputs.setdefault(parent, []).append({"type": kind, **message["content"]})
                if kind == "comm_open":
                    state = message["content"]["data"].get("state", {})
                    if (
                        state.get("_model_name") == "ButtonModel"
                        and state.get("description") == "Stop"
                    ):
                        self.stop_buttons[message["content"]["comm_id"]] = parent
                if kind == "status" and message["content"]["execution_state"] == "idle":
                    self.idle.setdefault(parent, time.monotonic())
            while True:
                try:
                    reply = self.kernel.client.get_shell_msg(timeout=0)
                except Exception:
                    break
                self.replies[reply["parent_header"]["msg_id"]] = reply["content"]

    def text(self, msg_id: str) -> str:
        parts = []
        for output in self.outputs.get(msg_id, []):
            if output["type"] == "stream":
                parts.append(output["text"])
            elif output["type"] == "error":
                parts.append(output["ename"] + ": " + output["evalue"])
            else:
                data = output.get("data", {})
                parts.append(str(data.get("text/plain", "")))
        return "".join(parts)
