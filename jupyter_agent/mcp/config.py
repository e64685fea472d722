"""What a server entry says: how to reach the server, its environment, its tools' policy.

Entries take the ``mcpServers`` shape MCP clients share (Claude Desktop, Claude Code, jupyter-ai):
``{"command": "...", "args": [...], "env": {...}}`` for a stdio server, ``{"url": "...",
"headers": {...}}`` for a streamable-HTTP one, plus keys of ours: ``"policy"`` (allow, ask or
deny; ``ask`` by default: a server's tools are someone else's code), ``"read_resources"`` (read a
returned resource link back into the result; off by default) and ``"roots"`` (the folders offered
to the server as MCP roots; none by default, so the directories on a server's command line stand:
``@modelcontextprotocol/server-filesystem`` replaces them with the client's roots if it gets any).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..approvals import POLICIES, Policy
from ..errors import MCPConfigError

#: The Messages API's rule for tool names.
TOOL_NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
#: Server names: the tool-name alphabet, short enough to leave room for the tool's own name.
SERVER_NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,32}$")
#: Seconds one tool call may take when neither the entry nor the agent says otherwise.
DEFAULT_CALL_TIMEOUT_S = 300.0
_KNOWN_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "url",
        "headers",
        "policy",
        "read_resources",
        "timeout",
        "type",
        "oauth",
        "roots",
    }
)


@dataclass(frozen=True, slots=True)
class MCPServerConfig:
    """One server: a command line (stdio) or a URL (streamable HTTP)."""

    name: str
    command: tuple[str, ...] = ()
    #: Variables the server gets on top of the scrubbed environment ``run_bash`` gets.
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    policy: Policy = "ask"
    read_resources: bool = False
    timeout: float = DEFAULT_CALL_TIMEOUT_S
    #: OAuth settings of an HTTP server (``oauth.py``): a pre-registered client, a scope, ...
    oauth: Mapping[str, str] = field(default_factory=dict)
    #: Folders offered to the server as MCP roots (relative ones are in the workspace); empty:
    #: the client does not declare the roots capability at all.
    roots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not SERVER_NAME_RULE.fullmatch(self.name):
            raise MCPConfigError(
                f"MCP server name {self.name!r} must be 1-32 letters, digits, '_' or '-'"
            )
        if bool(self.command) == (self.url is not None):
            raise MCPConfigError(
                f"MCP server {self.name!r} needs either a command (stdio) or a url (HTTP)"
            )
        if self.command and not all(isinstance(part, str) and part for part in self.command):
            raise MCPConfigError(f"MCP server {self.name!r}: the command must be non-empty strings")
        for what, mapping in (("env", self.env), ("headers", self.headers)):
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
                raise MCPConfigError(
                    f"MCP server {self.name!r}: {what} must map strings to strings"
                )
        if self.policy not in POLICIES:
            raise MCPConfigError(
                f"MCP server {self.name!r}: policy must be one of {', '.join(POLICIES)}, "
                f"not {self.policy!r}"
            )
        if not all(isinstance(root, str) and root for root in self.roots):
            raise MCPConfigError(f"MCP server {self.name!r}: roots must be non-empty strings")
        if not (isinstance(self.timeout, int | float) and self.timeout > 0):
            raise MCPConfigError(f"MCP server {self.name!r}: timeout must be a positive number")
        from .oauth import check_oauth_entry

        try:
            check_oauth_entry(self.name, self.oauth)
        except ValueError as exc:
            raise MCPConfigError(str(exc)) from None

    @property
    def kind(self) -> str:
        return "stdio" if self.command else "http"

    @property
    def target(self) -> str:
        """The command line or URL, as shown to the user: the kernel's own interpreter is shown as
        ``python`` (its absolute path says where the user's venv is, not what runs)."""
        if not self.command:
            return str(self.url)
        program = "python" if self.command[0] == sys.executable else self.command[0]
        return " ".join([program, *self.command[1:]])


def parse_server_entry(name: str, entry: object) -> MCPServerConfig:
    """One ``mcpServers`` entry as a config; ``MCPConfigError`` says what is wrong."""
    if not isinstance(entry, Mapping):
        raise MCPConfigError(f"MCP server {name!r}: the entry must be a dict")
    unknown = sorted(set(entry) - _KNOWN_KEYS)
    if unknown:
        raise MCPConfigError(f"MCP server {name!r}: unknown key(s) {', '.join(unknown)}")
    command = entry.get("command")
    args = entry.get("args", [])
    if command is not None and not isinstance(command, str):
        raise MCPConfigError(f"MCP server {name!r}: 'command' must be a string")
    if not isinstance(args, Sequence) or isinstance(args, str):
        raise MCPConfigError(f"MCP server {name!r}: 'args' must be a list of strings")
    url = entry.get("url")
    if url is not None and not isinstance(url, str):
        raise MCPConfigError(f"MCP server {name!r}: 'url' must be a string")
    env = entry.get("env") or {}
    headers = entry.get("headers") or {}
    if not isinstance(env, Mapping) or not isinstance(headers, Mapping):
        raise MCPConfigError(f"MCP server {name!r}: 'env' and 'headers' must be dicts")
    policy = entry.get("policy", "ask")
    read_resources = entry.get("read_resources", False)
    if not isinstance(read_resources, bool):
        raise MCPConfigError(f"MCP server {name!r}: 'read_resources' must be true or false")
    timeout = entry.get("timeout", DEFAULT_CALL_TIMEOUT_S)
    roots = entry.get("roots") or []
    if not isinstance(roots, Sequence) or isinstance(roots, str):
        raise MCPConfigError(f"MCP server {name!r}: 'roots' must be a list of folders")
    return MCPServerConfig(
        name=name,
        command=(command, *args) if command else (),
        env=dict(env),
        url=url,
        headers=dict(headers),
        policy=cast(Policy, policy),
        read_resources=read_resources,
        timeout=cast(float, timeout),
        oauth=cast(Mapping[str, str], entry.get("oauth") or {}),
        roots=tuple(roots),
    )


def parse_servers(servers: Mapping[str, Any]) -> list[MCPServerConfig]:
    """Every entry of an ``mcpServers`` dict (or of ``{"mcpServers": {...}}``)."""
    if isinstance(servers.get("mcpServers"), Mapping) and len(servers) == 1:
        servers = servers["mcpServers"]
    return [parse_server_entry(str(name), entry) for name, entry in servers.items()]


def registry_name(server: str, tool: str) -> str:
    """``{server}__{tool}``; ``MCPConfigError`` naming the tool if it cannot fit the API's rule.

    Characters outside the rule's alphabet (a dot, a slash) become ``_``; a name longer than 64
    characters is refused rather than cut, since two cut names could collide.
    """
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", tool)
    name = f"{server}__{cleaned}"
    if not cleaned or not TOOL_NAME_RULE.fullmatch(name):
        raise MCPConfigError(
            f"MCP server {server!r} has a tool {tool!r} whose name {name!r} does not fit the "
            "API's rule ^[a-zA-Z0-9_-]{1,64}$ (use a shorter server name)"
        )
    return name
