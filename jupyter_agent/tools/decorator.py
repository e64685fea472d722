"""``@tool``: turn a typed Python function into a tool the agent can call.

This is how notebook users add their own tools. The schema comes from the signature (pydantic
builds the JSON Schema from the type hints) and the docstring (its summary becomes the tool's
description, its ``Args:`` entries the parameters' descriptions). Calls are validated and coerced
by pydantic with a validator compiled once; a sync function runs in a worker thread so that
several calls of one model turn do not block each other or the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, cast, overload

import docstring_parser
import pydantic
from pydantic.experimental.arguments_schema import generate_arguments_schema
from pydantic_core import ArgsKwargs, SchemaValidator

from ..errors import ToolInputError
from .base import ToolCapabilities

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
    ) -> None:
        if not callable(func):
            raise TypeError(f"@tool needs a function, not {type(func).__name__}")
        self.func = func
        self.name: str = name or str(getattr(func, "__name__", ""))
        if not self.name or self.name == "<lambda>":
            raise ValueError("@tool needs a name for this function: use @tool(name=...)")
        self.capabilities = ToolCapabilities(destructive=destructive, validates_arguments=True)
        docstring = docstring_parser.parse(inspect.getdoc(func) or "")
        self.description: str = (
            description if description is not None else _describe(docstring, self.name)
        )
        self.input_schema: dict[str, Any] = _input_schema(func, docstring)
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

    async def execute(self, args: dict[str, object]) -> str:
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
        return result if type(result) is str else to_text(result)

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
        return FunctionTool(fn, name=name, description=description, destructive=destructive)

    return make(func) if func is not None else make


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
    described = {p.arg_name: p.description for p in docstring.params if p.description}
    for arg_name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        prop.pop("title", None)  # pydantic's "Title Case" of the name says nothing new
        if arg_name in described and "description" not in prop:
            prop["description"] = described[arg_name]
    return schema


def _validation_message(exc: pydantic.ValidationError) -> str:
    parts = []
    errors = exc.errors(include_url=False, include_input=False)
    for error in errors[:MAX_REPORTED_ERRORS]:
        where = ".".join(str(p) for p in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    if len(errors) > MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - MAX_REPORTED_ERRORS} more")
    return "; ".join(parts)
