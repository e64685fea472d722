"""@tool: typed functions become tools — schema, validation and coercion, sync and async."""

from __future__ import annotations

import asyncio
import threading
from typing import Literal

import pytest
from pydantic import BaseModel

from jupyter_agent.errors import ToolInputError
from jupyter_agent.tools.base import ExecutableTool
from jupyter_agent.tools.decorator import FunctionTool, tool
from jupyter_agent.tools.registry import ToolRegistry


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Handy for arithmetic.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool(name="shout", description="Make text loud.")
async def loud(text: str, times: int = 1) -> str:
    """Ignored because description= is given.

    Args:
        text: What to shout.
    """
    return (text.upper() + "!") * times


class Point(BaseModel):
    x: float
    y: float


@tool
def describe(point: Point, unit: Literal["m", "km"] = "m", tags: list[str] | None = None) -> dict:
    """Describe a point."""
    return {"x": point.x, "y": point.y, "unit": unit, "tags": tags or []}


def test_schema_from_hints_and_docstring() -> None:
    schema = add.get_schema()
    assert schema["name"] == add.name == "add"
    assert schema["description"] == "Add two numbers.\n\nHandy for arithmetic."
    input_schema = schema["input_schema"]
    assert input_schema["type"] == "object"
    assert input_schema["required"] == ["a"]
    assert input_schema["properties"]["a"] == {
        "type": "integer",
        "description": "The first number.",
    }
    assert input_schema["properties"]["b"]["default"] == 2
    assert input_schema["properties"]["b"]["description"] == "The second number."
    assert input_schema["additionalProperties"] is False


def test_name_and_description_overrides() -> None:
    schema = loud.get_schema()
    assert schema["name"] == "shout" == loud.name
    assert schema["description"] == "Make text loud."
    assert schema["input_schema"]["properties"]["text"]["description"] == "What to shout."


def test_nested_models_and_literals_in_schema() -> None:
    input_schema = describe.get_schema()["input_schema"]
    assert input_schema["properties"]["unit"]["enum"] == ["m", "km"]
    assert "$defs" in input_schema and "Point" in input_schema["$defs"]


def test_function_tool_is_an_executable_tool_and_still_callable() -> None:
    assert isinstance(add, FunctionTool)
    assert isinstance(add, ExecutableTool)
    assert add(3, 4) == 7


async def test_sync_and_async_execution_with_coercion() -> None:
    assert await add.execute({"a": "5"}) == "7"  # pydantic lax mode: "5" -> 5
    assert await loud.execute({"text": "hi", "times": 2}) == "HI!HI!"
    out = await describe.execute({"point": {"x": "1.5", "y": 2}, "tags": ["a"]})
    assert out == '{"x": 1.5, "y": 2.0, "unit": "m", "tags": ["a"]}'


async def test_invalid_arguments_raise_tool_input_error_before_running() -> None:
    ran: list[int] = []

    @tool
    def record(n: int) -> str:
        ran.append(n)
        return "ran"

    for bad in ({}, {"n": "abc"}, {"n": 1, "extra": True}):
        with pytest.raises(ToolInputError):
            await record.execute(bad)
    assert ran == []


async def test_registry_reports_invalid_arguments_and_does_not_run() -> None:
    ran: list[str] = []

    @tool
    async def greet(name: str) -> str:
        ran.append(name)
        return f"hello {name}"

    registry = ToolRegistry()
    registry.register(greet)
    bad = await registry.call("greet", {"name": ["x"]})
    assert bad.is_error and bad.content.startswith("Error: invalid arguments for greet: name")
    missing = await registry.call("greet", {})
    assert missing.is_error and "name: Missing required argument" in missing.content
    assert ran == []
    ok = await registry.call("greet", {"name": "Ada"})
    assert (ok.content, ok.is_error) == ("hello Ada", False)


async def test_validation_error_inside_the_body_is_a_tool_error_not_bad_input() -> None:
    @tool
    async def inner() -> str:
        Point.model_validate({"x": "not a number", "y": 0})
        return "unreachable"

    registry = ToolRegistry()
    registry.register(inner)
    result = await registry.call("inner", {})
    assert result.is_error and result.content.startswith("Error executing inner:")


async def test_raising_function_gives_error_executing() -> None:
    @tool
    def explode() -> str:
        raise RuntimeError("kaboom")

    registry = ToolRegistry()
    registry.register(explode)
    assert await registry.execute("explode", {}) == "Error executing explode: kaboom"


async def test_return_values_become_text() -> None:
    @tool
    def nothing() -> None:
        return None

    @tool
    def listing() -> list[int]:
        return [1, 2]

    @tool
    def number() -> float:
        return 2.5

    @tool
    def model() -> Point:
        return Point(x=1, y=2)

    assert await nothing.execute({}) == ""
    assert await listing.execute({}) == "[1, 2]"
    assert await number.execute({}) == "2.5"
    assert await model.execute({}) == '{"x":1.0,"y":2.0}'


async def test_sync_functions_run_in_worker_threads_in_parallel() -> None:
    """Each call waits in its thread for all four to be running: in series the first would wait
    for ever (the barrier's timeout only turns that hang into a failed call)."""
    loop_thread = threading.get_ident()
    seen: list[int] = []
    all_running = threading.Barrier(4, timeout=10)

    @tool
    def slow() -> str:
        seen.append(threading.get_ident())
        all_running.wait()
        return "ok"

    registry = ToolRegistry()
    registry.register(slow)
    results = await asyncio.gather(*(registry.call("slow", {}) for _ in range(4)))
    assert [r.content for r in results] == ["ok"] * 4, results
    assert loop_thread not in seen
    assert len(set(seen)) == 4  # four threads at once


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ValueError):
        tool(lambda x: x)
    named = tool(name="ident")(lambda x: x)
    assert named.name == "ident"


def test_destructive_flag() -> None:
    @tool(destructive=True)
    def wipe() -> str:
        return "wiped"

    assert wipe.destructive is True
    assert add.destructive is False


def test_function_without_docstring_gets_a_description() -> None:
    @tool
    def plain_thing(x: int) -> int:
        return x

    assert plain_thing.get_schema()["description"] == "plain thing"
    assert "title" not in plain_thing.input_schema["properties"]["x"]
