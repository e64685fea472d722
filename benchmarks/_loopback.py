"""A zero-latency Messages API on loopback, for measuring client-side overhead.

It runs in its own process (``python -m benchmarks._loopback`` prints ``PORT <n>``), so its CPU
time is not charged to the client being measured. It is stateless: the *model name* carries the
script, ``bench-t{turns}-c{calls}``: while the conversation holds fewer than ``turns`` assistant
messages, the reply is a short text plus ``calls`` ``tool_use`` blocks for the request's first
tool, each with input ``{"i": k}``; after that the reply is ``end_turn`` text. It speaks both wire
formats the SDK uses: a JSON message, and the SSE event stream when the request says
``"stream": true``. Two more scripts: ``bench-stream-{tokens}`` streams
an answer of ``tokens`` words at ``STREAM_TOKENS_PER_S``, one text delta each, and
``bench-py-t{turns}-c{calls}`` has each of ``turns`` replies call ``run_python`` ``calls`` times
(a main-thread tool in a notebook). It also follows the SDK's server-side threads
(``"thread": {"type": "continue", "previous_message_id": ...}``), where a request carries only
the new messages: the one piece of state it keeps is, per message id it sent, how many assistant
turns came before.

For issue 32's rows it also answers the Models API (``GET /v1/models/{id}``: a current model's
facts under the id asked), takes the script from the system prompt when the model name is a real
one (``claude-sonnet-5-5`` with a system prompt holding ``bench-t30-c1``), and accounts a whole
(unthreaded) request's usage by the prompt cache the way the API documents it: each breakpoint
writes its prefix; a breakpoint reads the longest prefix written before that ends at it or at
most 20 blocks earlier; ``cache_read_input_tokens`` for what was read,
``cache_creation_input_tokens`` for the rest up to the last breakpoint, ``input_tokens`` after.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import re
import sys
from typing import Any

_ids = itertools.count(1)
_MODEL = re.compile(r"bench-(?:py-)?t(\d+)-c(\d+)")
_STREAM = re.compile(r"bench-stream-(\d+)")
#: The pace of a ``bench-stream-N`` answer.
STREAM_TOKENS_PER_S = 100
#: What each ``run_python`` call of a ``bench-py-…`` script runs.
PYTHON_CALL = "sum(range(1000))"
#: message id -> (assistant turns up to and including it, the thread's tools)
_threads: dict[str, tuple[int, list[dict[str, Any]]]] = {}


def plan_reply(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str, int]:
    """Content blocks, stop reason and turn number for a request, from its model name's script."""
    match = _MODEL.search(str(body.get("model", ""))) or _MODEL.search(
        json.dumps(body.get("system") or "")
    )
    turns, calls = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    messages = body.get("messages") or []
    assistant_turns = sum(1 for m in messages if m.get("role") == "assistant")
    tools = body.get("tools") or []
    thread = body.get("thread")
    if isinstance(thread, dict) and thread.get("type") == "continue":
        before, thread_tools = _threads.get(str(thread.get("previous_message_id")), (0, []))
        assistant_turns += before
        tools = tools or thread_tools
    stream = _STREAM.search(str(body.get("model", "")))
    if stream:
        words = " ".join(f"word{k}" for k in range(int(stream.group(1))))
        return [{"type": "text", "text": words}], "end_turn", assistant_turns
    python = "bench-py-" in str(body.get("model", ""))
    if assistant_turns < turns and tools and calls:
        name = "run_python" if python else tools[0]["name"]
        content: list[dict[str, Any]] = [{"type": "text", "text": "Calling the tool."}]
        for k in range(calls):
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{next(_ids):08d}",
                    "name": name,
                    "input": {"code": PYTHON_CALL} if python else {"i": k},
                }
            )
        return content, "tool_use", assistant_turns
    return (
        [{"type": "text", "text": f"Done after {assistant_turns} turns."}],
        "end_turn",
        assistant_turns,
    )


def _message(
    body: dict[str, Any], content: list[dict[str, Any]], stop: str, input_tokens: int = 12
) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids):08d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "bench"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 6},
    }


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def sse_parts(message: dict[str, Any], *, paced: bool = False) -> list[str]:
    """The events of one message's stream, with the tool input sent as ``input_json_delta``;
    ``paced``: one text delta per word."""
    start_message = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**message["usage"], "output_tokens": 1},
    }
    parts = [_sse("message_start", {"type": "message_start", "message": start_message})]
    for index, block in enumerate(message["content"]):
        start: dict[str, Any]
        deltas: list[dict[str, Any]]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            pieces = block["text"].split(" ") if paced else [block["text"]]
            pieces = [piece if k == 0 else " " + piece for k, piece in enumerate(pieces)]
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        parts.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        for delta in deltas:
            parts.append(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    parts.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 6},
            },
        )
    )
    parts.append(_sse("message_stop", {"type": "message_stop"}))
    return parts


def sse_body(message: dict[str, Any]) -> bytes:
    """The event stream of one message, in one piece."""
    return "".join(sse_parts(message)).encode()


#: Prefix digests the prompt cache holds (this process's whole life).
_written: set[str] = set()
#: The API looks for an earlier cache entry at a breakpoint and at most this many blocks before.
CACHE_LOOKBACK_BLOCKS = 20


def cache_usage(body: dict[str, Any]) -> dict[str, int] | None:
    """The usage of an unthreaded request with breakpoints, by the prompt cache; else ``None``."""
    if body.get("thread") or '"cache_control"' not in json.dumps(body):
        return None

    def plain(block: Any) -> str:
        if isinstance(block, dict):
            block = {k: v for k, v in block.items() if k != "cache_control"}
        return json.dumps(block, sort_keys=True)

    blocks: list[tuple[str, bool]] = []
    for tool in body.get("tools") or []:
        blocks.append(("tool:" + plain(tool), "cache_control" in tool))
    system = body.get("system") or []
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        blocks.append(("system:" + plain(block), "cache_control" in block))
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            blocks.append((f"{message.get('role')}:" + plain(part), "cache_control" in part))
    digest = hashlib.sha256()
    prefixes: list[str] = []
    for canonical, _ in blocks:
        digest.update(canonical.encode() + b"\0")
        prefixes.append(digest.copy().hexdigest())
    tokens = [max(1, len(canonical) // 4) for canonical, _ in blocks]
    points = [i for i, (_, marked) in enumerate(blocks) if marked]
    read_to = -1
    for point in points:
        for i in range(point, max(point - CACHE_LOOKBACK_BLOCKS, 0) - 1, -1):
            if prefixes[i] in _written:
                read_to = max(read_to, i)
                break
    _written.update(prefixes[i] for i in points)
    cached_to = max(max(points, default=-1), read_to)
    return {
        "cache_read_input_tokens": sum(tokens[: read_to + 1]),
        "cache_creation_input_tokens": sum(tokens[read_to + 1 : cached_to + 1]),
        "input_tokens": sum(tokens[cached_to + 1 :]),
        "output_tokens": 6,
    }


def model_info(model_id: str) -> bytes:
    """The Models API's answer for ``model_id``: the facts of a current model (1M window)."""
    yes = {"supported": True}
    no = {"supported": False}
    levels = {level: yes for level in ("low", "medium", "high", "xhigh", "max")}
    info = {
        "type": "model",
        "id": model_id,
        "display_name": model_id,
        "created_at": "2026-09-28T00:00:00Z",
        "lifecycle": "active",
        "deprecated_at": None,
        "retires_at": None,
        "line": None,
        "max_input_tokens": 1_000_000,
        "max_tokens": 128_000,
        "capabilities": {
            "batch": yes,
            "citations": yes,
            "code_execution": yes,
            "context_management": yes,
            "effort": {"supported": True, **levels},
            "image_input": yes,
            "pdf_input": yes,
            "server_tools": {"supported": True, "web_search": yes, "code_execution": yes},
            "structured_outputs": yes,
            "thinking": {
                "supported": True,
                "types": {"adaptive": yes, "between_tools": yes, "disabled": no, "enabled": no},
            },
        },
    }
    return json.dumps(info).encode()


def respond(raw: bytes) -> tuple[bytes, str]:
    """The response body and content type for one request body."""
    body = json.loads(raw) if raw else {}
    content, stop, assistant_turns = plan_reply(body)
    # the prompt's size, about four bytes a token, as the API would report it
    message = _message(body, content, stop, input_tokens=max(12, len(raw) // 4))
    usage = cache_usage(body)
    if usage is not None:
        message["usage"] = usage
    if body.get("thread"):
        tools = body.get("tools") or []
        thread = body["thread"]
        if not tools and isinstance(thread, dict):
            tools = _threads.get(str(thread.get("previous_message_id")), (0, []))[1]
        _threads[message["id"]] = (assistant_turns + 1, tools)
    if body.get("stream"):
        return sse_body(message), "text/event-stream"
    return json.dumps(message).encode(), "application/json"


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            headers = head.decode("latin-1").split("\r\n")
            length = 0
            for line in headers[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            raw = await reader.readexactly(length) if length else b""
            method, _, rest = headers[0].partition(" ")
            path = rest.partition(" ")[0].partition("?")[0]
            if method == "GET" and path.startswith("/v1/models/"):
                info = model_info(path.removeprefix("/v1/models/"))
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(info)}\r\n".encode()
                    + b"request-id: req_bench\r\n\r\n"
                    + info
                )
                await writer.drain()
                continue
            if b'"bench-stream-' in raw and b'"stream":true' in raw.replace(b" ", b""):
                await _paced(writer, raw)
                continue
            payload, content_type = respond(raw)
            writer.write(
                b"HTTP/1.1 200 OK\r\n"
                + f"content-type: {content_type}\r\n".encode()
                + f"content-length: {len(payload)}\r\n".encode()
                + b"request-id: req_bench\r\n\r\n"
                + payload
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _paced(writer: asyncio.StreamWriter, raw: bytes) -> None:
    """A ``bench-stream-N`` answer, one word every 1/``STREAM_TOKENS_PER_S`` s (chunked)."""
    body = json.loads(raw)
    content, stop, _turns = plan_reply(body)
    parts = sse_parts(_message(body, content, stop), paced=True)
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nrequest-id: req_bench\r\n\r\n"
    )
    for part in parts:
        data = part.encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()
        if "text_delta" in part:
            await asyncio.sleep(1 / STREAM_TOKENS_PER_S)
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def _serve() -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    async with server:
        await server.serve_forever()


class LoopbackServer:
    """Starts the server in a child process; ``base_url`` points a client at it."""

    def __init__(self) -> None:
        import subprocess

        from ._harness import REPO_ROOT

        self._proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._loopback"],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.startswith("PORT "):
            self._proc.kill()
            raise RuntimeError(f"loopback server did not start: {line!r}")
        self.base_url = f"http://127.0.0.1:{int(line.split()[1])}"

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve())
