"""A fake OpenAI-compatible chat-completions server at the HTTP boundary, for the real ``openai``
SDK: it speaks the streaming wire format of vLLM, Ollama and llama.cpp (``data:`` chunks, tool-call
fragments, ``finish_reason``, a usage chunk, ``data: [DONE]``), including the shapes of servers
that bend it — what ``fake_anthropic.py`` is for the Messages API.

It enforces the rules the real servers document, from one table (``RULES``), so a client that
breaks one gets the answer the real server gives:

* **Reasoning models take ``max_completion_tokens``.** OpenAI's gpt-5.x (``gpt-5.4-mini``, the
  provider's default, included) and o-series models refuse ``max_tokens`` with a 400 that names
  it (``unsupported_parameter``; the Chat Completions reference deprecates ``max_tokens`` for
  ``max_completion_tokens`` and says the o-series do not accept it). ``refuses_max_tokens=True``
  plays any other server that does the same (an Azure deployment, a proxy, by any model name).
* **``stream_options`` only with ``stream: true``** (a 400 otherwise, as OpenAI answers).
* **A reply is the same streamed or not.** ``stream: false`` gets one ``chat.completion`` built
  from the scripted chunks (text, whole tool calls, ``finish_reason``, usage).
* **``drops_streamed_tool_calls=True``** plays the Ollama versions that lose tool calls while
  streaming (ollama/ollama#12557, #9632; the calls of the final ``done`` frame dropped by the
  OpenAI layer): a streamed reply whose script has tool calls arrives with its text, each call's
  head (its index and id, no function) and ``finish_reason: "stop"``; the same request
  asked again with ``stream: false`` gets that reply whole, calls included (the model's answer to
  one prompt, not the next scripted one).
"""

from __future__ import annotations

import json
import re
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


#: OpenAI's reasoning models (gpt-5.x, the o-series), by name as the API knows them.
REASONING_MODEL = re.compile(r"^(?:gpt-5|o[1-9])(?:[.\-]|$)")


def _error(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    """An error body as OpenAI shapes it."""
    return {"message": message, "type": "invalid_request_error", "param": param, "code": code}


def refuses_max_tokens(body: dict[str, Any], server: FakeChatServer) -> dict[str, Any] | None:
    if "max_tokens" not in body:
        return None
    if not (server.refuses_max_tokens or REASONING_MODEL.match(str(body.get("model", "")))):
        return None
    return _error(
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        "max_tokens",
        "unsupported_parameter",
    )


def stream_options_need_a_stream(
    body: dict[str, Any], server: FakeChatServer
) -> dict[str, Any] | None:
    if "stream_options" in body and not body.get("stream"):
        return _error(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
            None,
        )
    return None


#: The request rules, checked in order: each returns the 400's error body, or ``None``.
RULES = (refuses_max_tokens, stream_options_need_a_stream)


def completion_of(chunks: list[Chunk]) -> dict[str, Any]:
    """The ``chat.completion`` a server returns for ``stream: false``: the chunks put together."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] | None = None
    for part in chunks:
        usage = part.get("usage") or usage
        for choice in part["choices"]:
            delta = choice["delta"]
            text.append(delta.get("content") or "")
            for position, fragment in enumerate(delta.get("tool_calls") or []):
                call = calls.setdefault(
                    fragment.get("index", len(calls) if "id" in fragment else position),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = fragment.get("id") or call["id"]
                function = fragment.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[key] for key in sorted(calls)]
    completion = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "local-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        completion["usage"] = usage
    return completion


def without_tool_calls(chunks: list[Chunk]) -> list[Chunk]:
    """``chunks`` as an Ollama that drops streamed tool calls sends them: the text, each call
    announced by its head (index, id, type) with no function in it, and ``finish_reason:
    "stop"``."""
    dropped = []
    for part in chunks:
        choices = []
        for choice in part["choices"]:
            delta = {k: v for k, v in choice["delta"].items() if k != "tool_calls"}
            heads = [
                {k: v for k, v in fragment.items() if k in ("index", "id", "type")}
                for fragment in choice["delta"].get("tool_calls") or []
                if "id" in fragment
            ]
            if heads:
                delta["tool_calls"] = heads
            elif "tool_calls" in choice["delta"] and not delta:
                continue  # an arguments fragment: lost
            finish = "stop" if choice.get("finish_reason") else None
            choices.append({**choice, "delta": delta, "finish_reason": finish})
        if choices or not part["choices"]:
            dropped.append({**part, "choices": choices})
    return dropped


class FakeChatServer:
    def __init__(
        self,
        *replies: list[Chunk] | tuple[int, dict[str, Any]] | tuple[int, dict[str, Any], Any],
        model: str = "local-model",
        refuses_max_tokens: bool = False,
        drops_streamed_tool_calls: bool = False,
    ) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.model = model
        self.refuses_max_tokens = refuses_max_tokens
        self.drops_streamed_tool_calls = drops_streamed_tool_calls
        #: The 400s the rules gave, with the body that broke one.
        self.refused: list[tuple[dict[str, Any], dict[str, Any]]] = []
        #: The conversation and reply of the last stream sent without its tool calls.
        self._dropped: tuple[object, list[Chunk]] | None = None

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/chat/completions"
        body = json.loads(request.content)
        self.requests.append(body)
        for rule in RULES:
            error = rule(body, self)
            if error is not None:  # refused before any scripted reply is used
                self.refused.append((body, error))
                return httpx2.Response(400, json={"error": error})
        asked_again = self._dropped is not None and self._dropped[0] == body["messages"]
        reply = (
            self._dropped[1] if self._dropped is not None and asked_again else self.replies.pop(0)
        )
        self._dropped = None
        if isinstance(reply, tuple):
            status, error, *headers = reply
            return httpx2.Response(status, json={"error": error}, headers=(headers or [{}])[0])
        if not body.get("stream"):
            return httpx2.Response(200, json=completion_of(reply))
        if self.drops_streamed_tool_calls and any(
            "tool_calls" in choice["delta"] for part in reply for choice in part["choices"]
        ):
            self._dropped = (body["messages"], reply)
            reply = without_tool_calls(reply)
        payload = "".join(f"data: {json.dumps(c)}\n\n" for c in reply) + "data: [DONE]\n\n"
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=payload.encode()
        )

    def provider(self, **options: Any) -> OpenAIProvider:
        client = openai.AsyncOpenAI(
            api_key="sk-test",
            base_url="http://llm.local.test/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle)),
        )
        return OpenAIProvider(self.model, client=client, **options)


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
