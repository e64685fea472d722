"""Issue 32, faults 1-4: the package against the current per-model contract.

Each test plays a user's setting or action through the public API (``Agent`` on an
``AnthropicProvider`` on the real SDK) against the fake Messages API, which enforces the
contract from ``model_contract.py``: a budget on an adaptive-only model, the progress text
between tool calls, a tool toggle or a changed system prompt mid-chat, a changed model, the
window and ``max_tokens``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agent_builder import make_agent
from fake_anthropic import FakeAnthropic, Reply, progress, text, thinking, tool_use

from jupyter_agent.agent.agent import Agent
from jupyter_agent.agent.tokens import context_window_for
from jupyter_agent.errors import ProviderError
from jupyter_agent.events import AgentError, ThinkingDelta
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import ModelRequest
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.registry import ToolRegistry


@tool
def look(name: str) -> str:
    """Look something up."""
    return f"{name}: 42"


@tool
def count(name: str) -> str:
    """Count something."""
    return f"{name}: 7"


def _agent(
    fake: FakeAnthropic, tmp_path: Path, model: str = "claude-sonnet-5-5", **kw: Any
) -> Agent:
    provider = AnthropicProvider(model, client=fake.client(), **kw)
    registry = ToolRegistry()
    registry.register(look)
    registry.register(count)
    return Agent(provider, workspace=tmp_path, system_prompt="Be careful.", registry=registry)


async def _events(agent: Agent, prompt: str) -> list[Any]:
    """The chat's events (a failed request ends them with ``AgentError``)."""
    events: list[Any] = []
    try:
        async for event in agent.stream_chat(prompt):
            events.append(event)
    except ProviderError:
        pass
    return events


def _tool_turn(call_id: str) -> Reply:
    return Reply(
        [
            thinking("I should look it up."),
            progress("Looking it up."),
            tool_use(call_id, "look", {"name": "x"}),
        ]
    )


# -- fault 1: --think N / thinking_budget / effort never a 400 ----------------------------------


async def test_a_thinking_budget_on_an_adaptive_only_model_thinks_adaptively(
    tmp_path: Path,
) -> None:
    fake = FakeAnthropic(text("one"), text("two"))
    agent = _agent(fake, tmp_path, thinking_budget=8_000)
    first = await _events(agent, "hi")
    second = await _events(agent, "again")
    assert not [e for e in first + second if isinstance(e, AgentError)]
    body = fake.requests[0]
    assert body["thinking"]["type"] == "adaptive"
    assert body["output_config"] == {"effort": "medium"}
    notices = [
        e.text for e in first + second if isinstance(e, ThinkingDelta) and e.kind == "notice"
    ]
    assert len(notices) == 1 and "effort 'medium'" in notices[0]


async def test_a_budget_goes_as_a_budget_where_the_model_takes_one(tmp_path: Path) -> None:
    fake = FakeAnthropic(text("ok"))
    agent = _agent(fake, tmp_path, "claude-haiku-4-5", thinking_budget=2_048)
    assert await agent.chat("hi") == "ok"
    thinking_sent = fake.requests[0]["thinking"]
    assert thinking_sent == {"type": "enabled", "budget_tokens": 2_048}
    assert fake.requests[0]["max_tokens"] > 2_048


async def test_effort_is_sent_as_the_model_lists_it(tmp_path: Path) -> None:
    fake = FakeAnthropic(text("a"), text("b"))
    agent = _agent(fake, tmp_path, effort="xhigh")
    await agent.chat("hi")
    assert fake.requests[0]["output_config"] == {"effort": "xhigh"}
    # Opus 4.6 has no xhigh: the nearest level it lists, said once
    other = _agent(fake, tmp_path, "claude-opus-4-6", effort="xhigh")
    events = await _events(other, "hi")
    assert fake.requests[1]["output_config"]["effort"] in ("high", "max")
    assert any(isinstance(e, ThinkingDelta) and e.kind == "notice" for e in events)
    with pytest.raises(ValueError, match="effort must be one of"):
        AnthropicProvider("claude-sonnet-5-5", client=fake.client(), effort="extreme")


# -- fault 2: the progress text between tool calls reaches the cell ------------------------------


async def test_progress_between_tool_calls_streams_apart_from_the_answer(tmp_path: Path) -> None:
    fake = FakeAnthropic(_tool_turn("t1"), text("It is 42."))
    agent = _agent(fake, tmp_path)
    events = await _events(agent, "what is x?")
    progress_text = "".join(
        e.text for e in events if isinstance(e, ThinkingDelta) and e.kind == "progress"
    )
    assert progress_text == "Looking it up."
    # the reasoning the user did not ask to see does not come back; the answer is apart
    assert "I should look it up." not in progress_text
    assert agent.messages[-1]["content"][-1]["text"] == "It is 42."
    # the thinking blocks went back exactly as received, and the API took them
    sent_back = [b for b in fake.requests[1]["messages"][1]["content"] if b["type"] == "thinking"]
    assert sent_back == [b for b in agent.messages[1]["content"] if b["type"] == "thinking"]
    assert fake.dropped[-1] == []


# -- fault 3: changes mid-conversation keep the prefix -------------------------------------------


def _share(usage: dict[str, int]) -> float:
    total = (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )
    return usage["cache_read_input_tokens"] / total


async def test_a_tool_toggle_mid_chat_is_a_tool_change_not_a_400(tmp_path: Path) -> None:
    fake = FakeAnthropic(_tool_turn("t1"), text("42."), _tool_turn("t2"), text("Still 42."))
    agent = _agent(fake, tmp_path)
    assert await agent.chat("what is x?") == "42."
    agent.registry.disable("count")
    events = await _events(agent, "and now?")
    assert not [e for e in events if isinstance(e, AgentError)], events
    before, after = fake.requests[1], fake.requests[2]
    assert after["tools"] == before["tools"]  # the top of the prefix did not move
    changes = [m for m in after["messages"] if m["role"] == "system"]
    assert changes and changes[0]["content"][0]["type"] == "tool_removal"
    assert fake.dropped[2] == []  # every thinking block was still valid
    assert _share(fake.usages[2]) >= 0.5


async def test_a_changed_system_prompt_mid_chat_is_a_system_message(tmp_path: Path) -> None:
    fake = FakeAnthropic(_tool_turn("t1"), text("42."), text("Noted."))
    agent = _agent(fake, tmp_path)
    await agent.chat("what is x?")
    agent.system_prompt = "Be careful. Also: AGENTS.md says answer in French."
    assert await agent.chat("and now?") == "Noted."
    last = fake.requests[-1]
    assert last["system"][0]["text"] == "Be careful."
    system_messages = [m for m in last["messages"] if m["role"] == "system"]
    assert "answer in French" in system_messages[0]["content"][0]["text"]


async def test_a_model_without_system_messages_gets_the_new_prefix_without_orphans(
    tmp_path: Path,
) -> None:
    # Sonnet 5 takes no system messages: the new prompt goes on top, and the thinking blocks it
    # would orphan are not sent
    fake = FakeAnthropic(_tool_turn("t1"), text("42."), text("Noted."))
    agent = _agent(fake, tmp_path, "claude-sonnet-5")
    await agent.chat("what is x?")
    agent.system_prompt = "Be brief."
    assert await agent.chat("and now?") == "Noted."
    last = fake.requests[-1]
    assert last["system"][0]["text"] == "Be brief."
    assert not any(m["role"] == "system" for m in last["messages"])
    assert not any(
        b.get("type") == "thinking"
        for m in last["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )


async def test_changing_model_drops_what_the_new_model_cannot_read(tmp_path: Path) -> None:
    fake = FakeAnthropic(_tool_turn("t1"), text("42."), text("Opus here."))
    agent = _agent(fake, tmp_path)
    await agent.chat("what is x?")
    agent.provider.model = "claude-opus-5-5"  # type: ignore[misc]
    assert await agent.chat("and now?") == "Opus here."
    last = fake.requests[-1]
    assert fake.dropped[-1] == []
    assert not any(
        b.get("type") == "thinking"
        for m in last["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )


async def test_a_new_provider_for_another_model_drops_the_old_models_thinking(
    tmp_path: Path,
) -> None:
    """``%agent model X`` builds another provider: it still knows what the blocks were bound to."""
    fake = FakeAnthropic(_tool_turn("t1"), text("42."), text("Opus here."))
    agent = _agent(fake, tmp_path)
    await agent.chat("what is x?")
    agent.provider = AnthropicProvider("claude-opus-5-5", client=fake.client())
    assert await agent.chat("and now?") == "Opus here."
    last = fake.requests[-1]
    assert not any(
        b.get("type") == "thinking"
        for m in last["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )


async def test_compaction_keeps_what_it_rewrites_valid(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        _tool_turn("t1"), text("42."), _tool_turn("t2"), text("43."), text("summary"), text("ok")
    )
    agent = _agent(fake, tmp_path)
    await agent.chat("what is x?")
    await agent.chat("and y?")
    await agent.compact()
    events = await _events(agent, "go on")
    assert not [e for e in events if isinstance(e, AgentError)], events


# -- fault 4: the window and the room to answer --------------------------------------------------


async def test_the_window_is_the_models_own(tmp_path: Path) -> None:
    assert context_window_for("claude-sonnet-5-5") == 1_000_000
    assert context_window_for("claude-haiku-4-5") == 200_000
    fake = FakeAnthropic(text("a"))
    agent = _agent(fake, tmp_path)
    await agent.chat("hi")  # the Models API's answer is in by now
    assert agent.effective_context_window == 1_000_000


async def test_max_tokens_leaves_room_for_thinking_and_the_answer(tmp_path: Path) -> None:
    fake = FakeAnthropic(text("a"), text("b"))
    await _agent(fake, tmp_path).chat("hi")
    assert 32_768 < fake.requests[0]["max_tokens"] <= 128_000
    await _agent(fake, tmp_path, "claude-haiku-4-5").chat("hi")
    assert fake.requests[1]["max_tokens"] <= 64_000


# -- the Models API ------------------------------------------------------------------------------


async def test_a_deprecated_model_gets_one_line_naming_its_retirement(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        text("a"),
        text("b"),
        text("c"),
        lifecycle={"claude-opus-5": ("deprecated", "2027-03-01T00:00:00Z")},
    )
    agent = _agent(fake, tmp_path, "claude-opus-5")
    events = await _events(agent, "a")
    await agent.provider.lookup_facts()  # type: ignore[attr-defined]  # as between two cells
    for prompt in ("b", "c"):
        events += await _events(agent, prompt)
    notices = [e.text for e in events if isinstance(e, ThinkingDelta) and e.kind == "notice"]
    assert notices == [notices[0]] and "2027-03-01" in notices[0]


async def test_an_unknown_model_is_one_line_naming_a_current_one(tmp_path: Path) -> None:
    fake = FakeAnthropic(text("never"))
    agent = _agent(fake, tmp_path, "claude-nonesuch-9")
    events = await _events(agent, "hi")
    errors = [e for e in events if isinstance(e, AgentError)]
    assert errors and "claude-sonnet-5-5" in errors[0].message and "\n" not in errors[0].message


async def test_without_the_models_api_the_table_serves_and_says_so_once(tmp_path: Path) -> None:
    fake = FakeAnthropic(text("a"), text("b"), text("c"), models_api=False)
    agent = _agent(fake, tmp_path)
    events = await _events(agent, "a")
    await agent.provider.lookup_facts()  # type: ignore[attr-defined]
    for prompt in ("b", "c"):
        events += await _events(agent, prompt)
    notices = [e.text for e in events if isinstance(e, ThinkingDelta) and e.kind == "notice"]
    assert len(notices) == 1 and "built-in table" in notices[0]
    assert fake.model_lookups  # it did ask


async def test_the_models_api_lookup_starts_after_the_first_token(tmp_path: Path) -> None:
    # a fresh kernel's first cell: the lookup's request, its import of the SDK's models resource
    # and the parsing of its answer would share the loop with the wait for the first token
    opening = asyncio.Event()
    fake = FakeAnthropic(Reply([{"type": "text", "text": "a" * 30}], opening=opening), text("b"))
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client())
    request = ModelRequest("", [{"role": "user", "content": "hi"}], [])
    before_first_token: list[str] = []

    async def hold_the_reply() -> None:
        for _ in range(100):  # the loop runs whatever is due while the reply is on its way
            await asyncio.sleep(0)
        before_first_token.extend(fake.arrivals)
        opening.set()

    holding = asyncio.create_task(hold_the_reply())
    async for _event in provider.stream(request):
        pass
    await holding
    assert before_first_token == ["messages"]
    facts = await provider.lookup_facts()
    assert facts.source == "models-api"
    assert fake.arrivals == ["messages", "models"]
    async for _event in provider.stream(request):
        pass
    assert fake.arrivals == ["messages", "models", "messages"]  # once per kernel and model


async def test_the_first_request_does_not_wait_for_the_models_api(tmp_path: Path) -> None:
    fake = FakeAnthropic(text("a"))
    fake.models_gate = asyncio.Event()  # the Models API does not answer until the chat is over
    agent = make_agent(fake, tmp_path)
    assert await agent.chat("hi") == "a"
    fake.models_gate.set()
    facts = await agent.provider.lookup_facts()  # type: ignore[attr-defined]
    assert facts.source == "models-api"
    assert fake.model_lookups == ["/v1/models/claude-sonnet-5-5"]
