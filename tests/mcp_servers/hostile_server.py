"""A real MCP server (the SDK's low-level ``Server``) whose tool schemas are hostile.

``python hostile_server.py schemas|many-tools N|big-schemas|garbage [--marker TEXT]``:

- ``schemas``: tools whose input schemas point outside themselves (``$ref`` to an HTTP URL on
  loopback, to ``file:///dev/zero``), one with a catastrophic ``pattern``, one with a local
  ``$ref`` that must keep working; every tool answers ``called NAME``.
- ``many-tools N``: N small tools, over as many ``tools/list`` pages as it takes.
- ``big-schemas``: a few tools whose descriptions add up to megabytes.
- ``garbage``: prints lines that are not JSON-RPC on stdout and never answers.
- ``nested-dialect``: one tool whose schema names another JSON Schema dialect inside itself.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE = 100


def _tool(name: str, schema: dict[str, Any], description: str = "") -> types.Tool:
    return types.Tool(name=name, description=description or f"the {name} tool", input_schema=schema)


def schemas_tools(ref_url: str) -> list[types.Tool]:
    text = {"type": "string"}
    return [
        _tool(
            "remote_ref",
            {"type": "object", "properties": {"x": {"$ref": ref_url}}, "required": ["x"]},
        ),
        _tool(
            "dev_zero_ref",
            {"type": "object", "properties": {"x": {"$ref": "file:///dev/zero"}}},
        ),
        _tool(
            "redos",
            {"type": "object", "properties": {"s": text | {"pattern": "^(a+)+$"}}},
        ),
        _tool(
            "redos_forever",
            {"type": "object", "properties": {"s": text | {"pattern": "^(a|aa)+$"}}},
        ),
        _tool(
            "redos_keys",
            {
                "type": "object",
                "patternProperties": {"^(a|aa)+$": text},
                "additionalProperties": False,
            },
        ),
        _tool(
            "draft3_type",  # Draft 3 lets "type" hold schemas: a pattern hides in one
            {
                "$schema": "http://json-schema.org/draft-03/schema#",
                "type": "object",
                "properties": {"q": {"type": [{"pattern": "^(a|a)*$"}]}},
            },
        ),
        types.Tool(
            name="redos_output",  # its result's structured content meets a catastrophic pattern
            description="the redos_output tool",
            input_schema={"type": "object"},
            output_schema={
                "type": "object",
                "properties": {"s": {"type": "string", "pattern": "^(a|a)*$"}},
            },
        ),
        _tool(
            "local_ref",
            {
                "type": "object",
                "$defs": {"word": {"type": "string", "pattern": "^[a-z]+$"}},
                "properties": {"w": {"$ref": "#/$defs/word"}},
                "required": ["w"],
            },
        ),
    ]


def many_tools(count: int) -> list[types.Tool]:
    return [_tool(f"t{index}", {"type": "object"}) for index in range(count)]


def big_tools() -> list[types.Tool]:
    return [_tool(f"big{index}", {"type": "object"}, "x" * 400_000) for index in range(8)]


def main(argv: list[str]) -> None:
    args = [a for a in argv if not a.startswith("--marker")]
    mode = args[0] if args else "schemas"
    if mode == "garbage":
        while True:
            print("hello, I am not an MCP server", flush=True)
            time.sleep(0.2)
    if mode == "many-tools":
        tools = many_tools(int(args[1]))
    elif mode == "big-schemas":
        tools = big_tools()
    elif mode == "nested-dialect":
        tools = [
            _tool(
                "nested_dialect",
                {
                    "type": "object",
                    "properties": {
                        "q": {
                            "$schema": "http://json-schema.org/draft-07/schema#",
                            "type": "string",
                            "pattern": "^(a|a)*$",
                        }
                    },
                },
            )
        ]
    else:
        tools = schemas_tools(args[1] if len(args) > 1 else "http://127.0.0.1:9/schema.json")

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        start = int(params.cursor) if params is not None and params.cursor else 0
        page = tools[start : start + PAGE]
        more = start + PAGE < len(tools)
        return types.ListToolsResult(tools=page, next_cursor=str(start + PAGE) if more else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"called {params.name}")],
            structured_content={"s": "a" * 30 + "!"} if params.name == "redos_output" else None,
        )

    server: Any = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main(sys.argv[1:])
