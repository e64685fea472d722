"""A task-aware MCP client in a process of its own, as another agent is: the SDK's ``Client``
(2026-07-28, ``server/discover``) with a ``ClientExtension`` that declares
``io.modelcontextprotocol/tasks`` and claims the ``resultType: "task"`` shape.

Run as ``python mcp_tasks_client.py URL TOKEN [--no-tasks]``; reads one JSON command a line from
stdin and prints one JSON answer a line:

- ``{"call": NAME, "arguments": {...}}``: the raw answer (``{"shape": "task", ...}`` or
  ``{"shape": "result", "text": ..., "is_error": ...}``);
- ``{"get": TASK_ID}``, ``{"cancel": TASK_ID}``, ``{"update": TASK_ID}``: the server's answer,
  or ``{"error": code, "message": ...}``;
- ``{"resolve": NAME, "arguments": {...}}``: ``Client.call_tool``, which the claim finishes by
  polling ``tasks/get``: the final text;
- ``{"time_gets": TASK_ID, "n": N}``: ``tasks/get`` N times, each round trip in microseconds.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any, ClassVar, Literal

import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

TASKS = "io.modelcontextprotocol/tasks"


class CreateTaskResult(types.Result):
    result_type: Literal["task"] = "task"  # type: ignore[assignment]
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class UpdateParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param: ClassVar[str | None] = "taskId"


async def poll_to_the_end(task: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
    while True:
        got = await ctx.session.send_request(
            GetTask(params=TaskIdParams(task_id=task.task_id)), DetailedTask
        )
        if got.status == "completed" and got.result is not None:
            return types.CallToolResult.model_validate(got.result)
        if got.status in ("failed", "cancelled"):
            return types.CallToolResult(
                content=[types.TextContent(text=f"{got.status}: {got.status_message}")],
                is_error=True,
            )
        await asyncio.sleep((got.poll_interval_ms or 100) / 1000)


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=poll_to_the_end)]


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


async def answer(client: Client, command: dict[str, Any]) -> dict[str, Any]:
    session = client.session
    try:
        if "call" in command:
            raw = await session.call_tool(
                command["call"], command.get("arguments", {}), allow_claimed=True
            )
            if isinstance(raw, CreateTaskResult):
                return {"shape": "task", **raw.model_dump(by_alias=True, exclude_none=True)}
            assert isinstance(raw, types.CallToolResult), raw
            return {"shape": "result", "text": text_of(raw), "is_error": raw.is_error}
        if "resolve" in command:
            final = await client.call_tool(command["resolve"], command.get("arguments", {}))
            return {"text": text_of(final), "is_error": final.is_error}
        if "get" in command:
            got = await session.send_request(
                GetTask(params=TaskIdParams(task_id=command["get"])), DetailedTask
            )
            return got.model_dump(by_alias=True, exclude_none=True)
        if "cancel" in command:
            done = await session.send_request(
                CancelTask(params=TaskIdParams(task_id=command["cancel"])), types.EmptyResult
            )
            return {"acknowledged": done.result_type}
        if "update" in command:
            params = UpdateParams(task_id=command["update"], input_responses={})
            done = await session.send_request(UpdateTask(params=params), types.EmptyResult)
            return {"acknowledged": done.result_type}
        if "time_gets" in command:
            request = GetTask(params=TaskIdParams(task_id=command["time_gets"]))
            times = []
            for _ in range(int(command["n"])):
                started = time.perf_counter()
                await session.send_request(request, DetailedTask)
                times.append((time.perf_counter() - started) * 1e6)
            return {"us": times}
    except MCPError as error:
        return {"error": error.code, "message": str(error)}
    return {"error": "unknown command"}


async def main(url: str, token: str, with_tasks: bool) -> None:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    transport = streamable_http_client(url, http_client=http)
    loop = asyncio.get_running_loop()
    async with http, Client(transport, extensions=[Tasks()] if with_tasks else None) as client:
        declared = sorted(client.server_capabilities.extensions or {})
        print(json.dumps({"ready": client.protocol_version, "extensions": declared}), flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            print(json.dumps(await answer(client, json.loads(line))), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], "--no-tasks" not in sys.argv))
