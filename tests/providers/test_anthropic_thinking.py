"""Extended thinking through the real SDK: the request asks for it, the thinking streams as
``ThinkingDelta`` (never as answer text), and thinking blocks come back whole — signature and
redacted data — so the next request of a tool loop is accepted; stop reasons pass through.

A thinking *budget* is tested on a model that takes one (``claude-haiku-4-5``); what a budget
becomes on an adaptive-only model is ``test_anthropic_contract.py``'s. Signatures are the fake
API's (bound to model and prefix): a block must come back as it was received.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, thinking, tool_use

from jupyter_agent.agent.agent import Agent
from jupyter_agent.events import AgentFinished, TextDelta, ThinkingDelta
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import ModelRequest, ModelResponse
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.registry import ToolRegistry

REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
REQUEST = ModelRequest("Think.", [{"role": "user", "content": "What is 6 x 7?"}], [])


async def collect(provider: AnthropicProvider, request: ModelRequest = REQUEST) -> list[object]:
    return [event async for event in provider.stream(request)]


BUDGET_MODEL = "claude-haiku-4-5"


@pytest.mark.parametrize(("budget", "max_tokens"), [(2048, 18_432), (16_000, 32_384)])
async def test_thinking_budget_is_sent_with_room_above_it(budget: int, max_tokens: int) -> None:
    fake = FakeAnthropic(text("42"))
    provider = AnthropicProvider(BUDGET_MODEL, client=fake.client(), thinking_budget=budget)
    await collect(provider)
    sent = fake.requests[0]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert sent["max_tokens"] == max_tokens > budget


@pytest.mark.parametrize("off", [None, 0])
async def test_no_thinking_unless_asked(off: int | None) -> None:
    fake = FakeAnthropic(text("42"))
    provider = AnthropicProvider(BUDGET_MODEL, client=fake.client(), thinking_budget=off)
    assert provider.thinking_budget is None
    await collect(provider)
    assert "thinking" not in fake.requests[0]


async def test_an_adaptive_model_thinks_as_it_does_by_default_and_shows_its_progress() -> None:
    fake = FakeAnthropic(text("42"))
    await collect(AnthropicProvider("claude-sonnet-5-5", client=fake.client()))
    assert fake.requests[0]["thinking"] == {"type": "adaptive", "display": "updates"}
    assert "output_config" not in fake.requests[0]  # the model's own effort


@pytest.mark.parametrize("budget", [-1, 1023, 2048.0, True, False, "4096"])
def test_a_budget_the_api_refuses_is_refused_here(budget: object) -> None:
    with pytest.raises(ValueError, match="at least 1024"):
        AnthropicProvider(
            "claude-sonnet-5-5", client=FakeAnthropic().client(), thinking_budget=budget
        )  # type: ignore[arg-type]


async def test_thinking_streams_apart_from_the_answer_and_keeps_its_signature() -> None:
    reasoning = "Six sevens: 7, 14, 21, 28, 35, 42."
    fake = FakeAnthropic(
        Reply([thinking(reasoning, "sig-abc"), REDACTED, {"type": "text", "text": "It is 42."}])
    )
    provider = AnthropicProvider(BUDGET_MODEL, client=fake.client(), thinking_budget=1024)
    events = await collect(provider)
    thoughts = [e.text for e in events if isinstance(e, ThinkingDelta)]
    answer = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(thoughts) > 1 and "".join(thoughts) == reasoning
    assert "".join(answer) == "It is 42."
    response = events[-1]
    assert isinstance(response, ModelResponse)
    signature = response.content[0]["signature"]
    assert signature.startswith("sig1.")  # the API's, kept as it came
    assert response.content[0] == {
        "type": "thinking",
        "thinking": reasoning,
        "signature": signature,
    }
    assert response.content[1]["type"] == "redacted_thinking" and response.content[1]["data"]
    assert response.content[2] == {"type": "text", "text": "It is 42."}


@tool
def multiply(a: int, b: int) -> str:
    """Multiply.

    Args:
        a: first
        b: second
    """
    return str(a * b)


async def test_thinking_blocks_round_trip_through_a_tool_loop(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply(
            [
                thinking("I should use the tool.", "sig-1"),
                REDACTED,
                tool_use("t1", "multiply", {"a": 6, "b": 7}),
            ]
        ),
        Reply([thinking("The tool said 42.", "sig-2"), {"type": "text", "text": "6 x 7 = 42."}]),
    )
    registry = ToolRegistry()
    registry.register(multiply)
    provider = AnthropicProvider(BUDGET_MODEL, client=fake.client(), thinking_budget=4096)
    agent = Agent(provider, workspace=tmp_path, system_prompt="Be exact.", registry=registry)
    events = [e async for e in agent.stream_chat("What is 6 x 7?")]
    final = events[-1]
    assert isinstance(final, AgentFinished) and final.text == "6 x 7 = 42."  # no thinking in it
    assert len(fake.requests) == 2  # the fake refuses a thinking block without its signature
    assistant = fake.requests[1]["messages"][1]
    # sent back exactly as received (the fake checks each signature against its prefix)
    assert assistant["content"][:2] == agent.messages[1]["content"][:2]
    assert assistant["content"][0]["thinking"] == "I should use the tool."
    assert assistant["content"][1]["type"] == "redacted_thinking"
    assert agent.messages[-1]["content"][0]["thinking"] == "The tool said 42."
    assert fake.dropped == [[], []]


@pytest.mark.parametrize(
    "stop_reason", ["pause_turn", "refusal", "model_context_window_exceeded", "max_tokens"]
)
async def test_the_stop_reason_passes_through_untouched(stop_reason: str) -> None:
    fake = FakeAnthropic(text("partial", stop_reason=stop_reason))
    events = await collect(AnthropicProvider("claude-sonnet-5-5", client=fake.client()))
    response = events[-1]
    assert isinstance(response, ModelResponse) and response.stop_reason == stop_reason
