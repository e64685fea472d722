"""The two providers a replayable cell runs under: one keeps the turn, one acts it again.

``TurnCapture`` wraps the provider a live turn uses and keeps, as they pass, the model's replies
and the digest of each tool result the model is then sent (the tool results are read from the
next request, so the digest is of exactly what the model saw: redacted, capped). ``TurnReplay``
answers from a verified record instead, through the offline provider's replay engine
(``providers/offline.stream_reply``): no request leaves the kernel. Before it hands over the next
recorded reply it compares the digests of the results the tools gave in this run with the
record's; at the first that differs it answers with a line naming the call (its ordinal, tool
and a short summary of its input) instead, so nothing acts on a reply made for other data.

The tools themselves run as in a live turn — the agent calls them through the same registry,
policies and approvals; only the model's side is recorded.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ...providers.base import ModelRequest, ModelResponse, Provider, ProviderEvent
from ...providers.demo_model import replied_since_prompt
from ...providers.offline import digest, record_to_response, response_to_record, stream_reply
from .record import TurnRecord, result_digest

__all__ = [
    "Divergence",
    "TurnCapture",
    "TurnReplay",
    "call_results",
    "input_summary",
    "replied_since_prompt",
]

#: The longest input summary a divergence line shows.
SUMMARY_CHARS = 80


def input_summary(value: object) -> str:
    """A tool input in one short line: its JSON, cut at ``SUMMARY_CHARS``."""
    text = " ".join(json.dumps(value, ensure_ascii=False, sort_keys=True).split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


@dataclass(frozen=True, slots=True)
class CallResult:
    """One tool call of the reply just given and the result it got in this run."""

    id: str
    name: str
    input: dict[str, Any]
    content: object
    is_error: bool


def call_results(messages: list[dict[str, Any]]) -> list[CallResult]:
    """The calls of the last assistant message and their results in the messages after it, in
    the order the reply made them (a call without a result has an empty one)."""
    last = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )
    if last is None or not isinstance(messages[last].get("content"), list):
        return []
    reply = messages[last]["content"]
    results = {
        str(block.get("tool_use_id")): block
        for message in messages[last + 1 :]
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    }
    calls = []
    for block in reply:
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        result = results.get(str(block.get("id")), {})
        calls.append(
            CallResult(
                id=str(block.get("id")),
                name=str(block.get("name")),
                # a model's input that is not an object (an OpenAI-compatible server's
                # unparseable arguments are kept as a string) is the agent's to refuse, not ours
                input=dict(raw) if isinstance(raw := block.get("input"), dict) else {},
                content=result.get("content", ""),
                is_error=bool(result.get("is_error", False)),
            )
        )
    return calls


class TurnCapture:
    """``inner``, keeping the turn's replies and its tool results' digests as they pass."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.model: str = inner.model
        self.replies: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        #: The model that answered last (a reply may name another than ``model``).
        self.answered_by = inner.model
        #: The replies whose tool results were taken (a retried request must not take them twice).
        self._taken: set[int] = set()

    def __repr__(self) -> str:
        return f"TurnCapture({self.inner!r})"

    def __getattr__(self, name: str) -> Any:  # thinking budget, effort, facts: the inner's
        return getattr(self.inner, name)

    def _take_results(self, request: ModelRequest) -> None:
        turn = replied_since_prompt(request.messages)
        if turn != len(self.replies) or turn == 0 or turn in self._taken:
            return
        self._taken.add(turn)
        for call in call_results(request.messages):
            self.calls.append(
                {
                    "reply": turn - 1,
                    "id": call.id,
                    "name": call.name,
                    "sha256": result_digest(call.content, call.is_error),
                    "is_error": call.is_error,
                }
            )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if request.purpose == "chat":
            self._take_results(request)
        async for event in self.inner.stream(request):
            if isinstance(event, ModelResponse) and request.purpose == "chat":
                self.replies.append(response_to_record(event))
                self.answered_by = event.model or self.answered_by
            yield event

    async def aclose(self) -> None:
        return None  # the inner provider is the session's, closed with it

    @property
    def complete(self) -> bool:
        """Whether the turn ended on a reply without tool calls (its every result was seen)."""
        if not self.replies:
            return False
        last = self.replies[-1].get("content") or []
        return not any(block.get("type") == "tool_use" for block in last)


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first call whose result in this run differs from the record's."""

    ordinal: int
    name: str
    summary: str

    def line(self) -> str:
        return (
            f"↯ Replay stopped: call {self.ordinal} ({self.name} {self.summary}) returned a "
            "different result than when this cell was recorded — the data changed. The "
            "recorded replies after it were not used; run `%%agent --fresh` to ask the model."
        )


class TurnReplay:
    """Answers a chat from ``record``'s replies, checking each tool result against it."""

    name = "replay"

    def __init__(self, record: TurnRecord, *, chunk_size: int = 64) -> None:
        self.record = record
        self.model: str = record.model
        self.chunk_size = chunk_size
        #: Per reply, the digests of its calls' results, and how many calls came before it.
        self._digests: list[list[str]] = [[] for _ in record.replies]
        self._before: list[int] = []
        for call in record.calls:
            reply = call.get("reply")
            if isinstance(reply, int) and 0 <= reply < len(self._digests):
                self._digests[reply].append(str(call.get("sha256")))
        total = 0
        for digests in self._digests:
            self._before.append(total)
            total += len(digests)
        self.diverged: Divergence | None = None
        #: Tool calls whose results were checked and matched.
        self.matched = 0
        self.finished = False

    def __repr__(self) -> str:
        return f"TurnReplay(replies={len(self.record.replies)})"

    def _check(self, request: ModelRequest, turn: int) -> Divergence | None:
        reply = turn - 1
        recorded = self._digests[reply] if reply < len(self._digests) else []
        before = self._before[reply] if reply < len(self._before) else len(self.record.calls)
        ran = call_results(request.messages)
        for index, call in enumerate(ran):
            expected = recorded[index] if index < len(recorded) else None
            if expected is None or expected != result_digest(call.content, call.is_error):
                return Divergence(before + index + 1, call.name, input_summary(call.input))
            self.matched += 1
        if len(ran) < len(recorded):
            content = self.record.replies[turn - 1].get("content") or []
            uses = [block for block in content if block.get("type") == "tool_use"]
            missing = uses[len(ran)] if len(ran) < len(uses) else {}
            return Divergence(
                before + len(ran) + 1, str(missing.get("name", "a tool")), "(not run)"
            )
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if request.purpose != "chat":  # a compaction's summary: the offline digest
            yield ModelResponse([{"type": "text", "text": digest(request)}], "end_turn")
            return
        turn = replied_since_prompt(request.messages)
        divergence = self._check(request, turn) if turn > 0 else None
        replies = self.record.replies
        if divergence is not None or turn >= len(replies):
            self.diverged = divergence or self.diverged
            text = divergence.line() if divergence else "(The recorded turn ends here.)"
            response = ModelResponse([{"type": "text", "text": text}], "end_turn", model=self.model)
        else:
            # no usage is recorded per reply: a replayed reply costs nothing
            response = record_to_response(replies[turn], self.model)
            self.finished = turn == len(replies) - 1
        async for event in stream_reply(response, self.chunk_size):
            yield event

    async def aclose(self) -> None:
        return None
