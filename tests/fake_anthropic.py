"""A fake Anthropic Messages API at the HTTP boundary, for driving the real ``anthropic`` SDK.

``FakeAnthropic`` is an ``httpx2.MockTransport`` handler: it parses each ``POST /v1/messages``
body, records it, checks it the way the real API does (roles, ``tool_use``/``tool_result``
pairing, tool and system formats) and answers a 400 ``invalid_request_error`` when the request
breaks a rule — so a conversation our agent leaves broken fails the test just as it would fail
against the real API. Otherwise it plays the next scripted reply: a streamed message (the SSE
events ``message_start``, ``content_block_start``/``delta``/``stop`` with ``text_delta`` and
``input_json_delta``, ``message_delta`` with usage, ``message_stop``) or an HTTP error.

The validator here is written independently of ``jupyter_agent.agent.conversation`` on purpose.

It also holds conversations the way the API's server-side threads do (beta
``message-threads-2026-08-12``, as the SDK's ``lib/threads`` speaks it): a request with ``"thread":
{"type": "create"}`` stores the conversation and its reply under the reply's ``id``; one with
``{"type": "continue", "previous_message_id": id}`` carries only the messages after that reply and
no ``system`` or ``tools`` (the thread keeps them); each reply can be continued once. ``wire`` holds
the bodies as sent; ``requests`` the conversation as the model sees it (the held messages, then the
new ones), so every check above applies to the whole conversation either way. ``threads="unknown"``
plays an API or proxy that does not know the field (a 400 ``Extra inputs are not permitted``), and
``threads="unsupported"`` one that refuses to thread this request (``thread_unsupported_request``).
Prompt caching of a thread is modelled on the assumption that the server reads back what it holds:
a continue carries, on the held part, one breakpoint where the previous request's prompt ended (the
held messages keep none of the ``cache_control`` they were sent with).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import model_contract as contract
from model_contract import model_info

TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
#: What the first bytes of an image say it is.
IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


def _image_type(data: bytes) -> str | None:
    for magic, media_type in IMAGE_MAGIC.items():
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _part_problems(part: dict[str, Any], where: str) -> list[str]:
    """A block inside a tool_result: non-empty text, or a base64 image whose bytes match."""
    kind = part.get("type")
    if kind == "text":
        return [] if part.get("text") else [f"{where}.text: text content blocks must be non-empty"]
    if kind != "image":
        return [f"{where}.type: unexpected block type {kind!r} in tool_result content"]
    source = part.get("source") or {}
    if source.get("type") != "base64":
        return [f"{where}.source: base64 source expected"]
    try:
        data = base64.b64decode(source.get("data", ""), validate=True)
    except ValueError:
        return [f"{where}.source.data: invalid base64"]
    actual = _image_type(data)
    if actual != source.get("media_type"):
        return [
            f"{where}: Image does not match the provided media type {source.get('media_type')}"
            f" (the bytes are {actual})"
        ]
    return []


@dataclass
class Reply:
    """A streamed assistant message: content blocks as the API returns them."""

    content: list[dict[str, Any]]
    stop_reason: str | None = None
    #: ``None``: the fake's prompt cache accounts for the request (``PromptCache``).
    usage: dict[str, int] | None = None
    #: Split text and tool JSON into pieces of this size.
    chunk: int = 7
    #: Awaited before each text delta after the first (lets a test prove streaming is live).
    gate: asyncio.Event | None = None
    #: Awaited before the stream's first event (the reply is on its way, nothing shown yet).
    opening: asyncio.Event | None = None
    #: A raw JSON string to stream as the input of the tool_use blocks (for broken JSON).
    raw_json: dict[str, str] | None = None

    @property
    def resolved_stop(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn"


@dataclass
class ErrorReply:
    status: int
    type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


Script = Reply | ErrorReply | Callable[[dict[str, Any]], "Reply | ErrorReply"]


def text(value: str, **kwargs: Any) -> Reply:
    return Reply([{"type": "text", "text": value}], **kwargs)


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def api_problems(body: dict[str, Any]) -> list[str]:
    """What the Messages API would refuse in ``body`` (its documented rules)."""
    problems: list[str] = []
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    # mid-conversation system messages: where they stand is checked by ``model_contract``; the
    # user and assistant messages around them follow every rule below as if they were not there
    messages = [m for m in messages if m.get("role") != "system"]
    if not messages:
        return ["messages: at least one message is required"]
    if not isinstance(body.get("max_tokens"), int):
        problems.append("max_tokens: required integer")
    if not isinstance(body.get("model"), str):
        problems.append("model: required string")
    if messages[0].get("role") != "user":
        problems.append("messages: first message must use the 'user' role")
    previous_calls: list[str] = []
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"messages.{i}.role: invalid role {role!r}")
        if i and messages[i - 1].get("role") == role:
            problems.append(f"messages.{i}: roles must alternate between 'user' and 'assistant'")
        content = message.get("content")
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = content
        else:
            problems.append(f"messages.{i}.content: must be a string or a list")
            blocks = []
        if not blocks:
            problems.append(f"messages.{i}: all messages must have non-empty content")
        for j, block in enumerate(blocks):
            if block.get("type") == "text" and not block.get("text"):
                problems.append(
                    f"messages.{i}.content.{j}.text: text content blocks must be non-empty"
                )
            if block.get("type") == "tool_use":
                if role != "assistant":
                    problems.append(
                        f"messages.{i}.content.{j}: tool_use only in assistant messages"
                    )
                if not isinstance(block.get("input"), dict):
                    problems.append(f"messages.{i}.content.{j}.input: must be an object")
                call_id = str(block.get("id"))
                if not TOOL_ID.match(call_id):
                    problems.append(
                        f"messages.{i}.content.{j}.id: String should match pattern "
                        "'^[a-zA-Z0-9_-]+$'"
                    )
                if call_id in seen_ids:
                    problems.append(f"messages.{i}.content.{j}: tool_use ids must be unique")
                seen_ids.add(call_id)
            if block.get("type") == "tool_result":
                if role != "user":
                    problems.append(f"messages.{i}.content.{j}: tool_result only in user messages")
                if not isinstance(block.get("content"), str | list):
                    problems.append(f"messages.{i}.content.{j}.content: invalid")
                elif isinstance(block["content"], list):
                    for k, part in enumerate(block["content"]):
                        problems.extend(
                            _part_problems(part, f"messages.{i}.content.{j}.content.{k}")
                        )
        if role == "user":
            results = []
            for block in blocks:
                if block.get("type") != "tool_result":
                    break
                results.append(block.get("tool_use_id"))
            all_results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if len(all_results) != len(results):
                problems.append(
                    f"messages.{i}: tool_result blocks must come first in the user message"
                )
            missing = [c for c in previous_calls if c not in results]
            if missing:
                problems.append(
                    f"messages.{i}: tool_use ids were found without tool_result blocks "
                    f"immediately after: {', '.join(missing)}"
                )
            unexpected = [r for r in all_results if r not in previous_calls]
            if unexpected:
                problems.append(
                    f"messages.{i}: unexpected tool_use_id found in tool_result blocks: "
                    f"{', '.join(map(str, unexpected))}"
                )
            previous_calls = []
        else:
            previous_calls = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
    if messages[-1].get("role") == "assistant" and previous_calls:
        problems.append("messages: the last assistant message has tool_use without results")
    for k, tool in enumerate(body.get("tools") or []):
        if set(tool) - {"name", "description", "input_schema", "cache_control"}:
            problems.append(f"tools.{k}: unexpected fields {sorted(set(tool))}")
        if (
            not isinstance(tool.get("input_schema"), dict)
            or tool["input_schema"].get("type") != "object"
        ):
            problems.append(f"tools.{k}.input_schema: must be an object schema")
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        for k, block in enumerate(system):
            if block.get("type") != "text" or not block.get("text"):
                problems.append(f"system.{k}: must be a non-empty text block")
    problems.extend(thinking_problems(body))
    breakpoints = json.dumps(body).count('"cache_control"')
    if breakpoints > 4:
        problems.append(
            f"A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        )
    return problems


# -- reading what was sent -----------------------------------------------------------------------


def user_texts(request: dict[str, Any]) -> list[str]:
    """The text blocks of every user message of a recorded request, in order."""
    texts = []
    for message in request["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts.extend(b["text"] for b in blocks if b["type"] == "text" and message["role"] == "user")
    return texts


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``tool_result`` block of a recorded request, in order."""
    return [
        block
        for message in request["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


def offered_tools(request: dict[str, Any]) -> list[str]:
    """The names of the tools the model is offered at the end of a recorded request: the
    top-level ``tools``, then each mid-conversation ``tool_removal``/``tool_addition`` in order."""
    names = [str(tool["name"]) for tool in request.get("tools") or []]
    for message in request["messages"]:
        if message["role"] != "system" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            tool = block.get("tool") or {}
            name = tool.get("name") or (tool.get("definition") or {}).get("name")
            if block.get("type") == "tool_removal" and name in names:
                names.remove(name)
            elif block.get("type") == "tool_addition" and name not in names:
                names.append(str(name))
    return names


def latest_instructions(request: dict[str, Any]) -> str:
    """The system instructions the model has last been given in a recorded request: the text of
    the last mid-conversation system message, else the top-level ``system``."""
    for message in reversed(request["messages"]):
        if message["role"] != "system":
            continue
        content = message["content"]
        if isinstance(content, str):
            return content
        texts = [b["text"] for b in content if b.get("type") == "text"]
        if texts:
            return "\n".join(texts)
    system = request.get("system") or ""
    return system if isinstance(system, str) else "\n".join(b["text"] for b in system)


def result_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` block, whether its content is a string or blocks."""
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


THREADS_BETA = "message-threads-2026-08-12"
#: Keys of a block that hold blocks (whose ``cache_control`` a held conversation drops).
_BLOCK_KEYS = ("content",)


def without_cache_control(value: Any) -> Any:
    """A copy of messages or blocks without any ``cache_control``."""
    if isinstance(value, dict):
        return {
            k: without_cache_control(v) if k in _BLOCK_KEYS else v
            for k, v in value.items()
            if k != "cache_control"
        }
    if isinstance(value, list):
        return [without_cache_control(item) for item in value]
    return value


@dataclass
class HeldThread:
    """What the fake server holds under one reply id."""

    messages: list[dict[str, Any]]
    system: Any
    tools: Any
    model: str
    #: Where the request that got this reply ended (its prompt), as an index into ``messages``.
    prompt_end: int
    continued: bool = False


class FakeAnthropic:
    """Scripted replies over ``httpx2.MockTransport``; ``requests`` holds every body received
    (a thread continuation with the held conversation filled in), ``wire`` each as sent."""

    def __init__(
        self,
        *script: Script,
        model: str | None = None,
        context_limit: int | None = None,
        threads: bool | str = True,
        lifecycle: dict[str, tuple[str, str | None]] | None = None,
        models_api: bool = True,
    ) -> None:
        self.script: list[Script] = list(script)
        #: Enforce a context window like the API: a larger prompt gets 400 "prompt is too long",
        #: and replies report the prompt's size (``request_tokens``) as their input tokens.
        self.context_limit = context_limit
        self.requests: list[dict[str, Any]] = []
        self.wire: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        #: The model replies name (``None``: the model the request named, as the API does).
        self.model = model
        #: ``model id -> (lifecycle, retires_at)`` overriding the contract table's (a model
        #: that turned deprecated, say).
        self.lifecycle = dict(lifecycle or {})
        #: ``False``: a proxy or platform without the Models API (its routes are 404s).
        self.models_api = models_api
        #: Awaited before the Models API answers (lets a test hold the lookup back).
        self.models_gate: asyncio.Event | None = None
        #: Every ``GET /v1/models...`` path asked.
        self.model_lookups: list[str] = []
        #: Which API each request reached, in order of arrival: ``models`` or ``messages``.
        self.arrivals: list[str] = []
        #: The prompt cache every reply's usage is accounted by (unless the script gives usage).
        self.cache = PromptCache()
        #: The usage of every reply, in order.
        self.usages: list[dict[str, int]] = []
        #: The content of every reply that stopped with ``pause_turn`` (canonical JSON): sent
        #: back as the last message, it is a continuation, not a prefill.
        self.paused: list[str] = []
        #: Per request: the thinking blocks the API dropped without an error (``"i.j"``).
        self.dropped: list[list[str]] = []
        #: ``True``: hold threads; ``"unknown"``: refuse the field; ``"unsupported"``: refuse to
        #: thread (``thread_unsupported_request``).
        self.threads = threads
        #: reply id -> the conversation held under it
        self.held: dict[str, HeldThread] = {}
        self.last_reply_id: str | None = None
        self._ids = 0

    def held_messages(self, reply_id: str | None = None) -> list[dict[str, Any]]:
        """The conversation the server holds under ``reply_id`` (default: the latest reply)."""
        return self.held[reply_id or str(self.last_reply_id)].messages

    def _thread_error(self, status: int, kind: str, code: str, message: str) -> httpx2.Response:
        return httpx2.Response(
            status,
            headers={"request-id": "req_fake_error"},
            json={
                "type": "error",
                "error": {"type": kind, "message": message, "details": {"error_code": code}},
            },
        )

    def _resolve_thread(
        self, body: dict[str, Any], headers: httpx2.Headers
    ) -> tuple[dict[str, Any], httpx2.Response | None]:
        """The body with a continued thread's conversation filled in, or the API's refusal."""
        thread = body.get("thread")
        if thread is None:
            return body, None
        if self.threads == "unknown":
            return body, self._error(
                400, "invalid_request_error", "thread: Extra inputs are not permitted"
            )
        if THREADS_BETA not in headers.get("anthropic-beta", ""):
            return body, self._error(
                400, "invalid_request_error", f"thread: requires the beta {THREADS_BETA}"
            )
        if self.threads == "unsupported":
            response = self._thread_error(
                400,
                "invalid_request_error",
                "thread_unsupported_request",
                "Threads do not support this request",
            )
            return body, response
        if thread.get("type") == "create":
            return body, None
        if thread.get("type") != "continue":
            return body, self._error(400, "invalid_request_error", "thread.type: invalid")
        held = self.held.get(str(thread.get("previous_message_id")))
        if held is None:
            return body, self._thread_error(
                404, "not_found_error", "thread_not_found", "No usable Thread state was found"
            )
        if held.continued:
            return body, self._thread_error(
                400,
                "invalid_request_error",
                "thread_already_continued",
                "The response that previous_message_id names has already been continued",
            )
        for field_name in ("system", "tools"):
            if field_name in body:
                return body, self._error(
                    400,
                    "invalid_request_error",
                    f"{field_name}: cannot be sent on a thread continue",
                )
        if body.get("model") != held.model:
            return body, self._thread_error(
                400,
                "invalid_request_error",
                "thread_fingerprint_mismatch",
                "model differs from the thread's",
            )
        messages = [dict(m) for m in held.messages]
        _mark_prompt_end(messages, held.prompt_end)
        effective = {**body, "messages": [*messages, *body.get("messages", [])]}
        for field_name, value in (("system", held.system), ("tools", held.tools)):
            if value is not None:
                effective[field_name] = value
        return effective, None

    def _hold(self, body: dict[str, Any], message_id: str, reply: Reply) -> None:
        thread = body.get("thread")
        if thread is None:
            return
        if thread.get("type") == "continue":
            self.held[str(thread["previous_message_id"])].continued = True
        messages = without_cache_control(body["messages"])
        self.held[message_id] = HeldThread(
            messages=[*messages, {"role": "assistant", "content": reply.content}],
            system=body.get("system"),
            tools=body.get("tools"),
            model=str(body.get("model")),
            prompt_end=len(messages) - 1,
        )
        self.last_reply_id = message_id

    def add(self, *script: Script) -> None:
        self.script.extend(script)

    def client(self, *, max_retries: int = 0) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key="sk-test",
            base_url="https://api.anthropic.test",
            max_retries=max_retries,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle)),
        )

    def _models(self, request: httpx2.Request) -> httpx2.Response:
        """The Models API: ``GET /v1/models/{id}`` (404 for an id it does not list) and the list."""
        path = request.url.path
        self.model_lookups.append(path)
        if not self.models_api:
            return self._error(404, "not_found_error", f"no route GET {path}")
        if path.rstrip("/") == "/v1/models":
            data = [
                model_info(rule, self.lifecycle.get(rule.id))
                for rule in contract.RULES
                if rule.lifecycle != "retired"
            ]
            return httpx2.Response(
                200,
                json={
                    "data": data,
                    "has_more": False,
                    "first_id": data[0]["id"],
                    "last_id": data[-1]["id"],
                },
            )
        model_id = path.removeprefix("/v1/models/")
        rule = contract.BY_ID.get(model_id)
        if rule is None:
            return self._error(404, "not_found_error", f"model: {model_id}")
        return httpx2.Response(200, json=model_info(rule, self.lifecycle.get(model_id)))

    def _contract(
        self, body: dict[str, Any], headers: httpx2.Headers
    ) -> tuple[contract.ModelRule | None, httpx2.Response | None]:
        """The request's model row, or the API's refusal under the per-model contract."""
        betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()}
        try:
            rule = contract.rule_for(body.get("model"))
            stage = self.lifecycle.get(rule.id, (rule.lifecycle, None))[0]
            if stage == "retired":
                raise contract.Refusal(404, "not_found_error", f"model: {rule.id}")
            messages = body.get("messages") or []
            last = messages[-1] if messages else {}
            continuing = last.get("role") == "assistant" and (
                json.dumps(without_cache_control(last.get("content")), sort_keys=True)
                in self.paused
            )
            contract.request_refusal(body, betas, rule, continuing=continuing)
            self.dropped.append(contract.thinking_check(body, rule))
        except contract.Refusal as refusal:
            return None, self._error(refusal.status, refusal.kind, refusal.message)
        return rule, None

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET" and request.url.path.startswith("/v1/models"):
            self.arrivals.append("models")
            if self.models_gate is not None:
                await self.models_gate.wait()
            return self._models(request)
        if request.method != "POST" or request.url.path != "/v1/messages":
            return self._error(
                404, "not_found_error", f"no route {request.method} {request.url.path}"
            )
        self.arrivals.append("messages")
        body = json.loads(await request.aread())
        self.wire.append(body)
        self.headers.append(dict(request.headers))
        body, refusal = self._resolve_thread(body, request.headers)
        self.requests.append(body)
        if refusal is not None:
            return refusal
        problems = api_problems(body)
        if problems:
            return self._error(400, "invalid_request_error", "; ".join(problems))
        rule, refusal = self._contract(body, request.headers)
        if refusal is not None or rule is None:
            return refusal or self._error(500, "api_error", "no model")
        if self.context_limit is not None:
            tokens = request_tokens(body)
            if tokens > self.context_limit:
                return self._error(
                    400,
                    "invalid_request_error",
                    f"prompt is too long: {tokens} tokens > {self.context_limit} maximum",
                )
        if not self.script:
            return self._error(500, "api_error", "the fake server ran out of scripted replies")
        step = self.script.pop(0)
        reply = step(body) if callable(step) else step
        if isinstance(reply, ErrorReply):
            return self._error(reply.status, reply.type, reply.message, reply.headers)
        usage = reply.usage
        if usage is None:
            # the three input fields add up to the prompt (``request_tokens``)
            usage = {**self.cache.usage(body), "output_tokens": 5}
        elif self.context_limit is not None:
            usage = {**usage, "input_tokens": request_tokens(body)}
        self.usages.append(usage)
        kind, display = contract.thinking_setting(body, rule)
        content = contract.render_thinking(reply.content, kind, display)
        contract.sign_reply(body, rule.id, content)
        reply = dataclasses.replace(reply, usage=usage, content=content)
        if reply.resolved_stop == "pause_turn":
            self.paused.append(json.dumps(without_cache_control(reply.content), sort_keys=True))
        message = self._message(reply, str(body.get("model")))
        self._hold(body, message["id"], reply)
        if not body.get("stream"):
            return httpx2.Response(200, json=message)
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream", "request-id": "req_fake"},
            content=self._events(reply, message),
        )

    def _error(
        self, status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> httpx2.Response:
        return httpx2.Response(
            status,
            headers={"request-id": "req_fake_error", **(headers or {})},
            json={"type": "error", "error": {"type": kind, "message": message}},
        )

    def _message(self, reply: Reply, model: str) -> dict[str, Any]:
        self._ids += 1
        return {
            "id": f"msg_fake_{self._ids}",
            "type": "message",
            "role": "assistant",
            "model": self.model or model,
            "content": reply.content,
            "stop_reason": reply.resolved_stop,
            "stop_sequence": None,
            "usage": reply.usage or {},
        }

    async def _events(self, reply: Reply, message: dict[str, Any]) -> AsyncIterator[bytes]:
        usage = reply.usage or {}
        start_usage = {**usage, "output_tokens": 1}
        if reply.opening is not None:
            await reply.opening.wait()
        yield _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {**message, "content": [], "stop_reason": None, "usage": start_usage},
            },
        )
        yield _sse("ping", {"type": "ping"})
        first_text = True
        for index, block in enumerate(reply.content):
            if block["type"] == "text":
                yield _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                for piece in _pieces(block["text"], reply.chunk):
                    if reply.gate is not None and not first_text:
                        await reply.gate.wait()
                    first_text = False
                    yield _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
            elif block["type"] == "tool_use":
                yield _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {
                            "type": "tool_use",
                            "id": block["id"],
                            "name": block["name"],
                            "input": {},
                        },
                    },
                )
                raw = (reply.raw_json or {}).get(block["id"])
                encoded = raw if raw is not None else json.dumps(block["input"])
                for piece in _pieces(encoded, reply.chunk):
                    yield _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
            elif block["type"] in ("thinking", "redacted_thinking"):
                for event in thinking_events(index, block, reply.chunk):
                    yield event
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            await asyncio.sleep(0)
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.resolved_stop, "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})


def _mark_prompt_end(messages: list[dict[str, Any]], index: int) -> None:
    """Put a breakpoint on the last block of ``messages[index]`` that can carry one."""
    if index < 0:
        return
    content = messages[index]["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    for position in range(len(blocks) - 1, -1, -1):
        if blocks[position].get("type") not in ("thinking", "redacted_thinking"):
            blocks[position] = {**blocks[position], "cache_control": {"type": "ephemeral"}}
            messages[index] = {**messages[index], "content": blocks}
            return


# -- prompt caching, the way the API does it (added for "caching holds for wide turns") ----------

#: The API looks for an earlier cache entry at each breakpoint and at most this many blocks before.
CACHE_LOOKBACK_BLOCKS = 20


def cache_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as the prompt cache sees it: tools, then system, then every message's content
    blocks, in order — each block's canonical JSON (without ``cache_control``) and whether it
    carries a breakpoint."""

    def entry(block: dict[str, Any], *, prefix: str = "") -> tuple[str, bool]:
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        return prefix + json.dumps(plain, sort_keys=True), "cache_control" in block

    blocks = [entry(tool, prefix="tool:") for tool in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append(entry({"type": "text", "text": system}, prefix="system:"))
    else:
        blocks.extend(entry(block, prefix="system:") for block in system or [])
    for message in body["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks.extend(entry(part, prefix=f"{message['role']}:") for part in parts)
    return blocks


def block_tokens(canonical: str) -> int:
    """A stand-in tokenizer: about four characters a token."""
    return max(1, len(canonical) // 4)


class PromptCache:
    """The Messages API's prompt cache, modelled on its documented rule.

    A request writes the prefix ending at each of its breakpoints. At each breakpoint the API
    reads the longest prefix written earlier that ends at that block or at most
    ``CACHE_LOOKBACK_BLOCKS`` blocks before it; anything further back is a miss. Usage is
    reported like the API: ``cache_read_input_tokens`` for the prefix read,
    ``cache_creation_input_tokens`` for the rest up to the last breakpoint, ``input_tokens``
    after it.
    """

    def __init__(self) -> None:
        self.written: set[str] = set()

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = cache_blocks(body)
        prefixes: list[str] = []
        digest = hashlib.sha256()
        for canonical, _ in blocks:
            digest.update(canonical.encode())
            digest.update(b"\0")
            prefixes.append(digest.copy().hexdigest())
        tokens = [block_tokens(canonical) for canonical, _ in blocks]
        breakpoints = [i for i, (_, marked) in enumerate(blocks) if marked]
        read_to = -1
        for point in breakpoints:
            for i in range(point, max(point - CACHE_LOOKBACK_BLOCKS, 0) - 1, -1):
                if prefixes[i] in self.written:
                    read_to = max(read_to, i)
                    break
        last = max(breakpoints, default=-1)
        self.written.update(prefixes[i] for i in breakpoints)
        cached_to = max(last, read_to)
        return {
            "cache_read_input_tokens": sum(tokens[: read_to + 1]),
            "cache_creation_input_tokens": sum(tokens[read_to + 1 : cached_to + 1]),
            "input_tokens": sum(tokens[cached_to + 1 :]),
        }


def cached(cache: PromptCache, reply: Reply) -> Callable[[dict[str, Any]], Reply]:
    """A script step that answers ``reply`` with the usage ``cache`` computes for the request."""

    def step(body: dict[str, Any]) -> Reply:
        usage = {**cache.usage(body), "output_tokens": (reply.usage or {}).get("output_tokens", 5)}
        return dataclasses.replace(reply, usage=usage)

    return step


# -- extended thinking (added for "extended thinking") --------------------------------------------


def thinking(value: str, signature: str = "unsigned") -> dict[str, Any]:
    """A scripted reasoning block (the fake signs it, bound to the model and the prefix)."""
    return {"type": "thinking", "thinking": value, "signature": signature}


def progress(value: str) -> dict[str, Any]:
    """A scripted progress update: the text the model writes between tool calls, which current
    models return in a thinking block (``display`` decides whether its text comes back)."""
    return {"type": "thinking", "thinking": value, "signature": "", "progress": True}


def thinking_events(index: int, block: dict[str, Any], chunk: int) -> list[bytes]:
    """The SSE events of a thinking block (text then signature) or a redacted one (whole)."""
    if block["type"] == "redacted_thinking":
        start = {"type": "redacted_thinking", "data": block["data"]}
        return [
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        ]
    events = [
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
    ]
    for piece in _pieces(block["thinking"], chunk):
        delta = {"type": "thinking_delta", "thinking": piece}
        events.append(
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        )
    delta = {"type": "signature_delta", "signature": block["signature"]}
    events.append(
        _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
    )
    return events


def thinking_problems(body: dict[str, Any]) -> list[str]:
    """The API's rules for thinking: a budget of at least 1024 below ``max_tokens``, thinking
    blocks sent back whole (with their signature), none marked for caching."""
    problems: list[str] = []
    config = body.get("thinking")
    if config is not None and config.get("type") == "enabled":
        budget = config.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            problems.append(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        elif not budget < body.get("max_tokens", 0):
            problems.append("`max_tokens` must be greater than `thinking.budget_tokens`")
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for j, block in enumerate(content if isinstance(content, list) else []):
            kind = block.get("type")
            if kind == "thinking" and not (block.get("signature") and "thinking" in block):
                problems.append(f"messages.{i}.content.{j}.thinking.signature: Field required")
            if kind == "redacted_thinking" and not block.get("data"):
                problems.append(f"messages.{i}.content.{j}.redacted_thinking.data: Field required")
            if kind in ("thinking", "redacted_thinking") and "cache_control" in block:
                problems.append(f"messages.{i}.content.{j}: thinking blocks cannot be cached")
    problems.extend(_open_tool_loop_problems(body))
    return problems


def _open_tool_loop_problems(body: dict[str, Any]) -> list[str]:
    """With thinking on, a tool loop still running (the request ends in tool results) must open
    with a thinking block: the first assistant message after the user's latest words."""
    config = body.get("thinking")
    messages = body.get("messages") or []
    if config is None or config.get("type") != "enabled" or not messages:
        return []

    def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
        content = message.get("content")
        return content if isinstance(content, list) else [{"type": "text", "text": content}]

    last = messages[-1]
    if last.get("role") != "user" or any(b.get("type") != "tool_result" for b in blocks(last)):
        return []
    opening = 0
    for i, message in enumerate(messages):
        if message.get("role") == "user" and any(
            b.get("type") != "tool_result" for b in blocks(message)
        ):
            opening = i + 1
    if opening >= len(messages):
        return []
    first = blocks(messages[opening])
    if first and first[0].get("type") in ("thinking", "redacted_thinking"):
        return []
    found = first[0].get("type") if first else "nothing"
    return [
        f"messages.{opening}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
        f"found `{found}`. When `thinking` is enabled, a final `assistant` message must start "
        "with a thinking block"
    ]


# -- the context window, the way the API enforces it (added for "the conversation fits") --------


def request_tokens(body: dict[str, Any]) -> int:
    """The prompt's size in the stand-in tokenizer (images at their documented cost)."""
    total = 0
    for canonical, _ in cache_blocks(body):
        if '"type": "image"' in canonical:
            total += 1_600
            canonical = re.sub(r'"data": "[^"]*"', '"data": ""', canonical)
        total += block_tokens(canonical)
    return total


def overloaded_stream(text_first: str = "") -> httpx2.Response:
    """A 200 stream that breaks with an ``overloaded_error`` event (after ``text_first``, if
    given) — what the API sends when it is overloaded after it began to answer."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_overloaded",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-5-5",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", start)]
    if text_first:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text_first}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    events.append(("error", error))
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=body.encode()
    )
