"""``AnthropicProvider`` on the API's server-side threads: after the first request of a
conversation it sends only the messages the server does not hold yet, and whatever rewrites the
conversation (compaction, ``%agent reset``, an edited message, another provider's turns, a
cancelled turn, a server that lost or never had the thread) leaves the conversation the server
holds equal to ``agent.messages``.

The real SDK talks HTTP to ``fake_anthropic``'s thread-holding fake, on a loopback port (a
cancelled turn, which needs the fake's gate in the test's own event loop, goes through the SDK's
``MockTransport`` instead).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from agent_builder import make_agent
from fake_anthropic import (
    THREADS_BETA,
    FakeAnthropic,
    Reply,
    overloaded_stream,
    text,
    thinking,
    tool_use,
)
from notebook_fake_server import serve

from jupyter_agent.agent.agent import Agent
from jupyter_agent.events import AgentError, TextDelta
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import ModelRequest
from jupyter_agent.tools.decorator import tool


@tool
def probe(i: int) -> str:
    """Look at one item.

    Args:
        i: which item
    """
    return f"item {i} is fine. " * 20


def calls(turn: int, *items: int) -> Reply:
    return Reply(
        [
            {"type": "text", "text": f"Checking, turn {turn}."},
            *(tool_use(f"toolu_{turn}_{i}", "probe", {"i": i}) for i in items),
        ]
    )


@pytest.fixture
def fake() -> FakeAnthropic:
    return FakeAnthropic()


@pytest.fixture
def base_url(fake: FakeAnthropic) -> Iterator[str]:
    with serve(fake, keep_alive=True) as url:
        yield url


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=0)
    yield client
    await client.close()


def checker(provider: AnthropicProvider, workspace: Path) -> Agent:
    """An agent on ``provider`` that checks items with ``probe``."""
    return make_agent(provider, workspace, probe, system_prompt="You check items.")


def continued_from(body: dict[str, Any]) -> str | None:
    thread = body.get("thread")
    return thread.get("previous_message_id") if thread and thread["type"] == "continue" else None


def assert_full_create(body: dict[str, Any], agent: Agent) -> None:
    assert body["thread"] == {"type": "create"}
    assert [m["role"] for m in body["messages"]] == [m["role"] for m in agent.messages[:-1]]


async def test_a_chat_sends_only_the_new_messages_after_its_first_request(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(calls(1, 0), calls(2, 1, 2), calls(3, 3), text("All fine."), text("Yes."))
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client, threads=True), tmp_path)
    assert await agent.chat("Check everything.") == (
        "Checking, turn 1.\n\nChecking, turn 2.\n\nChecking, turn 3.\n\nAll fine."
    )
    assert await agent.chat("Sure?") == "Yes."
    first, *rest = fake.wire
    assert first["thread"] == {"type": "create"} and len(first["messages"]) == 1
    assert first["system"][0]["text"] == "You check items." and first["tools"]
    assert len(rest) == 4
    reply_ids = list(fake.held)
    for body, previous in zip(rest, reply_ids, strict=False):
        # only the tool results (or the next prompt); the thread keeps system and tools
        assert continued_from(body) == previous
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
        assert "system" not in body and "tools" not in body
    assert all(THREADS_BETA in headers["anthropic-beta"] for headers in fake.headers)
    assert fake.held_messages() == agent.messages
    # every request the model saw was the whole conversation, and a valid one
    assert [len(r["messages"]) for r in fake.requests] == [1, 3, 5, 7, 9]
    # usage adds up every reply's (the fake accounts each request by its prompt cache)
    assert agent.usage.input_tokens == sum(u["input_tokens"] for u in fake.usages)
    assert agent.usage.cache_read_input_tokens == sum(
        u["cache_read_input_tokens"] for u in fake.usages
    )


async def test_reset_starts_a_new_thread(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(calls(1, 0), text("Done."), text("Hello again."))
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client, threads=True), tmp_path)
    await agent.chat("Check.")
    agent.clear_context()
    assert await agent.chat("Hi.") == "Hello again."
    assert fake.wire[-1]["thread"] == {"type": "create"}
    assert len(fake.wire[-1]["messages"]) == 1 and fake.wire[-1]["system"]
    assert fake.held_messages() == agent.messages


@pytest.mark.parametrize("edit", ["text in place", "block replaced", "message dropped"])
async def test_an_edited_conversation_is_sent_whole(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path, edit: str
) -> None:
    fake.add(calls(1, 0), text("Done."), text("Noted."))
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client, threads=True), tmp_path)
    await agent.chat("Check.")
    if edit == "text in place":
        agent.messages[0]["content"][0]["text"] = "Check twice."
    elif edit == "block replaced":
        agent.messages[0]["content"][0] = {"type": "text", "text": "Check twice."}
    else:
        del agent.messages[1:3]  # the tool turn
    assert await agent.chat("Again.") == "Noted."
    assert_full_create(fake.wire[-1], agent)
    assert fake.held_messages() == agent.messages
    assert fake.held_messages()[0]["content"][0]["text"] == (
        "Check." if edit == "message dropped" else "Check twice."
    )


async def test_compaction_starts_a_new_thread(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(calls(1, 0, 1), calls(2, 2), text("Done."), text("Still fine."))
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client, threads=True), tmp_path)
    await agent.chat("Check.")
    assert await agent.compact() is not None  # the old tool results are stubs now
    assert await agent.chat("Anything else?") == "Still fine."
    assert_full_create(fake.wire[-1], agent)
    assert fake.held_messages() == agent.messages


async def test_a_summary_request_goes_alone_and_leaves_the_thread(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(calls(1, 0), text("Done."), text("A summary."), text("More."))
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client, threads=True), tmp_path)
    await agent.chat("Check.")
    summary = ModelRequest("Summarise.", [{"role": "user", "content": "..."}], [], "summary")
    _ = [event async for event in agent.provider.stream(summary)]
    assert "thread" not in fake.wire[-1]
    assert await agent.chat("More?") == "More."
    assert continued_from(fake.wire[-1]) is not None and len(fake.wire[-1]["messages"]) == 1
    assert fake.held_messages() == agent.messages


async def test_another_providers_turns_are_sent_as_new_messages(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, base_url: str, tmp_path: Path
) -> None:
    fake.add(calls(1, 0), text("Done."), text("From the other one."), text("Back."))
    mine = AnthropicProvider("claude-sonnet-5-5", client=client, threads=True)
    agent = checker(mine, tmp_path)
    await agent.chat("Check.")
    other_client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=0)
    try:
        agent.provider = AnthropicProvider("claude-sonnet-5-5", client=other_client, threads=False)
        await agent.chat("Who are you?")
    finally:
        await other_client.close()
    agent.provider = mine
    assert await agent.chat("And you?") == "Back."
    body = fake.wire[-1]
    assert fake.held_messages() == agent.messages
    # either a continuation with the turns it missed, or a new thread: never a wrong history
    if body["thread"]["type"] == "continue":
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


@pytest.mark.parametrize("server", ["unknown", "unsupported"])
async def test_a_server_that_refuses_threads_gets_whole_conversations(
    base_url: str,
    client: anthropic.AsyncAnthropic,
    fake: FakeAnthropic,
    tmp_path: Path,
    server: str,
) -> None:
    fake.threads = server
    fake.add(calls(1, 0), calls(2, 1), text("Done."), text("Again."))
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, threads=True)
    agent = checker(provider, tmp_path)
    events = [e async for e in agent.stream_chat("Check.")]
    assert not [e for e in events if isinstance(e, AgentError)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)).endswith("Done.")
    assert await agent.chat("Once more.") == "Again."
    assert "thread" in fake.wire[0]
    # refused once, then never asked again: whole conversations, as without threads
    assert all("thread" not in body for body in fake.wire[1:])
    assert [len(body["messages"]) for body in fake.wire[1:]] == [1, 3, 5, 7]
    assert provider.threads is False


async def test_a_lost_thread_is_replayed_whole(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(calls(1, 0), text("Done."), text("Still here."))
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, threads=True)
    agent = checker(provider, tmp_path)
    await agent.chat("Check.")
    fake.held.clear()  # the server forgot every thread
    assert await agent.chat("Are you there?") == "Still here."
    assert continued_from(fake.wire[-2]) is not None  # refused: thread_not_found
    assert_full_create(fake.wire[-1], agent)
    assert fake.held_messages() == agent.messages and provider.threads


async def test_threads_off_sends_what_it_always_sent(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(calls(1, 0), text("Done."))
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client, threads=False), tmp_path)
    await agent.chat("Check.")
    assert all("thread" not in body for body in fake.wire)
    assert [len(body["messages"]) for body in fake.wire] == [1, 3]
    assert all(THREADS_BETA not in headers.get("anthropic-beta", "") for headers in fake.headers)


async def test_a_paused_turn_continues_with_nothing_new_then_starts_afresh(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(
        text("Searching first.", stop_reason="pause_turn"),
        text("Found it."),
        text("You're welcome."),
    )
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client, threads=True), tmp_path)
    assert await agent.chat("Find it.") == "Searching first.\n\nFound it."
    assert continued_from(fake.wire[1]) is not None and fake.wire[1]["messages"] == []
    assert await agent.chat("Thanks.") == "You're welcome."
    # the agent joined the paused reply and its continuation into one message: a new thread
    assert_full_create(fake.wire[-1], agent)
    assert fake.held_messages() == agent.messages


async def test_thinking_stays_on_the_server_and_round_trips(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    fake.add(
        Reply([thinking("Which item?", "sig-1"), tool_use("toolu_t", "probe", {"i": 7})]),
        Reply([thinking("Fine.", "sig-2"), {"type": "text", "text": "Item 7 is fine."}]),
    )
    provider = AnthropicProvider(
        "claude-haiku-4-5", client=client, thinking_budget=1024, threads=True
    )
    agent = checker(provider, tmp_path)
    assert await agent.chat("Check item 7.") == "Item 7 is fine."
    assert continued_from(fake.wire[1]) is not None
    assert [b["type"] for b in fake.wire[1]["messages"][0]["content"]] == ["tool_result"]
    assert fake.wire[1]["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert fake.held_messages() == agent.messages
    assert agent.messages[1]["content"][0]["signature"].startswith("sig1.")  # the API's own


async def test_a_cancelled_turn_leaves_both_sides_consistent(tmp_path: Path) -> None:
    gate = asyncio.Event()
    fake = FakeAnthropic(
        calls(1, 0),
        text("A long answer that streams slowly.", gate=gate),
        text("Fresh answer."),
    )
    agent = checker(
        AnthropicProvider("claude-sonnet-5-5", client=fake.client(), threads=True), tmp_path
    )
    started = asyncio.Event()

    async def chat() -> None:
        async for event in agent.stream_chat("Check."):
            if isinstance(event, TextDelta) and "long" in event.text:
                started.set()

    task = asyncio.create_task(chat())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert continued_from(fake.wire[1]) is not None  # the cancelled request was a continuation
    assert await agent.chat("Go on.") == "Fresh answer."
    assert_full_create(fake.wire[-1], agent)
    assert fake.held_messages() == agent.messages


async def test_a_wide_turn_is_still_read_from_the_cache(tmp_path: Path) -> None:
    """The continuation marks the end of what it sends; the thread's own prompt is read back."""
    fake = FakeAnthropic(calls(1, *range(25)), text("Done."))
    agent = checker(
        AnthropicProvider("claude-sonnet-5-5", client=fake.client(), threads=True), tmp_path
    )
    await agent.chat("Check all.")
    marked = [
        block
        for message in fake.wire[1]["messages"]
        for block in message["content"]
        if "cache_control" in block
    ]
    assert len(marked) == 1 and marked[0] is fake.wire[1]["messages"][-1]["content"][-1]


@pytest.mark.parametrize("change", ["system prompt", "tool set", "model"])
async def test_a_changed_prompt_or_tool_set_continues_the_thread_a_changed_model_starts_afresh(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path, change: str
) -> None:
    fake.add(calls(1, 0), text("Done."), text("Understood."))
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, threads=True)
    agent = checker(provider, tmp_path)
    await agent.chat("Check.")
    if change == "system prompt":
        agent.set_system_prompt("New rules.")
    elif change == "tool set":
        agent.disable_tool("probe")
    else:
        provider.model = "claude-opus-5-5"
    assert await agent.chat("Noted?") == "Understood."
    last = fake.wire[-1]
    if change == "model":
        assert_full_create(last, agent)
        assert fake.held_messages() == agent.messages
        return
    # a prompt or tool change goes as a mid-conversation system message: the thread (and the
    # cached prefix, and the thinking bound to it) carries on
    assert continued_from(last) is not None
    changes = [m for m in last["messages"] if m["role"] == "system"]
    assert len(changes) == 1
    kinds = [block["type"] for block in changes[0]["content"]]
    assert kinds == (["text"] if change == "system prompt" else ["tool_removal"])
    if change == "system prompt":
        assert "New rules." in changes[0]["content"][0]["text"]
    assert [m for m in fake.held_messages() if m["role"] != "system"] == agent.messages


class OverloadedOnce:
    """Serves ``fake``, except that request number ``nth`` gets a 200 stream that breaks with an
    ``overloaded_error`` event (the SDK does not retry that; the provider does)."""

    def __init__(self, fake: FakeAnthropic, nth: int) -> None:
        self.fake = fake
        self.nth = nth
        self.seen = 0
        self.failed: dict[str, Any] = {}

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":  # the Models API lookup
            return await self.fake.handle(request)
        self.seen += 1
        if self.seen != self.nth:
            return await self.fake.handle(request)
        self.failed = json.loads(await request.aread())
        return overloaded_stream()


async def test_an_overloaded_continuation_is_retried_whole(tmp_path: Path) -> None:
    """An error inside the 200 stream of a continuation: the retry starts a new thread (the
    server may have begun the continuation)."""
    fake = FakeAnthropic(calls(1, 0), text("Done."))
    server = OverloadedOnce(fake, nth=2)
    client = anthropic.AsyncAnthropic(
        api_key="sk-test",
        base_url="https://api.anthropic.test",
        max_retries=1,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(server.handle)),
    )
    agent = checker(
        AnthropicProvider("claude-sonnet-5-5", client=client, max_retry_wait=0.01, threads=True),
        tmp_path,
    )
    assert await agent.chat("Check.") == "Checking, turn 1.\n\nDone."
    assert continued_from(server.failed) is not None
    assert_full_create(fake.wire[1], agent)
    assert fake.held_messages() == agent.messages


async def test_through_a_proxy_threads_are_off_unless_asked_for(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    """A proxy (any base_url but Anthropic's) may drop the ``thread`` field without a word and
    pass on only the new messages: the next cell's prompt would reach the model alone. So there
    the default is whole conversations, as before threads."""
    fake.add(calls(1, 0), text("All fine."), text("Yes."))
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client), tmp_path)
    assert agent.provider.threads is False
    await agent.chat("Check everything.")
    await agent.chat("Sure?")
    assert all("thread" not in body for body in fake.wire)
    assert [len(body["messages"]) for body in fake.wire] == [1, 3, 5]


async def test_against_anthropics_own_api_threads_are_on_by_default(tmp_path: Path) -> None:
    fake = FakeAnthropic(calls(1, 0), text("Done."))
    client = anthropic.AsyncAnthropic(  # api.anthropic.com, answered in-process: no network
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(fake.handle)),
    )
    assert str(client.base_url).startswith("https://api.anthropic.com")
    agent = checker(AnthropicProvider("claude-sonnet-5-5", client=client), tmp_path)
    assert await agent.chat("Check.") == "Checking, turn 1.\n\nDone."
    assert fake.wire[0]["thread"] == {"type": "create"}
    assert continued_from(fake.wire[1]) is not None and len(fake.wire[1]["messages"]) == 1
    assert fake.held_messages() == agent.messages


async def test_two_chats_on_one_provider_never_continue_each_others_thread(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    # A notebook session serves every chat (%%agent --chat NAME) from one provider: the turns of
    # two conversations alternate on it, and neither may land on the other's thread; each goes
    # on with its own.
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, threads=True)
    first, second = (
        checker(provider, tmp_path),
        checker(provider, tmp_path),
    )
    fake.add(text("A one."), calls(1, 0), text("B one."), text("A two."))
    await first.chat("Chat A, first.")
    a_reply = fake.last_reply_id
    assert fake.held_messages() == first.messages
    await second.chat("Chat B, first.")
    assert fake.held_messages() == second.messages
    await first.chat("Chat A, second.")
    assert continued_from(fake.wire[-1]) == a_reply and len(fake.wire[-1]["messages"]) == 1
    assert fake.held_messages() == first.messages
    # a chat stopped by max_turns after its tools ran, then asked again
    fake.add(calls(2, 1), text("B two."))
    await second.chat("Chat B, second.", max_turns=1)
    await second.chat("Go on.")
    assert fake.held_messages() == second.messages
    assert all(not r.get("thread") or r["messages"] for r in fake.requests)


async def test_a_thinking_copy_of_the_provider_and_back_keeps_one_conversation(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    # The notebook session serves a thinking budget from a copy of the provider (copy.copy,
    # sharing its client and, at that moment, its thread); a later cell goes back to the original.
    import copy

    plain = AnthropicProvider("claude-sonnet-5-5", client=client, threads=True)
    agent = checker(plain, tmp_path)
    fake.add(calls(1, 0), text("Plain."))
    await agent.chat("First.")
    thinker = copy.copy(plain)
    thinker.thinking_budget = 1024
    agent.provider = thinker
    fake.add(Reply([thinking("Hm.", "sig-1"), tool_use("toolu_x", "probe", {"i": 1})]))
    fake.add(Reply([thinking("Ok.", "sig-2"), {"type": "text", "text": "Thought."}]))
    await agent.chat("Think.")
    assert fake.held_messages() == agent.messages
    agent.provider = plain
    fake.add(calls(2, 2), text("Plain again."))
    await agent.chat("Back.")
    assert fake.held_messages() == agent.messages
    fake.add(text("Still."))
    agent.provider = thinker
    await agent.chat("Think again.")
    assert fake.held_messages() == agent.messages


async def test_each_of_many_chats_goes_on_with_its_own_thread(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic, tmp_path: Path
) -> None:
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, threads=True)
    agents = [checker(provider, tmp_path) for _ in range(4)]
    for round_ in range(3):
        for index, agent in enumerate(agents):
            fake.add(text(f"Chat {index}, answer {round_}."))
            await agent.chat(f"Chat {index}, question {round_}.")
            assert fake.held_messages() == agent.messages
            if round_:
                # only the new prompt: the server holds the rest of this chat
                assert len(fake.wire[-1]["messages"]) == 1
    # threads of chats long gone are not kept for ever
    for index in range(20):
        fake.add(text("Yet another."))
        await checker(provider, tmp_path).chat(f"Throwaway {index}.")
    fake.add(text("Still here."))
    await agents[0].chat("Back to the first chat.")
    assert fake.wire[-1]["thread"] == {"type": "create"}
    assert fake.held_messages() == agents[0].messages


async def test_a_client_assigned_later_decides_whether_threads_are_used(tmp_path: Path) -> None:
    """``threads`` left to its default follows the client the provider has when it sends, not
    the one it was built with: a proxy client put in later gets whole conversations."""
    fake = FakeAnthropic(calls(1, 0), text("Done."), text("Again."))
    official = anthropic.AsyncAnthropic(  # api.anthropic.com, answered in-process: no network
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(fake.handle)),
    )
    provider = AnthropicProvider("claude-sonnet-5-5", client=official)
    assert provider.threads is True
    provider.client = fake.client()  # another host (api.anthropic.test): a proxy, in-process
    assert provider.threads is False
    agent = checker(provider, tmp_path)
    await agent.chat("Check.")
    await agent.chat("Check again.")
    assert all("thread" not in body for body in fake.wire)
    assert [len(body["messages"]) for body in fake.wire] == [1, 3, 5]
    provider.client = official
    assert provider.threads is True
    explicit = AnthropicProvider("claude-sonnet-5-5", client=official, threads=False)
    explicit.client = fake.client()
    assert explicit.threads is False
