"""Tools written for others fit (issue 22, point 5), with the real ``anthropic`` SDK's decorators.

Played faults: ``agent.add_tool`` and ``tool()`` refused the SDK's ``@beta_tool`` /
``@beta_async_tool`` objects ("needs a name") and ``registry.register`` raised
``AttributeError``; image blocks such a tool returns reached the model as base64 text; a ``@tool``
function returning ``["caption", Image(...)]`` (as the SPEC allows) sent
``"Image(image/png, 83 bytes)"`` as text; claudette/toolslm-style inline parameter comments were
dropped from the schema.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import anthropic
from anthropic import beta_async_tool, beta_tool
from fake_anthropic import FakeAnthropic, Reply, api_problems, text, tool_results, tool_use
from PIL import Image as PillowImage

from jupyter_agent.agent.agent import Agent
from jupyter_agent.tools.base import Image
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.registry import ToolRegistry


def png(colour: str = "red") -> bytes:
    buffer = io.BytesIO()
    PillowImage.new("RGB", (8, 6), colour).save(buffer, format="PNG")
    return buffer.getvalue()


PNG = png()
PNG_B64 = base64.b64encode(PNG).decode()


@beta_tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the weather of a city.

    Args:
        city: The city's name.
        unit: celsius or fahrenheit.
    """
    return f"Sunny in {city}, 21 degrees {unit}"


@beta_async_tool
async def plot_sales(region: str) -> list[dict[str, Any]]:
    """Plot a region's sales.

    Args:
        region: Which region.
    """
    return [
        {"type": "text", "text": f"Sales of {region}"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ]


# -- the SDK's function tools, as they are ---------------------------------------------------------


async def test_a_beta_tool_registers_with_its_own_schema_and_runs() -> None:
    registry = ToolRegistry()
    registry.register(get_weather)  # type: ignore[arg-type]
    assert registry.get_tool_names() == ["get_weather"]
    assert registry.get_enabled_schemas() == [
        {
            "name": "get_weather",
            "description": get_weather.description,
            "input_schema": get_weather.input_schema,
        }
    ]
    result = await registry.call("get_weather", {"city": "Lyon"})
    assert (result.content, result.is_error) == ("Sunny in Lyon, 21 degrees celsius", False)
    bad = await registry.call("get_weather", {"town": "Lyon"})
    assert bad.is_error and "city" in bad.content


async def test_tool_of_a_beta_async_tool_sends_its_image_as_an_image() -> None:
    adopted = tool(plot_sales)
    assert adopted.name == "plot_sales"
    assert adopted.get_schema()["input_schema"] == plot_sales.input_schema
    registry = ToolRegistry()
    registry.register(adopted)
    result = await registry.call("plot_sales", {"region": "north"})
    assert not result.is_error
    assert result.content == "Sales of north"
    assert result.images == (Image(PNG, "image/png"),)


async def test_agent_add_tool_takes_sdk_tools_and_the_model_sees_the_image(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply(
            [
                tool_use("toolu_1", "get_weather", {"city": "Oslo"}),
                tool_use("toolu_2", "plot_sales", {"region": "west"}),
            ]
        ),
        text("Done."),
    )
    from jupyter_agent.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client())
    agent = Agent(provider, workspace=tmp_path, registry=ToolRegistry())
    agent.add_tool(get_weather)  # type: ignore[arg-type]
    agent.add_tool(plot_sales)  # type: ignore[arg-type]
    assert await agent.chat("weather and sales") == "Done."
    body = fake.requests[-1]
    assert api_problems(body) == []
    results = {r["tool_use_id"]: r["content"] for r in tool_results(body)}
    assert results["toolu_1"] in (
        "Sunny in Oslo, 21 degrees celsius",
        [{"type": "text", "text": "Sunny in Oslo, 21 degrees celsius"}],
    )
    kinds = [part["type"] for part in results["toolu_2"]]
    assert kinds == ["text", "image"]
    assert PNG_B64[:40] not in str(results["toolu_2"][0])


# -- what a tool returns ---------------------------------------------------------------------------


async def test_a_tool_function_returning_a_caption_and_an_image_sends_the_image() -> None:
    @tool
    def chart() -> list[object]:
        """Draw a chart."""
        return ["A red square", Image(PNG, "image/png")]

    registry = ToolRegistry()
    registry.register(chart)
    result = await registry.call("chart", {})
    assert result.content == "A red square"
    assert result.images == (Image(PNG, "image/png"),)
    assert "Image(image/png" not in result.content


async def test_sdk_content_block_objects_and_dicts_are_read() -> None:
    @tool
    def blocks() -> list[object]:
        """Blocks as the SDK builds them."""
        return [
            anthropic.types.TextBlock(type="text", text="From a model object."),
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64.encode()},
            },
        ]

    registry = ToolRegistry()
    registry.register(blocks)
    result = await registry.call("blocks", {})
    assert result.content == "From a model object."
    assert result.images == (Image(PNG, "image/png"),)


async def test_a_broken_image_block_is_a_clear_error_not_an_exception() -> None:
    @beta_tool
    def broken() -> list[dict[str, Any]]:
        """Returns a block whose base64 is not base64."""
        source = {"type": "base64", "media_type": "image/png", "data": "%%% not base64"}
        return [{"type": "image", "source": source}]

    registry = ToolRegistry()
    registry.register(broken)  # type: ignore[arg-type]
    result = await registry.call("broken", {})
    assert result.is_error and "Error executing broken" in result.content
    assert "base64" in result.content


async def test_plain_lists_are_still_json() -> None:
    @tool
    def listing() -> list[object]:
        """Data, not content."""
        return ["a", {"type": "row", "value": 1}]

    assert await listing.execute({}) == '["a", {"type": "row", "value": 1}]'


# -- inline parameter comments ---------------------------------------------------------------------


def test_inline_parameter_comments_describe_the_parameters() -> None:
    @tool
    def scale(
        a: int,  # the first number
        b: str = "x",  # how to scale it
        *,
        # the unit, on a line of its own above the parameter
        unit: str = "m",
        plain: int = 0,
    ) -> str:
        """Scale a number."""
        return f"{a}{b}{unit}{plain}"

    properties = scale.get_schema()["input_schema"]["properties"]
    assert properties["a"]["description"] == "the first number"
    assert properties["b"]["description"] == "how to scale it"
    assert properties["unit"]["description"] == "the unit, on a line of its own above the parameter"
    assert "description" not in properties["plain"]


def test_the_docstring_wins_over_an_inline_comment() -> None:
    @tool
    def pick(
        a: int,  # from the comment
        b: int,  # only a comment
    ) -> int:
        """Pick.

        Args:
            a: From the docstring.
        """
        return a

    properties = pick.get_schema()["input_schema"]["properties"]
    assert properties["a"]["description"] == "From the docstring."
    assert properties["b"]["description"] == "only a comment"


def test_a_function_without_source_still_becomes_a_tool() -> None:
    namespace: dict[str, Any] = {}
    exec("def made(a: int):\n    return a\n", namespace)  # no file: getsource fails
    made = tool(namespace["made"])
    assert made.get_schema()["input_schema"]["properties"]["a"] == {"type": "integer"}
