"""``%agent mcp add|list|remove|logout`` and ``AgentMagics.mcp_servers``, over the MCP manager.

Each subcommand has its ``magic_arguments`` parser here (``add``'s words after ``--`` are the
server's command line, left as typed); the magics only split the line. The servers live in
``jupyter_agent.mcp`` on the session's background loop (the coroutines are handed to ``run``,
which waits for them there), so a server's session stays on the loop the agent's tool calls run
on. What comes back (server and tool names, errors: the server's words) is printed through
``inert.visible``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from IPython.core.error import UsageError

from ...agent.toolbox import Toolbox
from ...errors import MCPConfigError, MCPServerError
from ...mcp import parse_server_entry
from ...mcp.config import MCPServerConfig
from ...mcp.manager import EXTRA_MODULES, MCPManager
from .._ipython import argument, magic_arguments, parse_command
from ..inert import visible

USAGE = (
    "usage: %agent mcp add NAME [--env K=V] [--policy allow|ask|deny] [--read-resources] "
    "[--roots DIR] -- COMMAND ARGS... | %agent mcp add NAME --url URL [--header K=V] "
    "[--policy P] [--roots DIR] | "
    "%agent mcp list [NAME] | %agent mcp remove NAME | %agent mcp logout NAME"
)

Runner = Callable[[Coroutine[Any, Any, Any]], Any]

#: What ``%agent mcp add`` says when the ``mcp`` SDK (or another module of its extra) is missing.
MISSING_EXTRA = (
    "MCP servers need the MCP SDK, which is an extra: pip install 'jupyter-claude-agent[mcp]' "
    "(then restart the kernel)"
)


def _missing_extra(exc: ImportError) -> str:
    """``MISSING_EXTRA``, naming the module when it is not ``mcp`` itself."""
    module = (exc.name or "mcp").partition(".")[0]
    return MISSING_EXTRA if module == "mcp" else f"{MISSING_EXTRA[:-1]}; no module {module!r})"


def _missing_sdk(exc: ImportError) -> bool:
    """Whether ``exc`` is a module of the ``[mcp]`` extra (``mcp``, ``regex``) not installed."""
    missing = (exc.name or "").partition(".")[0]
    return missing in EXTRA_MODULES or any(
        f"import of {module} halted" in str(exc) for module in EXTRA_MODULES
    )


def _pair(option: str, text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"%agent mcp add: {option} needs KEY=VALUE, not {text!r}")
    return key, value


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs seconds, not {text!r}") from None


@magic_arguments("agent mcp add")
@argument("name", metavar="NAME", help="The server's name (its tools are NAME__TOOL).")
@argument("--url", default=None, help="A server over HTTP, instead of -- COMMAND ARGS...")
@argument("--env", action="append", default=[], metavar="K=V", help="For the server's process.")
@argument("--header", action="append", default=[], metavar="K=V", help="For every HTTP request.")
@argument("--policy", default=None, metavar="allow|ask|deny", help="Its tools' policy (ask).")
@argument("--timeout", type=_seconds, default=None, metavar="SECONDS", help="Per call.")
@argument("--read-resources", action="store_true", help="Offer its resources to read.")
@argument(
    "--roots",
    action="append",
    default=[],
    metavar="DIR",
    help="A folder offered as an MCP root (repeat for more); none by default.",
)
def _add(words: list[str]) -> MCPServerConfig:
    """``NAME [options] -- COMMAND ARGS...`` or ``NAME --url URL [options]`` as a config: the
    words after ``--`` are the server's command line, left as typed."""
    command: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, command = words[:at], words[at + 1 :]
    if not words or words[0].startswith("-"):
        raise UsageError(USAGE)
    args = parse_command(_add, words, USAGE)  # every form: its parser cannot show -- COMMAND
    entry: dict[str, Any] = {}
    if args.url is not None:
        entry["url"] = args.url
    if args.policy is not None:
        entry["policy"] = args.policy
    if args.timeout is not None:
        entry["timeout"] = args.timeout
    if args.read_resources:
        entry["read_resources"] = True
    if args.roots:
        entry["roots"] = list(args.roots)
    if command:
        entry["command"], entry["args"] = command[0], command[1:]
    if args.env:
        entry["env"] = dict(_pair("--env", text) for text in args.env)
    if args.header:
        entry["headers"] = dict(_pair("--header", text) for text in args.header)
    if "command" in entry and "url" in entry:
        raise UsageError("%agent mcp add: give either -- COMMAND or --url, not both")
    if "command" not in entry and "url" not in entry:
        raise UsageError(USAGE)
    try:
        return parse_server_entry(args.name, entry)
    except MCPConfigError as exc:
        raise UsageError(visible(str(exc))) from None


def parse_add(words: list[str]) -> MCPServerConfig:
    """``%agent mcp add WORDS`` as a server config; ``UsageError`` for a mistake."""
    return _add(words)


@magic_arguments("agent mcp list")
@argument("name", nargs="?", default=None, metavar="NAME", help="One server; all when omitted.")
def _list(words: list[str]) -> Any:
    return parse_command(_list, words)


@magic_arguments("agent mcp remove")
@argument("name", metavar="NAME", help="The server to stop and forget.")
def _remove(words: list[str]) -> Any:
    return parse_command(_remove, words)


@magic_arguments("agent mcp logout")
@argument("name", metavar="NAME", help="The server whose OAuth tokens to forget.")
def _logout(words: list[str]) -> Any:
    return parse_command(_logout, words)


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
                config = _add(rest)
                names = self._run(manager.add(config))
                shown = ", ".join(names) or "(no tools)"
                return f"MCP server {config.name!r} added: {shown} (policy {config.policy})"
            if verb == "list":
                return manager.describe(_list(rest).name)
            if verb == "remove":
                name = _remove(rest).name
                self._run(manager.remove(name))
                self._configured.pop(name, None)
                return f"MCP server {name!r} removed; its process has ended."
            if verb == "logout":
                return self.logout(manager, _logout(rest).name)
        except (MCPServerError, MCPConfigError) as exc:
            raise UsageError(visible(str(exc))) from None
        except ImportError as exc:
            if _missing_sdk(exc):
                raise UsageError(_missing_extra(exc)) from None
            raise
        raise UsageError(f"Unknown %agent mcp command {verb!r}; {USAGE}")

    @staticmethod
    def logout(manager: MCPManager, name: str) -> str:
        """Forget the OAuth tokens (and client registration) kept for server ``name``."""
        from ...mcp.oauth import forget_tokens

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
            except ImportError as exc:
                problem = _missing_extra(exc) if _missing_sdk(exc) else str(exc)
                problems.append(f"jupyter-agent: MCP server {name!r} not started: {problem}")
            except (MCPServerError, MCPConfigError) as exc:
                problems.append(f"jupyter-agent: {exc}")
        return problems

    def close(self, toolbox: Toolbox) -> None:
        """Stop every server of ``toolbox`` (``%unload_ext``, the session closing)."""
        self._run(toolbox.mcp.aclose())
        self._configured.clear()
