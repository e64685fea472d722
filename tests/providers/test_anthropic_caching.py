"""Prompt caching across wide tool turns, against a fake API that caches the way the real one does.

The Messages API reads a cached prefix only when a breakpoint's prefix, or one ending at most 20
blocks before it, was written by an earlier request. A turn with 20 parallel tool calls adds 40
blocks (the calls and their results): a single breakpoint on the last block cannot see back to
where the previous request ended, so the whole conversation was billed as new input.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_anthropic import (
    FakeAnthropic,
    PromptCache,
    Reply,
    block_tokens,
    cache_blocks,
    cached,
    text,
    tool_use,
)

from jupyter_agent.agent.agent import Agent
from jupyter_agent.events import TurnFinished
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import ModelRequest, ModelResponse
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.registry import ToolRegistry


@tool
def probe(i: int) -> str:
    """Look at one item.

    Args:
        i: which item
    """
    return f"item {i} looks fine " * 5


def wide_turn(turn: int, width: int) -> Reply:
    calls = [tool_use(f"toolu_{turn}_{i}", "probe", {"i": i}) for i in range(width)]
    return Reply([{"type": "text", "text": f"Checking {width} items."}, *calls])


def prompt_tokens(body: dict[str, object]) -> int:
    return sum(block_tokens(canonical) for canonical, _ in cache_blocks(body))  # type: ignore[arg-type]


def test_the_fake_cache_misses_when_the_last_write_is_beyond_the_look_back() -> None:
    """The model itself: one tail breakpoint, 41 new blocks later, reads nothing."""
    cache = PromptCache()
    first = {"messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]}
    first["messages"][0]["content"][0]["cache_control"] = {"type": "ephemeral"}  # type: ignore[index]
    assert cache.usage(first)["cache_read_input_tokens"] == 0
    again = cache.usage(first)
    assert again["cache_read_input_tokens"] == prompt_tokens(first) and again["input_tokens"] == 0
    calls = [tool_use(f"t{i}", "probe", {"i": i}) for i in range(20)]
    results = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"} for i in range(20)]
    results[-1]["cache_control"] = {"type": "ephemeral"}
    wide = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "x"}, *calls]},
            {"role": "user", "content": results},
        ]
    }
    assert cache.usage(wide)["cache_read_input_tokens"] == 0


@pytest.mark.parametrize("widths", [(20, 20), (25, 40), (64, 3, 30)])
async def test_each_request_after_a_wide_turn_reads_the_previous_one_from_cache(
    tmp_path: Path, widths: tuple[int, ...]
) -> None:
    cache = PromptCache()
    script = [cached(cache, wide_turn(turn, width)) for turn, width in enumerate(widths)]
    fake = FakeAnthropic(*script, cached(cache, text("All fine.")))
    registry = ToolRegistry()
    registry.register(probe)
    agent = Agent(
        AnthropicProvider("claude-sonnet-5-5", client=fake.client()),
        workspace=tmp_path,
        system_prompt="You check items.",
        registry=registry,
    )
    agent.max_turns = len(widths) + 5
    events = [e async for e in agent.stream_chat("Check everything.")]
    usages = [e.usage for e in events if isinstance(e, TurnFinished)]
    assert len(usages) == len(widths) + 1 == len(fake.requests)
    for previous, request, usage in zip(
        fake.requests[:-1], fake.requests[1:], usages[1:], strict=True
    ):
        # the whole previous request is read back; only the new turn is written
        assert usage.cache_read_input_tokens == prompt_tokens(previous)
        assert usage.input_tokens == 0
        assert usage.cache_creation_input_tokens == prompt_tokens(request) - prompt_tokens(previous)
    for request in fake.requests:
        assert sum(marked for _, marked in cache_blocks(request)) <= 4


async def test_a_paused_turn_is_marked_where_it_can_be_and_never_on_thinking() -> None:
    """Continuing a ``pause_turn`` sends the paused assistant message last; thinking blocks
    cannot carry a breakpoint, so it goes on the block before them."""
    paused = [
        {"type": "text", "text": "Searching first."},
        {"type": "thinking", "thinking": "Still looking.", "signature": "unsigned"},
    ]
    fake = FakeAnthropic(Reply(paused, stop_reason="pause_turn"), text("Done."))
    provider = AnthropicProvider("claude-haiku-4-5", client=fake.client(), thinking_budget=1024)
    first = ModelRequest("sys", [{"role": "user", "content": "find it"}], [])
    reply = [e async for e in provider.stream(first)][-1]
    assert isinstance(reply, ModelResponse) and reply.stop_reason == "pause_turn"
    request = ModelRequest(
        "sys",
        [first.messages[0], {"role": "assistant", "content": reply.content}],
        [],
    )
    _ = [e async for e in provider.stream(request)]
    user, assistant = fake.requests[1]["messages"]  # the fake refused nothing
    assert user["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert assistant["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in assistant["content"][1]
    content = request.messages[1]["content"]
    assert content is reply.content and "cache_control" not in content[0]
