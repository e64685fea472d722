"""The exceptions jupyter_agent raises, in one place.

Two channels, kept apart on purpose: a *programmer's* mistake (registering a name twice,
enabling a tool that does not exist) raises one of these; anything the *model* got wrong, or a
tool hit while running, becomes an error result the model can read (see ``ToolResult``).

    JupyterAgentError
    ├── DuplicateToolError        register() of a name already taken
    ├── ToolNotFoundError         enable()/disable() of an unknown name (also a LookupError)
    ├── WorkspaceError            a path refused by the workspace resolver
    │   └── PathOutsideWorkspaceError
    ├── ToolInputError            arguments a tool refuses before it runs
    ├── ToolFailure               an expected failure inside a tool: the registry turns it into
    │                             an error result ("Error executing NAME: message")
    ├── ProviderError             a model request that failed for good
    ├── MCPServerError            an MCP server that cannot be added, started or reached
    ├── MCPConfigError            an MCP server entry that cannot be used (also a ValueError)
    └── SessionError              a notebook session refusing a request (bad chat name, no
        │                         workspace, nothing to undo); the magics show it as a UsageError
        └── ModelRequestError     a turn's model request that failed for good (``detail``: the
                                  provider's one line); the magics show it as itself, one line
"""

from __future__ import annotations


class JupyterAgentError(Exception):
    """Base class for every exception raised by jupyter_agent."""


class ToolFailure(JupyterAgentError):
    """Raised inside a tool for an expected failure; the model sees only the message.

    The registry reports it as ``Error executing {name}: {message}``, the same shape as any other
    exception, but tools raise this one for conditions they anticipate (file not found, ...).
    """


class DuplicateToolError(JupyterAgentError, ValueError):
    """A tool with this name is already registered."""

    def __init__(self, name: str) -> None:
        super().__init__(f"A tool named {name!r} is already registered")
        self.name = name


class ToolNotFoundError(JupyterAgentError, LookupError):
    """No tool with this name is registered."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        message = f"No tool named {name!r} is registered"
        if known is not None:
            message += f" (known tools: {', '.join(known) if known else 'none'})"
        super().__init__(message)
        self.name = name

    def __str__(self) -> str:  # LookupError would otherwise repr() the message
        return str(self.args[0])


class WorkspaceError(JupyterAgentError):
    """A path that the workspace refuses to resolve (bad characters, too long, ...)."""


class PathOutsideWorkspaceError(WorkspaceError):
    """A path that resolves outside the workspace."""


class ToolInputError(JupyterAgentError):
    """Arguments a tool rejects before doing anything; reported to the model as bad input."""


class ProviderError(JupyterAgentError):
    """A request to the model failed and was not retried further."""


class MCPServerError(JupyterAgentError):
    """An MCP server could not be added, started or reached; the message names it, in one line."""


class MCPConfigError(JupyterAgentError, ValueError):
    """An MCP server entry (or a tool name of its server) that cannot be used."""


class SessionError(JupyterAgentError):
    """A notebook session cannot do what was asked; the message says why, in one line."""


class ModelRequestError(SessionError):
    """A turn's model request failed for good (after the provider's retries): not the user's
    mistake, so not shown as a ``UsageError``. ``detail`` is the provider's message."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"The model request failed: {detail}")
        self.detail = detail
