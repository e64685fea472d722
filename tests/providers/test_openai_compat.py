"""``OpenAIProvider`` driven through the real ``openai`` SDK against a fake chat-completions server.

The fake speaks the streaming wire format of OpenAI-compatible servers (vLLM, Ollama,
llama.cpp): ``data:`` chunks with content deltas, tool-call fragments split across chunks,
``finish_reason``, a final usage chunk and ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from fake_anthropic import api_problems
from fake_openai import (
    FakeChatServer,
    Served,
    calls_all_at_index_zero,
    calls_without_index,
    make_agent,
    text_reply,
    tool_reply,
)
from notebook_fake_server import serve
from openai._models import FinalRequestOptions

from jupyter_agent.agent.agent import Agent
from jupyter_agent.errors import ProviderError
from jupyter_agent.events import AgentFinished, TextDelta, ToolCallFinished, Usage
from jupyter_agent.providers.openai_compat import OpenAIProvider
from jupyter_agent.tools.registry import ToolRegistry


async def test_tool_calls_are_translated_both_ways(tmp_path: Path) -> None:
    server = FakeChatServer(
        tool_reply(
            [("call_1", "add", '{"a": 19, "b": 23}'), ("call_2", "fail", '{"why": "nope"}')]
        ),
        text_reply("The answer is 42."),
    )
    agent = make_agent(server, tmp_path)
    events = [e async for e in agent.stream_chat("What is 19 + 23?")]

    first, second = server.requests
    assert first["model"] == "local-model"
    assert first["stream_options"] == {"include_usage": True}
    assert first["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 19 + 23?"},
    ]
    assert first["tools"][0]["type"] == "function"
    assert first["tools"][0]["function"]["name"] == "add"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assert first["tools"][0]["function"]["description"].startswith("Add two integers")

    assistant, tool_one, tool_two = second["messages"][2:]
    assert assistant["role"] == "assistant" and assistant["content"] == "Working on it."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 19, "b": 23}
    assert tool_one == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    assert tool_two["tool_call_id"] == "call_2"
    assert tool_two["content"] == "Error executing fail: nope"

    final = events[-1]
    assert isinstance(final, AgentFinished)
    assert final.text == "Working on it.\n\nThe answer is 42."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == final.text
    assert final.usage == Usage(input_tokens=36 + 40, output_tokens=29, cache_read_input_tokens=64)
    # the agent's own conversation stays in Anthropic format, valid for Claude too
    assert agent.messages[1]["content"][1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "add",
        "input": {"a": 19, "b": 23},
    }
    assert (
        api_problems(
            {
                "model": "m",
                "max_tokens": 1,
                "messages": [*agent.messages, {"role": "user", "content": "x"}],
            }
        )
        == []
    )


async def test_bad_arguments_and_missing_ids_become_error_results(tmp_path: Path) -> None:
    server = FakeChatServer(
        # a local model that writes broken JSON, omits the id and says "stop" after tool calls
        tool_reply(
            [(None, "add", '{"a": 1, "b": '), ("call_x", "add", '{"a": "x"}')], finish="stop"
        ),
        text_reply("Sorry."),
    )
    agent = make_agent(server, tmp_path)
    events = [e async for e in agent.stream_chat("add")]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(finished) == 2 and all(e.is_error for e in finished)
    by_id = {e.call_id: e for e in finished}
    generated = server.requests[1]["messages"][2]["tool_calls"][0]
    assert generated["id"].startswith("call_") and generated["function"]["arguments"] == "{}"
    assert "not a JSON object" in by_id[generated["id"]].output
    assert '{"a": 1, "b":' in by_id[generated["id"]].output  # the model sees what it sent
    assert "invalid arguments for add" in by_id["call_x"].output
    tools = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tools) == 2 and all(m["content"].startswith("Error") for m in tools)
    assert isinstance(events[-1], AgentFinished) and events[-1].text.endswith("Sorry.")


async def test_http_error_is_a_provider_error_and_the_next_chat_works(tmp_path: Path) -> None:
    server = FakeChatServer(
        (400, {"message": "model 'local-model' not found", "type": "invalid_request_error"}),
        text_reply("Hello!"),
    )
    agent = make_agent(server, tmp_path)
    with pytest.raises(ProviderError, match=r"400: model 'local-model' not found"):
        await agent.chat("hi")
    assert agent.messages == []
    assert await agent.chat("hi") == "Hello!"
    assert [m["role"] for m in server.requests[-1]["messages"]] == ["system", "user"]


async def test_connection_error_is_a_provider_error(tmp_path: Path) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(refuse)),
    )
    agent = Agent(OpenAIProvider("m", client=client), workspace=tmp_path, registry=ToolRegistry())
    with pytest.raises(ProviderError, match="Could not connect") as caught:
        await agent.chat("hi")
    assert ".." not in str(caught.value)


def test_configuration_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "llama3.2")
    provider = OpenAIProvider()
    assert provider.name == "openai" and provider.model == "llama3.2"
    assert str(provider.client.base_url).startswith("http://localhost:11434/v1")
    assert provider.client.api_key == "not-needed"
    explicit = OpenAIProvider("qwen", base_url="http://gpu:8000/v1", api_key="k")
    assert explicit.model == "qwen" and str(explicit.client.base_url).startswith(
        "http://gpu:8000/v1"
    )


def test_one_provider_serves_several_asyncio_runs_without_resending(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each ``asyncio.run`` is a new loop; the client the provider built is rebuilt for it."""
    server = FakeChatServer(text_reply("first"), text_reply("second"), text_reply("third"))
    with serve(Served(server), keep_alive=True) as base_url:  # type: ignore[arg-type]
        provider = OpenAIProvider("local-model", base_url=f"{base_url}/v1", api_key="sk-local")
        agent = Agent(provider, workspace=tmp_path, registry=ToolRegistry())
        assert asyncio.run(agent.chat("one")) == "first"
        assert asyncio.run(agent.chat("two")) == "second"
        assert asyncio.run(agent.chat("three")) == "third"
        assert provider.client.api_key == "sk-local"
        assert str(provider.client.base_url).startswith(base_url)
        asyncio.run(provider.aclose())
    assert [r["messages"][-1]["content"] for r in server.requests] == ["one", "two", "three"]


# -- servers that bend the wire format (issue 12, provider edges) ----------------------------------


@pytest.mark.parametrize("shape", [calls_without_index, calls_all_at_index_zero])
async def test_parallel_calls_stay_apart_when_the_server_omits_index(
    tmp_path: Path, shape: Any
) -> None:
    server = FakeChatServer(
        shape(
            [
                ("call_a", "add", '{"a": 1, "b": 2}'),
                ("call_b", "add", '{"a": 30, "b": 4}'),
                ("call_c", "add", '{"a": 500, "b": 6}'),
            ]
        ),
        text_reply("3, 34 and 506."),
    )
    agent = make_agent(server, tmp_path)
    events = [e async for e in agent.stream_chat("add three pairs")]
    finished = {e.call_id: e.output for e in events if isinstance(e, ToolCallFinished)}
    assert finished == {"call_a": "3", "call_b": "34", "call_c": "506"}
    sent = server.requests[1]["messages"][2]["tool_calls"]
    assert [c["id"] for c in sent] == ["call_a", "call_b", "call_c"]


async def test_a_stream_cut_before_its_finish_reason_is_an_error(tmp_path: Path) -> None:
    cut = text_reply("The answer is definitely")[:-2]  # no finish_reason chunk, no usage
    server = FakeChatServer(cut, text_reply("Hello again."))
    agent = make_agent(server, tmp_path)
    with pytest.raises(ProviderError, match="ended the stream before the reply was complete"):
        await agent.chat("hi")
    assert await agent.chat("hi") == "Hello again."
    conversation = {"model": "m", "max_tokens": 1, "messages": agent.messages}
    assert api_problems(conversation) == []


@pytest.mark.parametrize(
    "message",
    [
        "registry.ollama.ai/library/gemma3:latest does not support tools",
        "tools param requires --jinja flag",
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    ],
)
async def test_a_server_without_tool_support_says_so(tmp_path: Path, message: str) -> None:
    server = FakeChatServer((400, {"message": message, "type": "invalid_request_error"}))
    agent = make_agent(server, tmp_path)
    with pytest.raises(ProviderError) as caught:
        await agent.chat("hi")
    text = str(caught.value)
    assert message in text
    assert "does not support tool calls" in text and "%agent_tools" in text


def test_a_long_retry_after_waits_only_the_cap(tmp_path: Path) -> None:
    """The openai SDK honours a ``retry-after`` of up to two minutes (beyond that it does not
    retry at all); the provider caps the wait."""
    limited = {"message": "Rate limit reached", "type": "rate_limit_error"}
    server = FakeChatServer((429, limited, {"retry-after": "100"}), text_reply("Back."))
    with serve(Served(server)) as base_url:  # type: ignore[arg-type]
        provider = OpenAIProvider(
            "local-model", base_url=f"{base_url}/v1", max_retries=1, max_retry_wait=0.2
        )
        agent = Agent(provider, workspace=tmp_path, registry=ToolRegistry())
        started = time.monotonic()
        # waiting the 100 s would outlast the 60 s that only stops a hung test
        assert asyncio.run(asyncio.wait_for(agent.chat("hi"), 60)) == "Back."
        elapsed = time.monotonic() - started
    assert len(server.requests) == 2
    assert elapsed >= 0.2  # the cap was waited (a lower bound: load cannot break it)
    default = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1").client
    options = FinalRequestOptions(method="post", url="/chat/completions")
    long_wait = httpx2.Headers({"retry-after": "100"})
    assert default._calculate_retry_timeout(2, options, long_wait) == 60.0  # type: ignore[attr-defined]
