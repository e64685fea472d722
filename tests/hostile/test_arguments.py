"""Hostile tool arguments through the default registry: every call returns a ToolResult.

Arguments are whatever the model wrote (or a Python caller passed). Nested ~1,000 deep they used
to make ``registry.call`` raise ``RecursionError`` while writing the value into a validation
message; values whose ``repr`` fails or is refused (a 5,000-digit int) did the same.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_agent.tools.base import ToolResult
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.registry import (
    MAX_ARGUMENT_CHARS,
    MAX_ARGUMENT_DEPTH,
    MAX_ARGUMENT_ITEMS,
    ToolRegistry,
)


@tool
def total(values: list[int], label: str = "") -> str:
    """Add up some numbers (a user's own tool: pydantic validates its arguments)."""
    return f"{label}{sum(values)}"


def hostile_registry(workspace: Path) -> ToolRegistry:
    registry = create_default_registry(ToolContext(workspace))
    # web_fetch would look up whatever host name a generated URL holds: nothing may leave the
    # machine. Disabled, it still refuses, but before validation; tools/test_web.py covers it.
    registry.disable("web_fetch")
    registry.register(total)
    return registry


@pytest.fixture(scope="module")
def registry() -> Iterator[ToolRegistry]:
    with tempfile.TemporaryDirectory() as workspace:
        yield hostile_registry(Path(workspace))


def nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def nested_dict(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr refuses")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq refuses")

    __hash__ = object.__hash__


class BrokenMapping(Mapping[str, object]):
    def __getitem__(self, key: str) -> object:
        raise RuntimeError("no items")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no iteration")

    def __len__(self) -> int:
        return 1


def self_containing() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def call(registry: ToolRegistry, name: Any, args: Any) -> ToolResult:
    return asyncio.run(registry.call(name, args))


ALL_TOOLS = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "mkdir",
    "move",
    "search_text",
    "search_files",
    "save_session_context",
    "git_commit",
    "total",
]


@pytest.mark.parametrize("name", ALL_TOOLS)
@pytest.mark.parametrize("depth", [1_000, 100_000])
@pytest.mark.parametrize("shape", [nested_list, nested_dict])
def test_deep_nesting_is_refused_before_validation(
    registry: ToolRegistry, name: str, depth: int, shape: Any
) -> None:
    result = call(registry, name, {"file_path": shape(depth), "values": shape(depth)})
    assert isinstance(result, ToolResult)
    assert result.is_error
    assert f"nested more than {MAX_ARGUMENT_DEPTH} levels deep" in result.content


def test_nesting_within_the_limit_is_validated_as_usual(registry: ToolRegistry) -> None:
    result = call(registry, "read_file", {"file_path": nested_list(MAX_ARGUMENT_DEPTH - 2)})
    assert result.is_error
    assert "is not of type 'string'" in result.content
    assert len(result.content) < 2_000  # the quoted value is cut


def test_huge_string_and_many_items_are_refused(registry: ToolRegistry) -> None:
    huge = call(
        registry, "write_file", {"file_path": "a.txt", "content": "x" * (MAX_ARGUMENT_CHARS + 1)}
    )
    assert huge.is_error
    assert "characters of text" in huge.content
    many = call(registry, "total", {"values": list(range(MAX_ARGUMENT_ITEMS + 1))})
    assert many.is_error
    assert "values in all" in many.content
    # Just under the caps, the calls are checked and run as usual.
    assert call(registry, "total", {"values": [1, 2, 3]}).content == "6"


@pytest.mark.parametrize(
    "args",
    [
        {"file_path": BrokenRepr()},
        {"values": [BrokenRepr()]},
        {"file_path": 10**5000},  # repr() refuses ints this long
        {"file_path": self_containing()},
        {"file_path": {1: "x", (2, 3): "y"}},
        {"file_path": b"bytes", "content": {"a", "b"}},
        {"file_path": math.nan, "content": math.inf},
        BrokenMapping(),
        ["not", "a", "mapping"],
        None,
    ],
    ids=lambda value: type(value).__name__,
)
@pytest.mark.parametrize("name", ["read_file", "write_file", "total"])
def test_odd_values_give_an_error_result(registry: ToolRegistry, name: str, args: Any) -> None:
    result = call(registry, name, args)
    assert isinstance(result, ToolResult)
    assert result.is_error
    assert result.content.startswith("Error")


def test_odd_tool_names_give_an_error_result(registry: ToolRegistry) -> None:
    for name in (["read_file"], None, 5, "x" * 100_000):
        result = call(registry, name, {})
        assert result.is_error
        assert "not found" in result.content


# -- fuzzing ------------------------------------------------------------------------------------

odd_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**4400, max_value=10**4500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=200),
    st.binary(max_size=20),
    st.builds(BrokenRepr),
    st.builds(object),
)
hostile_values = st.recursive(
    odd_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.tuples(children, children),
        st.dictionaries(st.text(max_size=10), children, max_size=5),
        st.dictionaries(st.integers(), children, max_size=3),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=30,
)
argument_keys = st.sampled_from(
    [
        "file_path",
        "path",
        "paths",
        "content",
        "old_string",
        "new_string",
        "replace_all",
        "offset",
        "limit",
        "pattern",
        "glob",
        "source",
        "destination",
        "message",
        "values",
        "label",
        "x",
    ]
)
hostile_arguments = st.one_of(
    st.dictionaries(argument_keys, hostile_values, max_size=4),
    hostile_values,
)


@given(name=st.sampled_from([*ALL_TOOLS, "run_bash", "remove", "nope"]), args=hostile_arguments)
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_every_call_returns_a_tool_result(registry: ToolRegistry, name: str, args: Any) -> None:
    result = call(registry, name, args)
    assert isinstance(result, ToolResult)
    assert isinstance(result.content, str)


async def test_a_tool_name_whose_str_raises_is_an_error_result() -> None:
    """Found by the hostile review: the name itself was put into a message with str()."""
    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.factory import create_default_registry

    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("boom str")

        __repr__ = __str__

    registry = create_default_registry(ToolContext("."))
    result = await registry.call(Hostile(), {})  # type: ignore[arg-type]
    assert result.is_error and "must be a string" in result.content


async def test_a_huge_search_pattern_is_refused_without_freezing_the_loop(
    tmp_path: Path,
) -> None:
    """Found by the hostile review: re.compile of a 60,000-character case-insensitive pattern
    held the event loop for 44 s."""

    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.factory import create_default_registry

    registry = create_default_registry(ToolContext(tmp_path))
    pattern = "[\u0100-\uffff]" * 4000
    # compiled first, it would hold the loop for ~44 s: refused first, it ends well within 20 s
    call = registry.call("search_text", {"pattern": pattern, "case_insensitive": True})
    result = await asyncio.wait_for(call, 20)
    assert result.is_error and "at most" in result.content
