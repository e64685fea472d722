"""A fake OpenAI-compatible chat-completions server at the HTTP boundary, for the real ``openai``
SDK: it speaks the streaming wire format of vLLM, Ollama and llama.cpp (``data:`` chunks, tool-call
fragments, ``finish_reason``, a usage chunk, ``data: [DONE]``), including the shapes of servers
that bend it — what ``fake_anthropic.py`` is for the Messages API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import agent_builder
import httpx2
import openai

from jupyter_agent.agent.agent import Agent
from jupyter_agent.providers.openai_compat import OpenAIProvider
from jupyter_agent.tools.decorator import tool

Chunk = dict[str, Any]


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> Chunk:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "local-model",
        "choices": choices,
        **extra,
    }


def text_reply(value: str, size: int = 4) -> list[Chunk]:
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": value[i : i + size]}) for i in range(0, len(value), size)]
    chunks.append(chunk({}, "stop"))
    chunks.append(
        chunk(None, usage={"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49})
    )
    return chunks


def tool_reply(calls: list[tuple[str | None, str, str]], finish: str = "tool_calls") -> list[Chunk]:
    """Tool calls (id, name, raw JSON arguments), the arguments streamed in fragments."""
    chunks = [chunk({"role": "assistant", "content": "Working on it."})]
    for index, (call_id, name, arguments) in enumerate(calls):
        head: dict[str, Any] = {
            "index": index,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        if call_id is not None:
            head["id"] = call_id
        chunks.append(chunk({"tool_calls": [head]}))
        for i in range(0, len(arguments), 5):
            fragment = {"index": index, "function": {"arguments": arguments[i : i + 5]}}
            chunks.append(chunk({"tool_calls": [fragment]}))
    chunks.append(chunk({}, finish))
    chunks.append(
        chunk(
            None,
            usage={
                "prompt_tokens": 100,
                "completion_tokens": 20,
                "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 64},
            },
        )
    )
    return chunks


class FakeChatServer:
    def __init__(
        self, *replies: list[Chunk] | tuple[int, dict[str, Any]] | tuple[int, dict[str, Any], Any]
    ) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/chat/completions"
        body = json.loads(request.content)
        self.requests.append(body)
        reply = self.replies.pop(0)
        if isinstance(reply, tuple):
            status, error, *headers = reply
            return httpx2.Response(status, json={"error": error}, headers=(headers or [{}])[0])
        assert body["stream"] is True
        payload = "".join(f"data: {json.dumps(c)}\n\n" for c in reply) + "data: [DONE]\n\n"
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=payload.encode()
        )

    def provider(self) -> OpenAIProvider:
        client = openai.AsyncOpenAI(
            api_key="sk-test",
            base_url="http://llm.local.test/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle)),
        )
        return OpenAIProvider("local-model", client=client)


@tool
def add(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return str(a + b)


@tool
def fail(why: str) -> str:
    """Fails.

    Args:
        why: reason
    """
    raise RuntimeError(why)


def make_agent(server: FakeChatServer, tmp_path: Path) -> Agent:
    """An agent on the fake server with ``add`` and ``fail``."""
    return agent_builder.make_agent(
        server.provider(), tmp_path, add, fail, system_prompt="Be brief."
    )


class Served:
    """``FakeChatServer`` behind ``notebook_fake_server`` (which awaits ``handle``)."""

    def __init__(self, server: FakeChatServer) -> None:
        self.server = server

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        return self.server.handle(request)


def calls_without_index(calls: list[tuple[str, str, str]]) -> list[Chunk]:
    """Parallel tool calls the way Ollama (and some llama.cpp builds) stream them: each call
    whole in its own chunk, told apart only by its id — no ``index``."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    for call_id, name, arguments in calls:
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        chunks.append(chunk({"tool_calls": [call]}))
    chunks.append(chunk({}, "tool_calls"))
    return chunks


def calls_all_at_index_zero(calls: list[tuple[str, str, str]]) -> list[Chunk]:
    """Parallel calls that all claim ``index: 0``, the arguments in fragments after each head."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    for call_id, name, arguments in calls:
        head = {
            "index": 0,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        for i in range(0, len(arguments), 4):
            fragment = {"index": 0, "function": {"arguments": arguments[i : i + 4]}}
            chunks.append(chunk({"tool_calls": [fragment]}))
    chunks.append(chunk({}, "tool_calls"))
    return chunks
