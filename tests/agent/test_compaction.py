"""Compaction on its own, on many random conversations: whatever it cuts, the result is a
conversation the API accepts (checked by the independent validator of ``fake_anthropic``), the
latest turn is intact and the user's latest words are kept."""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

import pytest
from fake_anthropic import api_problems

from jupyter_agent.agent.compaction import (
    SUMMARY_PREFIX,
    Compaction,
    Summarise,
    compact,
    turn_starts,
)
from jupyter_agent.agent.tokens import messages_tokens
from jupyter_agent.errors import ContextOverflowError


def random_conversation(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    ids = 0
    for turn in range(rng.randint(1, 12)):
        prompt = {"type": "text", "text": f"prompt {turn} " + "w" * rng.randint(0, 3_000)}
        if messages and messages[-1]["role"] == "user":
            messages[-1]["content"].append(prompt)  # results and a prompt in one message
        else:
            messages.append({"role": "user", "content": [prompt]})
        for _ in range(rng.randint(0, 4)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                ids += 1
                calls.append({"type": "tool_use", "id": f"toolu_{ids}", "name": "t", "input": {}})
            text = [{"type": "text", "text": "calling"}] if rng.random() < 0.5 else []
            messages.append({"role": "assistant", "content": [*text, *calls]})
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": c["id"],
                    "content": "r" * rng.randint(0, 20_000),
                }
                for c in calls
            ]
            messages.append({"role": "user", "content": results})
        if rng.random() < 0.8 or turn == 0:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    return messages


async def summarise(transcript: str) -> str:
    return f"{len(transcript)} characters of history"


@pytest.mark.parametrize("seed", range(60))
def test_compaction_always_leaves_a_valid_conversation(seed: int) -> None:
    rng = random.Random(seed)
    messages = random_conversation(rng)
    if messages[-1]["role"] == "assistant" and rng.random() < 0.5:
        messages.append({"role": "user", "content": [{"type": "text", "text": "latest words"}]})
    latest = messages[turn_starts(messages)[-1] :]
    total = messages_tokens(messages)
    limit = rng.randint(total // 4 + 1, total + 1)
    try:
        result = compaction(messages, limit, force=rng.random() < 0.3, summarise=summarise)
    except ContextOverflowError:
        return  # the latest turn alone cannot fit: refused, nothing changed
    assert result.tokens_after <= limit
    kept = result.messages[turn_starts(result.messages)[-1] :]
    # the latest turn keeps the user's words, its first round and its last message as they were
    # (results may be shortened); rounds between may be folded into a note
    assert [m["role"] for m in kept[:3]] == [m["role"] for m in latest[:3]]
    assert kept[-1]["role"] == latest[-1]["role"]
    if len(latest) > 1:
        assert kept[1] == latest[1]  # the turn's first reply (with any thinking) stays whole
    assert ids(kept[-1:]) == ids(latest[-1:])
    latest_words = [b["text"] for b in latest[0]["content"] if b["type"] == "text"]
    kept_words = [b["text"] for b in kept[0]["content"] if b["type"] == "text"]
    assert kept_words[-len(latest_words) :] == latest_words
    if result.messages[0]["content"][0].get("text", "").startswith(SUMMARY_PREFIX):
        assert "characters of history" in result.messages[0]["content"][0]["text"]
    else:
        # nothing summarised: every call is still there or counted in a folded note
        assert len(ids(result.messages)) + noted_calls(result.messages) == len(ids(messages))


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]


def noted_calls(messages: list[dict[str, Any]]) -> int:
    notes = [
        b["content"]
        for m in messages
        for b in m["content"]
        if b["type"] == "tool_result" and isinstance(b["content"], str)
    ]
    return sum(
        int(match[1]) for note in notes for match in re.finditer(r"folded[^:]*: (\d+) tool", note)
    )


# -- faults found by attacking round folding ------------------------------------------------------

LONG_NAME = "notebook_server__" + "n" * 47  # an MCP tool's name can be this long (64 characters)


def tool_turn(prompt: str, rounds: int, start: int, *, said: str = "", size: int = 3_000) -> Any:
    """A turn of ``rounds`` rounds of one call each (ids from ``start``), the model narrating."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": prompt}]}
    ]
    for n in range(start, start + rounds):
        words = [{"type": "text", "text": f"{said} (step {n})"}] if said else []
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": LONG_NAME, "input": {"i": n}}
        messages.append({"role": "assistant", "content": [*words, call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "r" * size}
        messages.append({"role": "user", "content": [result]})
    return messages


def compaction(
    messages: list[dict[str, Any]],
    limit: int,
    *,
    force: bool = False,
    summarise: Summarise | None = None,
) -> Compaction:
    """``compact`` aiming at half of ``limit``; its result is checked to be one the API takes."""
    result = asyncio.run(
        compact(
            messages,
            limit=limit,
            target=limit // 2,
            estimate=messages_tokens,
            summarise=summarise,
            force=force,
        )
    )
    assert api_problems({"model": "m", "max_tokens": 1, "messages": result.messages}) == []
    return result


def compacted(messages: list[dict[str, Any]], limit: int, *, force: bool = False) -> Any:
    return compaction(messages, limit, force=force).messages


def test_a_full_note_keeps_its_count_through_later_compactions() -> None:
    """A note whose 40 lines are all the model's long narration (a reply may hold many text
    blocks, after its call too), with a tool name of 64 characters, is still recognised as a
    note: the next compaction adds to its count instead of stubbing it (which lost every call
    counted so far)."""
    said = "Now I look at the next part of the data, comparing it with what I found before. " * 3
    messages = tool_turn("Go through all the data.", 120, 0, size=30_000)
    for message in messages[1:-2:2]:
        message["content"].extend({"type": "text", "text": f"{said} ({k})"} for k in range(40))
    messages = compacted(messages, messages_tokens(messages) // 3, force=True)
    assert len(ids(messages)) + noted_calls(messages) == 120
    for n in range(120, 140):  # the turn goes on
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": LONG_NAME, "input": {"i": n}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "r" * 3_000}
        messages.append({"role": "user", "content": [result]})
    messages = compacted(messages, messages_tokens(messages) // 3, force=True)
    assert len(ids(messages)) + noted_calls(messages) == 140


def test_cutting_the_current_turn_keeps_the_count_of_its_folded_calls() -> None:
    """Step 3 (the current turn too big) cuts results to their head and tail; a fold note cut in
    its middle lost its count and, no longer recognised as a note, was stubbed next time."""
    messages = tool_turn("Go through all the data. " + "w" * 16_000, 30, 0, said="Next part.")
    messages[-1]["content"][0]["content"] = "r" * 300
    folded = asyncio.run(
        compact(messages, limit=10**6, target=1, estimate=messages_tokens, summarise=None)
    )
    assert len(ids(folded.messages)) + noted_calls(folded.messages) == 30
    # a window just too small for the folded turn: only the note is long enough to cut
    messages = compacted(messages, folded.tokens_after - 500)
    assert len(ids(messages)) + noted_calls(messages) == 30
    messages = compacted(messages, folded.tokens_after - 500, force=True)
    assert len(ids(messages)) + noted_calls(messages) == 30


def test_a_turn_of_many_small_results_that_fits_is_not_refused() -> None:
    """The floor (what the current turn measures at the least) counted every result as 200
    characters, also a result of two: a turn of many small parallel results was refused as too
    long for a small window although the whole conversation fitted as it was."""
    calls = [{"type": "tool_use", "id": f"toolu_{n}", "name": "t", "input": {}} for n in range(120)]
    results = [
        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "ok"} for n in range(120)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Check all 120 files."}]},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results},
    ]
    limit = messages_tokens(messages) + 10  # it fits as it is
    assert compacted(messages, limit) == messages


def test_a_paused_reply_keeps_the_results_it_follows() -> None:
    """A reply that stopped with ``pause_turn`` (a long server-side search) is the last message
    while the agent continues it; compacting then (its search results pushed the request over the
    window) stubbed and folded the round just before it — the results the model is working on."""
    messages = tool_turn("Find out and compare.", 12, 0, size=8_000)
    messages[1]["content"].insert(0, {"type": "thinking", "thinking": "plan", "signature": "s"})
    search = "srvtoolu_1"
    messages.append(
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": search, "name": "web_search", "input": {}},
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": search,
                    "content": [{"type": "web_search_result", "url": "u", "title": "x" * 80_000}],
                },
                {"type": "text", "text": "Comparing with what the last call returned"},
            ],
        }
    )
    latest_round = messages[-3:-1]
    result = compacted(messages, messages_tokens(messages) * 3 // 4)
    assert result[-3:] == [*latest_round, messages[-1]]
    assert len(ids(result)) + noted_calls(result) == 12


def test_a_note_folded_again_counts_all_the_lines_it_does_not_keep() -> None:
    """A note folded into again said how many of *its own* lines it dropped, forgetting those the
    earlier note had dropped already."""
    messages = tool_turn("Go through all the data.", 60, 0)
    messages = compacted(messages, messages_tokens(messages) // 3, force=True)
    for n in range(60, 80):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": LONG_NAME, "input": {"i": n}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "r" * 3_000}
        messages.append({"role": "user", "content": [result]})
    messages = compacted(messages, messages_tokens(messages) // 3, force=True)
    (note,) = [b["content"] for b in messages[2]["content"] if "folded" in b["content"]]
    listed = [line for line in note.split("\n") if line.startswith("- ")]
    dropped = int(re.search(r"\(([\d,]+) earlier lines not kept\)", note)[1])  # type: ignore[index]
    assert len(listed) == 40
    assert dropped + len(listed) == noted_calls(messages) == 78  # one line a call
