"""Provider edges met with software nobody here wrote (issue 22, point 6), on loopback servers.

Played faults: a client the user passes in (a proxy client, ``AnthropicBedrock``,
``AnthropicVertex``) honoured a ``retry-after`` of an hour, because the 60 s cap lived only in the
client class the provider builds; an ``overloaded_error`` inside a 200 stream after some text was
shown was not retried (the SPEC says it is, the retry's text replacing what the cell showed); an
OpenAI-compatible server that repeats a tool call's id (``call_0`` twice, distinct ``index``)
lost one of the calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic._models import FinalRequestOptions
from fake_anthropic import ErrorReply, FakeAnthropic, overloaded_stream, text
from fake_openai import FakeChatServer, Served, chunk, make_agent, text_reply
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from notebook_fake_server import serve

from jupyter_agent.agent.agent import Agent
from jupyter_agent.errors import ProviderError
from jupyter_agent.events import (
    AgentFinished,
    TextDelta,
    TextReset,
    ToolCallFinished,
    TurnFinished,
    TurnStarted,
)
from jupyter_agent.notebook.inert import is_answer
from jupyter_agent.notebook.views.rich_renderer import RichRenderer
from jupyter_agent.notebook.views.text_renderer import TextRenderer
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import ModelRequest, ModelResponse
from jupyter_agent.providers.openai_compat import OpenAIProvider
from jupyter_agent.tools.registry import ToolRegistry

REQUEST = ModelRequest("", [{"role": "user", "content": "hello"}], [])
#: Far longer than any test may take: a test that honours it fails on its timeout instead.
AN_HOUR = "3600"


@pytest.fixture
def anthropic_server() -> Iterator[Any]:
    contexts: list[Any] = []

    def start(fake: Any) -> str:
        context = serve(fake)
        contexts.append(context)
        return context.__enter__()

    yield start
    for context in contexts:
        context.__exit__(None, None, None)


# -- the retry-after cap, for any client --------------------------------------------------------


async def test_a_client_passed_in_waits_only_the_cap(anthropic_server: Any) -> None:
    fake = FakeAnthropic(
        ErrorReply(429, "rate_limit_error", "Slow down", headers={"retry-after": AN_HOUR}),
        text("Back."),
    )
    base_url = anthropic_server(fake)
    # a client as a user builds one for a proxy: the SDK's own class, its own retry count
    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=1)
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, max_retry_wait=0.2)
    started = time.monotonic()
    events = await asyncio.wait_for(_all(provider.stream(REQUEST)), timeout=20)
    elapsed = time.monotonic() - started
    assert isinstance(events[-1], ModelResponse)
    assert events[-1].content == [{"type": "text", "text": "Back."}]
    # it waited the cap, and not the hour the server asked for (``wait_for`` ends an hour's wait)
    assert len(fake.requests) == 2 and elapsed >= 0.2
    # the user's client is theirs: it is what the provider shows, and it is left as it was
    assert provider.client is client
    options = FinalRequestOptions(method="post", url="/v1/messages")
    headers = httpx2.Headers({"retry-after": AN_HOUR})
    assert client._calculate_retry_timeout(1, options, headers) == 3600.0
    await client.close()


def test_the_cap_holds_for_bedrock_and_vertex_clients() -> None:
    """The cap is put on a copy of whatever SDK client comes in, the cloud ones included."""
    options = FinalRequestOptions(method="post", url="/v1/messages")
    headers = httpx2.Headers({"retry-after": AN_HOUR})
    clients = [
        anthropic.AsyncAnthropicBedrock(
            aws_region="us-east-1", aws_access_key="AKIDTEST", aws_secret_key="secret"
        ),
        anthropic.AsyncAnthropicVertex(region="us-east5", project_id="p", access_token="t"),
    ]
    for client in clients:
        provider = AnthropicProvider("claude-sonnet-5-5", client=client, max_retry_wait=7)
        sending = provider._sending_client()
        assert type(sending) is type(client)
        assert sending._calculate_retry_timeout(1, options, headers) == 7
        assert sending.max_retries == client.max_retries
        assert provider._sending_client() is sending  # one copy, not one per request


class AlwaysRateLimited:
    """Any request, on any path (Vertex's ``:streamRawPredict`` too): a 429 asking for an hour."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.paths.append(request.url.path)
        body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
        return httpx2.Response(429, json=body, headers={"retry-after": AN_HOUR})


async def test_a_vertex_client_passed_in_waits_only_the_cap(anthropic_server: Any) -> None:
    server = AlwaysRateLimited()
    client = anthropic.AsyncAnthropicVertex(
        region="us-east5",
        project_id="p",
        access_token="t",
        base_url=anthropic_server(server),
        max_retries=1,
    )
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, max_retry_wait=0.2)
    with pytest.raises(ProviderError, match="rate_limit_error"):
        # waiting the hour would outlast the 20 s that only stops a hung test
        await asyncio.wait_for(_all(provider.stream(REQUEST)), timeout=20)
    assert len(server.paths) == 2 and server.paths[0].endswith(":streamRawPredict")
    await client.close()


def test_an_openai_client_passed_in_waits_only_the_cap(tmp_path: Path) -> None:
    limited = {"message": "Rate limit reached", "type": "rate_limit_error"}
    server = FakeChatServer((429, limited, {"retry-after": "100"}), text_reply("Back."))
    with serve(Served(server)) as base_url:  # type: ignore[arg-type]

        async def run() -> str:
            client = openai.AsyncOpenAI(api_key="sk", base_url=f"{base_url}/v1", max_retries=1)
            provider = OpenAIProvider("local-model", client=client, max_retry_wait=0.2)
            agent = Agent(provider, workspace=tmp_path, registry=ToolRegistry())
            try:
                return await asyncio.wait_for(agent.chat("hi"), timeout=20)
            finally:
                await client.close()

        started = time.monotonic()
        assert asyncio.run(run()) == "Back."
        elapsed = time.monotonic() - started
    # it waited the cap, and not the 100 s the server asked for (``wait_for`` ends such a wait)
    assert len(server.requests) == 2 and elapsed >= 0.2


# -- an overloaded stream after text was shown ----------------------------------------------------


class OverloadedOnce:
    """The first request: a 200 stream that shows ``text_first`` and then breaks with an
    ``overloaded_error`` event; then ``fake`` answers."""

    def __init__(self, fake: FakeAnthropic, text_first: str) -> None:
        self.fake = fake
        self.text_first = text_first
        self.requests = 0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        if self.requests == 1:
            return overloaded_stream(self.text_first)
        return await self.fake.handle(request)


async def test_an_overloaded_stream_after_text_is_retried_and_the_text_replaced(
    anthropic_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = OverloadedOnce(FakeAnthropic(text("The whole answer.")), "Half an ans")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server(server))
    provider = AnthropicProvider("claude-sonnet-5-5", max_retries=2, max_retry_wait=0.01)
    agent = Agent(provider, workspace=tmp_path, registry=ToolRegistry())
    events = [event async for event in agent.stream_chat("hello")]
    await provider.aclose()
    assert server.requests == 2
    shown = [e for e in events if isinstance(e, TextDelta | TextReset)]
    assert shown[0] == TextDelta("Half an ans")
    assert shown[1] == TextReset()
    assert "".join(e.text for e in shown[2:] if isinstance(e, TextDelta)) == "The whole answer."
    finished = events[-1]
    assert isinstance(finished, AgentFinished) and finished.text == "The whole answer."
    assert agent.messages[-1]["content"] == [{"type": "text", "text": "The whole answer."}]


async def test_a_reset_in_a_later_turn_keeps_the_earlier_turns_text(
    anthropic_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only the turn being retried is taken back: the final text keeps the earlier turn."""
    from fake_anthropic import Reply, tool_use

    from jupyter_agent.tools.decorator import tool

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    fake = FakeAnthropic(
        Reply([{"type": "text", "text": "Checking."}, tool_use("toolu_1", "ping", {})]),
        text("Pong it is."),
    )

    class SecondTurnOverloaded:
        requests = 0

        async def handle(self, request: httpx2.Request) -> httpx2.Response:
            self.requests += 1
            if self.requests == 2:
                return overloaded_stream("Po")
            return await fake.handle(request)

    server = SecondTurnOverloaded()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server(server))
    provider = AnthropicProvider("claude-sonnet-5-5", max_retries=2, max_retry_wait=0.01)
    registry = ToolRegistry()
    registry.register(ping)
    agent = Agent(provider, workspace=tmp_path, registry=registry)
    final = await agent.chat("ping")
    await provider.aclose()
    assert server.requests == 3
    assert final == "Checking.\n\nPong it is."


def test_the_cell_shows_only_the_retried_text() -> None:
    InteractiveShell.instance()
    try:
        renderer = RichRenderer(interval_s=0)
        with capture_output() as captured:
            renderer.handle(TurnStarted(turn=1))
            renderer.handle(TextDelta("Half an ans"))
            renderer.handle(TextReset())
            renderer.handle(TextDelta("The whole answer."))
            renderer.handle(TurnFinished(turn=1, stop_reason="end_turn"))
            renderer.handle(AgentFinished("The whole answer.", "end_turn", 1))
            renderer.close(interrupted=False)
        answers = [o for o in captured.outputs if is_answer(o.metadata)]
        assert answers[-1].data["text/plain"] == "The whole answer."
        assert renderer.text == "The whole answer."
    finally:
        InteractiveShell.clear_instance()


def test_the_terminal_says_the_text_above_is_replaced() -> None:
    import io

    out = io.StringIO()
    renderer = TextRenderer(stream=out)
    renderer.handle(TurnStarted(turn=1))
    renderer.handle(TextDelta("Half an ans"))
    renderer.handle(TextReset())
    renderer.handle(TextDelta("The whole answer."))
    renderer.handle(AgentFinished("The whole answer.", "end_turn", 1))
    assert renderer.text == "The whole answer."
    written = out.getvalue()
    assert written.index("Half an ans") < written.index("retr") < written.index("The whole")


# -- an OpenAI-compatible server that repeats an id ----------------------------------------------


def calls_with_a_repeated_id() -> list[dict[str, Any]]:
    """Two calls, both ``call_0``, at indexes 0 and 1, their arguments streamed in fragments."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    for index, arguments in enumerate(('{"a": 1, "b": 2}', '{"a": 30, "b": 4}')):
        head = {
            "index": index,
            "id": "call_0",
            "type": "function",
            "function": {"name": "add", "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        for i in range(0, len(arguments), 5):
            fragment = {"index": index, "function": {"arguments": arguments[i : i + 5]}}
            chunks.append(chunk({"tool_calls": [fragment]}))
    chunks.append(chunk({}, "tool_calls"))
    return chunks


async def test_a_repeated_tool_call_id_keeps_both_calls(tmp_path: Path) -> None:
    server = FakeChatServer(calls_with_a_repeated_id(), text_reply("3 and 34."))
    agent = make_agent(server, tmp_path)
    events = [e async for e in agent.stream_chat("add two pairs")]
    outputs = [e.output for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(outputs) == ["3", "34"]
    ids = [c["id"] for c in server.requests[1]["messages"][2]["tool_calls"]]
    assert len(ids) == 2 and len(set(ids)) == 2


@pytest.mark.parametrize("shape", ["whole chunks without index", "all at index 0"])
async def test_a_repeated_id_without_distinct_indexes_keeps_both_calls(
    tmp_path: Path, shape: str
) -> None:
    """Ollama-style (each call whole, no ``index``) or every call at ``index: 0``, and every
    call ``call_0``: a fragment naming a function again starts the next call."""
    from fake_openai import calls_all_at_index_zero, calls_without_index

    make = calls_without_index if shape.startswith("whole") else calls_all_at_index_zero
    calls = [("call_0", "add", '{"a": 1, "b": 2}'), ("call_0", "add", '{"a": 30, "b": 4}')]
    server = FakeChatServer(make(calls), text_reply("3 and 34."))
    agent = make_agent(server, tmp_path)
    events = [e async for e in agent.stream_chat("add two pairs")]
    outputs = [e.output for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(outputs) == ["3", "34"]


async def _all(iterator: Any) -> list[Any]:
    return [event async for event in iterator]
