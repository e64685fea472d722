"""ToolRegistry: every registry scenario of seeds 000, 001 and 003, plus SPEC.md's table."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from jupyter_agent.errors import DuplicateToolError, ToolInputError, ToolNotFoundError
from jupyter_agent.tools.base import BuiltinTool, ExecutableTool, ToolResult
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.registry import ToolRegistry


class RecordingTool:
    """A real tool that records its calls; ``fail`` makes it raise."""

    def __init__(self, name: str, *, fail: BaseException | None = None, output: Any = None):
        self.name = name
        self.calls: list[dict[str, object]] = []
        self._fail = fail
        self._output = output

    def get_schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": f"The {self.name} tool.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
                "additionalProperties": False,
            },
        }

    async def execute(self, args: dict[str, object]) -> str:
        self.calls.append(args)
        await asyncio.sleep(0)
        if self._fail is not None:
            raise self._fail
        if self._output is not None:
            return self._output  # type: ignore[no-any-return]
        return f"{self.name}:{args.get('text', '')}"


class SyncRaisingTool(RecordingTool):
    """Raises before its coroutine ever awaits (the seed's 'synchronous error')."""

    async def execute(self, args: dict[str, object]) -> str:
        raise RuntimeError("boom now")


def names(schemas: list[dict[str, Any]]) -> list[str]:
    return [s["name"] for s in schemas]


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry()


# -- ExecutableTool interface (001, 000) ---------------------------------------------------------


async def test_tool_provides_schema_and_executes() -> None:
    tool = RecordingTool("echo")
    assert isinstance(tool, ExecutableTool)
    schema = tool.get_schema()
    assert schema["name"] == tool.name == "echo"
    assert set(schema) == {"name", "description", "input_schema"}
    assert await tool.execute({"text": "hi"}) == "echo:hi"


def test_builtin_tool_schema_name_matches() -> None:
    class Hello(BuiltinTool):
        name = "hello"
        description = "Say hello."
        input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

        async def execute(self, args: dict[str, object]) -> str:
            return "hello"

    tool = Hello(ToolContext("."))
    assert tool.get_schema() == {
        "name": "hello",
        "description": "Say hello.",
        "input_schema": {"type": "object", "properties": {}},
    }
    assert isinstance(tool, ExecutableTool)


# -- lifecycle (001) -----------------------------------------------------------------------------


def test_register_adds_enabled(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("a"))
    assert registry.has_tool("a")
    assert registry.is_tool_enabled("a")
    assert names(registry.get_enabled_schemas()) == ["a"]


def test_unregister_existing_and_unknown(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("a"))
    registry.unregister("a")
    assert not registry.has_tool("a")
    assert registry.get_tool_names() == []
    registry.unregister("a")  # idempotent
    registry.unregister("never-there")
    assert registry.get_tool_names() == []


def test_enable_disable_flip_schemas(registry: ToolRegistry) -> None:
    for n in ("a", "b", "c"):
        registry.register(RecordingTool(n))
    registry.disable("b")
    assert names(registry.get_enabled_schemas()) == ["a", "c"]
    assert registry.get_tool_names() == ["a", "b", "c"]
    registry.enable("b")
    assert names(registry.get_enabled_schemas()) == ["a", "b", "c"]


def test_enable_disable_unknown_raise_lookup_error(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("a"))
    with pytest.raises(ToolNotFoundError) as info:
        registry.enable("nope")
    assert isinstance(info.value, LookupError)
    assert "nope" in str(info.value)
    with pytest.raises(LookupError):
        registry.disable("nope")


def test_reregister_after_unregister(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("a"))
    registry.disable("a")
    registry.unregister("a")
    registry.register(RecordingTool("a"))
    assert registry.is_tool_enabled("a")


# -- introspection (000, 003) --------------------------------------------------------------------


def test_get_tool_names_order_and_empty(registry: ToolRegistry) -> None:
    assert registry.get_tool_names() == []
    for n in ("zeta", "alpha", "mid"):
        registry.register(RecordingTool(n))
    registry.disable("alpha")
    assert registry.get_tool_names() == ["zeta", "alpha", "mid"]


def test_has_tool_and_is_tool_enabled(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("on"))
    registry.register(RecordingTool("off"))
    registry.disable("off")
    assert registry.has_tool("on") and registry.has_tool("off")
    assert not registry.has_tool("ghost")
    assert registry.is_tool_enabled("on") is True
    assert registry.is_tool_enabled("off") is False
    assert registry.is_tool_enabled("ghost") is False


def test_list_tools_and_get_tool(registry: ToolRegistry) -> None:
    assert registry.list_tools() == []
    tools = [RecordingTool(n) for n in ("read_file", "write_file", "shell_exec", "git_commit")]
    for t in tools:
        registry.register(t)
    listed = registry.list_tools()
    assert listed == tools
    for t in listed:
        schema = t.get_schema()
        assert schema["name"] == t.name and schema["description"] and schema["input_schema"]
    assert registry.get_tool("shell_exec") is tools[2]
    assert registry.get_tool("unknown") is None
    assert set(registry.get_tool_names()) == {t.name for t in tools}


def test_duplicate_name_raises_naming_it(registry: ToolRegistry) -> None:
    first = RecordingTool("dup")
    registry.register(first)
    with pytest.raises(DuplicateToolError) as info:
        registry.register(RecordingTool("dup"))
    assert "dup" in str(info.value)
    assert registry.get_tool("dup") is first  # not last-wins


def test_schema_name_mismatch_is_value_error(registry: ToolRegistry) -> None:
    class Liar(RecordingTool):
        def get_schema(self) -> dict[str, Any]:
            return {**super().get_schema(), "name": "other"}

    with pytest.raises(ValueError, match="other"):
        registry.register(Liar("liar"))
    assert not registry.has_tool("liar")


def test_invalid_input_schema_is_refused(registry: ToolRegistry) -> None:
    class Broken(RecordingTool):
        def get_schema(self) -> dict[str, Any]:
            return {**super().get_schema(), "input_schema": {"type": "object", "properties": 3}}

    with pytest.raises(ValueError):
        registry.register(Broken("broken"))
    assert registry.get_tool_names() == []


async def test_a_vouched_for_schema_is_not_checked_at_registration_but_still_validates(
    registry: ToolRegistry,
) -> None:
    """``schema_checked`` (the package's own tools) skips the metaschema check, never the
    argument check; a schema that turns out broken makes an error result, not an exception."""
    tool = RecordingTool("echo")
    registry.register(tool, schema_checked=True)
    result = await registry.call("echo", {"text": 5})
    assert result.is_error and "invalid arguments" in result.content
    assert tool.calls == []
    assert await registry.execute("echo", {"text": "hi"}) == "echo:hi"

    class Broken(RecordingTool):
        def get_schema(self) -> dict[str, Any]:
            schema = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}
            return {**super().get_schema(), "input_schema": schema}

    registry.register(Broken("broken"), schema_checked=True)
    result = await registry.call("broken", {"x": 1})
    assert result.is_error


# -- execution (001, 000, SPEC) ------------------------------------------------------------------


async def test_execute_success_returns_text(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("echo"))
    assert await registry.execute("echo", {"text": "hi"}) == "echo:hi"


async def test_execute_unknown_says_not_found(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("echo"))
    text = await registry.execute("nope", {})
    assert "not found" in text and "nope" in text
    result = await registry.call("nope", {})
    assert result.is_error


async def test_execute_disabled_says_not_available(registry: ToolRegistry) -> None:
    tool = RecordingTool("echo")
    registry.register(tool)
    registry.disable("echo")
    text = await registry.execute("echo", {"text": "x"})
    assert "not available" in text
    assert tool.calls == []


async def test_tool_raising_gives_exact_error_string(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("bad", fail=ValueError("it broke")))
    assert await registry.execute("bad", {}) == "Error executing bad: it broke"
    result = await registry.call("bad", {})
    assert result == ToolResult("Error executing bad: it broke", True, result.duration_s)


async def test_synchronous_raise_and_empty_message(registry: ToolRegistry) -> None:
    registry.register(SyncRaisingTool("sync"))
    registry.register(RecordingTool("empty", fail=KeyError()))
    assert await registry.execute("sync", {}) == "Error executing sync: boom now"
    assert await registry.execute("empty", {}) == "Error executing empty: KeyError"


async def test_schema_invalid_arguments_do_not_run_the_tool(registry: ToolRegistry) -> None:
    tool = RecordingTool("echo")
    registry.register(tool)
    for bad in ({"text": 5}, {"extra": 1}, {"n": "three"}):
        result = await registry.call("echo", bad)
        assert result.is_error
        assert "invalid arguments" in result.content
    non_mapping: Any = ["not", "a", "dict"]
    result = await registry.call("echo", non_mapping)
    assert result.is_error and "JSON object" in result.content
    assert tool.calls == []


async def test_tool_input_error_reports_invalid_arguments(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("picky", fail=ToolInputError("'x' is required")))
    assert (
        await registry.execute("picky", {}) == "Error: invalid arguments for picky: 'x' is required"
    )


async def test_non_text_output_is_an_error(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("num", output=42))
    result = await registry.call("num", {})
    assert result.is_error and "int" in result.content


async def test_call_result_fields_and_execute_agree(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("echo"))
    result = await registry.call("echo", {"text": "a"})
    assert isinstance(result, ToolResult)
    assert (result.content, result.is_error) == ("echo:a", False)
    assert result.duration_s >= 0
    assert await registry.execute("echo", {"text": "a"}) == result.content


async def test_tool_gets_a_copy_of_arguments(registry: ToolRegistry) -> None:
    class Mutator(RecordingTool):
        async def execute(self, args: dict[str, object]) -> str:
            args["text"] = "changed"
            return "ok"

    registry.register(Mutator("m"))
    args: dict[str, object] = {"text": "original"}
    await registry.execute("m", args)
    assert args == {"text": "original"}


async def test_cancellation_propagates(registry: ToolRegistry) -> None:
    started = asyncio.Event()

    class Slow(RecordingTool):
        async def execute(self, args: dict[str, object]) -> str:
            started.set()
            await asyncio.sleep(30)
            return "late"

    registry.register(Slow("slow"))
    task = asyncio.create_task(registry.call("slow", {}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_concurrent_calls_run_in_parallel(registry: ToolRegistry) -> None:
    """Each call waits for all five to have started: called one after another, the first would
    wait for the others for ever (the timeout only turns that hang into a failed call)."""
    all_started = asyncio.Barrier(5)

    class Meeting(RecordingTool):
        async def execute(self, args: dict[str, object]) -> str:
            async with asyncio.timeout(10):
                await all_started.wait()
            return "done"

    registry.register(Meeting("meeting"))
    results = await asyncio.gather(*(registry.call("meeting", {}) for _ in range(5)))
    assert [r.content for r in results] == ["done"] * 5


# -- ToolContext (001): tools get state without the Agent ------------------------------------------


class FakeAgentState:
    """The two attributes a bound context reads; stands in for an Agent."""

    def __init__(self) -> None:
        self.system_prompt = "first prompt"
        self.session_context = "## user\nhello"


def test_context_plain_values(tmp_path: Any) -> None:
    context = ToolContext(tmp_path, system_prompt="sp", session_context="sc")
    assert context.workspace == tmp_path.resolve()
    assert (context.system_prompt, context.session_context) == ("sp", "sc")
    assert context.session_context_file_path == tmp_path.resolve() / ".jupyter_agent/session.md"


def test_context_reflects_live_state(tmp_path: Any) -> None:
    state = FakeAgentState()
    context = ToolContext(tmp_path)
    context.bind(state)
    assert context.system_prompt == "first prompt"
    state.system_prompt = "second prompt"  # set_system_prompt()
    state.session_context = ""  # clear_context()
    assert context.system_prompt == "second prompt"
    assert context.session_context == ""


async def test_a_tool_may_return_text_and_image_parts(registry: ToolRegistry) -> None:
    from jupyter_agent.tools.base import Image

    png = Image(b"\x89PNG\r\n\x1a\n fake", "image/png")
    registry.register(RecordingTool("plot", output=["first", png, "second"]))
    result = await registry.call("plot", {})
    assert not result.is_error
    assert result.content == "first\nsecond"
    assert result.images == (png,)


async def test_a_list_with_something_else_is_an_error(registry: ToolRegistry) -> None:
    registry.register(RecordingTool("odd", output=["text", 3]))
    result = await registry.call("odd", {})
    assert result.is_error
    assert "not text" in result.content


def test_an_image_needs_bytes_and_a_known_media_type() -> None:
    from jupyter_agent.tools.base import Image

    with pytest.raises(ValueError, match="media_type"):
        Image(b"x", "image/bmp")
    with pytest.raises(TypeError):
        Image("not bytes", "image/png")  # type: ignore[arg-type]
