"""A real ipykernel driven like a frontend, for the figures that measure what a notebook user
waits for (figures 16 and 17).

The kernel is a fresh process of this venv (jupyter_client puts this interpreter in the
``python3`` kernelspec) with the repository first on its path, pointed at the loopback Messages
API through ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._harness import REPO_ROOT, require


def kernel_env(base_url: str, model: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-test", ANTHROPIC_MODEL=model)
    for name in ("PYTHONSTARTUP", "JUPYTER_AGENT_PROVIDER"):
        env.pop(name, None)
    return env


class Kernel:
    """One fresh kernel: execute code, watch iopub, send comm messages on the shell channel."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        require("jupyter_client")
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd), env=env)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute(
        self,
        code: str,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 120,
        on_tick: Callable[[], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Run ``code``; every iopub message goes to ``on_message`` and ``on_tick`` is called
        at least every 2 ms meanwhile; returns the cell's outputs."""
        msg_id = self.client.execute(code)
        outputs: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out running {code[:80]!r}")
            if on_tick is not None:
                on_tick()
            try:
                message = self.client.get_iopub_msg(timeout=0.002 if on_tick else 0.05)
            except Exception:
                continue
            if on_message is not None:
                on_message(message)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if kind in ("stream", "display_data", "update_display_data", "error"):
                outputs.append({"type": kind, **message["content"]})
            if kind == "status" and message["content"]["execution_state"] == "idle":
                break
        errors = [o for o in outputs if o["type"] == "error"]
        if errors:
            raise RuntimeError(f"{code[:80]!r} failed: {errors[0].get('evalue')}")
        return outputs

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> str:
        message = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])


def markdown_of(message: dict[str, Any]) -> str:
    """The Markdown an iopub display message shows, or ``""``."""
    if message["msg_type"] not in ("display_data", "update_display_data"):
        return ""
    return str(message["content"].get("data", {}).get("text/markdown", ""))
