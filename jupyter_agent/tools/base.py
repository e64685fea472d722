"""The tool contract: what a tool is, and what running one gives back.

``ExecutableTool`` is a structural protocol so that any object with ``name``, ``get_schema`` and an
async ``execute`` is a tool; ``BuiltinTool`` is the small base class the built-in tools share
(schema from class attributes, a live ``ToolContext``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .context import ToolContext


@runtime_checkable
class ExecutableTool(Protocol):
    """Anything the registry can hold: a name, an Anthropic-format schema, an async ``execute``."""

    name: str

    def get_schema(self) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}`` with ``name == self.name``."""
        ...

    async def execute(self, args: dict[str, object]) -> str:
        """Run the tool; raise on failure (the registry turns it into an error result)."""
        ...


@dataclass(slots=True)
class ToolResult:
    """The outcome of one tool call as the model will see it.

    Not frozen on purpose: the registry builds one per call, and a frozen dataclass costs three
    times as much to construct; treat it as read-only all the same.
    """

    content: str
    is_error: bool = False
    duration_s: float = 0.0


class ToolFailure(Exception):
    """Raised inside a tool for an expected failure; the model sees only the message.

    The registry reports it as ``Error executing {name}: {message}``, the same shape as any other
    exception, but tools raise this one for conditions they anticipate (file not found, ...).
    """


class BuiltinTool:
    """Base class for the built-in tools: the schema lives in class attributes.

    Subclasses set ``name``, ``description`` and ``input_schema`` and implement ``execute``.
    """

    name: str
    description: ClassVar[str]
    input_schema: ClassVar[dict[str, Any]]
    #: Destructive tools start disabled in the default registry and, once enabled, default to
    #: asking the user before each call.
    destructive: ClassVar[bool] = False

    def __init__(self, context: ToolContext) -> None:
        self.context = context

    def get_schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    async def execute(self, args: dict[str, object]) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
