"""Long served calls as MCP tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663).

A cell run through ``run_cell`` or ``run_python``, or any call that waits on the kernel, can take
minutes: longer than an HTTP request should stay open and longer than most MCP clients wait for a
``tools/call``. A client that declares the tasks extension on its request (the per-request
``clientCapabilities`` of the 2026-07-28 protocol) gets, instead of the result, a task handle at
once — for ``run_cell`` and ``run_python`` always, for any other tool once the call has run
``task_after`` seconds — and then polls ``tasks/get`` (status, a progress message, the result when
it is done) and may cancel it with ``tasks/cancel``. A client that does not declare the extension
(or speaks an older protocol) gets the plain result, as before: the server never sends a task
handle to a client that did not ask on that very request (the spec's MUST).

Cancellation is cooperative: ``tasks/cancel`` cancels the call's asyncio task (a call still queued
for the kernel's main thread never runs; one waiting for approval leaves the prompt), and the task
reads ``cancelled`` once the call has ended. ``cancel_all`` (the serve cell's end, a kernel
interrupt) cancels every task still working. The kernel's Stop while a task's own code runs on
the main thread ends that code — between cells (the kernel's loop) or inside a running
``%%agent`` cell's pump alike; the tool then returns an error result, but the task reads
``cancelled``: ``note_interrupted`` is the bridge's ``on_interrupted`` while serving, called in
the call's own task wherever its main-thread work reports the interrupt. An outside agent must
not take the user's Stop for its code's failure.

Bounded: at most ``MAX_TASKS`` tasks are kept; a finished task is forgotten ``TASK_TTL_MS`` after
it was created (or first, when more room is needed); while ``MAX_TASKS`` are still working, a new
call is answered in place rather than as a task. Task ids are 128-bit random: knowing one is the
only way to read or cancel it (every client already holds the server's token and runs as the
kernel's user).
"""

from __future__ import annotations

import asyncio
import contextvars
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ...tools.base import ToolResult

#: The extension's identifier (declared in the server's capabilities, read from each request).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: Tools whose calls always become tasks for a client that speaks them (they run cells).
ALWAYS_TASKS = frozenset({"run_cell", "run_python"})
#: How long a task is kept from its creation (also its ``ttlMs``).
TASK_TTL_MS = 10 * 60 * 1000
#: The polling interval suggested to clients.
POLL_INTERVAL_MS = 250
#: Tasks kept at once (working and finished).
MAX_TASKS = 64

Report = Callable[[str], Awaitable[None]]
Work = Callable[[Report], Awaitable[ToolResult]]


@dataclass
class _Interrupted:
    """Whether the user's Stop (the kernel's interrupt) ended the task's own work."""

    reason: str = ""


#: The task the running call belongs to (set in the call's own asyncio task).
_current: contextvars.ContextVar[_Interrupted | None] = contextvars.ContextVar(
    "jupyter_agent_serve_task", default=None
)


def note_interrupted(reason: str = "interrupted in the notebook") -> None:
    """The kernel's interrupt ended the running call's main-thread work: its task, if it is one,
    reads ``cancelled``. Nothing for a call that is not a task."""
    state = _current.get()
    if state is not None:
        state.reason = reason


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class ServeTask:
    """One call run as a task: its state as ``tasks/get`` tells it."""

    task_id: str
    name: str
    work: asyncio.Task[ToolResult]
    created_at: str = field(default_factory=_now)
    last_updated_at: str = ""
    started: float = field(default_factory=time.monotonic)
    #: The last progress the call reported (e.g. "kernel busy, queued").
    progress: str = ""
    #: The final ``CallToolResult`` as wire JSON, once completed.
    result: dict[str, Any] | None = None
    #: The JSON-RPC error, once failed.
    error: dict[str, Any] | None = None
    cancel_reason: str = ""

    def __post_init__(self) -> None:
        self.last_updated_at = self.created_at

    #: ``working`` until the call has ended and its outcome is stored (``ServeTasks._settle``).
    status: str = "working"

    def touch(self) -> None:
        self.last_updated_at = _now()

    def status_message(self) -> str:
        status = self.status
        if status == "working":
            elapsed = f"{self.name} running for {time.monotonic() - self.started:.1f} s"
            return f"{elapsed}: {self.progress}" if self.progress else elapsed
        if status == "cancelled":
            return f"{self.name} was cancelled" + (
                f" ({self.cancel_reason})" if self.cancel_reason else ""
            )
        if status == "failed":
            return f"{self.name} failed"
        return f"{self.name} finished"

    def detailed(self) -> dict[str, Any]:
        """The task as ``tasks/get`` answers it (a ``DetailedTask``)."""
        shown: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "statusMessage": self.status_message(),
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if shown["status"] == "completed" and self.result is not None:
            shown["result"] = self.result
        if shown["status"] == "failed" and self.error is not None:
            shown["error"] = self.error
        return shown


def speaks_tasks(ctx: Any) -> bool:
    """Did this very request declare the tasks extension (2026-07-28 per-request capabilities)?"""
    from mcp_types import CLIENT_CAPABILITIES_META_KEY
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if getattr(ctx, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
        return False
    meta = getattr(ctx, "meta", None)
    if not isinstance(meta, dict):
        return False
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


class ServeTasks:
    """The tasks of one server: creating them, answering ``tasks/*``, cancelling them."""

    def __init__(self, task_after: float) -> None:
        #: Seconds a call runs before it becomes a task (``AgentMagics.serve_task_after``).
        self.task_after = task_after
        self.tasks: dict[str, ServeTask] = {}

    # -- creating -----------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        work: Work,
        as_result: Callable[[ToolResult], Any],
    ) -> Any:
        """Run ``work`` for a client that speaks tasks: its result (through ``as_result``) when it
        ends within ``task_after`` seconds and is not a cell, else a task handle."""
        self._forget_expired()
        working = sum(1 for task in self.tasks.values() if task.status == "working")
        if working >= MAX_TASKS:  # no room: answered in place, as for any client
            return as_result(await work(_no_report))
        started = time.monotonic()
        holder: list[ServeTask] = []
        said: list[str] = []  # progress told before the task exists

        async def report(message: str) -> None:
            said[:] = [message[:500]]
            if holder:
                holder[0].progress = said[0]
                holder[0].touch()

        interrupted = _Interrupted()

        async def tracked() -> ToolResult:
            _current.set(interrupted)  # in this task's own context
            return await work(report)

        running = asyncio.ensure_future(tracked())
        if name not in ALWAYS_TASKS:
            try:
                await asyncio.wait({running}, timeout=self.task_after)
            except asyncio.CancelledError:  # the client went away: the call with it, as before
                running.cancel()
                raise
            if running.done():
                return as_result(running.result())
        task = ServeTask(secrets.token_hex(16), name, running, started=started)
        task.progress = said[0] if said else ""
        holder.append(task)
        self._make_room()
        self.tasks[task.task_id] = task
        running.add_done_callback(lambda done: self._settle(task, done, as_result, interrupted))
        return {"resultType": "task", **task.detailed()}

    @staticmethod
    def _settle(
        task: ServeTask,
        done: asyncio.Task[ToolResult],
        as_result: Callable[[ToolResult], Any],
        interrupted: _Interrupted,
    ) -> None:
        task.touch()
        if done.cancelled():
            task.status = "cancelled"
            return
        if interrupted.reason:  # the user's Stop ended its code: not the code's own failure
            task.cancel_reason = task.cancel_reason or interrupted.reason
            task.status = "cancelled"
            return
        error = done.exception()
        if error is not None:
            task.error = {"code": -32603, "message": f"{type(error).__name__}: {error}"[:500]}
            task.status = "failed"
            return
        result = as_result(done.result())
        task.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        task.status = "completed"

    def _forget_expired(self) -> None:
        now = datetime.now(UTC)
        for task_id, task in list(self.tasks.items()):
            created = datetime.fromisoformat(task.created_at.replace("Z", "+00:00"))
            if task.status != "working" and (now - created).total_seconds() * 1000 > TASK_TTL_MS:
                del self.tasks[task_id]

    def _make_room(self) -> None:
        for task_id, task in list(self.tasks.items()):
            if len(self.tasks) < MAX_TASKS:
                return
            if task.status != "working":
                del self.tasks[task_id]

    # -- answering ----------------------------------------------------------------------------

    def find(self, task_id: str) -> ServeTask:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS

        self._forget_expired()
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        return task

    def cancel(self, task_id: str, reason: str = "cancelled by the client") -> None:
        task = self.find(task_id)
        if not task.work.done():
            task.cancel_reason = reason
            task.work.cancel()

    def cancel_all(self, reason: str) -> int:
        """Cancel every working task (the server stops, the kernel was interrupted)."""
        cancelled = 0
        for task in self.tasks.values():
            if not task.work.done():
                task.cancel_reason = reason
                task.work.cancel()
                cancelled += 1
        return cancelled

    def install(self, server: Any) -> None:
        """Declare the extension on the SDK's low-level ``server`` and serve ``tasks/*``."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import (
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            CancelTaskRequestParams,
            GetTaskRequestParams,
            RequestParams,
        )

        class UpdateTaskParams(RequestParams):
            task_id: str
            input_responses: dict[str, Any] | None = None

        async def get(ctx: Any, params: GetTaskRequestParams) -> dict[str, Any]:
            require_client_extension_here(ctx)
            return self.find(params.task_id).detailed()

        async def cancel(ctx: Any, params: CancelTaskRequestParams) -> dict[str, Any]:
            require_client_extension_here(ctx)
            self.cancel(params.task_id)
            return {}

        async def update(ctx: Any, params: UpdateTaskParams) -> dict[str, Any]:
            # no served call asks the client for input (approvals are asked in the notebook):
            # responses are for no outstanding request, and the spec says to ignore them
            require_client_extension_here(ctx)
            self.find(params.task_id)
            return {}

        def require_client_extension_here(ctx: Any) -> None:
            if not speaks_tasks(ctx):  # the spec's -32021, naming the extension to declare
                raise MCPError(
                    code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message=f"Missing required client capability: {TASKS_EXTENSION}",
                    data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
                )

        server.extensions[TASKS_EXTENSION] = {}
        server.add_request_handler("tasks/get", GetTaskRequestParams, get)
        server.add_request_handler("tasks/cancel", CancelTaskRequestParams, cancel)
        server.add_request_handler("tasks/update", UpdateTaskParams, update)


async def _no_report(_message: str) -> None:
    return None
