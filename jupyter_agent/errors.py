"""The exceptions jupyter_agent raises, in one place.

Two channels, kept apart on purpose: a *programmer's* mistake (registering a name twice,
enabling a tool that does not exist) raises one of these; anything the *model* got wrong, or a
tool hit while running, becomes an error result the model can read (see ``ToolResult``). Some
below never leave the package: they carry a refusal from deep inside a tool up to the place that
turns it into that error result, or into one line for the user.

Every class is a ``JupyterAgentError``; where a caller of the standard library would expect a
``ValueError``, ``LookupError`` or ``RuntimeError``, it is one of those too.

    JupyterAgentError
    ├── DuplicateToolError        register() of a name already taken (also a ValueError)
    ├── ToolNotFoundError         enable()/disable() of an unknown name (also a LookupError)
    ├── WorkspaceError            a path refused by the workspace resolver
    │   ├── PathOutsideWorkspaceError
    │   └── HiddenPathError       a credential store or one of Jupyter's own folders
    ├── ToolInputError            arguments a tool refuses before it runs
    ├── ToolFailure               an expected failure inside a tool: the registry turns it into
    │   │                         an error result ("Error executing NAME: message")
    │   └── URLRefusedError       a URL (or an address its host resolves to) that may not be
    │                             fetched (web tools, MCP over HTTP)
    ├── BadPart                   a content part that cannot be read: bad base64, an unknown
    │                             media type (also a ValueError)
    ├── GlobSyntaxError           a glob ripgrep would refuse too (also a ValueError)
    ├── RipgrepCannot             ripgrep cannot run this search; the Python search takes over
    ├── TooManyMatches            an unsorted ripgrep run found more than is worth sorting
    ├── SigningError              the agent's signing key cannot be read or created
    ├── UnrecordableTurn          a finished agent cell's turn that cannot be kept for replay
    │   └── RecordTooLarge        its record would pass the size kept in a notebook
    ├── SchemaTimeout             an MCP schema pattern not matched before the call's deadline
    ├── ProviderError             a model request that failed for good
    │   └── ContextOverflowError  the conversation cannot be made to fit the context window
    ├── MCPServerError            an MCP server that cannot be added, started or reached
    ├── MCPConfigError            an MCP server entry that cannot be used (also a ValueError)
    ├── InterruptedByUser         the kernel interrupted while the main thread worked for the agent
    ├── NotPumpingError           main-thread work asked for with no ``%%agent`` run pumping
    │                             (also a RuntimeError)
    ├── FrontendError             the notebook frontend refused an operation or did not answer
    └── SessionError              a notebook session refusing a request (bad chat name, no
        │                         workspace, nothing to undo); the magics show it as a UsageError
        ├── ManagedSettingError   a change an administrator's managed settings lock (looser than
        │                         ``jupyter_agent_managed.json`` allows): one line naming the file
        └── ModelRequestError     a turn's model request that failed for good (``detail``: the
            │                     provider's one line); the magics show it as itself, one line
            └── FailedModelRequest  the same as a cell's error: ``ModelRequestError: <detail>``,
                                    without a traceback

Private signals that never leave their module (``journal._Skip``, ``coauthor._Timeout``) stay
beside the code they steer.
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


class HiddenPathError(WorkspaceError):
    """A path inside a credential store or one of Jupyter's folders."""


class URLRefusedError(ToolFailure):
    """The URL, or an address its host resolves to, may not be fetched."""


class BadPart(JupyterAgentError, ValueError):
    """A part that claims to be content but cannot be read (bad base64, an unknown media type)."""


class GlobSyntaxError(JupyterAgentError, ValueError):
    """A glob ripgrep refuses too: a nested or unclosed ``{`` group, or too many alternatives."""


class RipgrepCannot(JupyterAgentError):
    """ripgrep cannot run this search (e.g. its regex engine refuses the pattern)."""


class TooManyMatches(JupyterAgentError):
    """An unsorted ripgrep run found more than it is worth sorting afterwards."""


class SigningError(JupyterAgentError):
    """The signing key cannot be read or created; the message says where and why."""


class UnrecordableTurn(JupyterAgentError, ValueError):
    """A turn that cannot be kept for replay; the message says why."""


class RecordTooLarge(UnrecordableTurn):
    """The turn's record would pass ``MAX_RECORD_BYTES``: it is not kept (the message says so)."""


class SchemaTimeout(JupyterAgentError):
    """A pattern could not be matched before the call's deadline."""


class ProviderError(JupyterAgentError):
    """A request to the model failed and was not retried further."""


class ContextOverflowError(ProviderError):
    """The conversation cannot be made to fit the context window (the prompt alone is too big)."""


class MCPServerError(JupyterAgentError):
    """An MCP server could not be added, started or reached; the message names it, in one line."""


class MCPConfigError(JupyterAgentError, ValueError):
    """An MCP server entry (or a tool name of its server) that cannot be used."""


class InterruptedByUser(JupyterAgentError):
    """The user interrupted the kernel while the main thread was doing work for the agent."""


class NotPumpingError(JupyterAgentError, RuntimeError):
    """Main-thread work was requested while no ``%%agent`` run is pumping the queue."""


class FrontendError(JupyterAgentError):
    """The notebook frontend refused an operation, or did not answer."""


class SessionError(JupyterAgentError):
    """A notebook session cannot do what was asked; the message says why, in one line."""


class ManagedSettingError(SessionError):
    """A change looser than the administrator's managed settings allow; the message names the
    file, in one line."""


class ModelRequestError(SessionError):
    """A turn's model request failed for good (after the provider's retries): not the user's
    mistake, so not shown as a ``UsageError``. ``detail`` is the provider's message."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"The model request failed: {detail}")
        self.detail = detail


class FailedModelRequest(ModelRequestError):
    """A failed model request as the cell's error: one line, ``ModelRequestError: <what the API
    said>`` (IPython prints what ``_render_traceback_`` returns instead of a traceback)."""

    def _render_traceback_(self) -> list[str]:
        return [f"ModelRequestError: {self.detail}"]
