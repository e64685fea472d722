"""A real MCP server (the SDK's own ``MCPServer``) that the MCP tests start as a subprocess.

``python sdk_server.py [stdio|http PORT] [--marker TEXT]`` — the marker only sits in argv, so a
/proc scan can find a leftover process. Its tools cover every result kind the client maps: text,
image, structured content, ``isError``, a resource link, a hang, an exit mid-call, environment,
progress notifications.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.resources.types import TextResource
from mcp.types import CallToolResult, ResourceLink, TextContent

#: A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("testserver", instructions="A test server: echo, add, and ways to fail.")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers (structured result)."""
    return {"sum": a + b}


@server.tool()
def picture() -> CallToolResult:
    """A caption and a tiny PNG."""
    image = Image(data=PNG, format="png").to_image_content()
    return CallToolResult(content=[TextContent(type="text", text="a red dot"), image])


@server.tool()
def fail(reason: str) -> CallToolResult:
    """Report a tool error (isError)."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"failed: {reason}")], is_error=True
    )


@server.tool()
def link() -> CallToolResult:
    """Return a link to a resource."""
    return CallToolResult(
        content=[ResourceLink(type="resource_link", name="notes", uri="file:///notes.txt")]
    )


@server.tool()
def getenv(name: str) -> str:
    """The value of an environment variable, or '<unset>'."""
    return os.environ.get(name, "<unset>")


@server.tool()
def hang(seconds: float = 3600.0) -> str:
    """Sleep (a server that hangs)."""
    time.sleep(seconds)
    return "woke up"


@server.tool()
def die() -> str:
    """Exit the server process mid-call."""
    sys.stderr.write("dying now\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def noisy(lines: int) -> str:
    """Write many lines to stderr."""
    for index in range(lines):
        sys.stderr.write(f"noise line {index}\n")
    sys.stderr.flush()
    return "done"


@server.tool()
async def steps(gate: str, ctx: Context, count: int = 0, size: int = 0) -> str:
    """Report progress (1 of 2, "halfway"), then wait for the file ``gate`` (at most 5 s).

    With ``count``, a flood instead: ``count`` notifications as fast as they go ("step i", i of
    ``count``), the last one "last " and ``size`` characters "é"."""
    if count:
        for index in range(1, count):
            await ctx.report_progress(index, count, f"step {index}")
        await ctx.report_progress(count, count, "last " + "é" * size)
    else:
        await ctx.report_progress(1, 2, "halfway")
    for _ in range(500):
        if os.path.exists(gate):
            return "the gate opened"
        await asyncio.sleep(0.01)
    return "the gate never opened"


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


server.add_resource(TextResource(uri="file:///notes.txt", name="notes", text="the notes say hello"))


def main(argv: list[str]) -> None:
    args = [a for a in argv if not a.startswith("--marker")]
    if "--bad-start" in args:
        sys.stderr.write("cannot start: missing configuration FOO\n")
        sys.exit(2)
    sys.stderr.write("testserver starting\n")
    sys.stderr.flush()
    if args and args[0] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
