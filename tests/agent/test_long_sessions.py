"""Long and faulty sessions, played through the real ``anthropic`` SDK against the fake API.

Each test plays one fault the SPEC's "Long and faulty sessions" names: a reply cut off with a
half-written tool call, a paused turn, a hanging tool, a tool that raises ``CancelledError``, an
approval that keeps its siblings waiting, a huge result, images, repeated or foreign tool ids,
and a conversation that outgrows the context window (the fake answers 400 "prompt is too long"
exactly as the API does).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agent_builder import SYSTEM, make_agent
from fake_anthropic import (
    FakeAnthropic,
    Reply,
    api_problems,
    request_tokens,
    result_text,
    text,
    tool_results,
    tool_use,
    user_texts,
)
from PIL import Image as PillowImage

from jupyter_agent import Image
from jupyter_agent.agent.agent import Agent
from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.errors import ProviderError
from jupyter_agent.events import (
    AgentError,
    AgentEvent,
    AgentFinished,
    ContextCompacted,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
)
from jupyter_agent.providers.base import ModelRequest, ModelResponse, ProviderEvent
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.registry import ToolRegistry


async def collect(agent: Agent, prompt: str, **kwargs: Any) -> list[AgentEvent]:
    return [event async for event in agent.stream_chat(prompt, **kwargs)]


def finished(events: list[AgentEvent]) -> list[ToolCallFinished]:
    return [e for e in events if isinstance(e, ToolCallFinished)]


# -- truncated replies never act ------------------------------------------------------------------


async def test_a_reply_cut_off_by_max_tokens_runs_none_of_its_calls(tmp_path: Path) -> None:
    commits: list[dict[str, Any]] = []

    @tool
    def commit(message: str, paths: list[str] | None = None) -> str:
        """Commit files (all of them when paths is missing).

        Args:
            message: the commit message
            paths: the files to commit
        """
        commits.append({"message": message, "paths": paths})
        return "committed everything" if paths is None else f"committed {paths}"

    fake = FakeAnthropic(
        Reply(
            [
                {"type": "text", "text": "Committing."},
                tool_use("toolu_c", "commit", {"message": "x"}),
            ],
            stop_reason="max_tokens",
        ),
        text("I will retry with a smaller call."),
    )
    agent = make_agent(fake, tmp_path, commit)
    events = await collect(agent, "commit notes.txt")

    assert commits == []  # the half-written call did not act
    (result,) = finished(events)
    assert result.is_error
    assert "max_tokens" in result.output and "smaller input" in result.output
    # the model was told, in a valid conversation, and could answer
    assert len(fake.requests) == 2
    sent = tool_results(fake.requests[1])[-1]
    assert sent["is_error"] is True and "smaller input" in result_text(sent)
    assert events[-1] == AgentFinished(
        "Committing.\n\nI will retry with a smaller call.",
        "end_turn",
        2,
        events[-1].usage,  # type: ignore[union-attr]
    )


async def test_a_refusal_with_a_call_runs_nothing_and_ends_the_chat(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool
    def act(what: str) -> str:
        """Do something.

        Args:
            what: what
        """
        ran.append(what)
        return "done"

    fake = FakeAnthropic(
        Reply([tool_use("toolu_r", "act", {"what": "x"})], stop_reason="refusal"),
        text("fine"),
    )
    agent = make_agent(fake, tmp_path, act)
    events = await collect(agent, "do it")
    assert ran == []
    assert isinstance(events[-1], AgentFinished) and events[-1].stop == "refusal"
    assert await agent.chat("something else") == "fine"
    assert api_problems(fake.requests[-1]) == []


async def test_pause_turn_is_continued(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply([{"type": "text", "text": "Searching…"}], stop_reason="pause_turn"),
        text("Found it."),
    )
    agent = make_agent(fake, tmp_path)
    answer = await agent.chat("look it up")
    assert len(fake.requests) == 2
    # the paused reply went back as it was, for the model to go on from
    assert fake.requests[1]["messages"][-1]["role"] == "assistant"
    assert "Searching…" in answer and "Found it." in answer
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]


# -- tool calls are bounded -----------------------------------------------------------------------


@tool
async def hang(seconds: float) -> str:
    """Sleep.

    Args:
        seconds: how long
    """
    await asyncio.sleep(seconds)
    return "slept"


@tool
def quick(value: str) -> str:
    """Echo.

    Args:
        value: what to echo
    """
    return f"echo {value}"


async def test_a_hanging_call_times_out_and_its_siblings_go_on(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply(
            [
                tool_use("toolu_h", "hang", {"seconds": 60}),
                tool_use("toolu_q", "quick", {"value": "a"}),
            ]
        ),
        text("done"),
    )
    agent = make_agent(fake, tmp_path, hang, quick, tool_timeout=0.3)
    events = await asyncio.wait_for(collect(agent, "go"), 10)
    by_id = {e.call_id: e for e in finished(events)}
    assert by_id["toolu_h"].is_error and by_id["toolu_h"].output.endswith(
        "timed out after 0.3 s and was cancelled. Try a smaller task, or a different approach."
    )
    assert by_id["toolu_q"].output == "echo a" and not by_id["toolu_q"].is_error
    assert [b["tool_use_id"] for b in tool_results(fake.requests[1])] == ["toolu_h", "toolu_q"]


async def test_cancelled_error_inside_a_tool_is_that_tools_error(tmp_path: Path) -> None:
    @tool
    async def flaky(x: int) -> str:
        """Fails with CancelledError from its own work.

        Args:
            x: anything
        """
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future

    fake = FakeAnthropic(Reply([tool_use("toolu_f", "flaky", {"x": 1})]), text("recovered"))
    agent = make_agent(fake, tmp_path, flaky)
    events = await collect(agent, "go")
    (result,) = finished(events)
    assert result.is_error and "CancelledError" in result.output
    assert isinstance(events[-1], AgentFinished) and events[-1].text == "recovered"


async def test_a_call_waiting_for_approval_does_not_delay_its_allowed_siblings(
    tmp_path: Path,
) -> None:
    sibling_done = asyncio.Event()

    @tool
    def sibling(value: str) -> str:
        """Allowed.

        Args:
            value: v
        """
        sibling_done.set()
        return "sibling ran"

    seen_while_asking: list[bool] = []

    async def handler(request: ApprovalRequest) -> Decision:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(sibling_done.wait(), 2)
        seen_while_asking.append(sibling_done.is_set())
        return Decision(True)

    fake = FakeAnthropic(
        Reply(
            [
                tool_use("toolu_a", "quick", {"value": "x"}),
                tool_use("toolu_b", "sibling", {"value": "y"}),
            ]
        ),
        text("ok"),
    )
    agent = make_agent(fake, tmp_path, quick, sibling, approval_handler=handler)
    agent.set_policy("quick", "ask")
    await agent.chat("go")
    assert seen_while_asking == [True]
    # results still in the model's order, in one message
    assert [b["tool_use_id"] for b in tool_results(fake.requests[1])] == ["toolu_a", "toolu_b"]


async def test_a_huge_result_is_cut_the_same_for_the_model_and_the_cell(tmp_path: Path) -> None:
    @tool
    def dump(n: int) -> str:
        """Lots of text.

        Args:
            n: how many characters
        """
        return "H" * 1000 + "x" * (n - 2000) + "T" * 1000

    fake = FakeAnthropic(Reply([tool_use("toolu_d", "dump", {"n": 500_000})]), text("ok"))
    agent = make_agent(fake, tmp_path, dump, max_result_chars=20_000)
    events = await collect(agent, "dump")
    (result,) = finished(events)
    sent = result_text(tool_results(fake.requests[1])[0])
    assert sent == result.output
    assert len(sent) <= 20_000
    assert sent.startswith("H" * 1000) and sent.endswith("T" * 1000)
    match = re.search(r"\n\n\[… ([\d,]+) characters cut …\]\n\n", sent)
    assert match is not None
    assert int(match[1].replace(",", "")) + len(sent) - len(match[0]) == 500_000


# -- images ---------------------------------------------------------------------------------------


def png(width: int, height: int, colour: str = "red") -> bytes:
    buffer = io.BytesIO()
    PillowImage.new("RGB", (width, height), colour).save(buffer, format="PNG")
    return buffer.getvalue()


class PartsTool:
    """A tool returning text and ``Image`` parts (the ``ExecutableTool`` contract, no decorator)."""

    def __init__(self, name: str, parts: Any) -> None:
        self.name = name
        self._parts = parts

    def get_schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": "returns images",
            "input_schema": {"type": "object", "properties": {}},
        }

    async def execute(self, args: dict[str, object]) -> list[str | Image]:
        return list(self._parts())


async def test_images_go_as_image_blocks_downscaled_at_most_five(tmp_path: Path) -> None:
    plots = PartsTool(
        "plots", lambda: ["here are the figures", *[Image(png(4000, 1000), "image/png")] * 7]
    )
    mislabelled = PartsTool("mislabelled", lambda: [Image(png(20, 10), "image/jpeg")])

    fake = FakeAnthropic(
        Reply(
            [
                tool_use("toolu_p", "plots", {"count": 7}),
                tool_use("toolu_m", "mislabelled", {"x": 1}),
            ]
        ),
        text("I see them"),
    )
    agent = make_agent(fake, tmp_path, plots, mislabelled)
    events = await collect(agent, "plot")
    assert api_problems(fake.requests[1]) == []  # media types match the bytes
    plots_block, mislabelled_block = tool_results(fake.requests[1])
    parts = plots_block["content"]
    assert parts[0]["type"] == "text" and "2 more images not shown" in parts[0]["text"]
    images = [p for p in parts if p["type"] == "image"]
    assert len(images) == 5
    for part in images:
        with PillowImage.open(io.BytesIO(base64.b64decode(part["source"]["data"]))) as picture:
            assert max(picture.size) <= 1568
    assert mislabelled_block["content"][0]["source"]["media_type"] == "image/png"
    by_id = {e.call_id: e for e in finished(events)}
    assert len(by_id["toolu_p"].images) == 5


# -- ids ------------------------------------------------------------------------------------------


async def test_repeated_and_foreign_tool_ids_are_made_unique_and_valid(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "quick", {"value": "a"})]),
        Reply(
            [
                tool_use("toolu_1", "quick", {"value": "b"}),
                tool_use("call:0/1", "quick", {"value": "c"}),
            ]
        ),
        text("done"),
        text("and again"),
    )
    agent = make_agent(fake, tmp_path, quick)
    assert await agent.chat("go") == "done"
    assert api_problems(fake.requests[-1]) == []
    ids = [
        b["id"]
        for m in agent.messages
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    assert len(ids) == len(set(ids)) == 3
    # a conversation another provider left with ids Claude refuses still goes through
    agent.messages[1]["content"][0]["id"] = "local:7"
    agent.messages[2]["content"][0]["tool_use_id"] = "local:7"
    assert await agent.chat("more") == "and again"
    assert api_problems(fake.requests[-1]) == []


# -- the context window ---------------------------------------------------------------------------


def respond(summary: str = "SUMMARY: the user explored data files.") -> Any:
    """A script step: a summary for a compaction request, else a call of ``blob`` or an answer."""

    def step(body: dict[str, Any]) -> Reply:
        system = json.dumps(body.get("system"))
        if "compact a long conversation" in system:
            return text(summary)
        last = body["messages"][-1]["content"]
        if any(b["type"] == "text" for b in last):
            return Reply([tool_use(f"toolu_{len(str(body)) % 99991}", "blob", {"size": 20_000})])
        return text("noted")

    return step


@tool
def blob(size: int) -> str:
    """A tool result of ``size`` characters.

    Args:
        size: characters
    """
    return ("0123456789abcdef" * (size // 16 + 1))[:size]


async def test_a_long_session_is_compacted_before_the_api_refuses_it(tmp_path: Path) -> None:
    limit = 30_000
    fake = FakeAnthropic(*[respond()] * 200, context_limit=limit)
    agent = make_agent(fake, tmp_path, blob, context_window=limit)
    compactions: list[ContextCompacted] = []
    for index in range(40):
        # each prompt is long too, so stubs alone cannot keep the session within the window
        events = await collect(agent, f"question number {index} " + "with context " * 600)
        assert not any(isinstance(e, AgentError) for e in events)
        compactions += [e for e in events if isinstance(e, ContextCompacted)]
    assert compactions and all(c.tokens_after < c.tokens_before for c in compactions)
    assert all(api_problems(body) == [] for body in fake.requests)
    assert max(request_tokens(body) for body in fake.requests) <= limit
    last = fake.requests[-1]
    texts = user_texts(last)
    # the system prompt stays; the latest prompts are there in the user's own words
    assert last["system"][0]["text"] == SYSTEM
    assert "question number 39" in texts[-1] and any("question number 38" in t for t in texts)
    assert any(t.startswith("[Summary of the earlier conversation") for t in texts)
    assert any(c.summarised for c in compactions) and any(c.stubbed for c in compactions)


async def test_the_api_saying_prompt_too_long_compacts_and_retries_once(tmp_path: Path) -> None:
    fake = FakeAnthropic(*[respond()] * 100, context_limit=25_000)
    # the agent believes the window is far larger: only the API's 400 tells it
    agent = make_agent(fake, tmp_path, blob, context_window=1_000_000, max_result_chars=None)
    events: list[AgentEvent] = []
    for index in range(12):
        events += await collect(agent, f"question {index}")
    assert any(isinstance(e, ContextCompacted) for e in events)
    assert not any(isinstance(e, AgentError) for e in events)
    assert fake.requests[-1] is not None and api_problems(fake.requests[-1]) == []


async def test_one_oversized_prompt_is_refused_and_the_conversation_stays_usable(
    tmp_path: Path,
) -> None:
    fake = FakeAnthropic(respond(), respond(), text("small answer"), context_limit=20_000)
    agent = make_agent(fake, tmp_path, blob, context_window=20_000)
    await agent.chat("first")
    before = [dict(m) for m in agent.messages]
    with pytest.raises(ProviderError, match="too long for the model's context window"):
        await agent.chat("x " * 100_000)
    assert agent.messages == before
    assert await agent.chat("a small question") == "small answer"


async def test_one_huge_tool_turn_is_cut_to_fit(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply([tool_use(f"toolu_{i}", "blob", {"size": 90_000}) for i in range(4)]),
        text("summarised the four"),
        context_limit=40_000,
    )
    agent = make_agent(fake, tmp_path, blob, context_window=40_000)
    assert await agent.chat("fetch four") == "summarised the four"
    assert request_tokens(fake.requests[-1]) <= 40_000
    assert len(tool_results(fake.requests[-1])) == 4


async def test_compact_on_demand_with_the_offline_model_is_deterministic(tmp_path: Path) -> None:
    from jupyter_agent.providers.offline import OfflineProvider

    async def session() -> tuple[ContextCompacted | None, list[dict[str, Any]]]:
        agent = Agent(OfflineProvider(), workspace=tmp_path, registry=ToolRegistry())
        for question in ("what is in this folder?", "tell me more", "and the last thing"):
            await agent.chat(question)
        event = await agent.compact()
        return event, agent.messages

    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    first, messages = await session()
    _, again = await session()
    assert isinstance(first, ContextCompacted) and first.tokens_after < first.tokens_before
    assert messages == again
    assert messages[0]["content"][0]["text"].startswith("[Summary of the earlier conversation")
    assert "and the last thing" in json.dumps(messages)
    assert api_problems({"model": "m", "max_tokens": 1, "messages": messages}) == []


# -- max_turns belongs to a chat ------------------------------------------------------------------


async def test_max_turns_is_an_argument_of_the_chat(tmp_path: Path) -> None:
    fake = FakeAnthropic(
        Reply([tool_use("toolu_x", "quick", {"value": "a"})]),
        Reply([tool_use("toolu_y", "quick", {"value": "b"})]),
    )
    agent = make_agent(fake, tmp_path, quick, max_turns=20)
    events = await collect(agent, "go", max_turns=1)
    assert isinstance(events[-1], AgentFinished) and events[-1].stop == "max_turns"
    assert agent.max_turns == 20
    assert len(fake.requests) == 1


# -- thinking -------------------------------------------------------------------------------------


class ThinkingProvider:
    """A provider that streams extended thinking before its answer (the provider contract)."""

    name = "thinking"
    model = "claude-sonnet-5-5"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        yield ThinkingDelta("Let me think")
        yield ThinkingDelta(" about it.")
        yield TextDelta("The answer.")
        yield ModelResponse(
            [
                {"type": "thinking", "thinking": "Let me think about it.", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "The answer."},
            ],
            "end_turn",
        )

    async def aclose(self) -> None:
        return None


async def test_thinking_streams_as_its_own_events_and_round_trips(tmp_path: Path) -> None:
    provider = ThinkingProvider()
    agent = Agent(provider, workspace=tmp_path, registry=ToolRegistry())
    events = [e async for e in agent.stream_chat("why?")]
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == [
        "Let me think",
        " about it.",
    ]
    assert isinstance(events[-1], AgentFinished) and events[-1].text == "The answer."
    await agent.chat("and then?")
    sent = provider.requests[-1].messages[1]["content"]
    assert sent[0] == {
        "type": "thinking",
        "thinking": "Let me think about it.",
        "signature": "sig==",
    }
    assert sent[1] == {"type": "redacted_thinking", "data": "opaque"}


async def test_an_overflow_the_api_reports_for_a_hopeless_prompt_is_reported_not_looped(
    tmp_path: Path,
) -> None:
    fake = FakeAnthropic(respond(), respond(), text("small answer"), context_limit=6_000)
    # the agent believes the window is far larger; the API's answer names the real maximum
    agent = make_agent(fake, tmp_path, blob, context_window=1_000_000)
    await agent.chat("first")  # a blob call and an answer: about 5,000 tokens
    before = [dict(m) for m in agent.messages]
    sent = len(fake.requests)
    events: list[AgentEvent] = []
    with pytest.raises(ProviderError, match="too long for the model's context window"):
        async for event in agent.stream_chat("y " * 14_000):  # 7,000 tokens on its own
            events.append(event)
    assert len(fake.requests) == sent + 1  # refused once by the API; no futile retry
    assert isinstance(events[-1], AgentError)
    assert agent.messages == before  # the prompt that cannot fit is not kept
    assert await agent.chat("a small question") == "small answer"
    assert api_problems(fake.requests[-1]) == []
