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
