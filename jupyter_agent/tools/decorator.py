"""``@tool``: turn a typed Python function into a tool the agent can call.

This is how notebook users add their own tools. The schema comes from the signature (pydantic
builds the JSON Schema from the type hints) and the docstring (its summary becomes the tool's
description, its ``Args:`` entries the parameters' descriptions; claudette/toolslm-style inline
comments after a parameter describe it too, the docstring winning). Calls are validated and coerced
by pydantic with a validator compiled once; a sync function runs in a worker thread so that
several calls of one model turn do not block each other or the event loop.

Tools written for the ``anthropic`` SDK's runner (``@beta_tool``, ``@beta_async_tool`` objects)
are taken as they are: ``tool(obj)``, ``agent.add_tool(obj)`` and ``registry.register(obj)`` wrap
them with the SDK's name, description and schema. A function may return text, data (sent as
JSON), or content: ``Image`` parts and the SDK's content blocks, which reach the model as images
(``parts.py``).
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import textwrap
import tokenize
from collections.abc import Callable, Mapping
from typing import Any, cast, overload

import docstring_parser
import pydantic
from pydantic.experimental.arguments_schema import generate_arguments_schema
from pydantic_core import ArgsKwargs, SchemaValidator

from ..errors import ToolInputError
from .base import ToolCapabilities, ToolOutput
from .parts import is_content

__all__ = ["FunctionTool", "tool"]

#: How many pydantic validation errors one message lists.
MAX_REPORTED_ERRORS = 5

ToolFunction = Callable[..., Any]


class FunctionTool:
    """An ``ExecutableTool`` wrapping a function; calling the object still calls the function.

    Its ``capabilities`` say that ``execute`` validates (and coerces) its own arguments, and
    whether the tool is destructive (``@tool(destructive=True)``).
    """

    def __init__(
        self,
        func: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        destructive: bool = False,
        input_schema: dict[str, Any] | None = None,
        validates_arguments: bool = True,
    ) -> None:
        if not callable(func):
            raise TypeError(f"@tool needs a function, not {type(func).__name__}")
        self.func = func
        self.name: str = name or str(getattr(func, "__name__", ""))
        if not self.name or self.name == "<lambda>":
            raise ValueError("@tool needs a name for this function: use @tool(name=...)")
        self.capabilities = ToolCapabilities(
            destructive=destructive, validates_arguments=validates_arguments
        )
        docstring = docstring_parser.parse(inspect.getdoc(func) or "")
        self.description: str = (
            description if description is not None else _describe(docstring, self.name)
        )
        self.input_schema: dict[str, Any] = (
            input_schema if input_schema is not None else _input_schema(func, docstring)
        )
        self._is_async = _is_async_callable(func)
        # Arguments are validated apart from the call, so that a ValidationError raised inside
        # the function's body is reported as the tool failing, not as bad arguments.
        self._validate = SchemaValidator(generate_arguments_schema(func)).validate_python

    def get_schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    async def execute(self, args: dict[str, object]) -> ToolOutput:
        try:
            positional, keywords = self._validate(ArgsKwargs((), args))
        except pydantic.ValidationError as exc:
            raise ToolInputError(_validation_message(exc)) from None
        if self._is_async:
            result = await self.func(*positional, **keywords)
        else:
            result = await asyncio.to_thread(self.func, *positional, **keywords)
            if inspect.isawaitable(result):
                result = await result
        if type(result) is str:
            return result
        # text and images (ours, or the SDK's content blocks) go to the registry as they are
        return result if is_content(result) else to_text(result)

    @property
    def destructive(self) -> bool:
        """``capabilities.destructive``: the agent asks the user before each call by default."""
        return self.capabilities.destructive

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name!r}>"


@overload
def tool(func: ToolFunction, /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool = False,
) -> Callable[[ToolFunction], FunctionTool]: ...


def tool(
    func: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    destructive: bool = False,
) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """Make a tool of a typed function, sync or async: ``@tool`` or ``@tool(name=...)``.

    ``destructive=True`` makes the agent ask the user before each call by default.
    """

    def make(fn: ToolFunction) -> FunctionTool:
        if is_sdk_function_tool(fn):
            return _adopt_sdk_tool(fn, name=name, description=description, destructive=destructive)
        return FunctionTool(fn, name=name, description=description, destructive=destructive)

    return make(func) if func is not None else make


def is_sdk_function_tool(obj: object) -> bool:
    """Whether ``obj`` is a function tool of the ``anthropic`` SDK (``@beta_tool``,
    ``@beta_async_tool``): its function, name, description and input schema as attributes, and
    ``to_dict``/``call``. Told by its shape: the SDK is not imported."""
    return (
        callable(getattr(obj, "func", None))
        and isinstance(getattr(obj, "name", None), str)
        and isinstance(getattr(obj, "input_schema", None), Mapping)
        and callable(getattr(obj, "to_dict", None))
        and callable(getattr(obj, "call", None))
    )


def _adopt_sdk_tool(
    sdk_tool: Any, *, name: str | None, description: str | None, destructive: bool
) -> FunctionTool:
    """Our tool for an SDK function tool: its name, description and input schema as the SDK
    made them; its function called as the SDK's runner calls it (arguments validated by pydantic
    against the function, sync functions in a thread). The registry also checks arguments
    against the schema the model saw, which the SDK lets a user give apart from the function."""
    schema = dict(sdk_tool.input_schema)
    schema.setdefault("type", "object")
    return FunctionTool(
        sdk_tool.func,
        name=name or sdk_tool.name,
        description=description if description is not None else (sdk_tool.description or None),
        destructive=destructive,
        input_schema=schema,
        validates_arguments=False,
    )


def to_text(value: object) -> str:
    """A tool's return value as the text the model sees: JSON for data, ``str()`` otherwise."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump_json()
    if isinstance(value, Mapping | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _is_async_callable(func: ToolFunction) -> bool:
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(func, "__call__", None)  # noqa: B004 - an object with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _describe(docstring: docstring_parser.Docstring, name: str) -> str:
    parts = [p for p in (docstring.short_description, docstring.long_description) if p]
    return "\n\n".join(parts) if parts else name.replace("_", " ")


def _input_schema(func: ToolFunction, docstring: docstring_parser.Docstring) -> dict[str, Any]:
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(cast(Any, func))
    schema: dict[str, Any] = adapter.json_schema()
    if schema.get("type") != "object":  # pragma: no cover - pydantic always gives an object
        raise TypeError(f"Cannot build an object schema for {func!r}")
    properties: dict[str, Any] = schema.setdefault("properties", {})
    # the docstring's Args win over inline comments where both describe a parameter
    described = _comment_descriptions(func)
    described.update({p.arg_name: p.description for p in docstring.params if p.description})
    for arg_name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        prop.pop("title", None)  # pydantic's "Title Case" of the name says nothing new
        if arg_name in described and "description" not in prop:
            prop["description"] = described[arg_name]
    return schema


def _comment_descriptions(func: ToolFunction) -> dict[str, str]:
    """Parameter descriptions from inline comments, as claudette and toolslm read them::

        def scale(a: int,  # the number
                  # how much (a comment on its own line describes the parameter below it)
                  factor: float = 2.0): ...

    Read from the function's source with ``tokenize``; ``{}`` when there is no source (a
    function made by ``exec``, a builtin) or it cannot be read.
    """
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError, IndentationError):
        return {}
    descriptions: dict[str, list[str]] = {}
    depth = 0
    in_signature = False
    seen_def = False
    expect_name = False
    current: str | None = None
    current_line = -1
    above: list[str] = []
    for token in tokens:
        kind, value = token.type, token.string
        if not in_signature:
            if kind == tokenize.NAME and value == "def" and depth == 0:
                seen_def = True
            elif kind == tokenize.OP and value in "([{":
                depth += 1
                if seen_def and value == "(" and depth == 1:
                    in_signature, expect_name = True, True
            elif kind == tokenize.OP and value in ")]}":
                depth -= 1
            continue
        if kind == tokenize.OP and value in "([{":
            depth += 1
        elif kind == tokenize.OP and value in ")]}":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and kind == tokenize.OP and value == ",":
            expect_name = True
        elif depth == 1 and kind == tokenize.NAME and expect_name:
            current, current_line, expect_name = value, token.start[0], False
            if above:
                descriptions.setdefault(current, []).extend(above)
                above = []
        elif kind == tokenize.COMMENT:
            text = value.lstrip("#").strip()
            if not text:
                continue
            if current is not None and token.start[0] == current_line:
                descriptions.setdefault(current, []).append(text)
            elif token.line[: token.start[1]].strip() == "":
                above.append(text)  # a comment line of its own: the parameter below
    return {name: " ".join(parts) for name, parts in descriptions.items()}


def _validation_message(exc: pydantic.ValidationError) -> str:
    parts = []
    errors = exc.errors(include_url=False, include_input=False)
    for error in errors[:MAX_REPORTED_ERRORS]:
        where = ".".join(str(p) for p in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    if len(errors) > MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - MAX_REPORTED_ERRORS} more")
    return "; ".join(parts)
