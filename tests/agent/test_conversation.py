"""The agent with its default registry, and the conversation repair rules on their own.

``repair`` is checked against the independent API validator of ``fake_anthropic`` on many broken
shapes (including random ones), so "always valid" does not rest on the agent's own checker.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import api_problems

from jupyter_agent.agent import conversation
from jupyter_agent.agent.agent import Agent
from jupyter_agent.errors import ProviderError
from jupyter_agent.events import AgentFinished, TextDelta, Usage
from jupyter_agent.providers.base import ModelRequest, ModelResponse, ProviderEvent
from jupyter_agent.providers.offline import OFFLINE_NOTICE, OfflineProvider


def as_request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": messages}


def prepared(messages: list[dict[str, Any]], prompt: str = "next") -> list[dict[str, Any]]:
    """What the agent does before each request: repair, then add the prompt."""
    copy = [dict(m) for m in messages]
    conversation.repair(copy)
    conversation.add_user_text(copy, prompt)
    return copy


def call(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "t", "input": {}}


def result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def say(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


BROKEN = [
    [],
    [{"role": "assistant", "content": [say("orphan answer")]}],
    [{"role": "user", "content": "q"}, {"role": "assistant", "content": [call("a"), call("b")]}],
    [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [call("a"), call("b")]},
        {"role": "user", "content": [say("hi"), result("b")]},
    ],
    [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": []},
        {"role": "assistant", "content": [say("")]},
    ],
    [
        {"role": "user", "content": "q"},
        {"role": "user", "content": [result("zzz"), say("again")]},
    ],
    [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [say("a"), call("x")]},
        {"role": "assistant", "content": [say("b")]},
        {"role": "user", "content": [result("x"), result("x")]},
    ],
]


@pytest.mark.parametrize("messages", BROKEN)
def test_repair_makes_broken_conversations_valid(messages: list[dict[str, Any]]) -> None:
    assert api_problems(as_request(prepared(messages))) == []


def test_repair_keeps_answers_and_marks_missing_ones() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [call("a"), call("b")]},
        {"role": "user", "content": [say("hi"), result("b")]},
    ]
    fixed = prepared(messages)
    blocks = fixed[2]["content"]
    assert [b.get("tool_use_id") for b in blocks[:2]] == ["a", "b"]
    assert blocks[0]["is_error"] is True and blocks[0]["content"] == conversation.NOT_RUN
    assert blocks[1] == result("b")
    assert blocks[2:] == [say("hi"), say("next")]


def test_a_valid_conversation_is_left_alone() -> None:
    messages = [
        {"role": "user", "content": [say("q")]},
        {"role": "assistant", "content": [say("let me"), call("a")]},
        {"role": "user", "content": [result("a")]},
        {"role": "assistant", "content": [say("done")]},
    ]
    copy = [dict(m) for m in messages]
    assert conversation.repair(copy) is False
    assert copy == messages


def test_repair_of_random_conversations() -> None:
    rng = random.Random(4)
    for _ in range(2000):
        messages: list[dict[str, Any]] = []
        ids = 0
        for _ in range(rng.randint(0, 7)):
            role = rng.choice(["user", "assistant"])
            blocks: list[dict[str, Any]] = []
            for _ in range(rng.randint(0, 3)):
                kind = rng.choice(["text", "empty", "call", "result"])
                if kind == "text":
                    blocks.append(say("x"))
                elif kind == "empty":
                    blocks.append(say(""))
                elif kind == "call":
                    ids += 1
                    blocks.append(call(f"c{ids}"))
                else:
                    blocks.append(result(f"c{rng.randint(1, max(ids, 1))}"))
            messages.append({"role": role, "content": blocks})
        assert api_problems(as_request(prepared(messages))) == [], messages


async def test_default_registry_offline_chat_and_save_context(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("x,y\n1,2\n3,4\n")
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    names = [schema["name"] for schema in agent.get_tools()]
    assert "read_file" in names and "remove" not in names and "run_bash" not in names
    assert agent.get_policy("remove") == "ask"
    answer = await agent.chat("what is in data.csv?")
    assert answer.startswith(OFFLINE_NOTICE)
    assert "2 data rows" in answer and "| y | 6 | 3 |" in answer
    saved = await agent.save_context("end of the demo")
    assert "saved" in saved.lower()
    session_file = tmp_path / ".jupyter_agent" / "session.md"
    text = session_file.read_text()
    assert "what is in data.csv?" in text and "tool call `read_file`" in text


class ScriptedProvider:
    """A provider at the contract level: replies from a list, no text streaming."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, *replies: ModelResponse | BaseException) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        yield reply

    async def aclose(self) -> None:
        return None


async def test_text_of_a_non_streaming_provider_still_arrives_as_deltas(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        ModelResponse([say("whole answer at once")], "end_turn", Usage(1, 2)),
    )
    agent = Agent(provider, workspace=tmp_path, registry=None)
    events = [e async for e in agent.stream_chat("hi")]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["whole answer at once"]
    final = events[-1]
    assert isinstance(final, AgentFinished) and final.usage == Usage(1, 2)


async def test_unexpected_provider_exception_becomes_provider_error(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        RuntimeError("socket exploded"), ModelResponse([say("ok")], "end_turn")
    )
    agent = Agent(provider, workspace=tmp_path)
    with pytest.raises(ProviderError, match="RuntimeError: socket exploded"):
        await agent.chat("hi")
    assert await agent.chat("hi") == "ok"
    assert len(provider.requests[1].messages) == 1


async def test_empty_reply_and_refusal_stop_kinds(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        ModelResponse([], "end_turn"),
        ModelResponse([say("I can't help with that.")], "refusal"),
        ModelResponse([say("ok")], "max_tokens"),
    )
    agent = Agent(provider, workspace=tmp_path)
    events = [e async for e in agent.stream_chat("one")]
    assert isinstance(events[-1], AgentFinished) and events[-1].text == ""
    assert [e async for e in agent.stream_chat("two")][-1].stop == "refusal"  # type: ignore[union-attr]
    assert api_problems(as_request(provider.requests[-1].messages)) == []
    assert (await agent.chat("three")) == "ok"
    # the empty reply left no empty assistant message behind
    assert api_problems(as_request(provider.requests[-1].messages)) == []


async def test_constructor_validation_and_repr(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Agent(OfflineProvider(), workspace=tmp_path, max_turns=0)
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    assert "offline" in repr(agent)
    with pytest.raises(ValueError):
        await agent.chat("   ")


async def test_cancel_while_waiting_for_approval(tmp_path: Path) -> None:
    waiting = asyncio.Event()

    async def slow_handler(request: Any) -> Any:
        waiting.set()
        await asyncio.sleep(3600)

    provider = ScriptedProvider(
        ModelResponse(
            [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "write_file",
                    "input": {"file_path": "a", "content": "b"},
                }
            ],
            "tool_use",
        ),
        ModelResponse([say("ok")], "end_turn"),
    )
    agent = Agent(provider, workspace=tmp_path, approval_handler=slow_handler)
    agent.set_policy("write_file", "ask")
    task = asyncio.create_task(agent.chat("write"))
    await asyncio.wait_for(waiting.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not (tmp_path / "a").exists()
    assert await agent.chat("never mind") == "ok"
    sent = provider.requests[-1].messages
    assert api_problems(as_request(sent)) == []
    assert sent[-1]["content"][0]["content"] == conversation.NOT_RUN  # it never started
    assert sent[-1]["content"][0]["is_error"] is True


async def test_an_interrupted_single_call_is_answered_interrupted(tmp_path: Path) -> None:
    # A reply's only call runs in the chat's own task: an interrupt while it runs must still
    # answer it "interrupted" (it ran), and a CancelledError the tool raises itself is its error.
    from jupyter_agent.tools.decorator import tool
    from jupyter_agent.tools.registry import ToolRegistry

    running = asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes long."""
        running.set()
        await asyncio.sleep(3600)
        return "never"

    @tool
    async def cancels_itself() -> str:
        """Raises CancelledError on its own."""
        raise asyncio.CancelledError

    registry = ToolRegistry()
    registry.register(slow)
    registry.register(cancels_itself)

    def use(name: str) -> ModelResponse:
        return ModelResponse(
            [{"type": "tool_use", "id": f"id_{name}", "name": name, "input": {}}], "tool_use"
        )

    provider = ScriptedProvider(
        use("slow"), ModelResponse([say("ok")], "end_turn"),
        use("cancels_itself"), ModelResponse([say("done")], "end_turn"),
    )  # fmt: skip
    agent = Agent(provider, workspace=tmp_path, registry=registry)
    task = asyncio.create_task(agent.chat("go"))
    await asyncio.wait_for(running.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await agent.chat("again") == "ok"
    sent = provider.requests[-1].messages
    assert api_problems(as_request(sent)) == []
    results = [
        block
        for message in sent
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert [block["content"] for block in results] == [conversation.INTERRUPTED]
    assert await agent.chat("and the other") == "done"
    last = provider.requests[-1].messages[-1]["content"][0]
    assert last["is_error"] is True and "CancelledError" in last["content"]
