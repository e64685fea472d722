"""A model that needs no key and no network: recorded sessions and a small demo model.

``OfflineProvider`` drives the same agent loop as Claude — its replies contain real ``tool_use``
blocks, so the tools really run — for tests, tutorial notebooks and Binder:

- it **replays cassettes**: JSON files of recorded exchanges (``{"prompt": ..., "responses":
  [reply per model turn]}``). When a chat's prompt matches a recorded one (case and whitespace
  ignored; in an exchange with ``"match": "pattern"``, ``*`` stands for any text), the
  recorded replies come back turn by turn, their text streamed in small pieces. A tool call's
  argument may name a value only the run knows — the id of a cell that an earlier call of the
  same prompt inserted: ``{"$from_result": "toolu_…", "find": "regex with one group"}`` stands
  for that group in the result the tool call ``toolu_…`` got in this run (``from_results``);
- otherwise a **demo model** answers (``demo_model.py``): it finds, lists and reads files of the
  workspace with the tools it was given and summarises what it read (CSV files get row counts and
  column statistics).

Every answer starts with a one-line notice saying that the offline model is answering and that
``ANTHROPIC_API_KEY`` switches to Claude. ``RecordingProvider`` wraps any provider and writes its
replies to a cassette, so a real session can be replayed later, deterministically.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..events import TextDelta, Usage
from .base import ModelRequest, ModelResponse, Provider, ProviderEvent
from .demo_model import (
    DEMO_FOOTER,
    DemoModel,
    find_prompt,
    outcomes_since_prompt,
    prompt_position,
)

OFFLINE_NOTICE = "*(offline demo model — set `ANTHROPIC_API_KEY` to use Claude)*"
REPLAY_NOTICE = (
    "*(offline model replaying a recorded session — set `ANTHROPIC_API_KEY` to use Claude)*"
)
CASSETTE_FORMAT = "jupyter-agent-cassette"
CASSETTE_VERSION = 1


def normalise_prompt(prompt: str) -> str:
    """The key a prompt is matched by: lower case, runs of whitespace as one space."""
    return " ".join(prompt.split()).casefold()


#: How an exchange's prompt is compared with a chat's (both normalised): ``exact`` (the default;
#: what ``RecordingProvider`` writes) or ``pattern`` — each ``*`` of the recorded prompt stands for
#: any text, for prompts with parts that differ from run to run (``%agent error`` sends the
#: failing cell's execution count and a traceback that names this machine's paths).
MATCH_RULES = ("exact", "pattern")


def prompt_matches(exchange: dict[str, Any], key: str) -> bool:
    """Whether ``exchange`` answers a chat whose normalised prompt is ``key``."""
    recorded = normalise_prompt(exchange["prompt"])
    if exchange.get("match") == "pattern":
        regex = ".*".join(re.escape(part) for part in recorded.split("*"))
        return re.fullmatch(regex, key, re.DOTALL) is not None
    return key == recorded


def load_cassette(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The exchanges of a cassette file (a JSON list of exchanges, or ``{"exchanges": [...]}``)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    exchanges = data.get("exchanges") if isinstance(data, dict) else data
    if not isinstance(exchanges, list):
        raise ValueError(f"{path}: not a cassette (expected a list of exchanges)")
    for index, exchange in enumerate(exchanges):
        if (
            not isinstance(exchange, dict)
            or not isinstance(exchange.get("prompt"), str)
            or not isinstance(exchange.get("responses"), list)
        ):
            raise ValueError(f"{path}: exchange {index} needs a 'prompt' and a list of 'responses'")
        if exchange.get("match", "exact") not in MATCH_RULES:
            raise ValueError(
                f"{path}: exchange {index} has 'match' {exchange['match']!r}; "
                f"use one of {', '.join(MATCH_RULES)}"
            )
    return exchanges


def save_cassette(path: str | os.PathLike[str], exchanges: list[dict[str, Any]]) -> None:
    """Write ``exchanges`` to ``path`` atomically (a reader never sees half a file)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": CASSETTE_FORMAT, "version": CASSETTE_VERSION, "exchanges": exchanges}
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, ensure_ascii=False)
            handle.write("\n")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def response_to_record(response: ModelResponse) -> dict[str, Any]:
    usage = response.usage
    return {
        "content": response.content,
        "stop_reason": response.stop_reason,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
        },
        "model": response.model,
    }


def record_to_response(record: dict[str, Any], default_model: str) -> ModelResponse:
    usage = record.get("usage") or {}
    content = record.get("content") or []
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    has_calls = any(block.get("type") == "tool_use" for block in content)
    return ModelResponse(
        content=[dict(block) for block in content],
        stop_reason=record.get("stop_reason") or ("tool_use" if has_calls else "end_turn"),
        usage=Usage(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            cache_creation_input_tokens=int(usage.get("cache_creation_input_tokens", 0)),
            cache_read_input_tokens=int(usage.get("cache_read_input_tokens", 0)),
        ),
        model=str(record.get("model") or default_model),
    )


#: The key of a recorded argument that stands for a value from an earlier result of the run.
FROM_RESULT = "$from_result"


def results_since_prompt(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The text of every tool result since the chat's prompt, by its ``tool_use`` id."""
    return {
        outcome.call_id: outcome.output
        for outcome in outcomes_since_prompt(messages)
        if outcome.call_id
    }


def from_results(value: Any, results: dict[str, str]) -> Any:
    """``value`` (a recorded tool input) with each ``{"$from_result": ID, "find": REGEX}``
    replaced by REGEX's first group in the text of the result of tool call ID in this run.

    The ids of cells the agent inserts exist only in the notebook that runs the replay, so a
    recorded ``run_cell`` names its cell this way. With no such result, or no match, the value
    becomes a sentence saying so: the tool then fails as it would for a wrong id, visibly.
    """
    if isinstance(value, dict):
        if FROM_RESULT in value and set(value) <= {FROM_RESULT, "find"}:
            source = str(value[FROM_RESULT])
            text = results.get(source)
            if text is None:
                return f"(the recorded session needs the result of {source}, which this run lacks)"
            found = re.search(str(value.get("find", "(.*)")), text, re.DOTALL)
            if found is None:
                return f"(the result of {source} in this run does not say what was recorded)"
            return found.group(1) if found.groups() else found.group(0)
        return {key: from_results(item, results) for key, item in value.items()}
    if isinstance(value, list):
        return [from_results(item, results) for item in value]
    return value


def _tool_ids(content: object) -> list[str]:
    blocks = content if isinstance(content, list) else []
    return [
        str(block.get("id"))
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


def recorded_ids(messages: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, str]:
    """The id each recorded call of this replay got in the conversation, by recorded id.

    The agent gives a call a fresh id when the conversation already holds its recorded one (the
    same session replayed twice in one chat): the replies since the prompt are ``records`` in
    order, and their calls are in the recorded order, so the two are matched by position.
    """
    prompt_at = prompt_position(messages)
    if prompt_at is None:
        prompt_at = len(messages)
    replies = [m for m in messages[prompt_at + 1 :] if m.get("role") == "assistant"]
    given: dict[str, str] = {}
    for reply, record in zip(replies, records, strict=False):
        recorded = _tool_ids(record.get("content"))
        for recorded_id, run_id in zip(recorded, _tool_ids(reply.get("content")), strict=False):
            given[recorded_id] = run_id
    return given


def _with_results(
    response: ModelResponse, messages: list[dict[str, Any]], records: list[dict[str, Any]]
) -> ModelResponse:
    """``response`` with its tool inputs' ``$from_result`` values taken from this run
    (``records``: the exchange's replies, to find the ids this run gave its calls)."""
    if not any(
        block.get("type") == "tool_use" and FROM_RESULT in json.dumps(block.get("input"))
        for block in response.content
    ):
        return response
    results = results_since_prompt(messages)
    for recorded_id, run_id in recorded_ids(messages, records).items():
        if run_id in results:
            results[recorded_id] = results[run_id]
    content = [
        {**block, "input": from_results(block.get("input") or {}, results)}
        if block.get("type") == "tool_use"
        else block
        for block in response.content
    ]
    return ModelResponse(content, response.stop_reason, response.usage, response.model)


def text_chunks(text: str, size: int) -> list[str]:
    """``text`` in pieces of about ``size`` characters, cut after whitespace where possible."""
    pieces: list[str] = []
    current = ""
    for word in re.findall(r"\S+\s*|\s+", text):
        if current and len(current) + len(word) > size:
            pieces.append(current)
            current = ""
        current += word
    if current:
        pieces.append(current)
    return pieces


async def stream_reply(
    response: ModelResponse, chunk_size: int, delay: float = 0.0
) -> AsyncIterator[ProviderEvent]:
    """A recorded reply as a provider streams it: its text in small pieces, then the reply.

    The one replay engine: cassettes (``OfflineProvider``) and the turn records of notebook
    cells (``notebook/replay/``) both hand their recorded replies to the agent through it.
    """
    for block in response.content:
        if block.get("type") != "text":
            continue
        for piece in text_chunks(str(block.get("text", "")), chunk_size):
            await asyncio.sleep(delay)
            yield TextDelta(piece)
    yield response


def answer_only(text: str) -> str:
    """``text`` without the offline model's notices and the demo model's footer.

    What a user keeps of an offline answer (``%%agent --out VAR``): the answer, not the labels
    that say which model gave it.
    """
    for label in (OFFLINE_NOTICE, REPLAY_NOTICE, f"---\n*{DEMO_FOOTER}*"):
        text = text.replace(label, "")
    return text.strip()


class OfflineProvider:
    """Replays recorded sessions; answers anything else with a small deterministic demo model."""

    name = "offline"

    def __init__(
        self,
        cassette: str | os.PathLike[str] | list[dict[str, Any]] | None = None,
        *,
        model: str = "offline-demo",
        notice: bool = True,
        chunk_size: int = 12,
        delay: float = 0.0,
    ) -> None:
        self.model: str = model
        #: Start every answer with the one-line notice (on by default, so users can tell).
        self.notice = notice
        self.chunk_size = max(1, chunk_size)
        #: Seconds between streamed pieces (0: just yield to the event loop).
        self.delay = delay
        if cassette is None:
            self.exchanges: list[dict[str, Any]] = []
        elif isinstance(cassette, list):
            self.exchanges = cassette
        else:
            self.exchanges = load_cassette(cassette)
        self._demo = DemoModel(notice=OFFLINE_NOTICE)
        self._replays: dict[str, int] = {}
        self._bound: tuple[str, dict[str, Any]] | None = None

    def __repr__(self) -> str:
        return f"OfflineProvider(exchanges={len(self.exchanges)})"

    def _exchange_for(self, key: str, turn: int) -> dict[str, Any] | None:
        """The recorded exchange for this prompt; repeated prompts replay successive records."""
        if turn > 0:
            bound = self._bound
            return bound[1] if bound is not None and bound[0] == key else None
        matches = [e for e in self.exchanges if prompt_matches(e, key)]
        if not matches:
            self._bound = None
            return None
        used = self._replays.get(key, 0)
        self._replays[key] = used + 1
        exchange = matches[min(used, len(matches) - 1)]
        self._bound = (key, exchange)
        return exchange

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if request.purpose == "summary":
            # the agent compacts the conversation: a deterministic digest, no notice
            yield ModelResponse(
                [{"type": "text", "text": digest(request)}], "end_turn", model=self.model
            )
            return
        prompt, turn = find_prompt(request.messages)
        exchange = self._exchange_for(normalise_prompt(prompt), turn)
        if exchange is not None:
            responses = exchange["responses"]
            if turn < len(responses):
                response = record_to_response(responses[turn], self.model)
                response = _with_results(response, request.messages, responses[:turn])
            else:
                response = ModelResponse(
                    [{"type": "text", "text": "(The recorded session ends here.)"}],
                    "end_turn",
                    model=self.model,
                )
            if self.notice and turn == 0:
                response = _with_notice(response, REPLAY_NOTICE)
        else:
            response = self._demo.reply(request, prompt, turn)
            if not self.notice:
                response = _without_notice(response, OFFLINE_NOTICE)
        async for event in stream_reply(response, self.chunk_size, self.delay):
            yield event

    async def aclose(self) -> None:
        return None


#: The longest digest the offline model writes when asked to summarise.
DIGEST_CHARS = 4_000


def digest(request: ModelRequest) -> str:
    """What the offline model answers to a summary request: one line per section of the
    transcript it was given (the user's words, the assistant's, the tools'), shortened."""
    text = "\n".join(
        str(block.get("text", ""))
        for message in request.messages
        for block in (message.get("content") or [])
        if isinstance(block, dict) and block.get("type") == "text"
    )
    lines: list[str] = []
    speaker = ""
    for line in text.splitlines():
        if line.startswith("## "):
            speaker = line[3:].strip()
            continue
        words = " ".join(line.split())
        if not words or not speaker:
            continue
        lines.append(f"- {speaker}: {words[:200]}")
        speaker = ""  # the first line of each section is enough
    summary = "Earlier in this conversation:\n" + "\n".join(lines)
    if len(summary) > DIGEST_CHARS:
        summary = summary[: DIGEST_CHARS - 1] + "…"
    return summary


def _with_notice(response: ModelResponse, notice: str) -> ModelResponse:
    content = [dict(block) for block in response.content]
    if content and content[0].get("type") == "text":
        content[0]["text"] = f"{notice}\n\n{content[0].get('text', '')}"
    else:
        content.insert(0, {"type": "text", "text": notice})
    return ModelResponse(content, response.stop_reason, response.usage, response.model)


def _without_notice(response: ModelResponse, notice: str) -> ModelResponse:
    content = []
    for block in response.content:
        if block.get("type") == "text":
            text = str(block.get("text", "")).replace(notice, "").strip()
            if not text:
                continue
            block = {**block, "text": text}
        content.append(block)
    return ModelResponse(content, response.stop_reason, response.usage, response.model)


class RecordingProvider:
    """Passes requests to ``inner`` and writes its replies to a cassette at ``path``.

    Each chat (a new user prompt) starts an exchange; each model turn adds a reply. An existing
    cassette is extended, not replaced. The file is rewritten after every reply, so a session
    interrupted half-way keeps what it recorded. ``OfflineProvider(path)`` replays it.
    """

    def __init__(self, inner: Provider, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.name: str = inner.name
        self.model: str = inner.model
        self.exchanges: list[dict[str, Any]] = (
            load_cassette(self.path) if self.path.exists() else []
        )
        self._current: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"RecordingProvider({self.inner!r}, {str(self.path)!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if request.purpose != "chat":
            async for event in self.inner.stream(request):  # not part of any exchange
                yield event
            return
        prompt, turn = find_prompt(request.messages)
        if turn == 0 or self._current is None or self._current["prompt"] != prompt:
            self._current = {"prompt": prompt, "responses": []}
        exchange = self._current
        async for event in self.inner.stream(request):
            if isinstance(event, ModelResponse):
                if not exchange["responses"]:
                    # only a chat that got a reply is recorded (a failed first request is not)
                    self.exchanges.append(exchange)
                exchange["responses"].append(response_to_record(event))
                save_cassette(self.path, self.exchanges)
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()
