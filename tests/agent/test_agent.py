"""The agent loop driven through the real ``anthropic`` SDK against a fake Messages API.

Every request the SDK sends is checked by the fake server with the API's own rules (see
``fake_anthropic.api_problems``): a conversation the agent leaves invalid comes back as a 400.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agent_builder import SYSTEM, make_agent
from fake_anthropic import ErrorReply, FakeAnthropic, Reply, api_problems, text, tool_use

from jupyter_agent.agent.agent import Agent
from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.errors import ProviderError
from jupyter_agent.events import (
    AgentError,
    AgentEvent,
    AgentFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Usage,
)
from jupyter_agent.tools.decorator import tool


@tool
def add(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: the first number
        b: the second number
    """
    return str(a + b)


@tool
def explode(reason: str) -> str:
    """Always fails.

    Args:
        reason: why
    """
    raise RuntimeError(f"boom: {reason}")


async def collect(agent: Agent, prompt: str) -> list[AgentEvent]:
    return [event async for event in agent.stream_chat(prompt)]


def last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    message = body["messages"][-1]
    assert message["role"] == "user"
    return list(message["content"])


async def test_request_format_tool_results_and_caching(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply(
            [
                {"type": "text", "text": "Let me compute."},
                tool_use("toolu_1", "add", {"a": 2, "b": 3}),
                tool_use("toolu_2", "explode", {"reason": "test"}),
            ],
            usage={
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_creation_input_tokens": 50,
                "cache_read_input_tokens": 0,
            },
        ),
        text(
            "2 + 3 = 5; the other tool failed.",
            usage={
                "input_tokens": 30,
                "output_tokens": 10,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 150,
            },
        ),
    )
    agent = make_agent(fake, tmp_path, add, explode)
    events = await collect(agent, "What is 2 + 3?")

    first, second = fake.requests
    assert first["model"] == "claude-sonnet-5-5"
    assert first["stream"] is True
    assert first["system"] == [
        {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    ]
    assert [t["name"] for t in first["tools"]] == ["add", "explode"]
    assert "cache_control" not in first["tools"][0]
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["tools"][0]["input_schema"]["type"] == "object"
    assert set(first["tools"][0]["input_schema"]["properties"]) == {"a", "b"}
    assert first["tools"][0]["description"].startswith("Add two integers")
    assert first["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is 2 + 3?", "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]

    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert assistant["content"][1]["input"] == {"a": 2, "b": 3}
    results = last_user_blocks(second)
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2"]
    assert results[0]["content"] == "5"
    assert "is_error" not in results[0]
    assert results[1]["is_error"] is True
    assert results[1]["content"] == "Error executing explode: boom: test"
    assert results[-1]["cache_control"] == {"type": "ephemeral"}
    # the cache marker is only on the wire, never in the agent's own conversation
    assert "cache_control" not in json.dumps(agent.messages)

    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.call_id, e.name, e.input) for e in started] == [
        ("toolu_1", "add", {"a": 2, "b": 3}),
        ("toolu_2", "explode", {"reason": "test"}),
    ]
    finished = {e.call_id: e for e in events if isinstance(e, ToolCallFinished)}
    assert finished["toolu_1"].output == "5" and not finished["toolu_1"].is_error
    assert finished["toolu_2"].is_error
    turns = [e for e in events if isinstance(e, TurnFinished)]
    assert [t.stop_reason for t in turns] == ["tool_use", "end_turn"]
    assert turns[0].usage == Usage(100, 20, 50, 0)
    assert turns[1].usage == Usage(30, 10, 0, 150)
    final = events[-1]
    assert isinstance(final, AgentFinished)
    assert final.stop == "end_turn" and final.turns == 2
    assert final.usage == Usage(130, 30, 50, 150)
    assert agent.usage == final.usage
    assert final.text == "Let me compute.\n\n2 + 3 = 5; the other tool failed."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == final.text
    assert isinstance(events[0], TurnStarted) and events[0].model == "claude-sonnet-5-5"


async def test_the_four_calls_of_one_reply_all_run_at_once(tmp_path: Path) -> None:
    """Each call waits until all four have started: run one after another, the first would wait
    for the others for ever (the timeout only turns that hang into a failed call)."""
    all_started = asyncio.Barrier(4)

    @tool
    async def meet(label: str) -> str:
        """Wait for the other calls, then return the label.

        Args:
            label: returned
        """
        async with asyncio.timeout(10):
            await all_started.wait()
        return label

    fake = FakeAnthropic(
        Reply([tool_use(f"toolu_{i}", "meet", {"label": f"N{i}"}) for i in range(4)]),
        text("met"),
    )
    agent = make_agent(fake, tmp_path, meet)
    assert await agent.chat("meet four times") == "met"
    assert [r["content"] for r in last_user_blocks(fake.requests[1])] == ["N0", "N1", "N2", "N3"]


async def test_cancel_mid_stream_keeps_the_partial_text(tmp_path: Path) -> None:
    gate = asyncio.Event()  # never set
    fake = FakeAnthropic(text("Partial answer then silence", gate=gate, chunk=14), text("Again."))
    agent = make_agent(fake, tmp_path, add, explode)
    first_delta = asyncio.Event()

    async def run() -> None:
        async for event in agent.stream_chat("speak"):
            if isinstance(event, TextDelta):
                first_delta.set()

    task = asyncio.create_task(run())
    await asyncio.wait_for(first_delta.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.messages[-1]["content"] == [{"type": "text", "text": "Partial answer"}]
    assert await agent.chat("again") == "Again."
    assert api_problems(fake.requests[-1]) == []


async def test_four_slow_tools_run_concurrently_and_answer_in_model_order(tmp_path: Path) -> None:
    """All four calls start before any ends (a barrier: in series the first would wait for ever),
    then they end in an order the test sets, unlike the model's: L3, then — once its end is
    reported — L1, then L2, then L0."""
    all_started = asyncio.Barrier(4)
    may_end = {f"L{i}": asyncio.Event() for i in range(4)}
    next_to_end = {"L3": "L1", "L1": "L2", "L2": "L0"}

    @tool
    async def slow(label: str) -> str:
        """Wait for the other calls and for this call's turn to end, then return the label.

        Args:
            label: returned
        """
        await asyncio.sleep(0.3)  # a call takes this long at least: its duration_s must say so
        async with asyncio.timeout(10):
            if await all_started.wait() == 0:
                may_end["L3"].set()
            await may_end[label].wait()
        return label

    fake = FakeAnthropic(
        Reply([tool_use(f"toolu_{i}", "slow", {"label": f"L{i}"}) for i in range(4)]),
        text("all done"),
    )
    agent = make_agent(fake, tmp_path, slow)
    events: list[AgentEvent] = []
    async for event in agent.stream_chat("run them"):
        events.append(event)
        if isinstance(event, ToolCallFinished):
            ended = "L" + event.call_id.removeprefix("toolu_")
            if ended in next_to_end:
                may_end[next_to_end[ended]].set()

    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    # events come as each call completes, the results go back in the model's order
    assert [e.call_id for e in finished] == ["toolu_3", "toolu_1", "toolu_2", "toolu_0"]
    assert all(e.duration_s >= 0.29 for e in finished)
    results = last_user_blocks(fake.requests[1])
    assert [r["tool_use_id"] for r in results] == [f"toolu_{i}" for i in range(4)]
    assert [r["content"] for r in results] == ["L0", "L1", "L2", "L3"]


async def test_cancel_mid_tool_then_chat_again(tmp_path: Path) -> None:
    tool_started = asyncio.Event()
    tool_cancelled = asyncio.Event()

    @tool
    async def wait_forever(what: str) -> str:
        """Wait for something that never comes.

        Args:
            what: what to wait for
        """
        tool_started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            tool_cancelled.set()
            raise
        return "never"

    fake = FakeAnthropic(
        Reply(
            [
                {"type": "text", "text": "Waiting."},
                tool_use("toolu_a", "add", {"a": 1, "b": 1}),
                tool_use("toolu_b", "wait_forever", {"what": "godot"}),
            ]
        ),
        text("Fine, something else then."),
    )
    agent = make_agent(fake, tmp_path, add, wait_forever)
    seen: list[AgentEvent] = []

    async def run() -> None:
        async for event in agent.stream_chat("wait for godot"):
            seen.append(event)

    task = asyncio.create_task(run())
    await asyncio.wait_for(tool_started.wait(), 5)
    await asyncio.sleep(0.05)  # let the quick tool finish
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert tool_cancelled.is_set(), "the running tool was not cancelled"
    assert any(isinstance(e, ToolCallFinished) and e.call_id == "toolu_a" for e in seen)

    answer = await agent.chat("forget it, do something else")
    assert answer == "Fine, something else then."
    body = fake.requests[-1]
    assert api_problems(body) == []
    blocks = last_user_blocks(body)
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert blocks[0] == {"type": "tool_result", "tool_use_id": "toolu_a", "content": "2"}
    assert blocks[1]["tool_use_id"] == "toolu_b"
    assert blocks[1]["is_error"] is True
    assert blocks[1]["content"] == "interrupted by the user"
    assert blocks[2]["text"] == "forget it, do something else"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


def test_keyboard_interrupt_mid_tool_then_chat_again(tmp_path: Path) -> None:
    @tool
    async def interrupted(x: int) -> str:
        """Gets interrupted (as Ctrl-C in a notebook would).

        Args:
            x: anything
        """
        await asyncio.sleep(0.01)
        raise KeyboardInterrupt

    fake = FakeAnthropic(
        Reply(
            [
                tool_use("toolu_k", "interrupted", {"x": 1}),
                tool_use("toolu_l", "add", {"a": 1, "b": 2}),
            ]
        ),
        text("ok, stopping"),
    )
    agent = make_agent(fake, tmp_path, add, interrupted)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(agent.chat("go"))
    # the next chat, on a fresh event loop (the client passed in is kept, with a warning)
    with pytest.warns(RuntimeWarning, match="different event loop"):
        assert asyncio.run(agent.chat("what happened?")) == "ok, stopping"
    body = fake.requests[-1]
    assert api_problems(body) == []
    blocks = last_user_blocks(body)
    by_id = {b["tool_use_id"]: b for b in blocks if b["type"] == "tool_result"}
    assert [b.get("tool_use_id") for b in blocks[:2]] == ["toolu_k", "toolu_l"]
    assert by_id["toolu_k"]["is_error"] is True
    assert by_id["toolu_k"]["content"] == "interrupted by the user"
    assert blocks[-1] == {
        "type": "text",
        "text": "what happened?",
        "cache_control": {"type": "ephemeral"},
    }


async def test_closing_the_event_stream_mid_tool_leaves_a_valid_conversation(
    tmp_path: Path,
) -> None:
    running, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def slow(seconds: float) -> str:
        """Sleep.

        Args:
            seconds: how long
        """
        running.set()
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "slept"

    # two calls: each runs in a task of its own while the stream goes on (a lone call runs in
    # the stream's task and has not begun when its ToolCallStarted is out)
    calls = [tool_use(f"toolu_{n}", "slow", {"seconds": 30}) for n in "st"]
    fake = FakeAnthropic(Reply(calls), text("next"))
    agent = make_agent(fake, tmp_path, slow)
    stream = agent.stream_chat("sleep")
    async for event in stream:
        if isinstance(event, ToolCallStarted):
            break
    await asyncio.wait_for(running.wait(), 10)  # 10 s only stops a hung test
    await stream.aclose()
    # the close cancelled the running tool (a close that waited for it would see "slept" after
    # 30 s, one that left it running would find it not cancelled)
    assert cancelled.is_set()
    assert agent.messages[-1]["content"][0]["content"] == "interrupted by the user"
    assert await agent.chat("next please") == "next"
    assert api_problems(fake.requests[-1]) == []


async def test_overloaded_529_then_success_uses_the_sdk_retry(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        ErrorReply(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"}),
        text("made it"),
    )
    agent = make_agent(fake, tmp_path, add, explode, max_retries=2)
    assert await agent.chat("hello") == "made it"
    assert len(fake.requests) == 2
    assert fake.requests[0] == fake.requests[1]
    assert fake.headers[1].get("x-stainless-retry-count") == "1"


async def test_overloaded_beyond_retries_is_a_provider_error(tmp_path: Path) -> None:
    overloaded = ErrorReply(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
    fake = FakeAnthropic(overloaded, overloaded, text("later"))
    agent = make_agent(fake, tmp_path, add, explode, max_retries=1)
    with pytest.raises(ProviderError, match=r"529 — overloaded_error: Overloaded"):
        await agent.chat("hello")
    assert len(fake.requests) == 2  # one try and one SDK retry; no second retry layer
    assert agent.messages == []
    assert await agent.chat("hello") == "later"


async def test_400_is_raised_as_provider_error_then_a_chat_succeeds(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        ErrorReply(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000"),
        text("hi again"),
    )
    agent = make_agent(fake, tmp_path, add, explode)
    events: list[AgentEvent] = []
    with pytest.raises(ProviderError) as caught:
        async for event in agent.stream_chat("a very long prompt"):
            events.append(event)
    message = str(caught.value)
    assert (
        "400" in message and "invalid_request_error" in message and "prompt is too long" in message
    )
    assert "sk-test" not in message
    assert isinstance(events[-1], AgentError) and events[-1].message == message
    assert agent.messages == []  # the failed prompt does not linger

    assert await agent.chat("a shorter prompt") == "hi again"
    assert fake.requests[-1]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a shorter prompt", "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]


async def test_failure_after_tools_ran_keeps_their_results_and_stays_valid(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "add", {"a": 20, "b": 22})]),
        ErrorReply(500, "api_error", "Internal server error"),
        text("The sum was 42."),
    )
    agent = make_agent(fake, tmp_path, add, explode)
    with pytest.raises(ProviderError, match="500"):
        await agent.chat("add 20 and 22")
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user"]
    assert await agent.chat("so, what was it?") == "The sum was 42."
    body = fake.requests[-1]
    assert api_problems(body) == []
    blocks = last_user_blocks(body)
    assert blocks[0]["tool_use_id"] == "toolu_1" and blocks[0]["content"] == "42"
    assert blocks[1]["text"] == "so, what was it?"


async def test_max_turns_ends_cleanly_with_a_note(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        *(
            Reply(
                [
                    {"type": "text", "text": f"step {i}"},
                    tool_use(f"toolu_{i}", "add", {"a": i, "b": i}),
                ]
            )
            for i in range(3)
        ),
        text("continuing"),
    )
    agent = make_agent(fake, tmp_path, add, explode, max_turns=3)
    events = await collect(agent, "loop forever")
    final = events[-1]
    assert isinstance(final, AgentFinished)
    assert final.stop == "max_turns" and final.turns == 3
    assert len(fake.requests) == 3
    assert final.text.startswith("step 0\n\nstep 1\n\nstep 2\n\n")
    assert "max_turns" in final.text.splitlines()[-1]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == final.text
    # every call of the last turn was answered
    assert agent.messages[-1]["content"][0]["tool_use_id"] == "toolu_2"
    assert await agent.chat("go on") == "continuing"
    assert api_problems(fake.requests[-1]) == []


async def test_malformed_tool_input_becomes_an_error_result_and_the_loop_goes_on(
    tmp_path: Path,
) -> None:
    fake = FakeAnthropic(
        Reply(
            [
                tool_use("toolu_1", "add", {"a": "two", "b": 3}),
                tool_use("toolu_2", "add", {"a": 1}),
                tool_use("toolu_3", "no_such_tool", {}),
                tool_use("toolu_4", "add", {}),
            ],
            raw_json={"toolu_4": "[1, 2]"},
        ),
        text("sorry, let me fix that"),
    )
    agent = make_agent(fake, tmp_path, add, explode)
    events = await collect(agent, "add badly")
    assert isinstance(events[-1], AgentFinished) and events[-1].text == "sorry, let me fix that"
    results = last_user_blocks(fake.requests[1])
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2", "toolu_3", "toolu_4"]
    assert all(r["is_error"] for r in results)
    assert "invalid arguments for add" in results[0]["content"]
    assert "invalid arguments for add" in results[1]["content"]
    assert "b" in results[1]["content"] and "required" in results[1]["content"].lower()
    assert "not found" in results[2]["content"]
    assert "not a JSON object" in results[3]["content"]
    # the request that carried them was valid (non-object input stored as {})
    assert fake.requests[1]["messages"][1]["content"][3]["input"] == {}


async def test_unparseable_tool_json_is_a_provider_error_and_the_conversation_survives(
    tmp_path: Path,
) -> None:
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "add", {})], raw_json={"toolu_1": '{"a": 1,, "b": 2}'}),
        text("recovered"),
    )
    agent = make_agent(fake, tmp_path, add, explode)
    with pytest.raises(ProviderError, match="could not be read"):
        await agent.chat("add")
    assert agent.messages == []
    assert await agent.chat("add again") == "recovered"


async def test_text_deltas_stream_live_and_join_to_the_final_text(tmp_path: Path) -> None:
    gate = asyncio.Event()
    answer = "Streaming means the first words arrive before the last ones are written."
    fake = FakeAnthropic(text(answer, gate=gate, chunk=5))
    agent = make_agent(fake, tmp_path, add, explode)
    deltas: list[str] = []
    final: AgentFinished | None = None
    async for event in agent.stream_chat("stream please"):
        if isinstance(event, TextDelta):
            if not deltas:
                # the server holds the rest of the answer until this first piece was seen
                assert not gate.is_set()
                gate.set()
            deltas.append(event.text)
        elif isinstance(event, AgentFinished):
            final = event
    assert final is not None
    assert len(deltas) > 5
    assert "".join(deltas) == answer == final.text


async def test_policies_and_approvals(tmp_path: Path) -> None:
    removed: list[str] = []

    @tool(destructive=True)
    def remove(path: str) -> str:
        """Remove a file.

        Args:
            path: what
        """
        removed.append(path)
        return f"removed {path}"

    asked: list[ApprovalRequest] = []

    async def handler(request: ApprovalRequest) -> Decision:
        asked.append(request)
        if request.input["path"] == "keep.txt":
            return Decision(False, "keep that one")
        return Decision(True)

    fake = FakeAnthropic(
        Reply(
            [
                tool_use("t1", "remove", {"path": "a.txt"}),
                tool_use("t2", "remove", {"path": "keep.txt"}),
            ]
        ),
        text("done"),
        Reply(
            [tool_use("t3", "remove", {"path": "b.txt"}), tool_use("t4", "add", {"a": 1, "b": 1})]
        ),
        text("done"),
        Reply([tool_use("t5", "remove", {"path": "c.txt"})]),
        text("done"),
    )
    agent = make_agent(fake, tmp_path, add, remove, approval_handler=handler)
    assert agent.get_policy("remove") == "ask"
    assert agent.get_policy("add") == "allow"
    await agent.chat("remove a and keep")
    assert removed == ["a.txt"]
    assert [r.call_id for r in asked] == ["t1", "t2"]
    results = last_user_blocks(fake.requests[1])
    assert results[0]["content"] == "removed a.txt"
    assert results[1]["is_error"] and "declined" in results[1]["content"]
    assert "keep that one" in results[1]["content"]

    agent.approval_handler = None  # no one to ask: denied
    events = await collect(agent, "remove b")
    # a view knows from the start which call waits for a question (never shown "running")
    asks = {e.call_id: e.asks for e in events if isinstance(e, ToolCallStarted)}
    assert asks == {"t3": True, "t4": False}
    results = last_user_blocks(fake.requests[3])
    assert results[0]["is_error"] and "approval" in results[0]["content"]
    assert results[1]["content"] == "2"

    agent.approval_handler = handler
    agent.set_policy("remove", "deny")
    events = await collect(agent, "remove c")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].is_error and "deny" in finished[0].output
    assert removed == ["a.txt"]
    with pytest.raises(ValueError):
        agent.set_policy("remove", "maybe")  # type: ignore[arg-type]


async def test_session_context_clear_context_and_tool_management(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply([{"type": "text", "text": "Adding."}, tool_use("toolu_1", "add", {"a": 1, "b": 2})]),
        text("It is 3."),
        text("Fresh start."),
    )
    agent = make_agent(fake, tmp_path, add, explode)
    await agent.chat("What is 1 + 2?")
    transcript = agent.session_context
    assert "## User\n\nWhat is 1 + 2?" in transcript
    assert "tool call `add`" in transcript and "result of `add`: 3" in transcript
    assert "It is 3." in transcript
    assert agent.context.session_context == transcript  # the tools' context reads it live
    usage = agent.usage
    agent.clear_context()
    assert agent.messages == [] and agent.session_context == ""
    assert agent.usage == usage
    agent.set_system_prompt("New rules.")
    assert agent.context.system_prompt == "New rules."

    agent.disable_tool("explode")
    assert [t["name"] for t in agent.get_tools()] == ["add"]
    agent.enable_tool("explode")
    agent.remove_tool("explode")

    def double(n: int) -> str:
        """Double it."""
        return str(2 * n)

    agent.add_tool(double)
    assert [t["name"] for t in agent.get_tools()] == ["add", "double"]
    await agent.chat("again")
    assert fake.requests[-1]["system"][0]["text"] == "New rules."
    assert [t["name"] for t in fake.requests[-1]["tools"]] == ["add", "double"]
    assert len(fake.requests[-1]["messages"]) == 1


async def test_an_interrupted_stream_keeps_the_text_the_user_saw(tmp_path: Path) -> None:
    gate = asyncio.Event()  # never set: the server stalls after the first piece
    fake = FakeAnthropic(
        text("The beginning of a long answer", gate=gate, chunk=16), text("Resumed.")
    )
    agent = make_agent(fake, tmp_path, add, explode)
    stream = agent.stream_chat("tell me a story")
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    assert agent.messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "The beginning of"}],
    }
    assert await agent.chat("go on") == "Resumed."
    assert api_problems(fake.requests[-1]) == []
