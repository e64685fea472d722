"""``MCPTool``: one tool of an MCP server, as an ordinary tool of the registry.

Its schema is the server's (the registry validates arguments against it like any other tool's),
its name is ``{server}__{tool}``, and ``execute`` forwards the call to the server's connection
and maps the result (``results.py``). Its ``capabilities`` are declared like any tool's:
``validates_arguments`` is True: the tool checks the server's schema itself, bounded
(``schema.py``: nothing fetched, patterns under the call's deadline, off the event loop; only a
small schema of comparison keywords, against a few plain values, is checked on the loop), and
``destructive`` follows the server's own hint (a tool is destructive unless it says read-only),
and ``reports_progress``: the server's progress notifications for the call go to the call's
progress callback (``tools/progress.py``), so the notebook shows them while the call runs.
The policy does not depend on it: the manager sets each MCP tool's policy explicitly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ToolInputError
from ..tools.base import Image, ToolCapabilities, ToolOutput
from ..tools.image_fit import prepare_off_loop
from ..tools.progress import current_reporter
from .results import to_output
from .schema import bounded_validator, check, checks_inline

if TYPE_CHECKING:
    from mcp.types import ReadResourceResult, Tool

    from .connection import ServerConnection


class MCPTool:
    """A server tool under its registry name; ``ValueError`` if its schema cannot be used."""

    def __init__(
        self,
        connection: ServerConnection,
        name: str,
        tool: Tool,
        timeout: Callable[[], float],
    ) -> None:
        self.name = name
        self.connection = connection
        self.tool_name = tool.name
        self.description = (tool.description or tool.title or f"{tool.name} (MCP)").strip()
        self.input_schema: dict[str, Any] = dict(tool.input_schema)
        self._validator = bounded_validator(self.input_schema)
        self._checks_inline = checks_inline(self.input_schema)
        hints = tool.annotations
        self.capabilities = ToolCapabilities(
            destructive=not (hints is not None and hints.read_only_hint),
            validates_arguments=True,
            reports_progress=True,  # the server's progress notifications, passed on
        )
        self._timeout = timeout

    def get_schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": f"[MCP server {self.connection.name}] {self.description}",
            "input_schema": self.input_schema,
        }

    async def execute(self, args: dict[str, object]) -> ToolOutput:
        timeout = self._timeout()
        # the check takes milliseconds unless a pattern is hostile, and then it ends the call
        problem = await check(self._validator, dict(args), timeout, inline=self._checks_inline)
        if problem is not None:
            raise ToolInputError(problem)
        result = await self.connection.call_tool(
            self.tool_name, dict(args), timeout, progress=current_reporter()
        )
        reader = None
        if self.connection.config.read_resources:

            async def reader(uri: str) -> ReadResourceResult:
                return await self.connection.read_resource(uri, timeout)

        parts = await to_output(result, server=self.connection.name, read_resource=reader)
        images = [part for part in parts if isinstance(part, Image)]
        if not images:
            return parts
        # decoded (leniently, pixel-capped) in a worker under the call's deadline, not later on
        # the loop; the agent finds them already fitted
        prepared = await prepare_off_loop(images, timeout)
        texts = [part for part in parts if isinstance(part, str)]
        return [*texts, *prepared.notes, *prepared.images]

    def __repr__(self) -> str:
        return f"<MCPTool {self.name!r}>"
