"""``OpenAIProvider``: any OpenAI-compatible chat-completions server (vLLM, Ollama, llama.cpp).

The agent keeps its conversation in Anthropic format; this module translates each request to
chat completions (``tool_use`` → assistant ``tool_calls``, ``tool_result`` → ``tool`` messages,
tool schemas → ``{"type": "function", ...}``) and the streamed answer back (text deltas, tool-call
argument fragments assembled into ``tool_use`` blocks, ``finish_reason`` → ``stop_reason``, usage).
Servers bend the wire format: Ollama and some llama.cpp builds send parallel calls without an
``index`` (or all at ``index: 0``), told apart only by a new ``id`` (``_ToolCallAssembler``); a
stream that stops before its ``finish_reason`` is an error, not a short reply; a server that
cannot do tool calls is named as such; a stream that announces tool calls but delivers none
(Ollama versions that lose them while streaming: ollama/ollama#12557, #9632) is asked once more
without streaming. OpenAI's reasoning models (gpt-5.x, the o-series) refuse ``max_tokens`` and
take ``max_completion_tokens``; so does any server whose 400 names ``max_tokens`` (remembered).
A provider that built its own client rebuilds it on a new event loop (``_event_loops.py``); a
client passed in sends through a copy whose retry waits are capped (``_retry_wait.py``).
The ``openai`` package is an optional extra (``pip install 'jupyter-claude-agent[openai]'``) and is
imported only when this provider is created.
"""

from __future__ import annotations

import functools
import json
import os
import re
import uuid
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..events import TextDelta, TextReset, Usage
from ._event_loops import CLIENT_ON_NEW_LOOP_WARNING, LoopTracker
from ._retry_wait import DEFAULT_MAX_RETRY_WAIT, RetryWaitCap, capped_copy
from .base import ModelRequest, ModelResponse, ProviderEvent

if TYPE_CHECKING:
    import openai

DEFAULT_MODEL = "gpt-5.4-mini"
#: Local servers do not check the key, but the SDK wants one.
PLACEHOLDER_API_KEY = "not-needed"
#: OpenAI's reasoning models (gpt-5.x, o1, o3, o4-mini, ...), also behind a router's
#: ``vendor/`` prefix: they refuse ``max_tokens`` and take ``max_completion_tokens``.
REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(?:gpt-5|o[1-9])(?:[.\-]|$)", re.IGNORECASE)

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "OpenAIProvider needs the openai package: pip install 'jupyter-claude-agent[openai]'"
        ) from exc
    return openai


@functools.cache
def _capped_client_class() -> Any:
    """``openai.AsyncOpenAI`` whose retries wait at most ``max_retry_wait`` (``_retry_wait.py``;
    the SDK alone honours a ``retry-after`` of up to two minutes)."""
    openai = _import_openai()

    class AsyncOpenAIWithWaitCap(RetryWaitCap, openai.AsyncOpenAI):  # type: ignore[misc,name-defined]
        pass

    return AsyncOpenAIWithWaitCap


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def to_openai_messages(system: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Anthropic-format conversation as chat-completions messages."""
    converted: list[dict[str, Any]] = []
    if system:
        converted.append({"role": "system", "content": system})
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if message.get("role") == "assistant":
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            calls = [
                {
                    "id": str(b.get("id")),
                    "type": "function",
                    "function": {
                        "name": str(b.get("name")),
                        "arguments": json.dumps(b.get("input", {}), ensure_ascii=False),
                    },
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            converted.append(entry)
            continue
        texts: list[str] = []
        for block in blocks:
            if block.get("type") == "tool_result":
                output = _text_of(block.get("content", ""))
                if block.get("is_error") and not output.lower().startswith("error"):
                    output = f"Error: {output}"
                converted.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(block.get("tool_use_id")),
                        "content": output,
                    }
                )
            elif block.get("type") == "text":
                texts.append(str(block.get("text", "")))
        if texts:
            converted.append({"role": "user", "content": "\n\n".join(texts)})
    return converted


def to_openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic tool schemas as chat-completions function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema", {"type": "object", "properties": {}}),
            },
        }
        for tool in tools
    ]


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: str = ""

    def block(self) -> dict[str, Any]:
        """The call as a ``tool_use`` block; unparseable arguments stay a string (the agent
        answers them with an error result the model can read)."""
        raw = self.arguments.strip()
        arguments: object
        try:
            arguments = json.loads(raw) if raw else {}
        except ValueError:
            arguments = raw
        return {
            "type": "tool_use",
            "id": self.id or f"call_{uuid.uuid4().hex[:24]}",
            "name": self.name,
            "input": arguments,
        }


class _ToolCallAssembler:
    """Puts streamed tool-call fragments back together into whole calls, in order.

    The OpenAI format tags each fragment with the call's ``index`` and gives the ``id`` on the
    first one only. Some servers omit ``index`` (each call whole in one chunk) or reuse
    ``index: 0`` for every call, so a fragment with an ``id`` not seen before always starts a new
    call; one without an ``id`` continues the call of its ``index`` (or, with no index, the
    latest call). An id seen before starts a new call too when it comes at another ``index`` or
    with a function name again: some servers number every call ``call_0``.
    """

    def __init__(self) -> None:
        self.calls: list[_PendingCall] = []
        self._by_index: dict[int, _PendingCall] = {}
        self._by_id: dict[str, _PendingCall] = {}

    def add(self, fragment: Any) -> None:
        index = getattr(fragment, "index", None)
        call_id = getattr(fragment, "id", None) or ""
        pending: _PendingCall | None
        if call_id:
            pending = self._by_id.get(call_id)
            function = getattr(fragment, "function", None)
            if pending is not None and (
                (index is not None and self._by_index.get(index) is not pending)
                or (pending.name and function is not None and function.name)
            ):
                # the id again at another index, or with a name for a call that has one: a
                # server that repeats ids (``call_0`` for every call) starting another call;
                # the agent makes the ids unique
                pending = None
            if pending is None:
                # an id that arrives after its call's first fragment joins that call
                current = self._by_index.get(index) if index is not None else None
                pending = current if current is not None and not current.id else self._start()
                pending.id = call_id
                self._by_id[call_id] = pending
        elif index is not None:
            pending = self._by_index.get(index) or self._start()
        else:
            pending = self.calls[-1] if self.calls else self._start()
        if index is not None:
            self._by_index[index] = pending
        function = getattr(fragment, "function", None)
        if function is not None:
            if function.name:
                pending.name += function.name
            if function.arguments:
                pending.arguments += function.arguments

    def _start(self) -> _PendingCall:
        pending = _PendingCall()
        self.calls.append(pending)
        return pending


class OpenAIProvider:
    """Streams replies from an OpenAI-compatible ``/chat/completions`` endpoint."""

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        max_tokens: int | None = None,
        stream_usage: bool = True,
        max_retries: int = 2,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
    ) -> None:
        _import_openai()
        self.model: str = (
            model
            or os.environ.get("OPENAI_MODEL")
            or os.environ.get("JUPYTER_AGENT_MODEL")
            or DEFAULT_MODEL
        )
        self.max_tokens = max_tokens
        #: The field the reply's cap goes in: ``max_completion_tokens`` for a reasoning model or
        #: a server that refused ``max_tokens``, else ``max_tokens`` (what every server knows).
        self.max_tokens_field = (
            "max_completion_tokens" if REASONING_MODEL.match(self.model) else "max_tokens"
        )
        #: Ask for token usage in the last chunk (``stream_options``); turn off for servers
        #: that refuse the option.
        self.stream_usage = stream_usage
        self._owns_client = client is None
        self._client_options: dict[str, Any] = {
            "api_key": api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY,
            "base_url": base_url or os.environ.get("OPENAI_BASE_URL") or None,
            # the SDK's retries (for a client this provider builds), no wait longer than this
            "max_retries": max_retries,
            "max_retry_wait": max_retry_wait,
        }
        if client is None:
            client = _capped_client_class()(**self._client_options)
        self.client: openai.AsyncOpenAI = client
        self._loops = LoopTracker()
        #: A client passed in, and the copy of it that sends (its retry waits capped).
        self._capped: tuple[object, Any] | None = None

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={str(self.client.base_url)!r})"

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(request.system, request.messages),
            "stream": True,
        }
        if request.tools:
            params["tools"] = to_openai_tools(request.tools)
        if self.stream_usage:
            params["stream_options"] = {"include_usage": True}
        if self.max_tokens is not None:
            params[self.max_tokens_field] = self.max_tokens
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        openai_module = _import_openai()
        params = self.build_params(request)
        client = self._sending_client()
        reply = _Reply(self.model)
        try:
            stream = await self._create(client, params)
            async with stream:
                async for chunk in stream:
                    for text in reply.add_chunk(chunk):
                        yield TextDelta(text)
            if reply.finish_reason is not None and reply.dropped_tool_calls():
                # announced, never sent (ollama/ollama#12557): the complete reply has them
                streamed_text = bool(reply.text)
                reply = await self._complete(client, params)
                if streamed_text:
                    yield TextReset()
                if reply.text:
                    yield TextDelta("".join(reply.text))
        except openai_module.APIStatusError as exc:
            message = _describe_status_error(exc, self.client.base_url)
            if request.tools and _refuses_tools(exc):
                message += (
                    ". The model or server does not support tool calls: pick a model with tool "
                    "support (llama.cpp: start the server with --jinja; vLLM: with "
                    "--enable-auto-tool-choice and a --tool-call-parser), or turn the tools off "
                    "with %agent_tools"
                )
            raise ProviderError(message) from exc
        except openai_module.APIConnectionError as exc:
            raise ProviderError(
                f"Could not connect to the OpenAI-compatible server at {client.base_url}: "
                f"{str(exc).rstrip('.')}. Is it running (and OPENAI_BASE_URL right)?"
            ) from exc
        except openai_module.OpenAIError as exc:
            raise ProviderError(f"OpenAI-compatible request failed: {exc}") from exc

        if reply.finish_reason is None:
            raise ProviderError(
                f"The OpenAI-compatible server at {client.base_url} ended the stream before the "
                "reply was complete (no finish_reason). Try again."
            )
        yield reply.response()

    def _sending_client(self) -> Any:
        """The client requests go through: rebuilt on a new event loop if this provider built
        it, else a copy of the client passed in whose retry waits are capped."""
        client = self.client
        if self._loops.moved():  # a new asyncio.run: see _event_loops.py
            if self._owns_client:
                client = self.client = _capped_client_class()(**self._client_options)
            else:
                message = CLIENT_ON_NEW_LOOP_WARNING.format(provider="OpenAIProvider")
                warnings.warn(message, RuntimeWarning, stacklevel=3)
        if not isinstance(client, RetryWaitCap):
            # a client passed in: a copy of it whose retry waits are capped (_retry_wait.py)
            if self._capped is None or self._capped[0] is not client:
                wait = float(self._client_options["max_retry_wait"])
                self._capped = (client, capped_copy(client, wait))
            client = self._capped[1]
        return client

    async def _create(self, client: Any, params: dict[str, Any]) -> Any:
        """``chat.completions.create(**params)``; a 400 that names ``max_tokens`` is answered by
        sending the cap as ``max_completion_tokens`` — this time and from now on."""
        openai_module = _import_openai()
        try:
            return await client.chat.completions.create(**params)
        except openai_module.BadRequestError as exc:
            if "max_tokens" not in params or not _refuses_max_tokens(exc):
                raise
            self.max_tokens_field = "max_completion_tokens"
            params["max_completion_tokens"] = params.pop("max_tokens")
            return await client.chat.completions.create(**params)

    async def _complete(self, client: Any, params: dict[str, Any]) -> _Reply:
        """The same request without streaming: one complete reply."""
        whole = {k: v for k, v in params.items() if k not in ("stream", "stream_options")}
        completion = await self._create(client, {**whole, "stream": False})
        reply = _Reply(completion.model or self.model)
        reply.add_completion(completion)
        return reply

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it (a client passed in is yours)."""
        if self._owns_client and not self._loops.elsewhere():
            await self.client.close()


class _Reply:
    """A reply as it arrives: text, tool calls, ``finish_reason``, usage — streamed chunk by
    chunk (``add_chunk``) or whole (``add_completion``)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.text: list[str] = []
        self.calls = _ToolCallAssembler()
        self.finish_reason: str | None = None
        self.usage = Usage()
        #: A delta carried a tool call's fragment (perhaps only its head: index, id).
        self.calls_announced = False

    def add_chunk(self, chunk: Any) -> list[str]:
        """Take one streamed chunk in; the text it adds."""
        added: list[str] = []
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                self.text.append(delta.content)
                added.append(delta.content)
            if delta.tool_calls:  # a call's fragment; an empty list announces nothing
                self.calls_announced = True
            for fragment in delta.tool_calls or []:
                self.calls.add(fragment)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return added

    def add_completion(self, completion: Any) -> None:
        """Take a whole ``chat.completion`` in (its first choice)."""
        if completion.usage is not None:
            self.usage = _usage(completion.usage)
        for choice in completion.choices[:1]:
            message = choice.message
            if message.content:
                self.text.append(message.content)
            for call in message.tool_calls or []:
                function = getattr(call, "function", None)
                self.calls.calls.append(
                    _PendingCall(
                        call.id or "",
                        getattr(function, "name", "") or "",
                        getattr(function, "arguments", "") or "",
                    )
                )
            self.finish_reason = choice.finish_reason or "stop"

    def dropped_tool_calls(self) -> bool:
        """Whether tool calls were announced (a call's fragment, or that finish reason) and
        none came with its function: what an Ollama that loses streamed calls sends."""
        delivered = any(call.name for call in self.calls.calls)
        announced = self.calls_announced or self.finish_reason in ("tool_calls", "function_call")
        return announced and not delivered

    def response(self) -> ModelResponse:
        content: list[dict[str, Any]] = []
        if self.text:
            content.append({"type": "text", "text": "".join(self.text)})
        calls = [pending for pending in self.calls.calls if pending.name]
        content.extend(pending.block() for pending in calls)
        stop_reason = _STOP_REASONS.get(self.finish_reason or "", self.finish_reason)
        if calls and stop_reason == "end_turn":
            stop_reason = "tool_use"  # some servers say "stop" after tool calls
        if not calls and stop_reason == "tool_use":
            stop_reason = "end_turn"  # calls announced and never sent: nothing to run
        return ModelResponse(content, stop_reason, self.usage, self.model)


def _usage(usage: Any) -> Usage:
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cache_read_input_tokens=cached,
    )


def _refuses_max_tokens(exc: Any) -> bool:
    """Whether a 400 says the server does not take ``max_tokens`` (OpenAI: ``unsupported
    parameter ... Use 'max_completion_tokens' instead``; others name it their own way)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body, dict) else {}
    if isinstance(error, dict) and error.get("param") == "max_tokens":
        return True
    said = str(exc.body if exc.body is not None else exc.message)
    return "max_tokens" in said and ("max_completion_tokens" in said or "support" in said.lower())


def _refuses_tools(exc: Any) -> bool:
    """Whether a 400 says the model or server cannot take the ``tools`` parameter."""
    if exc.status_code != 400:
        return False
    said = str(exc.body if exc.body is not None else exc.message).lower()
    return "tool" in said and any(
        hint in said for hint in ("support", "--jinja", "--enable-auto-tool-choice")
    )


def _describe_status_error(exc: Any, base_url: object) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body, dict) else {}
    detail = error.get("message") if isinstance(error, dict) else None
    return (
        f"OpenAI-compatible server at {base_url} answered {exc.status_code}: "
        f"{detail or exc.message}"
    )
