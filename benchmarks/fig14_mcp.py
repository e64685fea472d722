"""Figure 14: MCP tools through the agent's registry, and connecting a stdio server.

Call: ``await agent.registry.call("units__echo", ...)`` — lookup, policy-free registry path, JSON
Schema validation against the server's schema, the round trip, the result mapping — against
``await client.call_tool("echo", ...)`` on the ``mcp`` SDK's own ``Client`` (its default mode, as
ours: both negotiate the same protocol revision with the server) to a second process of the same
server. Both in one event loop, alternately, so both pay the same round trip. As context, the same
against a bare ``ClientSession`` that only does the older ``initialize`` handshake (another
revision on the wire: the difference is then partly the protocol's, not ours).

Connect: ``agent.add_mcp_server`` (spawn, initialize, list tools, register) against the bare
``stdio_client`` + ``ClientSession.initialize`` + ``list_tools`` (time to the first tool list).

Inline check: the worst case of a server schema checked on the event loop (``schema.checks_inline``:
the largest ``enum`` an inline schema may hold, every one of the 64 values failing against it and
each error message quoting it) — the loop stands still for it, so it is bounded (it was a
threshold in ``tests/mcp/test_schema_inline.py`` before it became this goal).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any, TextIO

from ._harness import (
    REPO_ROOT,
    BenchContext,
    Row,
    Stats,
    compare,
    limit,
    paired_async,
    per_call_us,
    require,
)

FIGURE = "14"
SERVER = str(REPO_ROOT / "notebooks" / "mcp_servers" / "units_server.py")


@contextlib.asynccontextmanager
async def _devnull() -> AsyncIterator[TextIO]:
    with open(os.devnull, "w") as devnull:
        yield devnull


async def _agent() -> Any:
    agent_module = require("jupyter_agent.agent.agent")
    require("jupyter_agent.mcp")
    from jupyter_agent.providers.offline import OfflineProvider

    return agent_module.Agent(OfflineProvider(), workspace=str(REPO_ROOT))


async def _measure_calls(
    calls: int, repetitions: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    from mcp import Client, ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    agent = await _agent()
    await agent.add_mcp_server("units", command=[sys.executable, SERVER], policy="allow")
    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    try:
        async with (
            _devnull() as devnull,
            Client(stdio_client(params, errlog=devnull)) as client,
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def ours() -> Any:
                result = await agent.registry.call("units__echo", {"text": "hi"})
                assert not result.is_error, result.content

            async def sdk_client() -> Any:
                result = await client.call_tool("echo", {"text": "hi"})
                assert not result.is_error

            async def bare_session() -> Any:
                result = await session.call_tool("echo", {"text": "hi"})
                assert not result.is_error

            a, b = await paired_async(
                per_call_us(ours, calls), per_call_us(sdk_client, calls), repetitions, warmup=1
            )
            c, d = await paired_async(
                per_call_us(ours, calls), per_call_us(bare_session, calls), repetitions, warmup=1
            )
            return a, b, c, d
    finally:
        await agent.toolbox.mcp.aclose()


async def _measure_connect(repetitions: int) -> tuple[list[float], list[float]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def ours() -> float:
        agent = await _agent()
        started = time.perf_counter()
        await agent.add_mcp_server("units", command=[sys.executable, SERVER])
        elapsed = time.perf_counter() - started
        await agent.toolbox.mcp.aclose()
        return elapsed * 1000

    async def theirs() -> float:
        params = StdioServerParameters(command=sys.executable, args=[SERVER])
        started = time.perf_counter()
        with open("/dev/null", "w") as devnull:
            async with (
                stdio_client(params, errlog=devnull) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                elapsed = time.perf_counter() - started
        return elapsed * 1000

    return await paired_async(ours, theirs, repetitions, warmup=0)


def run(ctx: BenchContext) -> list[Row]:
    require("mcp")  # NotLanded without the [mcp] extra
    calls = ctx.size(500, 20)
    repetitions = ctx.reps(9, 2)
    ctx.log(f"figure 14: {repetitions} × {calls} MCP calls each side")
    ours_us, theirs_us, ours2_us, legacy_us = asyncio.run(_measure_calls(calls, repetitions))
    connect_reps = ctx.reps(5, 1)
    ctx.log(f"figure 14: {connect_reps} stdio connections each side")
    ours_ms, theirs_ms = asyncio.run(_measure_connect(connect_reps))
    inline_ms = asyncio.run(_worst_inline_check_ms(ctx.reps(21, 3)))
    return [
        compare(
            FIGURE,
            "one MCP tool call through the agent's registry (stdio server)",
            Stats(ours_us, "µs/call"),
            Stats(theirs_us, "µs/call"),
            "the `mcp` SDK's `Client.call_tool` (its default mode, as ours)",
            max_ratio=1.2,
            note=(
                "Same server script, two processes; calls alternate in one event loop. Ours adds "
                "the registry (schema validation against the server's schema, in a worker under "
                "the call's deadline), the timeout and the result mapping. Both clients negotiate "
                "the server's newest revision (2026-07-28 for this SDK-built server). Until "
                "2026-11-28 the other side was a bare `ClientSession` doing the `initialize` "
                "handshake, as ours did then; ours now negotiates like the SDK's `Client`, so the "
                "like-for-like side is the `Client` (the bare session is the next row, context)."
            ),
            miss_note=(
                "The registry's validation (a worker-thread hop: the schema check runs off the "
                "event loop under the call's deadline), the call timeout and the result mapping "
                "cost a fraction of a stdio round trip; the machine's load moves the round trip."
            ),
        ),
        compare(
            FIGURE,
            "same call, against a bare session on the older handshake (context)",
            Stats(ours2_us, "µs/call"),
            Stats(legacy_us, "µs/call"),
            "bare `mcp` `ClientSession.call_tool` after `initialize` (2025-11-25 on the wire)",
            note=(
                "A different protocol revision on each side: per-request `_meta` and the "
                "2026-07-28 result fields on ours, the stateful handshake era on theirs."
            ),
        ),
        compare(
            FIGURE,
            "connecting a stdio MCP server (time to the first tool list)",
            Stats(ours_ms, "ms"),
            Stats(theirs_ms, "ms"),
            "bare `stdio_client` + `initialize` + `list_tools`",
            note="Mostly the server's Python start-up; ours also registers the tools.",
        ),
        limit(
            FIGURE,
            "the worst server-schema check run on the event loop (`checks_inline`)",
            Stats(inline_ms, "ms"),
            None,
            "",
            below=20.0,
            note="A schema checked inline stalls the loop for as long as the check takes; the "
            "inline rule (few plain values, comparison keywords, a capped size) keeps the worst "
            "case small. Every sample counts.",
            miss_note="The inline rule lets a schema through whose check grows with its size "
            "(a bigger `enum`, more values): send it to the worker instead.",
        ),
    ]


async def _worst_inline_check_ms(repetitions: int) -> list[float]:
    """Milliseconds of the worst inline check (``tests/mcp/test_schema_inline.py`` builds it)."""
    from jupyter_agent.mcp.schema import (
        INLINE_MAX_VALUES,
        INLINE_SCHEMA_BYTES,
        bounded_validator,
        check,
        checks_inline,
        schema_bytes,
    )

    words = ["w" * 110 + str(i) for i in range(INLINE_MAX_VALUES)]
    schema: dict[str, Any] = {"type": "object", "additionalProperties": {"enum": words}}
    while schema_bytes("", "", schema) > INLINE_SCHEMA_BYTES:
        words[:] = [word[1:] for word in words]
    if not checks_inline(schema):
        raise RuntimeError("the worst inline schema is no longer checked inline")
    validator = bounded_validator(schema)
    arguments = {f"k{i}": "not in it" for i in range(INLINE_MAX_VALUES)}
    await check(validator, arguments, 5.0, inline=True)  # warm
    samples = []
    for _ in range(repetitions):
        started = time.perf_counter()
        problem = await check(validator, arguments, 5.0, inline=True)
        samples.append((time.perf_counter() - started) * 1e3)
        if problem is None:
            raise RuntimeError("the worst inline check found no problem")
    return samples
