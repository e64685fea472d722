"""The tool contract: what a tool is, and what running one gives back.

``ExecutableTool`` is a structural protocol so that any object with ``name``, ``get_schema`` and an
async ``execute`` is a tool; ``BuiltinTool`` is the small base class the built-in tools share
(schema from class attributes, a live ``ToolContext``). What a tool is allowed to be trusted with
is declared, not guessed: ``ToolCapabilities``, read everywhere through ``capabilities_of``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from ..errors import ToolFailure as ToolFailure  # tools name it from here too

if TYPE_CHECKING:
    from .context import ToolContext


@dataclass(frozen=True, slots=True)
class ToolCapabilities:
    """What a tool declares about itself; the registry, the default registry and the agent act
    on it.

    ``destructive``: the tool can destroy data or run arbitrary code. The default registry
    registers it disabled, and once enabled the agent asks the user before each call (policy
    ``ask`` unless the user sets another).

    ``validates_arguments``: ``execute`` validates (and coerces) its own arguments, so the registry
    skips its JSON Schema check (``@tool`` functions do, through pydantic). Size and nesting
    limits are checked for every tool all the same.

    ``reports_progress``: the tool reports progress while it runs (``tools/progress.py``; an MCP
    tool passes its server's notifications on), so the agent runs even a reply's only call in a
    task of its own and shows the progress as it comes.

    A tool may also need approval for some calls only: a method ``needs_approval(args)`` that
    returns a reason (``ChecksApproval``; ``approval_reason`` reads it; the gate then asks).
    """

    destructive: bool = False
    validates_arguments: bool = False
    reports_progress: bool = False


#: What a tool that declares nothing gets: not destructive, arguments checked by the registry.
DEFAULT_CAPABILITIES = ToolCapabilities()


def capabilities_of(tool: object) -> ToolCapabilities:
    """The capabilities ``tool`` declares: its ``capabilities`` attribute (a ``ToolCapabilities``).

    A third-party tool that declares none gets ``DEFAULT_CAPABILITIES``, except that the older
    spelling, plain ``destructive = True`` / ``validates_arguments = True`` attributes, is
    honoured (never ignore a tool saying it is destructive).
    """
    declared = getattr(tool, "capabilities", None)
    if isinstance(declared, ToolCapabilities):
        return declared
    destructive = getattr(tool, "destructive", False) is True
    validates = getattr(tool, "validates_arguments", False) is True
    if destructive or validates:
        return ToolCapabilities(destructive=destructive, validates_arguments=validates)
    return DEFAULT_CAPABILITIES


@runtime_checkable
class ChecksApproval(Protocol):
    """A tool that needs the user's approval for some calls only, whatever its policy."""

    def needs_approval(self, args: dict[str, object]) -> str | None:
        """Why this call needs approval (``git_commit``: it would commit a CI workflow), or None."""
        ...


@runtime_checkable
class RemembersApproval(Protocol):
    """A tool that can remember what a call allowed "for this session" covers."""

    def remember_approval(self, args: dict[str, object]) -> None:
        """The user allowed this call for the session (``web_fetch``: remember its host)."""
        ...


def checks_approval(tool: object) -> bool:
    """Whether ``tool`` is ``ChecksApproval`` (it has a callable ``needs_approval``).

    The same test as ``isinstance(tool, ChecksApproval)`` as a plain attribute lookup (as
    ``providers.base.reply_cap``): on Python 3.11 that ``isinstance`` walks the protocol's members
    on every call, and the agent asks for every tool call.
    """
    return callable(getattr(tool, "needs_approval", None))


def approval_reason(tool: object, args: dict[str, object]) -> str | None:
    """Why this call of ``tool`` needs the user's approval whatever its policy, or None.

    A tool declares it with a method ``needs_approval(args) -> str | None`` (``git_commit``:
    it would commit a CI workflow). The policy gate asks before the call; ``deny`` still wins,
    and with no one to ask the call is refused. A method that fails asks too (fail closed).
    """
    check = getattr(tool, "needs_approval", None)  # ``checks_approval``, the same test
    if not callable(check):
        return None
    try:
        reason = check(args)
    except Exception as exc:
        return f"checking whether this call needs approval failed ({exc})"
    return reason if isinstance(reason, str) and reason else None


def remember_approval(tool: object, args: dict[str, object]) -> bool:
    """The user allowed this call "for this session": the tool remembers what it covers
    (``remember_approval(args)``: ``web_fetch``, its host); whether the tool could."""
    if not isinstance(tool, RemembersApproval) or not callable(tool.remember_approval):
        return False
    try:
        tool.remember_approval(args)
    except Exception:
        return False
    return True


@runtime_checkable
class ExecutableTool(Protocol):
    """Anything the registry can hold: a name, an Anthropic-format schema, an async ``execute``.

    A tool may also have a ``capabilities`` attribute (``ToolCapabilities``); it is optional, so it
    is not part of the protocol's required members; ``capabilities_of`` reads it.
    """

    name: str

    def get_schema(self) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}`` with ``name == self.name``."""
        ...

    async def execute(self, args: dict[str, object]) -> ToolOutput:
        """Run the tool; raise on failure (the registry turns it into an error result).

        The result is text, or a list of text and ``Image`` parts.
        """
        ...


#: Media types the Messages API takes as image blocks, in the order a display bundle is read.
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
    #: How many secret values the registry replaced by ``[redacted: NAME]`` in ``content``.
    redacted: int = 0
    #: The text and images in the order the tool returned them, when it matters: set when text
    #: follows an image (``notebook_history``: each cell's plot under that cell), empty when the
    #: result is its text, then its images. ``content`` is still the text parts joined by
    #: newlines and ``images`` the image parts; the agent sends the parts in this order.
    parts: tuple[str | Image, ...] = field(default=())


def result_parts(result: ToolResult) -> tuple[str | Image, ...]:
    """``result``'s text and images in the order the model gets them: its ``parts``, or else its
    text followed by its images."""
    if result.parts:
        return result.parts
    return (result.content, *result.images)


def interleaved(parts: Sequence[str | Image]) -> bool:
    """Whether some text part comes after an image (the order says which text an image belongs
    to, so it must be kept)."""
    seen_image = False
    for part in parts:
        if isinstance(part, Image):
            seen_image = True
        elif seen_image and part.strip():
            return True
    return False


class BuiltinTool:
    """Base class for the built-in tools: the schema lives in class attributes.

    Subclasses set ``name``, ``description`` and ``input_schema`` and implement ``execute``; they
    declare their capabilities with ``capabilities = ToolCapabilities(...)``, or with the
    shorthand ``destructive = True``, from which the class's ``capabilities`` is made.
    """

    name: str
    description: ClassVar[str]
    input_schema: ClassVar[dict[str, Any]]
    capabilities: ClassVar[ToolCapabilities] = DEFAULT_CAPABILITIES
    #: Shorthand for ``capabilities = ToolCapabilities(destructive=True)``; always equal to
    #: ``capabilities.destructive``.
    destructive: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "capabilities" in cls.__dict__:
            cls.destructive = cls.capabilities.destructive
        elif cls.destructive != cls.capabilities.destructive:
            cls.capabilities = replace(cls.capabilities, destructive=cls.destructive)

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
