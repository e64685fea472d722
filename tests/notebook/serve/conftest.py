"""Fixtures of the serve tests: a task-aware MCP client in a process of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_tasks import OpenClient, TasksClient


@pytest.fixture
def tasks_client() -> Iterator[OpenClient]:
    """Opens ``TasksClient``s (url, token, flags); each is closed at the test's end."""
    opened: list[TasksClient] = []

    def open_client(url: str, token: str, *extra: str) -> TasksClient:
        client = TasksClient(url, token, *extra)
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        client.close()
