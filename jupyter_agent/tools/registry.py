"""``ToolRegistry``: the tools an agent has, which of them are enabled, and how to run one.

The registry is the single door through which every tool call passes. It never lets a tool's
failure escape as an exception: unknown, disabled and schema-invalid calls, and tools that raise,
all come back as error results the model can read. Arguments are checked against the tool's
``input_schema`` with a JSON Schema validator compiled once, at the tool's first call — except
for tools that declare they validate their own arguments (``ToolCapabilities.validates_arguments``,
as ``@tool`` functions do through pydantic, which also coerces ``"5"`` to ``5``); checking twice
would only cost time. The schema itself is checked against its metaschema at registration, unless
the caller vouches for it (``schema_checked``: the package's own tools, whose schemas the test
suite checks) — so a kernel's first ``%%agent`` cell neither imports jsonschema nor runs 34
metaschema checks (~0.1 s) before its first token.

Arguments are attacker-controlled, so before any validation they are measured in one iterative
pass: nested deeper than ``MAX_ARGUMENT_DEPTH`` or holding more than ``MAX_ARGUMENT_ITEMS`` values
or ``MAX_ARGUMENT_CHARS`` characters of text, they are refused (validators and error messages
recurse into the value, and ~1,000 levels raised ``RecursionError``). Whatever a validator or its
message still raises on odd values becomes an error result too.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import (
    BadPart,
    DuplicateToolError,
    ManagedSettingError,
    ToolInputError,
    ToolNotFoundError,
)
from .base import ExecutableTool, Image, ToolResult, capabilities_of, interleaved
from .parts import ordered_parts
from .redact import redact

if TYPE_CHECKING:
    from .schema_validation import Validator

_clock = time.perf_counter

#: How many schema violations one error result lists, and how many are looked at to choose them.
MAX_REPORTED_SCHEMA_ERRORS = 3
MAX_COLLECTED_SCHEMA_ERRORS = 100
#: A violation's message (it quotes the value) is cut at this many characters.
MAX_SCHEMA_MESSAGE_CHARS = 500
#: Arguments nested deeper than this (objects and arrays) are refused before validation.
MAX_ARGUMENT_DEPTH = 100
#: Arguments with more values than this in all (object members and array items) are refused.
MAX_ARGUMENT_ITEMS = 100_000
#: Arguments with more characters of text than this in all (keys and strings) are refused: far
#: beyond what a model writes in one reply, small enough to keep every check cheap.
MAX_ARGUMENT_CHARS = 64 * 1024 * 1024


class ToolRegistry:
    """An ordered set of tools, each enabled or disabled."""

    def __init__(self) -> None:
        self._tools: dict[str, ExecutableTool] = {}
        self._enabled: dict[str, bool] = {}
        self._validators: dict[str, Validator | None] = {}
        #: Why a tool may not be on (an administrator's managed settings): the one line that
        #: refuses to enable ``name``, or None. Such a tool is off whatever was asked.
        self.lock: Callable[[str], str | None] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def register(self, tool: ExecutableTool, *, schema_checked: bool = False) -> None:
        """Add ``tool``, enabled. Raises ``DuplicateToolError`` or ``ValueError``.

        ``schema_checked``: the caller vouches that the tool's input schema is valid JSON Schema
        (the package's own tools), so it is not checked against the metaschema now.

        A function tool of the ``anthropic`` SDK (``@beta_tool``, ``@beta_async_tool``) is taken
        as it is: its name, description and input schema, its function (``tool()`` adapts it).
        """
        tool = _adopt(tool)
        name = tool.name
        if name in self._tools:
            raise DuplicateToolError(name)
        self._check_schema(tool, against_metaschema=not schema_checked)
        self._validators.pop(name, None)  # made at the first call
        self._tools[name] = tool
        self._enabled[name] = True

    @staticmethod
    def _check_schema(tool: ExecutableTool, *, against_metaschema: bool) -> None:
        """``ValueError`` unless ``tool``'s schema has its name and an object input schema
        (valid JSON Schema, when ``against_metaschema``)."""
        name = tool.name
        schema = tool.get_schema()
        if schema.get("name") != name:
            raise ValueError(
                f"Tool {name!r} returns a schema named {schema.get('name')!r}; they must match"
            )
        input_schema = schema.get("input_schema")
        if not isinstance(input_schema, Mapping) or input_schema.get("type") != "object":
            raise ValueError(f"Tool {name!r} must have an object input_schema")
        if not against_metaschema:
            return
        from .schema_validation import jsonschema_exceptions, jsonschema_validators

        validator_class = jsonschema_validators.validator_for(
            input_schema, default=jsonschema_validators.Draft202012Validator
        )
        try:
            validator_class.check_schema(dict(input_schema))
        except jsonschema_exceptions.SchemaError as exc:
            raise ValueError(f"Tool {name!r} has an invalid input_schema: {exc.message}") from None

    def _validator(self, name: str) -> Validator | None:
        """The validator of ``name``'s arguments (None: the tool checks its own), made once."""
        if name in self._validators:
            return self._validators[name]
        tool = self._tools[name]
        validator: Validator | None = None
        if not capabilities_of(tool).validates_arguments:
            from .schema_validation import jsonschema_validators

            input_schema = dict(tool.get_schema()["input_schema"])
            validator_class = jsonschema_validators.validator_for(
                input_schema, default=jsonschema_validators.Draft202012Validator
            )
            validator = validator_class(input_schema)
        self._validators[name] = validator
        return validator

    def replace(self, tool: ExecutableTool, *, schema_checked: bool = False) -> None:
        """Put ``tool`` in place of the registered tool of its name, keeping its place and its
        enabled state (a tool rebuilt for a new workspace, say). ``ToolNotFoundError`` if none.
        ``schema_checked`` as for ``register``."""
        tool = _adopt(tool)
        self._require(tool.name)
        self._check_schema(tool, against_metaschema=not schema_checked)
        self._tools[tool.name] = tool  # an existing key keeps its place in the order
        self._validators.pop(tool.name, None)

    def unregister(self, name: str) -> None:
        """Remove the tool called ``name``; an unknown name does nothing."""
        self._tools.pop(name, None)
        self._enabled.pop(name, None)
        self._validators.pop(name, None)

    def enable(self, name: str) -> None:
        self.set_enabled(name, True)

    def disable(self, name: str) -> None:
        self._require(name)
        self._enabled[name] = False

    def set_enabled(self, name: str, enabled: bool) -> None:
        """``enable(name)`` or ``disable(name)`` by flag; ``ManagedSettingError`` to enable a
        tool that is locked off."""
        self._require(name)
        refused = self._locked(name) if enabled else None
        if refused is not None:
            raise ManagedSettingError(refused)
        self._enabled[name] = bool(enabled)

    def _locked(self, name: str) -> str | None:
        return self.lock(name) if self.lock is not None else None

    def _require(self, name: str) -> None:
        if name not in self._tools:
            raise ToolNotFoundError(name, self.get_tool_names())

    # -- introspection -----------------------------------------------------------------------

    def get_enabled_schemas(self) -> list[dict[str, Any]]:
        # ``is_tool_enabled`` inline: the agent asks before every request
        enabled, lock = self._enabled, self.lock
        return [
            tool.get_schema()
            for name, tool in self._tools.items()
            if enabled.get(name, False) and (lock is None or lock(name) is None)
        ]

    def get_tool_names(self) -> list[str]:
        return list(self._tools)

    def has_tool(self, name: str) -> bool:
        return name in self._tools

    def is_tool_enabled(self, name: str) -> bool:
        return self._enabled.get(name, False) and self._locked(name) is None

    def get_tool(self, name: str) -> ExecutableTool | None:
        return self._tools.get(name)

    def list_tools(self) -> list[ExecutableTool]:
        return list(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __repr__(self) -> str:
        states = ", ".join(f"{n}{'' if e else ' (disabled)'}" for n, e in self._enabled.items())
        return f"<ToolRegistry [{states}]>"

    # -- running -----------------------------------------------------------------------------

    async def execute(self, name: str, args: Mapping[str, object]) -> str:
        """Run a tool and return its text; failures come back as error strings, never raised."""
        return (await self.call(name, args)).content

    async def call(self, name: str, args: Mapping[str, object]) -> ToolResult:
        """Run a tool; the result says whether it failed and how long it took.

        Every result's text is redacted (``redact``) before it is returned: the values of
        credentials never reach the model, the conversation or the record.
        """
        started = _clock()
        if type(name) is not str:  # not even a str subclass: its __str__ could raise
            return ToolResult(
                f"Error: tool not found: a tool name must be a string, not {type(name).__name__}",
                True,
                _clock() - started,
            )
        # One copy, checked and then handed to the tool: a tool may not change the caller's dict
        # (the agent keeps it in the history), and jsonschema wants a dict, not any Mapping.
        copied: dict[str, Any] = {}
        try:
            refusal = self._refusal(name, args, copied)
        except (Exception, RecursionError) as exc:  # e.g. a Mapping whose iteration raises
            refusal = (
                f"Error: invalid arguments for {name}: they could not be read "
                f"({type(exc).__name__}); send a JSON object"
            )
        if refusal is not None:
            return _result(refusal, True, started)
        try:
            output = await self._tools[name].execute(copied)
        except ToolInputError as exc:
            return _result(f"Error: invalid arguments for {name}: {exc}", True, started)
        except (Exception, SystemExit) as exc:
            # SystemExit too: a user's @tool that calls sys.exit() must not end the kernel.
            # KeyboardInterrupt and cancellation do go on: they are the user stopping the turn.
            return _result(f"Error executing {name}: {_describe(exc)}", True, started)
        if type(output) is str or isinstance(output, str):
            return _result(output, False, started)
        try:
            parts = ordered_parts(output)
        except BadPart as exc:
            return _result(f"Error executing {name}: {exc}", True, started)
        if parts is None:
            return ToolResult(
                f"Error executing {name}: the tool returned {type(output).__name__}, not text "
                "(or a list of text and Image parts)",
                True,
                _clock() - started,
            )
        if interleaved(parts):
            return _ordered_result(parts, started)
        texts = [part for part in parts if isinstance(part, str)]
        images = tuple(part for part in parts if isinstance(part, Image))
        return _result("\n".join(texts), False, started, images)

    def unavailable(self, name: object) -> str | None:
        """Why ``name`` cannot be called at all (unknown or disabled), or None if it can."""
        if not isinstance(name, str) or name not in self._tools:
            known = ", ".join(self.get_tool_names()) or "none"
            return f"Error: tool {name!r} not found (registered tools: {known})"
        if self._locked(name) is not None:
            return f"Error: tool {name!r} is not available: an administrator turned it off."
        if not self._enabled[name]:
            return f"Error: tool {name!r} is not available: it is disabled. The user can enable it."
        return None

    def _refusal(self, name: str, args: Mapping[str, object], copied: dict[str, Any]) -> str | None:
        """Why a call cannot run (unknown, disabled, bad arguments), or None if it can.

        ``copied`` receives a copy of ``args``, the one that was checked.
        """
        if name not in self._tools or not self.is_tool_enabled(name):
            return self.unavailable(name)
        if type(args) is not dict and not isinstance(args, Mapping):
            return (
                f"Error: invalid arguments for {name}: expected a JSON object, "
                f"got {type(args).__name__}"
            )
        problem = _measure(args)
        if problem is not None:
            return f"Error: invalid arguments for {name}: {problem}"
        copied.update(args)
        validators = self._validators
        validator = validators[name] if name in validators else self._validator(name)
        if validator is not None:
            try:
                if not validator.is_valid(copied):
                    return _schema_error_message(name, validator, copied)
            except (Exception, RecursionError) as exc:  # a value that breaks the checker
                return (
                    f"Error: invalid arguments for {name}: they could not be checked "
                    f"({type(exc).__name__}); send plain JSON values"
                )
        return None


def _adopt(tool: ExecutableTool) -> ExecutableTool:
    """``tool``, or for a function tool of the ``anthropic`` SDK (no ``get_schema``), our
    adapter of it."""
    if callable(getattr(tool, "get_schema", None)):
        return tool
    from .decorator import is_sdk_function_tool
    from .decorator import tool as make_tool

    if is_sdk_function_tool(tool):
        return make_tool(cast(Any, tool))
    raise TypeError(
        f"not a tool: {tool!r} has no get_schema(); wrap a function with @tool "
        "(jupyter_agent.tool) or pass an object with name, get_schema() and execute()"
    )


_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)


def _measure(args: Mapping[str, object]) -> str | None:
    """Why ``args`` are too deep or too large to check, or None; one pass, no recursion."""
    if type(args) is dict and len(args) <= 64:
        # the usual call: a few plain values; nothing nests, so only the text can be too large
        text = 0
        for key, value in args.items():
            kind = type(value)
            if kind is str:
                text += len(value)
            elif kind not in _SCALAR_TYPES:
                break
            if type(key) is not str:
                break
            text += len(key)
        else:
            if text <= MAX_ARGUMENT_CHARS:
                return None
    items = 0
    chars = 0
    pending: list[tuple[object, int]] = [(args, 1)]
    while pending:
        container, depth = pending.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return f"nested more than {MAX_ARGUMENT_DEPTH} levels deep"
        if isinstance(container, Mapping):
            children: Any = container.values()
            chars += sum(len(key) for key in container if isinstance(key, str))
        else:
            children = container
        for child in children:
            items += 1
            if isinstance(child, str):
                chars += len(child)
            elif isinstance(child, Mapping | list | tuple):
                pending.append((child, depth + 1))
        if items > MAX_ARGUMENT_ITEMS:
            return f"more than {MAX_ARGUMENT_ITEMS:,} values in all"
        if chars > MAX_ARGUMENT_CHARS:
            return f"more than {MAX_ARGUMENT_CHARS:,} characters of text in all"
    return None


def _result(
    content: str, is_error: bool, started: float, images: tuple[Image, ...] = ()
) -> ToolResult:
    """The ``ToolResult`` of a call, its text redacted (the one place every result passes)."""
    text, redacted = redact(content)
    return ToolResult(text, is_error, _clock() - started, images, redacted)


def _ordered_result(parts: tuple[str | Image, ...], started: float) -> ToolResult:
    """The ``ToolResult`` of text and images whose order matters: each text part redacted where
    it stands, ``content`` their join."""
    kept: list[str | Image] = []
    redacted = 0
    for part in parts:
        if isinstance(part, str):
            part, found = redact(part)
            redacted += found
        kept.append(part)
    text = "\n".join(part for part in kept if isinstance(part, str))
    images = tuple(part for part in kept if isinstance(part, Image))
    return ToolResult(text, False, _clock() - started, images, redacted, tuple(kept))


def _describe(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # an exception whose __str__ itself fails
        message = ""
    if isinstance(exc, SystemExit):
        return f"the tool called sys.exit({message})" if message else "the tool called sys.exit()"
    return message if message else type(exc).__name__


def _schema_error_message(name: str, validator: Validator, args: dict[str, Any]) -> str:
    # At most MAX_COLLECTED_SCHEMA_ERRORS are collected: each one formats its value.
    collected = list(itertools.islice(validator.iter_errors(args), MAX_COLLECTED_SCHEMA_ERRORS + 1))
    from .schema_validation import jsonschema_exceptions

    errors = sorted(collected[:MAX_COLLECTED_SCHEMA_ERRORS], key=jsonschema_exceptions.relevance)
    parts = []
    for error in errors[:MAX_REPORTED_SCHEMA_ERRORS]:
        where = "/".join(str(p) for p in error.absolute_path)
        message = error.message
        if len(message) > MAX_SCHEMA_MESSAGE_CHARS:
            message = message[:MAX_SCHEMA_MESSAGE_CHARS] + "…"
        parts.append(f"{where}: {message}" if where else message)
    more = len(errors) - MAX_REPORTED_SCHEMA_ERRORS
    if len(collected) > MAX_COLLECTED_SCHEMA_ERRORS:
        parts.append("and more")
    elif more > 0:
        parts.append(f"and {more} more")
    return f"Error: invalid arguments for {name}: " + "; ".join(parts)
