"""Tool capabilities are declared on the tool contract and read through ``capabilities_of``.

"Disabled by default" in the default registry and the agent's default ``ask`` policy both come
from ``ToolCapabilities.destructive``; the registry's schema check is skipped only for tools that
declare ``validates_arguments``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import pytest

from jupyter_agent.agent.agent import Agent
from jupyter_agent.providers.offline import OfflineProvider
from jupyter_agent.tools.base import (
    DEFAULT_CAPABILITIES,
    BuiltinTool,
    ToolCapabilities,
    capabilities_of,
)
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.factory import DISABLED_BY_DEFAULT, create_default_registry
from jupyter_agent.tools.registry import ToolRegistry

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "additionalProperties": False,
}


class Shredder(BuiltinTool):
    name = "shredder"
    description = "Destroys things."
    input_schema: ClassVar[dict[str, Any]] = SCHEMA
    capabilities = ToolCapabilities(destructive=True)

    async def execute(self, args: dict[str, object]) -> str:
        return f"shredded {args.get('n')}"


class ShorthandShredder(BuiltinTool):
    name = "shorthand_shredder"
    description = "Destroys things, declared with the shorthand."
    input_schema: ClassVar[dict[str, Any]] = SCHEMA
    destructive = True


class GentleShredder(Shredder):
    name = "gentle_shredder"
    destructive = False


class ThirdPartyTool:
    """A tool from elsewhere: the protocol's three members and nothing declared."""

    name = "third_party"

    def get_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": "x", "input_schema": SCHEMA}

    async def execute(self, args: dict[str, object]) -> str:
        return f"got {args.get('n')!r}"


class OldStyleDestructiveTool(ThirdPartyTool):
    """A third-party tool using the older spelling: a bare ``destructive`` attribute."""

    name = "old_style"
    destructive = True


class SelfValidatingTool(ThirdPartyTool):
    name = "self_validating"
    capabilities = ToolCapabilities(validates_arguments=True)


def test_capabilities_are_a_frozen_declaration() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_CAPABILITIES.destructive = True  # type: ignore[misc]
    assert capabilities_of(ThirdPartyTool()) == ToolCapabilities()


def test_builtin_declarations_and_the_shorthand_agree(tmp_path: Path) -> None:
    context = ToolContext(tmp_path)
    assert capabilities_of(Shredder(context)).destructive is True
    assert Shredder.destructive is True  # the shorthand follows the declaration
    assert ShorthandShredder.capabilities == ToolCapabilities(destructive=True)
    assert GentleShredder.capabilities.destructive is False
    assert capabilities_of(OldStyleDestructiveTool()).destructive is True
    assert capabilities_of(None) == DEFAULT_CAPABILITIES


def test_disabled_by_default_is_derived_from_the_declarations(tmp_path: Path) -> None:
    registry = create_default_registry(ToolContext(tmp_path))
    declared = [t.name for t in registry.list_tools() if capabilities_of(t).destructive]
    assert declared == ["remove", "run_bash"]
    assert tuple(declared) == DISABLED_BY_DEFAULT
    for each in registry.list_tools():
        assert registry.is_tool_enabled(each.name) is not capabilities_of(each).destructive


def test_agent_default_policy_follows_destructive(tmp_path: Path) -> None:
    registry = ToolRegistry()
    for each in (Shredder(ToolContext(tmp_path)), ThirdPartyTool(), OldStyleDestructiveTool()):
        registry.register(each)

    @tool(destructive=True)
    def wipe() -> str:
        """Wipe."""
        return "wiped"

    registry.register(wipe)
    agent = Agent(OfflineProvider(), workspace=tmp_path, registry=registry)
    assert agent.get_policy("shredder") == "ask"
    assert agent.get_policy("old_style") == "ask"
    assert agent.get_policy("wipe") == "ask"
    assert wipe.destructive is True
    assert agent.get_policy("third_party") == "allow"


async def test_only_declared_self_validation_skips_the_schema_check() -> None:
    registry = ToolRegistry()
    registry.register(ThirdPartyTool())
    registry.register(SelfValidatingTool())
    checked = await registry.call("third_party", {"n": "five"})
    assert checked.is_error
    assert "is not of type 'integer'" in checked.content
    unchecked = await registry.call("self_validating", {"n": "five"})
    assert unchecked.content == "got 'five'"
    assert capabilities_of(tool(lambda n: n, name="f")).validates_arguments is True
