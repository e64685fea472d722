"""jupyter_agent — a Claude agent inside Jupyter notebooks.

``%load_ext jupyter_agent`` gives you ``%%agent`` cells; from Python, ``Agent``, ``ToolRegistry``
and ``create_default_registry`` are the building blocks. Names are imported on first use, so that
loading the extension stays cheap and the core never pulls in IPython.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # tools
    "ExecutableTool": "jupyter_agent.tools.base",
    "ToolResult": "jupyter_agent.tools.base",
    "Image": "jupyter_agent.tools.base",
    "BuiltinTool": "jupyter_agent.tools.base",
    "ToolFailure": "jupyter_agent.tools.base",
    "tool": "jupyter_agent.tools.decorator",
    "FunctionTool": "jupyter_agent.tools.decorator",
    "ToolRegistry": "jupyter_agent.tools.registry",
    "ToolContext": "jupyter_agent.tools.context",
    "Workspace": "jupyter_agent.tools.guard.workspace",
    "create_default_registry": "jupyter_agent.tools.factory",
    # agent
    "Agent": "jupyter_agent.agent.agent",
    "Usage": "jupyter_agent.events",
    "TurnStarted": "jupyter_agent.events",
    "TextDelta": "jupyter_agent.events",
    "TextReset": "jupyter_agent.events",
    "ToolCallStarted": "jupyter_agent.events",
    "ToolCallFinished": "jupyter_agent.events",
    "ToolCallProgress": "jupyter_agent.events",
    "TurnFinished": "jupyter_agent.events",
    "AgentFinished": "jupyter_agent.events",
    "AgentError": "jupyter_agent.events",
    "ContextCompacted": "jupyter_agent.events",
    "ThinkingDelta": "jupyter_agent.events",
    "AgentEvent": "jupyter_agent.events",
    "ApprovalRequest": "jupyter_agent.approvals",
    "Decision": "jupyter_agent.approvals",
    "Policy": "jupyter_agent.approvals",
    # providers
    "Provider": "jupyter_agent.providers.base",
    "ModelRequest": "jupyter_agent.providers.base",
    "ModelResponse": "jupyter_agent.providers.base",
    "AnthropicProvider": "jupyter_agent.providers.anthropic",
    "OfflineProvider": "jupyter_agent.providers.offline",
    "RecordingProvider": "jupyter_agent.providers.offline",
    "OpenAIProvider": "jupyter_agent.providers.openai_compat",
    "select_default_provider": "jupyter_agent.providers.auto",
    # errors
    "JupyterAgentError": "jupyter_agent.errors",
    "DuplicateToolError": "jupyter_agent.errors",
    "ToolNotFoundError": "jupyter_agent.errors",
    "WorkspaceError": "jupyter_agent.errors",
    "PathOutsideWorkspaceError": "jupyter_agent.errors",
    "ToolInputError": "jupyter_agent.errors",
    "ProviderError": "jupyter_agent.errors",
    # IPython extension entry points (import IPython only when called)
    "load_ipython_extension": "jupyter_agent.notebook.front.extension",
    "unload_ipython_extension": "jupyter_agent.notebook.front.extension",
    # the notebook names users import (each imports IPython only where it needs it)
    "get_magics": "jupyter_agent.notebook.front.extension",
    "NotebookSession": "jupyter_agent.notebook.session.session",
    "notebook_connected": "jupyter_agent.notebook.coauthor.link",
}

__all__ = [
    "Agent",
    "AgentError",
    "AgentEvent",
    "AgentFinished",
    "AnthropicProvider",
    "ApprovalRequest",
    "BuiltinTool",
    "ContextCompacted",
    "Decision",
    "DuplicateToolError",
    "ExecutableTool",
    "FunctionTool",
    "Image",
    "JupyterAgentError",
    "ModelRequest",
    "ModelResponse",
    "NotebookSession",
    "OfflineProvider",
    "OpenAIProvider",
    "PathOutsideWorkspaceError",
    "Policy",
    "Provider",
    "ProviderError",
    "RecordingProvider",
    "TextDelta",
    "TextReset",
    "ThinkingDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolContext",
    "ToolFailure",
    "ToolInputError",
    "ToolNotFoundError",
    "ToolRegistry",
    "ToolResult",
    "TurnFinished",
    "TurnStarted",
    "Usage",
    "Workspace",
    "WorkspaceError",
    "create_default_registry",
    "get_magics",
    "load_ipython_extension",
    "notebook_connected",
    "select_default_provider",
    "tool",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'jupyter_agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .agent.agent import Agent
    from .approvals import ApprovalRequest, Decision, Policy
    from .errors import (
        DuplicateToolError,
        JupyterAgentError,
        PathOutsideWorkspaceError,
        ProviderError,
        ToolInputError,
        ToolNotFoundError,
        WorkspaceError,
    )
    from .events import (
        AgentError,
        AgentEvent,
        AgentFinished,
        ContextCompacted,
        TextDelta,
        TextReset,
        ThinkingDelta,
        ToolCallFinished,
        ToolCallProgress,
        ToolCallStarted,
        TurnFinished,
        TurnStarted,
        Usage,
    )
    from .notebook.coauthor.link import notebook_connected
    from .notebook.front.extension import (
        get_magics,
        load_ipython_extension,
        unload_ipython_extension,
    )
    from .notebook.session.session import NotebookSession
    from .providers.anthropic import AnthropicProvider
    from .providers.auto import select_default_provider
    from .providers.base import ModelRequest, ModelResponse, Provider
    from .providers.offline import OfflineProvider, RecordingProvider
    from .providers.openai_compat import OpenAIProvider
    from .tools.base import BuiltinTool, ExecutableTool, ToolFailure, ToolResult
    from .tools.context import ToolContext
    from .tools.decorator import FunctionTool, tool
    from .tools.factory import create_default_registry
    from .tools.guard.workspace import Workspace
    from .tools.registry import ToolRegistry
