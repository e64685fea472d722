"""MCP servers for the agent: their tools join the registry as ordinary tools.

``MCPManager`` (``manager.py``) owns the connections of one toolbox (``Toolbox.mcp``);
``MCPTool`` (``tool.py``) is the registry's view of one server tool; ``config.py`` reads server
entries in the ``mcpServers`` shape. The official ``mcp`` package
(``pip install 'jupyter-claude-agent[mcp]'``) is imported only when a server is added, so the
core works without it.
"""

from __future__ import annotations

from ..errors import MCPConfigError, MCPServerError
from .config import MCPServerConfig, parse_server_entry, parse_servers
from .manager import MCPManager

__all__ = [
    "MCPConfigError",
    "MCPManager",
    "MCPServerConfig",
    "MCPServerError",
    "parse_server_entry",
    "parse_servers",
]
