"""Reading a built-in tool's arguments with the types its schema promises.

The registry validates arguments against each tool's ``input_schema`` before a call, but a tool
can also be run on its own (``await tool.execute({...})``); these helpers keep that path safe
and give the same clear ``ToolInputError`` either way. JSON has no integers distinct from floats
for some clients, so ``3.0`` is accepted as ``3``; ``True`` is never taken for ``1``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ToolInputError

__all__ = ["bool_arg", "int_arg", "optional_int_arg", "optional_str_arg", "str_arg"]


def str_arg(args: Mapping[str, object], key: str) -> str:
    """A required string argument."""
    if key not in args:
        raise ToolInputError(f"'{key}' is required")
    value = args[key]
    if not isinstance(value, str):
        raise ToolInputError(f"'{key}' must be a string, not {_json_type(value)}")
    return value


def optional_str_arg(args: Mapping[str, object], key: str) -> str | None:
    """An optional string argument; a JSON ``null`` counts as absent."""
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolInputError(f"'{key}' must be a string, not {_json_type(value)}")
    return value


def optional_int_arg(
    args: Mapping[str, object], key: str, *, minimum: int | None = None
) -> int | None:
    """An optional integer argument, at least ``minimum``; ``null`` counts as absent."""
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"'{key}' must be an integer, not {_json_type(value)}")
    if minimum is not None and value < minimum:
        raise ToolInputError(f"'{key}' must be at least {minimum}, not {value}")
    return value


def int_arg(
    args: Mapping[str, object], key: str, default: int, *, minimum: int | None = None
) -> int:
    value = optional_int_arg(args, key, minimum=minimum)
    return default if value is None else value


def bool_arg(args: Mapping[str, object], key: str, default: bool) -> bool:
    """An optional boolean argument; ``null`` counts as absent."""
    value = args.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ToolInputError(f"'{key}' must be true or false, not {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
