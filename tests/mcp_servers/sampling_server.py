"""An MCP server that spends the client's tokens: its one tool asks the client's model for a
completion (``sampling/createMessage``) with the ``max_tokens`` the caller names, and returns
what came back — or the error the client answered with. Started by the spend-cap tests as
``python sampling_server.py`` (stdio).

It asks the way the SDK does on either protocol revision (``Resolve`` + ``Sample``: a request
to the client mid-call up to 2025-11-25, an ``input_required`` answer from 2026-07-28).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer, Resolve
from mcp.server.mcpserver.resolve import Sample
from mcp.types import CreateMessageResult, SamplingMessage, TextContent

server = MCPServer("spender", instructions="Asks the client's model to write things.")


def ask_model(prompt: str, max_tokens: int) -> Sample:
    """The completion ``complete`` asks the client for."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    return Sample([message], max_tokens=max_tokens, system_prompt="Write what is asked.")


@server.tool()
async def complete(
    prompt: str,
    max_tokens: int,
    answer: Annotated[CreateMessageResult, Resolve(ask_model)],
) -> str:
    """Ask the client's model to complete ``prompt`` in at most ``max_tokens`` tokens."""
    content = answer.content
    return f"the model wrote: {getattr(content, 'text', content)!s}"


if __name__ == "__main__":
    server.run("stdio")
