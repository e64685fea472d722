"""``%agent mcp add|list|remove`` and ``AgentMagics.mcp_servers``, over the agent's MCP manager.

The magics only parse the line; the servers live in ``jupyter_agent.mcp`` on the session's
background loop (the coroutines are handed to ``run``, which waits for them there), so a
server's session stays on the loop the agent's tool calls run on. What comes back (server and
tool names, errors: the server's words) is printed through ``inert.visible``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from IPython.core.error import UsageError

from ..agent.toolbox import Toolbox
from ..errors import MCPConfigError, MCPServerError
from ..mcp import parse_server_entry
from ..mcp.config import MCPServerConfig
from ..mcp.manager import MCPManager
from .inert import visible

USAGE = (
    "usage: %agent mcp add NAME [--env K=V] [--policy allow|ask|deny] [--read-resources] -- "
    "COMMAND ARGS... | %agent mcp add NAME --url URL [--header K=V] [--policy P] | "
    "%agent mcp list [NAME] | %agent mcp remove NAME | %agent mcp logout NAME"
)

Runner = Callable[[Coroutine[Any, Any, Any]], Any]


def _pair(option: str, text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"%agent mcp add: {option} needs KEY=VALUE, not {text!r}")
    return key, value


def parse_add(words: list[str]) -> MCPServerConfig:
    """``NAME [options] -- COMMAND ARGS...`` or ``NAME --url URL [options]`` as a config."""
    if not words or words[0].startswith("-"):
        raise UsageError(USAGE)
    name, rest = words[0], words[1:]
    command: list[str] = []
    if "--" in rest:
        at = rest.index("--")
        rest, command = rest[:at], rest[at + 1 :]
    entry: dict[str, Any] = {}
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    index = 0
    while index < len(rest):
        option = rest[index]
        if option == "--read-resources":
            entry["read_resources"] = True
            index += 1
            continue
        if option not in ("--url", "--env", "--header", "--policy", "--timeout"):
            raise UsageError(f"%agent mcp add: unknown option {option!r}; {USAGE}")
        if index + 1 >= len(rest):
            raise UsageError(f"%agent mcp add: {option} needs a value")
        value = rest[index + 1]
        index += 2
        if option == "--url":
            entry["url"] = value
        elif option == "--env":
            key, text = _pair(option, value)
            env[key] = text
        elif option == "--header":
            key, text = _pair(option, value)
            headers[key] = text
        elif option == "--policy":
            entry["policy"] = value
        else:
            try:
                entry["timeout"] = float(value)
            except ValueError:
                raise UsageError(
                    f"%agent mcp add: --timeout needs seconds, not {value!r}"
                ) from None
    if command:
        entry["command"], entry["args"] = command[0], command[1:]
    if env:
        entry["env"] = env
    if headers:
        entry["headers"] = headers
    if "command" in entry and "url" in entry:
        raise UsageError("%agent mcp add: give either -- COMMAND or --url, not both")
    if "command" not in entry and "url" not in entry:
        raise UsageError(USAGE)
    try:
        return parse_server_entry(name, entry)
    except MCPConfigError as exc:
        raise UsageError(visible(str(exc))) from None


class MCPCommands:
    """The ``%agent mcp`` subcommands and the configured servers of one notebook session."""

    def __init__(self, run: Runner) -> None:
        self._run = run
        #: ``mcp_servers`` entries already connected (or tried), as JSON, by server name.
        self._configured: dict[str, str] = {}

    def command(self, toolbox: Toolbox, words: list[str]) -> str:
        """Run ``%agent mcp WORDS``; the text to print. ``UsageError`` for mistakes."""
        if not words:
            raise UsageError(USAGE)
        verb, rest = words[0], words[1:]
        manager = toolbox.mcp
        try:
            if verb == "add":
                config = parse_add(rest)
                names = self._run(manager.add(config))
                shown = ", ".join(names) or "(no tools)"
                return f"MCP server {config.name!r} added: {shown} (policy {config.policy})"
            if verb == "list":
                if len(rest) > 1:
                    raise UsageError("usage: %agent mcp list [NAME]")
                return manager.describe(rest[0] if rest else None)
            if verb == "remove":
                if len(rest) != 1:
                    raise UsageError("usage: %agent mcp remove NAME")
                self._run(manager.remove(rest[0]))
                self._configured.pop(rest[0], None)
                return f"MCP server {rest[0]!r} removed; its process has ended."
            if verb == "logout":
                if len(rest) != 1:
                    raise UsageError("usage: %agent mcp logout NAME")
                return self.logout(manager, rest[0])
        except (MCPServerError, MCPConfigError) as exc:
            raise UsageError(visible(str(exc))) from None
        raise UsageError(f"Unknown %agent mcp command {verb!r}; {USAGE}")

    @staticmethod
    def logout(manager: MCPManager, name: str) -> str:
        """Forget the OAuth tokens (and client registration) kept for server ``name``."""
        from ..mcp.oauth import forget_tokens

        connection = manager.servers.get(name)
        if connection is None:
            known = ", ".join(manager.servers) or "none"
            raise UsageError(f"No MCP server named {name!r} (added: {known})")
        url = connection.config.url
        if url is None:
            return f"MCP server {name!r} runs locally (stdio): it has no sign-in to forget."
        forgot = forget_tokens(url)
        said = "Forgot its tokens" if forgot else "No tokens were kept for it"
        return (
            f"{said} ({url}). The connection open now keeps working until it is removed; the "
            "next connection asks you to authorize again."
        )

    def connect_configured(self, toolbox: Toolbox, servers: Mapping[str, Any]) -> list[str]:
        """Add the ``mcp_servers`` entries not tried yet; one line per failure, to print."""
        manager = toolbox.mcp
        problems: list[str] = []
        for name, entry in servers.items():
            fingerprint = json.dumps(entry, sort_keys=True, default=str)
            if self._configured.get(name) == fingerprint:
                continue
            self._configured[name] = fingerprint
            try:
                if name in manager.servers:  # the entry changed: replace the server
                    self._run(manager.remove(name))
                self._run(manager.add(parse_server_entry(str(name), entry)))
            except (MCPServerError, MCPConfigError, ImportError) as exc:
                problems.append(f"jupyter-agent: {exc}")
        return problems

    def close(self, toolbox: Toolbox) -> None:
        """Stop every server of ``toolbox`` (``%unload_ext``, the session closing)."""
        self._run(toolbox.mcp.aclose())
        self._configured.clear()
