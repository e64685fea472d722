"""A turn of hundreds of tool rounds stays bounded, played through the real ``anthropic`` SDK
against the fake API with a context limit enforced the way the API enforces it.

Stubs alone keep the *bytes* of such a turn bounded but not its *messages*: every round adds a
``tool_use`` message and a ``tool_result`` message, and each request's work grows with their
number. Compaction folds the stubbed rounds of a turn into a note on its first round: the prompt,
the first round (and the thinking block that opens it) and the latest rounds stay; the note
counts and names the calls it replaced.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from agent_builder import make_agent
from fake_anthropic import (
    FakeAnthropic,
    Reply,
    api_problems,
    request_tokens,
    text,
    thinking,
    tool_use,
)

from jupyter_agent.agent.agent import Agent
from jupyter_agent.events import AgentError, ContextCompacted
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.tools.decorator import tool

WINDOW = 24_000
RESULT_CHARS = 4_000


@tool
def work(i: int) -> str:
    """Return a few KB.

    Args:
        i: which call this is
    """
    return (f"result {i}: " + "0123456789abcdef" * (RESULT_CHARS // 16))[:RESULT_CHARS]


def long_turns(rounds: int, *, think: bool) -> Any:
    """A script step: ``rounds`` calls of ``work`` per prompt, then an answer; summaries when
    asked to compact."""
    ids = itertools.count()

    def step(body: dict[str, Any]) -> Reply:
        if "compact a long conversation" in json.dumps(body.get("system")):
            return text("SUMMARY: the user had the assistant call work many times.")
        messages = body["messages"]
        since_prompt = 0
        for message in reversed(messages):
            if any(b["type"] == "text" for b in message["content"]):
                break
            since_prompt += 1
        made = since_prompt // 2  # rounds of this turn the request still shows as rounds
        folded = sum(
            int(m[1].replace(",", ""))
            for message in messages[-since_prompt - 1 :]
            for b in message["content"]
            if b["type"] == "tool_result" and isinstance(b["content"], str)
            for m in re.finditer(r"folded to save context: ([\d,]+) tool call", b["content"])
        )
        opening = [thinking("I will call work until it is done.")] if think else []
        if made + folded >= rounds:
            return Reply([*opening, {"type": "text", "text": "done"}])
        n = next(ids)
        return Reply([*opening, tool_use(f"toolu_{n}", "work", {"i": n})])

    return step


def make_long_agent(fake: FakeAnthropic, tmp_path: Path, *, think: bool = False) -> Agent:
    """Threads off and a context window the fake API enforces, for turns of many rounds."""
    provider = AnthropicProvider(
        "claude-sonnet-5-5",
        client=fake.client(),
        threads=False,
        thinking_budget=1024 if think else None,
    )
    return make_agent(
        provider,
        tmp_path,
        work,
        system_prompt="Be thorough.",
        max_turns=1_000,
        context_window=WINDOW,
    )


def notes(body: dict[str, Any]) -> list[str]:
    return [
        b["content"]
        for m in body["messages"]
        for b in m["content"]
        if b["type"] == "tool_result"
        and isinstance(b["content"], str)
        and "folded to save context" in b["content"]
    ]


@pytest.mark.parametrize("think", [False, True], ids=["plain", "thinking"])
async def test_a_turn_of_150_rounds_keeps_few_messages(tmp_path: Path, think: bool) -> None:
    fake = FakeAnthropic(*[long_turns(150, think=think)] * 400, context_limit=WINDOW)
    agent = make_long_agent(fake, tmp_path, think=think)
    events = [e async for e in agent.stream_chat("Call work 150 times, then say done.")]
    assert not [e for e in events if isinstance(e, AgentError)]
    compactions = [e for e in events if isinstance(e, ContextCompacted)]
    assert compactions and all(c.tokens_after < c.tokens_before for c in compactions)
    requests = [b for b in fake.requests if "compact a long conversation" not in str(b["system"])]
    assert len(requests) == 151
    # every request is one the API accepts (with thinking: the loop still opens with it)
    assert all(api_problems(body) == [] for body in requests)
    assert max(request_tokens(body) for body in requests) <= WINDOW
    # bounded: 150 rounds would be 301 messages; folding keeps each request far below that
    sizes = [len(body["messages"]) for body in requests]
    assert max(sizes) <= 40, sizes
    assert max(sizes[100:]) <= max(sizes[50:100])
    last = requests[-1]["messages"]
    # the prompt and the first round stay as they were; the latest round is whole
    assert last[0]["content"][0]["text"] == "Call work 150 times, then say done."
    assert last[1]["content"][-1] == tool_use("toolu_0", "work", {"i": 0})
    if think:
        assert last[1]["content"][0]["type"] == "thinking"
    assert last[-1]["content"][0]["content"].startswith("result 149: ")
    # one note, on the first round, counting the folded calls and naming the latest ones
    (note,) = notes(requests[-1])
    assert note == last[2]["content"][-1]["content"]
    counted = int(re.search(r"context: ([\d,]+) tool calls", note)[1])  # type: ignore[index]
    shown = {int(i) for i in re.findall(r'- work \{"i": (\d+)\}', note)}
    kept = {
        b["input"]["i"]
        for m in last
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use"
    }
    assert counted + len(kept) == 150
    # each compaction said what it did: the calls it folded add up to the note's count
    assert sum(c.folded for c in compactions) == counted
    assert all(c.stubbed and not c.summarised for c in compactions)
    assert len(shown) == 40 and max(shown) + 1 == min(kept - {0})
    assert await agent.chat("Thanks. Again, but only twice.") == "done"


async def test_earlier_turns_keep_their_prompt_first_round_and_answer(tmp_path: Path) -> None:
    fake = FakeAnthropic(*[long_turns(6, think=False)] * 400, context_limit=WINDOW)
    agent = make_long_agent(fake, tmp_path)
    for index in range(12):
        assert await agent.chat(f"Question {index}: call work six times.") == "done"
    requests = [b for b in fake.requests if "compact a long conversation" not in str(b["system"])]
    assert all(api_problems(body) == [] for body in requests)
    assert max(request_tokens(body) for body in requests) <= WINDOW
    messages = agent.messages
    starts = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and any(b["type"] == "text" for b in m["content"])
    ]
    # the folded earlier turns: prompt, first call, its result with the note, the answer
    folded_turns = [
        (start, end)
        for start, end in zip(starts, [*starts[1:], len(messages)], strict=True)
        if any(
            "folded to save context: 5 tool calls" in str(b.get("content"))
            for m in messages[start:end]
            for b in m["content"]
        )
    ]
    assert len(folded_turns) >= 3
    for start, end in folded_turns:
        assert end - start == 4
        assert messages[end - 1]["content"] == [{"type": "text", "text": "done"}]


def test_the_fake_refuses_a_tool_loop_that_does_not_open_with_thinking() -> None:
    """The rule the thinking case above relies on: folding the first round away would break it."""
    call = tool_use("toolu_1", "work", {"i": 1})
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}
    body: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ],
    }
    assert any("must start with a thinking block" in p for p in api_problems(body))
    body["messages"][1]["content"] = [thinking("plan"), call]
    assert api_problems(body) == []


async def test_a_paused_reply_is_continued_with_the_results_it_follows(tmp_path: Path) -> None:
    """A reply that stops with ``pause_turn`` is sent back for the model to go on from; when it
    pushes the request over the window, compaction keeps the results that reply follows (before,
    they were stubbed and folded away under the model's feet)."""
    ids = itertools.count()

    def step(body: dict[str, Any]) -> Reply:
        if "compact a long conversation" in json.dumps(body.get("system")):
            return text("SUMMARY.")
        if body["messages"][-1]["role"] == "assistant":
            return text("done")
        n = next(ids)
        if n == 8:  # a long server-side search, paused
            return Reply([{"type": "text", "text": "found: " + "s" * 50_000}], "pause_turn")
        return Reply([tool_use(f"toolu_{n}", "work", {"i": n})])

    fake = FakeAnthropic(*[step] * 30, context_limit=WINDOW)
    agent = make_long_agent(fake, tmp_path)
    events = [e async for e in agent.stream_chat("Call work eight times, then search.")]
    assert not [e for e in events if isinstance(e, AgentError)]
    assert [e for e in events if isinstance(e, ContextCompacted)]
    continued = fake.requests[-1]["messages"]
    assert continued[-1]["role"] == "assistant"
    assert continued[-3]["content"] == [tool_use("toolu_7", "work", {"i": 7})]
    assert continued[-2]["content"][0]["content"] == work(7)
    assert all(api_problems(body) == [] for body in fake.requests)
