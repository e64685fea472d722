"""The turn record: signed, verified, refused when tampered with, bounded, redacted."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from jupyter_agent.notebook.replay.record import (
    INLINE_RESULT_CHARS,
    MAX_RECORD_BYTES,
    RecordTooLarge,
    build_record,
    canonical_json,
    prompt_digest,
    read_record,
    record_digest,
    record_size,
    result_digest,
    sign_record,
    verify_record,
)
from jupyter_agent.tools.redact import remember_secret

OPTIONS = {"chat": "default", "new": False, "plan": False, "model": None}


def _turn(result: str = "a,b\n1,2\n", reply_text: str = "The file has one row.") -> dict[str, Any]:
    replies = [
        {
            "content": [
                {"type": "thinking", "thinking": "let me look", "signature": "sig"},
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"x": 1.0}},
            ],
            "stop_reason": "tool_use",
        },
        {"content": [{"type": "text", "text": reply_text}], "stop_reason": "end_turn"},
    ]
    calls = [
        {
            "reply": 0,
            "id": "toolu_1",
            "name": "read_file",
            "sha256": result_digest(result, False),
            "chars": len(result),
            "is_error": False,
            "result": result,
        }
    ]
    return {
        "prompt": "Summarise data.csv",
        "options": OPTIONS,
        "model": "claude-test",
        "replies": replies,
        "calls": calls,
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "cost_micro_usd": 123,
    }


def test_a_signed_record_verifies_and_reads_back() -> None:
    record = sign_record(build_record(**_turn()))
    assert verify_record(record)
    turn, problem = read_record(record)
    assert problem is None and turn is not None
    assert turn.prompt_sha256 == prompt_digest("Summarise data.csv")
    assert turn.model == "claude-test" and turn.cost_micro_usd == 123
    # thinking blocks are dropped; text and tool_use kept as the provider returned them
    assert [b["type"] for b in turn.replies[0]["content"]] == ["text", "tool_use"]
    assert turn.calls[0]["result"] == "a,b\n1,2\n"


def test_a_json_round_trip_through_a_frontend_keeps_the_signature() -> None:
    record = sign_record(build_record(**_turn()))
    # JavaScript writes the integral float 1.0 of a tool input as 1
    text = json.dumps(record).replace('"x": 1.0', '"x": 1')
    assert '"x": 1}' in text
    assert verify_record(json.loads(text))


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r["replies"][1]["content"][0].__setitem__("text", "A forged answer."),
        lambda r: r["calls"][0].__setitem__("sha256", "0" * 64),
        lambda r: r.__setitem__("prompt_sha256", prompt_digest("something else")),
        lambda r: r.__setitem__("signature", "0" * 64),
        lambda r: r.pop("signature"),
        lambda r: r["replies"].append({"content": [], "stop_reason": "end_turn"}),
    ],
)
def test_a_tampered_record_is_refused(edit: Any) -> None:
    record = sign_record(build_record(**_turn()))
    tampered = copy.deepcopy(record)
    edit(tampered)
    assert not verify_record(tampered)
    turn, problem = read_record(tampered)
    assert turn is None and problem is not None


@pytest.mark.parametrize("value", [None, [], "x", {"format": "jupyter-agent-turn"}, {"a": {1, 2}}])
def test_hostile_values_are_no_record(value: object) -> None:
    assert not verify_record(value)
    assert read_record(value)[0] is None


def test_a_large_result_is_kept_by_digest_only() -> None:
    big = "x" * (INLINE_RESULT_CHARS + 1)
    record = build_record(**_turn(result=big))
    assert "result" not in record["calls"][0]
    assert record["calls"][0]["sha256"] == result_digest(big, False)
    assert record["calls"][0]["chars"] == len(big)
    assert big not in json.dumps(record)


def test_a_turn_over_the_cap_is_not_recorded() -> None:
    with pytest.raises(RecordTooLarge, match="not replayable"):
        build_record(**_turn(reply_text="word " * (MAX_RECORD_BYTES // 4)))


def test_a_record_read_back_larger_than_the_cap_is_refused() -> None:
    record = sign_record(build_record(**_turn()))
    record["replies"][1]["content"][0]["text"] = "y" * (MAX_RECORD_BYTES + 2_000)
    turn, problem = read_record(record)
    assert turn is None and problem is not None and "larger" in problem


def test_no_secret_reaches_the_record() -> None:
    secret = "sk-ant-api03-" + "Q7x" * 30
    remember_secret(secret, "ANTHROPIC_API_KEY")
    record = sign_record(build_record(**_turn(result=f"key={secret}", reply_text=secret)))
    text = json.dumps(record)
    assert secret not in text
    assert "[redacted: ANTHROPIC_API_KEY]" in text
    assert verify_record(record)


def test_digest_and_size_are_of_the_canonical_json() -> None:
    record = sign_record(build_record(**_turn()))
    assert record_size(record) == len(canonical_json(record))
    assert record_digest(record) == record_digest(json.loads(json.dumps(record)))
    assert record_digest(record) != record_digest({**record, "model": "other"})
