"""``MCPManager``: the MCP servers of one toolbox, their tools in its registry, their shutdown.

Adding a server starts it (``connection.py``), names each of its tools ``{server}__{tool}``,
registers them enabled and sets their policy (``ask`` unless the entry says otherwise). Removing
one unregisters its tools and stops it. The manager belongs to the ``Toolbox`` whose registry
holds the tools (``toolbox.mcp``), as the tools themselves do; it sees the toolbox only through
``ToolHost``, so this package does not depend on the agent's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ..approvals import Policy
from ..errors import MCPConfigError, MCPServerError
from ..tools.context import ToolContext
from ..tools.registry import ToolRegistry
from .client_features import ClientHooks
from .config import DEFAULT_CALL_TIMEOUT_S, MCPServerConfig, registry_name
from .connection import ServerConnection
from .tool import MCPTool

#: The modules the ``[mcp]`` extra installs that a client needs (``mcp`` alone lacks ``regex``,
#: which checks a server's patterns).
EXTRA_MODULES = ("mcp", "regex")


def import_extra() -> None:
    """Import the ``[mcp]`` extra's modules now, so a missing one fails the add, not the first
    call; ``ImportError`` naming the module and the install command."""
    import importlib

    for module in EXTRA_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(
                f"MCP servers need the [mcp] extra (no module {module!r}): "
                "pip install 'jupyter-claude-agent[mcp]'",
                name=module,
            ) from exc


class ToolHost(Protocol):
    """What the manager needs of its owner (a ``Toolbox``): the registry, policies, a timeout."""

    @property
    def registry(self) -> ToolRegistry: ...

    def set_policy(self, name: str, policy: Policy) -> None: ...

    def get_policy(self, name: str) -> Policy: ...

    def remove_tool(self, name: str) -> None: ...

    def call_timeout(self, wanted: float) -> float: ...

    @property
    def tool_timeout(self) -> float | None: ...

    @property
    def context(self) -> ToolContext: ...


class MCPManager:
    """Connections by server name, and the registry names of their tools."""

    def __init__(self, host: ToolHost) -> None:
        self.host = host
        #: How servers reach the user (forms, sampling, the OAuth link).
        self.hooks = ClientHooks()
        self.servers: dict[str, ServerConnection] = {}
        self.tool_names: dict[str, list[str]] = {}
        self.tools: dict[str, list[MCPTool]] = {}

    def call_timeout(self, config: MCPServerConfig) -> float:
        """The entry's timeout, capped by the toolbox's ``tool_timeout`` when it has one."""
        return self.host.call_timeout(config.timeout)

    def _timeout_of(self, config: MCPServerConfig) -> Callable[[], float]:
        return lambda: self.call_timeout(config)

    def startup_timeout(self) -> float | None:
        """The toolbox's ``tool_timeout``: starting a server is bounded like every call."""
        limit = self.host.tool_timeout
        return float(limit) if limit is not None and limit > 0 else None

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
        oauth: Mapping[str, str] | None = None,
        roots: Sequence[str | Path] = (),
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
            oauth=dict(oauth or {}),
            roots=tuple(str(root) for root in roots),
        )
        return await self.add(config)

    async def add(self, config: MCPServerConfig) -> list[str]:
        """Start the server and register its tools; returns their registry names.

        A server's URL is the user's choice and may be loopback or private whatever
        ``web_fetch`` may reach (SPEC "The server is the user's choice").
        """
        if config.name in self.servers:
            raise MCPServerError(
                f"An MCP server named {config.name!r} is already added; remove it first"
            )
        import_extra()
        connection = ServerConnection(
            config,
            startup_timeout=self.startup_timeout(),
            hooks=self.hooks,
            roots=self.roots_of(config),
        )
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
        connection.on_tools_changed = lambda: self._tools_changed(config.name)
        return list(self.tool_names[config.name])

    def roots_of(self, config: MCPServerConfig) -> list[Path]:
        """The entry's roots as absolute folders (relative ones in the workspace);
        ``MCPConfigError`` naming one that is not an existing folder."""
        folders = []
        for root in config.roots:
            path = Path(root).expanduser()
            if not path.is_absolute():
                path = self.host.context.workspace / path
            if not path.is_dir():
                raise MCPConfigError(
                    f"MCP server {config.name!r}: root {root!r} is not an existing folder"
                )
            folders.append(path.resolve())
        return folders

    def _tools_changed(self, server: str) -> None:
        """The server listed new tools (``list_changed``): the registry follows.

        Tools that are gone are removed; new ones join with the server's policy; the others are
        replaced in place, keeping the user's enabled state and policy.
        """
        connection = self.servers.get(server)
        if connection is None:
            return
        registry = self.host.registry
        old = set(self.tool_names.get(server, []))
        fresh: list[MCPTool] = []
        for listed in connection.tools:
            name = registry_name(server, listed.name)
            if name in {t.name for t in fresh} or (registry.has_tool(name) and name not in old):
                continue  # a clash with another tool: the first one stays
            fresh.append(MCPTool(connection, name, listed, self._timeout_of(connection.config)))
        for name in old - {t.name for t in fresh}:
            self.host.remove_tool(name)
        for wrapped in fresh:
            try:
                if wrapped.name in old:
                    registry.replace(wrapped)
                else:
                    registry.register(wrapped)
                    self.host.set_policy(wrapped.name, connection.config.policy)
            except ValueError:
                continue  # a schema the registry refuses: that tool is left out
        self.tools[server] = [t for t in fresh if registry.get_tool(t.name) is t]
        self.tool_names[server] = [t.name for t in self.tools[server]]

    def _tools_of(self, connection: ServerConnection) -> list[MCPTool]:
        registry = self.host.registry
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
        host = self.host
        done: list[str] = []
        try:
            for tool in tools:
                try:
                    host.registry.register(tool)
                except ValueError as exc:
                    raise MCPConfigError(
                        f"MCP server {config.name!r}: tool {tool.tool_name!r} cannot be used: {exc}"
                    ) from None
                done.append(tool.name)
                host.set_policy(tool.name, config.policy)
        except BaseException:
            for name in done:
                host.remove_tool(name)
            raise

    async def remove(self, name: str) -> None:
        """Unregister the server's tools and stop it; ``MCPServerError`` if there is none."""
        connection = self.servers.pop(name, None)
        if connection is None:
            known = ", ".join(self.servers) or "none"
            raise MCPServerError(f"No MCP server named {name!r} (added: {known})")
        self.tools.pop(name, None)
        for tool_name in self.tool_names.pop(name, []):
            self.host.remove_tool(tool_name)
        await connection.close()

    async def aclose(self) -> None:
        """Remove every server (the toolbox's session ends)."""
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
                tools = "tool " if count == 1 else "tools"
                lines.append(
                    f"{server:<16} {connection.status:<10} {count:>3} {tools}  "
                    f"{connection.config.kind}: {connection.config.target}"
                )
            return "\n".join(lines)
        found = self.servers.get(name)
        if found is None:
            known = ", ".join(self.servers) or "none"
            raise MCPServerError(f"No MCP server named {name!r} (added: {known})")
        connection = found
        config = connection.config
        host = self.host
        lines = [
            f"MCP server {name} ({config.kind}: {config.target})",
            f"status: {connection.status}"
            + (f", restarted {connection.restarts} times" if connection.restarts else ""),
        ]
        if connection.roots:
            lines.append(f"roots: {', '.join(str(root) for root in connection.roots)}")
        if connection.instructions:
            lines.append(f"instructions: {connection.instructions.strip()}")
        lines.append("tools:")
        described = {tool.name: tool.description for tool in self.tools.get(name, [])}
        for tool_name in self.tool_names.get(name, []):
            description = described.get(tool_name, "")
            policy = host.get_policy(tool_name)
            enabled = host.registry.is_tool_enabled(tool_name)
            state = "enabled" if enabled else "disabled"
            lines.append(f"  {tool_name} ({state}, policy {policy}): {description}")
        if connection.stderr is not None:
            text = connection.stderr.text().strip()
            lines.append("stderr (last lines):" if text else "stderr: (nothing)")
            if text:
                lines.extend("  " + line for line in text.splitlines()[-20:])
        return "\n".join(lines)
