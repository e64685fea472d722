"""The tool contract: what a tool is, and what running one gives back.

``ExecutableTool`` is a structural protocol so that any object with ``name``, ``get_schema`` and an
async ``execute`` is a tool; ``BuiltinTool`` is the small base class the built-in tools share
(schema from class attributes, a live ``ToolContext``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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

    async def execute(self, args: dict[str, object]) -> ToolOutput:
        """Run the tool; raise on failure (the registry turns it into an error result).

        The result is text, or a list of text and ``Image`` parts.
        """
        ...


#: Media types the Messages API takes as image blocks.
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True, slots=True)
class Image:
    """An image a tool returns alongside (or instead of) text: raw bytes and their media type.

    A tool may return ``str`` or a list of ``str`` and ``Image`` parts. The agent sends images to
    the model as image blocks inside the ``tool_result`` (downscaled, re-encoded if need be).
    """

    data: bytes
    media_type: str

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes | bytearray | memoryview):
            raise TypeError(f"Image data must be bytes, not {type(self.data).__name__}")
        if self.media_type not in IMAGE_MEDIA_TYPES:
            raise ValueError(
                f"Image media_type must be one of {', '.join(IMAGE_MEDIA_TYPES)}, "
                f"not {self.media_type!r}"
            )
        object.__setattr__(self, "data", bytes(self.data))

    def __repr__(self) -> str:
        return f"Image({self.media_type}, {len(self.data)} bytes)"


#: What ``execute`` may return: text, or text and image parts in order.
ToolOutput = str | Sequence[str | Image]


@dataclass(slots=True)
class ToolResult:
    """The outcome of one tool call as the model will see it.

    Not frozen on purpose: the registry builds one per call, and a frozen dataclass costs three
    times as much to construct; treat it as read-only all the same.
    """

    content: str
    is_error: bool = False
    duration_s: float = 0.0
    #: Images the tool returned, in order (the text parts are joined into ``content``).
    images: tuple[Image, ...] = field(default=())


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

    async def execute(self, args: dict[str, object]) -> ToolOutput:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
