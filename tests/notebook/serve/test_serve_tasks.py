"""Long served calls as MCP tasks: the SDK's own client, with a tasks extension, in a process of
its own (``tasks_client.py``) against the server ``%agent serve`` runs (``ToolServer``)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_tasks import OpenClient, TasksClient

from jupyter_agent.agent.toolbox import Toolbox
from jupyter_agent.notebook.runtime.bridge import BackgroundLoop
from jupyter_agent.notebook.serve.serve_http import ToolServer, report_progress
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.progress import report_progress as tools_report_progress
from jupyter_agent.tools.registry import ToolRegistry

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

TASK_AFTER_S = 0.3
TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture
def gate() -> threading.Event:
    return threading.Event()


@pytest.fixture
def server(tmp_path: Path, gate: threading.Event) -> Iterator[ToolServer]:
    @tool
    async def quick(x: int) -> str:
        """Doubles x at once."""
        return f"twice {x} is {2 * x}"

    @tool
    async def slow(x: int) -> str:
        """Waits until the test opens the gate, telling its progress."""
        await report_progress("waiting for the gate")
        while not gate.is_set():
            await asyncio.sleep(0.02)
        return f"slow {x} done"

    @tool
    async def counting(n: int) -> str:
        """Counts to n in a worker thread, telling each step as the tool's own progress, with
        a hostile message (escapes, line breaks, a megabyte), then waits for the gate."""

        def count() -> None:
            for step in range(1, n + 1):
                tools_report_progress(step, n, f"row {step}\x1b[2J\nnext" + "x" * 1_000_000)

        await asyncio.to_thread(count)
        while not gate.is_set():
            await asyncio.sleep(0.02)
        return "counted"

    @tool
    async def leaky() -> str:
        """Tells, as its progress, a line that holds the vault's token (as a cell that prints
        it would), then waits for the gate and returns it too."""
        secret = os.environ["SERVE_TEST_VAULT_TOKEN"]
        await asyncio.to_thread(tools_report_progress, 1, None, f"connected with {secret}")
        while not gate.is_set():
            await asyncio.sleep(0.02)
        return f"used {secret}"

    registry = ToolRegistry()
    registry.register(quick)
    registry.register(slow)
    registry.register(counting)
    registry.register(leaky)
    background = BackgroundLoop("test-serve-tasks")
    served = ToolServer(
        Toolbox(ToolContext(tmp_path), registry), token="tok", task_after=TASK_AFTER_S
    )
    try:
        background.run(served.start(0), timeout=30)
        yield served
    finally:
        gate.set()
        background.run(served.stop(), timeout=15)
        background.close()


@pytest.fixture
def client(server: ToolServer, tasks_client: OpenClient) -> TasksClient:
    return tasks_client(server.url, "tok")


def test_the_server_declares_the_tasks_extension_and_a_quick_call_stays_a_result(
    client: TasksClient,
) -> None:
    assert client.ready == {"ready": "2026-07-28", "extensions": [TASKS]}
    answer = client.ask(call="quick", arguments={"x": 4})
    assert answer == {"shape": "result", "text": "twice 4 is 8", "is_error": False}


def test_a_call_that_outlives_the_threshold_becomes_a_task_polled_to_its_result(
    client: TasksClient, gate: threading.Event
) -> None:
    started = time.monotonic()
    handle = client.ask(call="slow", arguments={"x": 7})
    assert handle["shape"] == "task", handle
    assert time.monotonic() - started >= TASK_AFTER_S
    assert handle["resultType"] == "task" and handle["status"] == "working"
    assert handle["ttlMs"] > 0 and handle["pollIntervalMs"] > 0
    polled = client.ask(get=handle["taskId"])
    assert polled["status"] == "working"
    assert polled["statusMessage"].startswith("slow running for ")
    assert polled["statusMessage"].endswith(": waiting for the gate")
    # nothing was asked of the client: an update is an empty acknowledgement
    assert client.ask(update=handle["taskId"]) == {"acknowledged": "complete"}
    gate.set()
    deadline = time.monotonic() + 10
    while polled["status"] == "working" and time.monotonic() < deadline:
        polled = client.ask(get=handle["taskId"])
    assert polled["status"] == "completed"
    assert polled["result"]["content"] == [{"type": "text", "text": "slow 7 done"}]
    assert polled["result"].get("isError", False) is False


def test_a_tools_own_progress_is_the_tasks_status_one_printable_line_the_latest(
    client: TasksClient, gate: threading.Event
) -> None:
    """A tool reporting its own progress (``tools/progress.py``, from a worker thread, as
    ``run_cell``'s ticker does) is told in the task's statusMessage: the latest report, as one
    printable line of bounded length."""
    handle = client.ask(call="counting", arguments={"n": 50})
    assert handle["shape"] == "task", handle
    polled = client.ask(get=handle["taskId"])
    deadline = time.monotonic() + 10
    while "50/50 row 50" not in polled["statusMessage"]:
        assert time.monotonic() < deadline, polled
        time.sleep(0.02)
        polled = client.ask(get=handle["taskId"])
    message = polled["statusMessage"]
    assert message.startswith("counting running for ") and ": 50/50 row 50 [2J next" in message
    assert message.isprintable() and len(message) < 600, message[:100]
    gate.set()


VAULT_TOKEN = "vt-9f3Kq2LmX7pR4sW8zN1cB6"


def test_a_secret_in_a_tools_progress_never_reaches_the_caller(
    client: TasksClient, gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The redactor every result passes through holds for progress too: a tool (a cell) that
    prints a secret tells the outside agent ``[redacted: NAME]`` in the task's statusMessage."""
    monkeypatch.setenv("SERVE_TEST_VAULT_TOKEN", VAULT_TOKEN)
    handle = client.ask(call="leaky", arguments={})
    assert handle["shape"] == "task", handle
    polled = client.ask(get=handle["taskId"])
    deadline = time.monotonic() + 10
    while "connected with" not in polled["statusMessage"]:
        assert time.monotonic() < deadline, polled
        time.sleep(0.02)
        polled = client.ask(get=handle["taskId"])
    message = polled["statusMessage"]
    gate.set()
    assert VAULT_TOKEN not in message, message
    assert "connected with [redacted: SERVE_TEST_VAULT_TOKEN]" in message, message
    while polled["status"] == "working":
        assert time.monotonic() < deadline, polled
        polled = client.ask(get=handle["taskId"])
    assert polled["result"]["content"][0]["text"] == "used [redacted: SERVE_TEST_VAULT_TOKEN]"


def test_the_sdk_client_resolves_the_task_transparently(
    client: TasksClient, gate: threading.Event
) -> None:
    threading.Timer(TASK_AFTER_S * 2, gate.set).start()
    assert client.ask(resolve="slow", arguments={"x": 3}) == {
        "text": "slow 3 done",
        "is_error": False,
    }


def test_a_task_is_cancelled_and_unknown_tasks_are_an_error(
    server: ToolServer, client: TasksClient
) -> None:
    handle = client.ask(call="slow", arguments={"x": 1})
    assert handle["shape"] == "task"
    assert client.ask(cancel=handle["taskId"]) == {"acknowledged": "complete"}
    polled = client.ask(get=handle["taskId"])
    deadline = time.monotonic() + 10
    while polled["status"] == "working" and time.monotonic() < deadline:
        polled = client.ask(get=handle["taskId"])
    assert polled["status"] == "cancelled"
    assert "cancelled by the client" in polled["statusMessage"]
    assert server.calls == 1  # the call ended (shown interrupted in the serve cell)
    missing = client.ask(get="0" * 32)
    assert missing["error"] == -32602 and "Task not found" in missing["message"]
    assert client.ask(cancel="nope")["error"] == -32602


def test_a_client_that_does_not_speak_tasks_gets_the_plain_result(
    server: ToolServer, gate: threading.Event, tasks_client: OpenClient
) -> None:
    plain = tasks_client(server.url, "tok", "--no-tasks")
    threading.Timer(TASK_AFTER_S * 2, gate.set).start()
    answer = plain.ask(call="slow", arguments={"x": 2})
    assert answer == {"shape": "result", "text": "slow 2 done", "is_error": False}
    refused = plain.ask(get="0" * 32)
    assert refused["error"] == -32021  # tasks/* only for clients that declare them


def test_a_task_waiting_for_the_users_approval_says_so(
    tmp_path: Path, tasks_client: OpenClient
) -> None:
    """A call whose policy is ``ask`` waits for the Approve click in the notebook: its task's
    status message says so until the user answers."""
    from jupyter_agent.approvals import ApprovalRequest, Decision

    answered = threading.Event()

    async def approve_later(_request: ApprovalRequest) -> Decision:
        while not answered.is_set():
            await asyncio.sleep(0.02)
        return Decision(True)

    @tool
    async def shout(text: str) -> str:
        """Upper-cases text."""
        return text.upper()

    registry = ToolRegistry()
    registry.register(shout)
    toolbox = Toolbox(ToolContext(tmp_path), registry)
    toolbox.set_policy("shout", "ask")
    background = BackgroundLoop("test-serve-tasks-ask")
    served = ToolServer(
        toolbox, token="tok", task_after=TASK_AFTER_S, approval_handler=approve_later
    )
    try:
        background.run(served.start(0), timeout=30)
        client = tasks_client(served.url, "tok")
        handle = client.ask(call="shout", arguments={"text": "hi"})
        assert handle["shape"] == "task"
        polled = client.ask(get=handle["taskId"])
        assert polled["statusMessage"].endswith(
            ": waiting for the user's approval in the notebook"
        ), polled
        answered.set()
        deadline = time.monotonic() + 10
        while polled["status"] == "working" and time.monotonic() < deadline:
            polled = client.ask(get=handle["taskId"])
        assert polled["status"] == "completed"
        assert polled["result"]["content"] == [{"type": "text", "text": "HI"}]
    finally:
        answered.set()
        background.run(served.stop(), timeout=15)
        background.close()


async def test_tasks_are_bounded_then_calls_are_answered_in_place() -> None:
    """At most ``MAX_TASKS`` work at once; one more call is answered in place, and a finished
    task gives its room to a new one."""
    from jupyter_agent.notebook.serve.serve_http import to_call_tool_result
    from jupyter_agent.notebook.serve.tasks import MAX_TASKS, ServeTasks
    from jupyter_agent.tools.base import ToolResult

    tasks = ServeTasks(task_after=0.0)
    release = asyncio.Event()

    async def long(_report: Any) -> ToolResult:
        await release.wait()
        return ToolResult("long done")

    async def short(_report: Any) -> ToolResult:
        return ToolResult("short done")

    handles = [await tasks.call("slow", long, to_call_tool_result) for _ in range(MAX_TASKS)]
    assert all(handle["resultType"] == "task" for handle in handles)
    in_place = await tasks.call("slow", short, to_call_tool_result)
    assert in_place.content[0].text == "short done"
    release.set()
    await asyncio.sleep(0.05)
    assert {task.status for task in tasks.tasks.values()} == {"completed"}
    again = asyncio.Event()

    async def longer(_report: Any) -> ToolResult:
        await again.wait()
        return ToolResult("longer done")

    fresh = await tasks.call("slow", longer, to_call_tool_result)
    assert fresh["resultType"] == "task" and len(tasks.tasks) == MAX_TASKS
    again.set()
    await asyncio.sleep(0.05)
    assert tasks.find(fresh["taskId"]).detailed()["result"]["content"][0]["text"] == "longer done"
    assert tasks.cancel_all("the server stopped") == 0  # none still working


async def test_a_task_whose_code_the_user_stopped_reads_cancelled() -> None:
    """The kernel's Stop ends a task's own main-thread code (the main-thread runner says so
    with ``note_interrupted``); the tool's error result is not the task's outcome: it reads
    ``cancelled``. The same note outside a task changes nothing (a plain call's error result)."""
    from jupyter_agent.notebook.serve.serve_http import to_call_tool_result
    from jupyter_agent.notebook.serve.tasks import ServeTasks, note_interrupted
    from jupyter_agent.tools.base import ToolResult

    tasks = ServeTasks(task_after=0.0)
    stopped = asyncio.Event()

    async def stopped_code(_report: Any) -> ToolResult:
        await stopped.wait()
        note_interrupted()
        return ToolResult("Error executing run_python: interrupted by the user", is_error=True)

    handle = await tasks.call("run_python", stopped_code, to_call_tool_result)
    stopped.set()
    while tasks.find(handle["taskId"]).status == "working":
        await asyncio.sleep(0.01)
    polled = tasks.find(handle["taskId"]).detailed()
    assert polled["status"] == "cancelled", polled
    assert "interrupted in the notebook" in polled["statusMessage"]
    assert "result" not in polled
    note_interrupted()  # outside any task: nothing to mark, nothing raised


def test_a_progress_message_that_names_its_amount_is_the_whole_line() -> None:
    """``run_cell``'s ticker says ``12 s elapsed; …`` itself: the amount is not said twice."""
    from jupyter_agent.notebook.serve.serve_http import progress_line

    assert progress_line(12, None, "12 s elapsed; last output: step 3") == (
        "12 s elapsed; last output: step 3"
    )
    assert progress_line(3, 10, "copying files") == "3/10 copying files"
    assert progress_line(1, None, "12 s elapsed") == "1 12 s elapsed"
