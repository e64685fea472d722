"""``create_default_registry``: the built-in tools, in a fixed order, with safe defaults.

This is the one place where the built-in tools are put together. Tools that can destroy data or
run arbitrary code (``remove``, ``run_bash``) are registered but start disabled; the user turns
them on (and the agent then asks before each call, see ``agent.approvals``).
"""

from __future__ import annotations

from .context import ToolContext
from .files import (
    EditFileTool,
    ListDirTool,
    MkdirTool,
    MoveTool,
    ReadFileTool,
    RemoveTool,
    WriteFileTool,
)
from .git import GitCommitTool
from .netguard import PrivateNetworkSetting
from .registry import ToolRegistry
from .search import SearchFilesTool, SearchTextTool
from .session import SaveSessionContextTool
from .shell import RunBashTool
from .web import WebFetchTool

__all__ = ["DISABLED_BY_DEFAULT", "create_default_registry"]

#: Registered, but off until the user enables them.
DISABLED_BY_DEFAULT = ("remove", "run_bash")


def create_default_registry(
    context: ToolContext, *, allow_private_network: PrivateNetworkSetting = False
) -> ToolRegistry:
    """A registry with every built-in tool bound to ``context``; ``remove`` and ``run_bash`` off.

    ``allow_private_network`` is passed to ``web_fetch``: ``False`` (public addresses only),
    ``True`` (any address) or a list of hosts such as ``"127.0.0.1"`` or ``"localhost:8000"``.
    """
    registry = ToolRegistry()
    for tool in (
        ReadFileTool(context),
        WriteFileTool(context),
        EditFileTool(context),
        ListDirTool(context),
        MkdirTool(context),
        MoveTool(context),
        RemoveTool(context),
        SearchTextTool(context),
        SearchFilesTool(context),
        SaveSessionContextTool(context),
        RunBashTool(context),
        WebFetchTool(context, allow_private_network=allow_private_network),
        GitCommitTool(context),
    ):
        registry.register(tool)
    for name in DISABLED_BY_DEFAULT:
        registry.disable(name)
    return registry
