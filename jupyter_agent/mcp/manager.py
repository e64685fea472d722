"""``MCPManager``: the MCP servers of one agent, their tools in its registry, their shutdown.

Adding a server starts it (``connection.py``), names each of its tools ``{server}__{tool}``,
registers them enabled and sets their policy (``ask`` unless the entry says otherwise, through
``agent.set_policy`` so it holds whatever the gate does with undeclared tools). Removing one
unregisters its tools and stops it. One manager per agent (``manager_for``), kept beside the
agent rather than in it, so the agent's code only delegates.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..agent.approvals import Policy
from ..errors import MCPConfigError, MCPServerError
from ..tools.netguard import PrivateNetworkSetting
from .config import DEFAULT_CALL_TIMEOUT_S, MCPServerConfig, registry_name
from .connection import ServerConnection
from .tool import MCPTool

if TYPE_CHECKING:
    from ..agent.agent import Agent

_managers: weakref.WeakKeyDictionary[Any, MCPManager] = weakref.WeakKeyDictionary()


def manager_for(agent: Agent) -> MCPManager:
    """The agent's manager, created on first use."""
    manager = _managers.get(agent)
    if manager is None:
        manager = _managers[agent] = MCPManager(agent)
    return manager


class MCPManager:
    """Connections by server name, and the registry names of their tools."""

    def __init__(self, agent: Agent) -> None:
        self._agent = weakref.ref(agent)
        self.servers: dict[str, ServerConnection] = {}
        self.tool_names: dict[str, list[str]] = {}
        self.tools: dict[str, list[MCPTool]] = {}

    @property
    def agent(self) -> Agent:
        agent = self._agent()
        if agent is None:
            raise RuntimeError("the agent of this MCP manager is gone")
        return agent

    def call_timeout(self, config: MCPServerConfig) -> float:
        """The entry's timeout, capped by the agent's ``tool_timeout`` when it has one."""
        agent_timeout = getattr(self._agent(), "tool_timeout", None)
        if isinstance(agent_timeout, int | float) and agent_timeout > 0:
            return min(config.timeout, float(agent_timeout))
        return config.timeout if math.isfinite(config.timeout) else math.inf

    def _timeout_of(self, config: MCPServerConfig) -> Callable[[], float]:
        return lambda: self.call_timeout(config)

    def startup_timeout(self) -> float | None:
        """The agent's ``tool_timeout``: starting a server is bounded like every call."""
        agent_timeout = getattr(self._agent(), "tool_timeout", None)
        if isinstance(agent_timeout, int | float) and agent_timeout > 0:
            return float(agent_timeout)
        return None

    async def add_server(
        self,
        name: str,
        *,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        policy: Policy = "ask",
        read_resources: bool = False,
        timeout: float = DEFAULT_CALL_TIMEOUT_S,
        allow_private_network: PrivateNetworkSetting | None = None,
    ) -> list[str]:
        """``add`` from keyword arguments (what ``Agent.add_mcp_server`` takes)."""
        if isinstance(command, str):
            raise MCPConfigError(
                f"MCP server {name!r}: command must be a list (['npx', '-y', 'pkg']), not a string"
            )
        config = MCPServerConfig(
            name=name,
            command=tuple(command or ()),
            env=dict(env or {}),
            url=url,
            headers=dict(headers or {}),
            policy=policy,
            read_resources=read_resources,
            timeout=timeout,
        )
        return await self.add(config, allow_private_network=allow_private_network)

    async def add(
        self, config: MCPServerConfig, *, allow_private_network: PrivateNetworkSetting | None = None
    ) -> list[str]:
        """Start the server and register its tools; returns their registry names.

        A server's URL is the user's choice and may be loopback or private whatever
        ``web_fetch`` may reach; ``allow_private_network`` is accepted for compatibility and no
        longer needed.
        """
        if config.name in self.servers:
            raise MCPServerError(
                f"An MCP server named {config.name!r} is already added; remove it first"
            )
        connection = ServerConnection(config, startup_timeout=self.startup_timeout())
        await connection.start()
        try:
            tools = self._tools_of(connection)
            self._register(config, tools)
        except BaseException:
            await connection.close()
            raise
        self.servers[config.name] = connection
        self.tool_names[config.name] = [tool.name for tool in tools]
        self.tools[config.name] = tools
        return list(self.tool_names[config.name])

    def _tools_of(self, connection: ServerConnection) -> list[MCPTool]:
        registry = self.agent.registry
        tools: list[MCPTool] = []
        seen: dict[str, str] = {}
        for tool in connection.tools:
            name = registry_name(connection.name, tool.name)
            if name in seen or registry.has_tool(name):
                other = seen.get(name, "a tool already registered")
                raise MCPConfigError(
                    f"MCP server {connection.name!r}: tool {tool.name!r} would be named {name!r}, "
                    f"like {other!r}"
                )
            seen[name] = tool.name
            try:
                tools.append(MCPTool(connection, name, tool, self._timeout_of(connection.config)))
            except ValueError as exc:
                raise MCPConfigError(
                    f"MCP server {connection.name!r}: tool {tool.name!r} cannot be used: {exc}"
                ) from None
        return tools

    def _register(self, config: MCPServerConfig, tools: list[MCPTool]) -> None:
        agent = self.agent
        done: list[str] = []
        try:
            for tool in tools:
                try:
                    agent.registry.register(tool)
                except ValueError as exc:
                    raise MCPConfigError(
                        f"MCP server {config.name!r}: tool {tool.tool_name!r} cannot be used: {exc}"
                    ) from None
                done.append(tool.name)
                agent.set_policy(tool.name, config.policy)
        except BaseException:
            for name in done:
                agent.remove_tool(name)
            raise

    def move_to(self, agent: Agent) -> None:
        """Carry the servers over to ``agent`` (the notebook rebuilds its agent on new settings).

        The connections stay as they are; the tools join the new registry with their policies.
        """
        old = self._agent()
        for server, tools in self.tools.items():
            for tool in tools:
                if agent.registry.has_tool(tool.name):
                    continue
                agent.registry.register(tool)
                policy = self.servers[server].config.policy
                agent.set_policy(tool.name, old.get_policy(tool.name) if old else policy)
        if old is not None:
            _managers.pop(old, None)
        self._agent = weakref.ref(agent)
        _managers[agent] = self

    async def remove(self, name: str) -> None:
        """Unregister the server's tools and stop it; ``MCPServerError`` if there is none."""
        connection = self.servers.pop(name, None)
        if connection is None:
            known = ", ".join(self.servers) or "none"
            raise MCPServerError(f"No MCP server named {name!r} (added: {known})")
        agent = self._agent()
        self.tools.pop(name, None)
        for tool_name in self.tool_names.pop(name, []):
            if agent is not None:
                agent.remove_tool(tool_name)
        await connection.close()

    async def aclose(self) -> None:
        """Remove every server (the agent's session ends)."""
        for name in list(self.servers):
            await self.remove(name)

    def describe(self, name: str | None = None) -> str:
        """What ``%agent mcp list [NAME]`` prints."""
        if name is None:
            if not self.servers:
                return "No MCP servers. Add one with %agent mcp add NAME -- COMMAND ARGS..."
            lines = []
            for server, connection in self.servers.items():
                count = len(self.tool_names.get(server, []))
                lines.append(
                    f"{server:<16} {connection.status:<10} {count:>3} tools  "
                    f"{connection.config.kind}: {connection.config.target}"
                )
            return "\n".join(lines)
        found = self.servers.get(name)
        if found is None:
            known = ", ".join(self.servers) or "none"
            raise MCPServerError(f"No MCP server named {name!r} (added: {known})")
        connection = found
        config = connection.config
        agent = self._agent()
        lines = [
            f"MCP server {name} ({config.kind}: {config.target})",
            f"status: {connection.status}"
            + (f", restarted {connection.restarts} times" if connection.restarts else ""),
        ]
        if connection.instructions:
            lines.append(f"instructions: {connection.instructions.strip()}")
        lines.append("tools:")
        for tool_name in self.tool_names.get(name, []):
            tool = agent.registry.get_tool(tool_name) if agent is not None else None
            description = getattr(tool, "description", "")
            policy = agent.get_policy(tool_name) if agent is not None else "?"
            enabled = agent is not None and agent.registry.is_tool_enabled(tool_name)
            state = "enabled" if enabled else "disabled"
            lines.append(f"  {tool_name} ({state}, policy {policy}): {description}")
        if connection.stderr is not None:
            text = connection.stderr.text().strip()
            lines.append("stderr (last lines):" if text else "stderr: (nothing)")
            if text:
                lines.extend("  " + line for line in text.splitlines()[-20:])
        return "\n".join(lines)
