"""``create_default_registry``: the built-in tools, in a fixed order, with safe defaults.

This is the one place where the built-in tools are put together. Tools that declare themselves
destructive (``ToolCapabilities.destructive``: ``remove``, ``run_bash``) are registered but start
disabled; the user turns them on (and the agent then asks before each call, see
``approvals.py``).
"""

from __future__ import annotations

from .base import BuiltinTool, capabilities_of
from .context import ToolContext
from .files.files import (
    EditFileTool,
    ListDirTool,
    MkdirTool,
    ReadFileTool,
    RemoveTool,
    WriteFileTool,
)
from .files.move import MoveTool
from .files.notebook_file import ReadNotebookTool
from .files.session_file import SaveSessionContextTool
from .git import GitCommitTool
from .guard.egress import EgressHosts
from .guard.netguard import PrivateNetworkSetting
from .registry import ToolRegistry
from .search.search import SearchFilesTool, SearchTextTool
from .shell import RunBashTool
from .web import WebFetchTool

__all__ = ["DISABLED_BY_DEFAULT", "create_default_registry"]

#: The built-in tools, in the order the registry lists them.
_BUILTIN_TOOLS: tuple[type[BuiltinTool], ...] = (
    ReadFileTool,
    WriteFileTool,
    EditFileTool,
    ListDirTool,
    MkdirTool,
    MoveTool,
    RemoveTool,
    SearchTextTool,
    SearchFilesTool,
    SaveSessionContextTool,
    RunBashTool,
    WebFetchTool,
    GitCommitTool,
    ReadNotebookTool,
)

#: Registered, but off until the user enables them: the built-in tools declared destructive.
DISABLED_BY_DEFAULT: tuple[str, ...] = tuple(
    tool.name for tool in _BUILTIN_TOOLS if tool.capabilities.destructive
)


def create_default_registry(
    context: ToolContext,
    *,
    allow_private_network: PrivateNetworkSetting = False,
    shell_network: bool | None = None,
    web_allow: EgressHosts | None = None,
) -> ToolRegistry:
    """A registry with every built-in tool bound to ``context``; the destructive ones (``remove``
    and ``run_bash``) off.

    ``allow_private_network`` is passed to ``web_fetch``: ``False`` (public addresses only),
    ``True`` (any address) or a list of hosts such as ``"127.0.0.1"`` or ``"localhost:8000"``.
    ``shell_network``, when given, sets ``context.shell_network``: whether ``run_bash``'s
    sandbox keeps the network (off by default). ``web_allow``: the hosts ``web_fetch`` reaches
    without asking (``egress.py``; a session passes its own, so its yeses outlive a rebuild).
    """
    if shell_network is not None:
        context.shell_network = bool(shell_network)
    registry = ToolRegistry()
    for tool_class in _BUILTIN_TOOLS:
        tool = (
            WebFetchTool(context, allow_private_network=allow_private_network, egress=web_allow)
            if tool_class is WebFetchTool
            else tool_class(context)
        )
        registry.register(tool, schema_checked=True)  # ours: tests check the schemas
        if capabilities_of(tool).destructive:
            registry.disable(tool.name)
    return registry
