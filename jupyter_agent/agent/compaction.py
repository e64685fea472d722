"""Keeping the conversation inside the model's context window.

A notebook conversation runs for hours; every tool result stays in ``Agent.messages`` and every
request resends them. Before a request would exceed the window, or when the API answers that the
prompt is too long, the agent compacts, in this order, stopping as soon as the conversation fits:

1. **stubs**: tool results, oldest first (all but the latest round), become one-line stubs
   (what tool, how much was removed) — the ``tool_use``/``tool_result`` pairs stay, only the
   content shrinks; then **folds**: in every turn, the rounds after the first whose results are
   all stubs (a ``tool_use`` message and its ``tool_result`` message) are folded into a note on
   the turn's first round, which lists the calls made — so that a turn of hundreds of tool
   rounds does not keep two messages per round for ever. The turn's prompt and first round (with
   any thinking block that opens it) stay, and so do the latest round and everything after the
   stubs;
2. **summary**: the earlier turns are replaced by a summary the model writes (a request to the
   same provider); the recent turns stay word for word, the current turn always;
3. **the current turn's results**: if the turn itself is too big (a huge tool turn), its tool
   results are cut to their head and tail (a folded note loses the lines naming its calls, not
   its count).

What compaction did is kept as data on the blocks it made (``CompactedResult``: the stub's line,
the note's ``FoldNote``), invisible to the API and to JSON; a later compaction reads it there, never
back out of the text — a tool result that merely reads like a stub or a note is a result. A saved
conversation keeps these records beside its messages (``compaction_records``,
``restore_compaction``).

A prompt that alone exceeds the window cannot be sent: ``ContextOverflowError`` says so, and the
agent forgets that prompt, so the conversation stays usable. Token counts are estimates: the last
reply's reported input tokens plus about four characters a token for what was added since.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ContextOverflowError
from .conversation import Block, Message, content_blocks
from .results import CHARS_PER_TOKEN, cut_middle
from .tokens import block_chars
from .transcript import render_transcript

#: Compaction aims at this share of the window, so that it does not run again every turn.
TARGET_SHARE = 0.5
SUMMARY_PREFIX = "[Summary of the earlier conversation, written when it was compacted]\n\n"
SUMMARY_SYSTEM = (
    "You compact a long conversation between a user and an assistant that uses tools. Write a "
    "concise summary that lets the assistant continue the work: the user's goals and requests "
    "in their own words where short, decisions made, files and names involved, results found, "
    "and what is still open. Plain text, no preamble."
)

# -- compacting ----------------------------------------------------------------------------------

Summarise = Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Compaction:
    messages: list[Message]
    tokens_before: int
    tokens_after: int
    #: What was done: tool results made stubs, tool calls folded into notes, earlier turns
    #: summarised, results of the current turn shortened.
    stubbed: int = 0
    folded: int = 0
    summarised: int = 0
    shortened: int = 0


def _calls(messages: list[Message]) -> int:
    return sum(1 for m in messages for b in m["content"] if b.get("type") == "tool_use")


def turn_starts(messages: list[Message]) -> list[int]:
    """Indices of the user messages that carry the user's own words (a prompt starts a turn)."""
    return [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "user" and any(b.get("type") == "text" for b in content_blocks(m))
    ]


#: The note folded rounds leave on the first round of their turn, after its stub.
_NOTE_START = "\n\n[Later steps of this turn"
FOLD_HEADER = _NOTE_START.lstrip("\n") + ", folded to save context: {calls:,} tool call{s}; their "
FOLD_TAIL = "results were removed. Call a tool again if a result is needed.]"
#: At most this many lines of a folded note name calls (the latest ones); at most this long each.
NOTE_LINES = 40
NOTE_LINE_CHARS = 160


@dataclass(frozen=True, slots=True)
class FoldNote:
    """What the rounds folded into one note were: how many calls, the lines naming the latest
    (at most ``NOTE_LINES``), and how many earlier lines were not kept."""

    calls: int
    lines: tuple[str, ...] = ()
    dropped: int = 0

    def text(self) -> str:
        header = FOLD_HEADER.format(calls=self.calls, s="" if self.calls == 1 else "s") + FOLD_TAIL
        if self.dropped:
            header += f" The latest steps ({self.dropped:,} earlier lines not kept):"
        return "\n".join([header, *self.lines])


class CompactedResult(dict[str, Any]):
    """A ``tool_result`` block compaction made: a stub, maybe hosting a fold note.

    To the API (and to JSON) it is the block it looks like; what compaction did — the stub's own
    line, the note's count and lines — is kept beside it as data (``stub_text``, ``note``), so a
    later compaction reads it from there, never back out of the text. If anything changed the
    block's content since, it is not recognised as ours any more (``is_ours``).
    """

    stub_text: str
    note: FoldNote | None

    @classmethod
    def made(cls, block: Block, stub_text: str, note: FoldNote | None = None) -> CompactedResult:
        content = stub_text if note is None else f"{stub_text}\n\n{note.text()}"
        made = cls({**block, "content": content})
        made.stub_text, made.note = stub_text, note
        return made

    def is_ours(self) -> bool:
        expected = (
            self.stub_text if self.note is None else f"{self.stub_text}\n\n{self.note.text()}"
        )
        return self.get("content") == expected


def compaction_records(messages: list[Message]) -> list[dict[str, Any]]:
    """What compaction did in ``messages``, as JSON (for a saved conversation): one record per
    block it made that still reads as it made it."""
    records: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        for position, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, CompactedResult) and block.is_ours():
                note = block.note
                records.append(
                    {
                        "message": index,
                        "block": position,
                        "stub": block.stub_text,
                        "note": None
                        if note is None
                        else {
                            "calls": note.calls,
                            "lines": list(note.lines),
                            "dropped": note.dropped,
                        },
                    }
                )
    return records


def restore_compaction(messages: list[Message], records: object) -> None:
    """The blocks ``records`` (``compaction_records``) describe made ``CompactedResult`` again,
    each only where the block reads exactly as the record renders it; a bad record is skipped."""
    for record in records if isinstance(records, list) else []:
        try:
            block = messages[record["message"]]["content"][record["block"]]
            stub_text, note_data = record["stub"], record["note"]
            note = (
                None
                if note_data is None
                else FoldNote(
                    int(note_data["calls"]),
                    tuple(str(line) for line in note_data["lines"]),
                    int(note_data["dropped"]),
                )
            )
        except (LookupError, TypeError, ValueError):
            continue
        if not isinstance(block, dict) or not isinstance(stub_text, str):
            continue
        made = CompactedResult.made(block, stub_text, note)
        if made.get("content") == block.get("content"):
            messages[record["message"]]["content"][record["block"]] = made


def stub(block: Block, name: str) -> Block:
    size = block_chars(block)
    text = (
        f"[result of {name} removed to save context ({size:,} characters); "
        "call the tool again if it is needed]"
    )
    stubbed: Block = {"type": "tool_result", "tool_use_id": block.get("tool_use_id"), "content": ""}
    if block.get("is_error"):
        stubbed["is_error"] = True
    return CompactedResult.made(stubbed, text)


def _shortest(block: Block) -> Block:
    """Less than steps 1 and 3 can leave of a block of the current turn: a result stays as it is,
    becomes a stub or is cut to about 200 characters, so it measures at least 80 or its size."""
    if block.get("type") != "tool_result":
        return block
    return {**block, "content": "x" * min(80, block_chars(block) - 40)}


def _is_stub(block: Block) -> bool:
    return isinstance(block, CompactedResult) and block.is_ours()


# -- folding the rounds of a turn ----------------------------------------------------------------


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NOTE_LINE_CHARS else text[: NOTE_LINE_CHARS - 1] + "…"


def _rounds(work: list[Message], start: int, end: int) -> list[int]:
    """Indices of the tool rounds of the turn ``work[start:end]`` that stand in a row after its
    prompt: an assistant message with ``tool_use`` blocks, then a user message of exactly their
    ``tool_result`` blocks (and nothing else)."""
    rounds: list[int] = []
    index = start + 1
    while index + 1 < end:
        ask, answer = work[index], work[index + 1]
        if ask.get("role") != "assistant" or answer.get("role") != "user":
            break
        calls = {str(b.get("id")) for b in ask["content"] if b.get("type") == "tool_use"}
        results = answer["content"]
        if (
            not calls
            or any(b.get("type") != "tool_result" for b in results)
            or {str(b.get("tool_use_id")) for b in results} != calls
        ):
            break
        rounds.append(index)
        index += 2
    return rounds


def _note_lines(message: Message) -> list[str]:
    """What a folded round leaves in the note: its words and its calls, one line each."""
    lines: list[str] = []
    for block in message["content"]:
        if block.get("type") == "text" and str(block.get("text", "")).strip():
            lines.append(_line("- said: " + str(block.get("text"))))
        elif block.get("type") == "tool_use":
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            lines.append(_line(f"- {block.get('name')} {arguments}"))
    return lines


def _with_note(host: Block, calls: int, lines: list[str]) -> Block:
    """``host`` (a stub) with the note of ``calls`` more folded calls, ``lines`` naming them."""
    assert isinstance(host, CompactedResult)
    old = host.note or FoldNote(0)
    every = [*old.lines, *lines]
    listed = every[-NOTE_LINES:]
    note = FoldNote(old.calls + calls, tuple(listed), old.dropped + len(every) - len(listed))
    return CompactedResult.made(host, host.stub_text, note)


def _bare_note(block: CompactedResult) -> Block:
    """A stub with a folded note, without the lines naming the calls (the count stays)."""
    calls = block.note.calls if block.note is not None else 0
    return CompactedResult.made(block, block.stub_text, FoldNote(calls))


def fold_rounds(work: list[Message], keep: int | None = None) -> list[Message]:
    """``work`` with, in every turn, the stubbed rounds after the first folded into a note.

    A round folds only if its results are all stubs, and only behind a first round whose results
    are stubs too (the note lives on that round's last result); the messages from ``keep`` on
    (the last one by default) never fold.
    Folding keeps the API's rules: roles alternate, each kept ``tool_use`` keeps its result.
    """
    keep = len(work) - 1 if keep is None else keep
    starts = turn_starts(work)
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts[1:], len(work)]
    folded: list[Message] = []
    taken = 0
    for start, end in zip(starts, bounds, strict=True):
        rounds = _rounds(work, start, end)
        if len(rounds) < 2 or not all(_is_stub(b) for b in work[rounds[0] + 1]["content"]):
            continue
        fold: list[int] = []
        for index in rounds[1:]:
            answer = index + 1
            if answer >= keep or not all(_is_stub(b) for b in work[answer]["content"]):
                break
            fold.append(index)
        if not fold:
            continue
        lines = [line for index in fold for line in _note_lines(work[index])]
        calls = _calls([work[index] for index in fold])
        first_answer = rounds[0] + 1
        folded.extend(work[taken:first_answer])
        host = dict(work[first_answer], content=list(work[first_answer]["content"]))
        host["content"][-1] = _with_note(host["content"][-1], calls, lines)
        folded.append(host)
        taken = fold[-1] + 2
    if not taken:
        return work
    folded.extend(work[taken:])
    return folded


async def compact(
    messages: list[Message],
    *,
    limit: int,
    target: int,
    estimate: Callable[[list[Message]], int],
    summarise: Summarise | None,
    force: bool = False,
) -> Compaction:
    """A compacted copy of ``messages`` whose estimate is at most ``target`` where possible.

    Raises ``ContextOverflowError`` if even the current turn alone exceeds ``limit``. With
    ``force`` the steps run even if the conversation already fits (``%agent compact``).
    """
    before = estimate(messages)
    work = [dict(m, content=list(content_blocks(m))) for m in messages]
    starts = turn_starts(work)
    current = starts[-1] if starts else 0
    names = {
        str(b.get("id")): str(b.get("name"))
        for m in work
        if m.get("role") == "assistant"
        for b in m["content"]
        if b.get("type") == "tool_use"
    }

    # a turn that cannot fit even with its results cut short and its middle rounds folded:
    # refuse before touching anything (its prompt, first round and last message always stay)
    latest = work[current:]
    if len(_rounds(work, current, len(work))) > 1:
        latest = [*latest[:3], latest[-1]]
    floor = [
        dict(m, content=[_shortest(b) for b in m["content"]]) if m["role"] == "user" else m
        for m in latest
    ]
    if estimate(floor) > limit:
        raise ContextOverflowError(
            f"The prompt is too long for the model's context window (about {estimate(floor):,} "
            f"tokens for this turn alone; the limit is {limit:,}). Shorten it or split it into "
            "several cells."
        )

    # the latest results stay whole: the last message, or, while a reply that paused (the last
    # message, the assistant's) is continued, the results it follows
    keep = len(work) - 1
    paused = keep - 1 > current and work[-1]["role"] == "assistant"
    if paused and any(b.get("type") == "tool_result" for b in work[-2]["content"]):
        keep -= 1

    # 1. stubs for earlier results, oldest first (all but the latest round of results)
    tokens = estimate(work)
    stubbed = summarised = 0
    shortened: set[tuple[int, int]] = set()
    for index in range(keep):
        if tokens <= target and not force:
            break
        message = work[index]
        if message["role"] != "user":
            continue
        blocks = message["content"]
        for position, block in enumerate(blocks):
            if block.get("type") == "tool_result" and not _is_stub(block):
                name = names.get(str(block.get("tool_use_id")), "a tool")
                blocks[position] = stub(block, name)
                stubbed += 1
                saved = block_chars(block) - block_chars(blocks[position])
                tokens -= saved // CHARS_PER_TOKEN
    # … and the stubbed rounds of each turn folded into a note on its first round
    calls = _calls(work)
    work = fold_rounds(work, keep)
    folded = calls - _calls(work)
    starts = turn_starts(work)
    current = starts[-1] if starts else 0
    tokens = estimate(work)

    # 2. a summary of the earlier turns; the recent ones stay word for word
    if (tokens > target or force) and summarise is not None and current > 0:
        keep_from = current
        # recent turns that fit in half the target stay; on demand, at most the one before
        recent = starts[-2:-1] if force else starts[:-1]
        for start in reversed(recent):
            if estimate(work[start:]) > target // 2:
                break
            keep_from = start
        if keep_from > 0:
            summary = (await summarise(render_transcript(work[:keep_from]))).strip()
            summary = cut_middle(summary or "(no summary)", target * CHARS_PER_TOKEN // 4)
            first = work[keep_from]
            # results for calls of the summarised part would answer nothing: drop them
            kept_blocks = [b for b in first["content"] if b.get("type") != "tool_result"]
            summary_block: Block = {"type": "text", "text": SUMMARY_PREFIX + summary}
            summarised = sum(1 for start in starts if start < keep_from)
            work = [
                {"role": "user", "content": [summary_block, *kept_blocks]},
                *work[keep_from + 1 :],
            ]
            tokens = estimate(work)
            current = turn_starts(work)[-1]

    # 3. the current turn itself: cut its largest results until it fits the limit
    for _ in range(64):
        if tokens <= limit:
            break
        results = [
            (block_chars(b), i, p)
            for i in range(current, len(work))
            if work[i]["role"] == "user"
            for p, b in enumerate(work[i]["content"])
            if b.get("type") == "tool_result" and block_chars(b) > 400
        ]
        if not results:
            break
        size, i, p = max(results)
        block = work[i]["content"][p]
        text = "\n".join(
            str(part.get("text", ""))
            for part in content_blocks({"content": block.get("content")})
            if part.get("type") == "text"
        )
        shortened_block: Block = {**block, "content": cut_middle(text, max(200, size // 2))}
        if _is_stub(block) and isinstance(block, CompactedResult) and block.note is not None:
            bare = _bare_note(block)  # a note cut in its middle would lose its count
            if block_chars(bare) < size:
                shortened_block = bare
        work[i]["content"][p] = shortened_block
        shortened.add((i, p))
        tokens = estimate(work)
    if tokens > limit:
        raise ContextOverflowError(
            f"The prompt is too long for the model's context window (about {tokens:,} tokens; "
            f"the limit is {limit:,}), even with the rest of the conversation compacted. "
            "Shorten it or split it into several cells."
        )
    return Compaction(work, before, tokens, stubbed, folded, summarised, len(shortened))
