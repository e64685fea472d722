"""Drives ``mcp_tasks_client.py`` (the SDK's task-aware MCP client) in a process of its own, as
another agent is: one JSON command a line in, one JSON answer a line out."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

CLIENT = Path(__file__).with_name("mcp_tasks_client.py")


class TasksClient:
    """The client process: one JSON command in, one JSON answer out."""

    def __init__(self, url: str, token: str, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(CLIENT), url, token, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ready = self._read()

    def _read(self, timeout: float = 60) -> dict[str, Any]:
        assert self.process.stdout is not None
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(self.process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        assert answer and answer[0], f"the client said nothing (exit {self.process.poll()})"
        parsed: dict[str, Any] = json.loads(answer[0])
        return parsed

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


OpenClient = Callable[..., TasksClient]
