"""``Toolbox``: the tool state that chats share, with one owner.

A notebook session runs several chats (``%%agent --chat NAME``) over one set of tools: the
registry (which tools exist and which are enabled), the policy gate (``allow``/``ask``/``deny``
per tool), the tools' context (the workspace and its undo journal) and the MCP servers whose
tools sit in the registry. These used to be shared by assignment — each agent held its own
references, and a settings change that rebuilt the registry left the gate judging the old one,
where every tool it did not know was allowed to run. Now one object owns them:

- the **gate** reads the toolbox's *live* registry, so no reference can go stale, and a tool the
  registry does not have is refused;
- ``rebuild`` swaps in freshly built tools (a new workspace, a new network setting) inside the
  same registry, keeping each tool's enabled state, its policy and its place; tools it does not
  rebuild (the user's own, MCP servers') stay as they are;
- MCP servers attach to the toolbox (``mcp``), not to an agent: they live as long as the tools.

An ``Agent`` is given a toolbox (or builds its own); its ``add_tool``, ``set_policy`` and
``add_mcp_server`` delegate here, so the SPEC's names stand.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..approvals import Policy
from ..tools.base import ExecutableTool, capabilities_of
from ..tools.context import ToolContext
from ..tools.registry import ToolRegistry
from .gate import PolicyGate

if TYPE_CHECKING:
    from ..mcp.manager import MCPManager

#: Seconds a tool call may run by default.
DEFAULT_TOOL_TIMEOUT = 300.0


class Toolbox:
    """Registry, policy gate, tool context and MCP servers: one owner for what chats share.

    ``tool_timeout`` is the toolbox's: every call of its tools, MCP servers' included, is bounded
    by it (``None``: no limit).
    """

    def __init__(
        self,
        context: ToolContext | None = None,
        registry: ToolRegistry | None = None,
        *,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    ) -> None:
        self.context = context if context is not None else ToolContext(".")
        if registry is None:
            from ..tools.factory import create_default_registry

            registry = create_default_registry(self.context)
        self.registry: ToolRegistry = registry
        self.gate = PolicyGate(self)
        self.tool_timeout = tool_timeout
        self._mcp: MCPManager | None = None
        self._when_mcp_made: list[Callable[[MCPManager], None]] = []

    def __repr__(self) -> str:
        return f"<Toolbox {self.context.workspace} tools={len(self.registry)}>"

    # -- tools and policies ------------------------------------------------------------------

    def add_tool(self, tool: ExecutableTool) -> None:
        self.registry.register(tool)

    def remove_tool(self, name: str) -> None:
        self.registry.unregister(name)
        self.gate.forget(name)

    def get_policy(self, name: str) -> Policy:
        return self.gate.policy(name)

    def set_policy(self, name: str, policy: Policy) -> None:
        self.gate.set_policy(name, policy)

    def rebuild(
        self,
        context: ToolContext,
        tools: Iterable[ExecutableTool],
        *,
        schemas_checked: bool = False,
    ) -> None:
        """Put ``tools`` (built for ``context``) in place of the tools of the same names.

        Each keeps the enabled state and the policy of the tool it replaces; a tool new to the
        registry starts as its ``destructive`` capability says (off and ``ask`` when destructive).
        Tools that are not rebuilt — the user's own, MCP servers' — stay as they are.
        ``schemas_checked``: the tools are the package's own (``ToolRegistry.register``).
        """
        fresh = list(tools)
        for tool in fresh:
            if self.registry.has_tool(tool.name):
                self.registry.replace(tool, schema_checked=schemas_checked)
            else:
                self.registry.register(tool, schema_checked=schemas_checked)
                if capabilities_of(tool).destructive:
                    self.registry.disable(tool.name)
        self.context = context

    # -- MCP servers ---------------------------------------------------------------------------

    @property
    def mcp(self) -> MCPManager:
        """The MCP servers whose tools are in this toolbox (created on first use)."""
        if self._mcp is None:
            from ..mcp.manager import MCPManager

            self._mcp = MCPManager(self)
            for prepare in self._when_mcp_made:
                prepare(self._mcp)
        return self._mcp

    def when_mcp_made(self, prepare: Callable[[MCPManager], None]) -> None:
        """Call ``prepare`` with the MCP manager when it is made (now, if it is already): what
        a session sets on it (its hooks) without importing the MCP client before a server is
        added."""
        if self._mcp is not None:
            prepare(self._mcp)
        else:
            self._when_mcp_made.append(prepare)

    def call_timeout(self, wanted: float) -> float:
        """``wanted`` seconds, capped by ``tool_timeout`` when it has one."""
        limit = self.tool_timeout
        if limit is not None and limit > 0:
            return min(wanted, float(limit))
        return wanted if math.isfinite(wanted) else math.inf

    async def aclose(self) -> None:
        """End the MCP servers (their processes); the tools stay registered no longer."""
        if self._mcp is not None:
            await self._mcp.aclose()
