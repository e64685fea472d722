"""The turn record: signed, verified, refused when tampered with, bounded, redacted."""

from __future__ import annotations

import base64
import copy
import json
import string
from typing import Any

import pytest

from jupyter_agent.notebook.replay.record import (
    MAX_RECORD_BYTES,
    RecordTooLarge,
    UnrecordableTurn,
    build_record,
    canonical_json,
    prompt_digest,
    read_record,
    record_digest,
    record_size,
    result_digest,
    same_options,
    sign_record,
    verify_record,
)

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
    assert turn.calls == [{"reply": 0, "sha256": result_digest("a,b\n1,2\n", False)}]
    assert turn.options == {}  # every option at its default


def test_a_json_round_trip_through_a_frontend_keeps_the_signature() -> None:
    record = sign_record(build_record(**_turn()))
    # the integral float 1.0 of a tool input is written as 1, as JavaScript would write it
    assert '\\"x\\":1}' in json.dumps(record)
    assert verify_record(json.loads(json.dumps(record)))
    turn, _problem = read_record(json.loads(json.dumps(record)))
    assert turn is not None and turn.replies[0]["content"][1]["input"] == {"x": 1}


def _edit_turn(record: dict[str, Any], edit: Any) -> None:
    turn = json.loads(record["turn"])
    edit(turn)
    record["turn"] = json.dumps(turn)


def _respelt(signature: str) -> str:
    """The same signature bytes spelt another way: base64's last character of 32 bytes carries
    two unused bits (a string compare refuses it; a decoder would not)."""
    alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
    respelt = signature[:-1] + alphabet[alphabet.index(signature[-1]) ^ 1]
    padded = signature + "=", respelt + "="
    assert base64.urlsafe_b64decode(padded[0]) == base64.urlsafe_b64decode(padded[1])
    return respelt


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: _edit_turn(r, lambda t: t["replies"][1].__setitem__(0, "A forged answer.")),
        lambda r: _edit_turn(r, lambda t: t["results"].__setitem__(0, "A" * 22)),
        lambda r: r.__setitem__("turn", r["turn"].replace("one row", "two rows")),
        lambda r: _edit_turn(r, lambda t: t.__setitem__("prompt", prompt_digest("other"))),
        lambda r: r.__setitem__("signature", "0" * 43),
        lambda r: r.__setitem__("signature", _respelt(r["signature"])),
        lambda r: r.pop("signature"),
        lambda r: _edit_turn(r, lambda t: t["replies"].append([])),
        lambda r: _edit_turn(r, lambda t: t.__setitem__("model", "claude-other")),
        lambda r: _edit_turn(r, lambda t: t["replies"][0][1].__setitem__(0, "write_file")),
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


@pytest.mark.parametrize("result", ["short result", "x" * 50_000])
def test_a_result_is_kept_by_digest_only(result: str) -> None:
    record = build_record(**_turn(result=result))
    turn, _problem = read_record(sign_record(record))
    assert turn is not None
    assert turn.calls == [{"reply": 0, "sha256": result_digest(result, False)}]
    assert result not in json.dumps(record)


def test_the_digest_tells_results_apart() -> None:
    assert result_digest("a", False) != result_digest("a", True)
    assert result_digest("a", False) != result_digest([{"type": "text", "text": "a"}], False)
    assert result_digest("a", False) != result_digest("b", False)


def test_options_not_at_their_default_are_kept_and_compared() -> None:
    turn = _turn()
    turn["options"] = {**OPTIONS, "model": "claude-x", "new": True}
    read, _problem = read_record(sign_record(build_record(**turn)))
    assert read is not None and read.options == {"model": "claude-x", "new": True}
    assert same_options(read.options, {"chat": "default", "model": "claude-x", "new": True})
    assert not same_options(read.options, {"model": "claude-x"})


def test_a_turn_over_the_cap_is_not_recorded() -> None:
    with pytest.raises(RecordTooLarge, match="not replayable"):
        build_record(**_turn(reply_text="word " * (MAX_RECORD_BYTES // 4)))


def test_a_record_read_back_larger_than_the_cap_is_refused() -> None:
    record = sign_record(build_record(**_turn()))
    record["turn"] = "y" * (MAX_RECORD_BYTES + 2_000)
    turn, problem = read_record(record)
    assert turn is None and problem is not None and "larger" in problem


def test_no_secret_reaches_the_record(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-api03-" + "Q7x" * 30
    # the environment holds it (and gets it back after): a remembered secret would stay
    # redacted for every later test of the process
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    turn = _turn(reply_text=f"The key is {secret}.")
    record = sign_record(build_record(**turn))
    text = json.dumps(record)
    assert secret not in text
    assert "[redacted: ANTHROPIC_API_KEY]" in text
    assert verify_record(record)


def test_digest_and_size_are_of_the_canonical_json() -> None:
    record = sign_record(build_record(**_turn()))
    assert record_size(record) == len(canonical_json(record))
    assert record_digest(record) == record_digest(json.loads(json.dumps(record)))
    assert record_digest(record) != record_digest({**record, "signature": "other"})


@pytest.mark.parametrize(
    "tool_input",
    [
        pytest.param({"command": "echo SECRET"}, id="in a value"),
        pytest.param({"headers": {"SECRET": "x"}}, id="as a key"),
        pytest.param(
            {"content": "token = 'ghp_" + "a1B2" * 9 + "'"}, id="a token the redactor knows"
        ),
    ],
)
def test_a_turn_whose_tool_input_held_a_secret_is_not_replayable(
    tool_input: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay runs the recorded input: redacted, it is an input no model sent (a file
    overwritten with ``[redacted: …]``, a command cut short), and unredacted it would put the
    secret in the notebook. So such a turn is not kept, and the cell says why."""
    secret = "sk-ant-api03-" + "Z9w" * 30
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    turn = _turn()
    turn["replies"][0]["content"][2]["input"] = json.loads(
        json.dumps(tool_input).replace("SECRET", secret)
    )
    with pytest.raises(UnrecordableTurn, match="secret"):
        build_record(**turn)


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda r: r.update(signature="é" * 64), id="a non-ASCII signature"),
        pytest.param(lambda r: r.update(turn=_nested(5_000)), id="deep nesting"),
        pytest.param(lambda r: r.update(extra=_nested(5_000)), id="deep nesting beside"),
    ],
)
def test_a_hostile_record_is_refused_with_a_reason_not_an_error(edit: Any) -> None:
    """A notebook's record is the notebook author's: whatever it holds, reading it gives no
    record and a one-line reason — an exception would end the cell with a traceback."""
    record = sign_record(build_record(**_turn()))
    edit(record)
    turn, problem = read_record(record)
    assert turn is None and problem is not None


def test_a_record_of_the_first_version_is_refused_in_one_line() -> None:
    """Version 1 (hex digests, six fields) is not read: one line says why, nothing raises."""
    old = {
        "format": "jupyter-agent-turn",
        "version": 1,
        "prompt_sha256": "ad" * 32,
        "model": "claude-test",
        "turn": '{"calls":[],"options":{},"replies":[]}',
        "signature": "88" * 32,
    }
    turn, problem = read_record(old)
    assert turn is None and problem is not None and "\n" not in problem
    assert "another version of jupyter-agent (format version 1, this one reads 2)" in problem


@pytest.mark.parametrize(
    "value",
    [
        {"format": "jupyter-agent-turn", "version": 10**5000},
        {"format": "jupyter-agent-turn", "version": [1]},
        {"format": "jupyter-agent-turn/" + "9" * 5000, "turn": "{}", "signature": ""},
    ],
)
def test_a_hostile_version_is_refused_in_one_line(value: dict[str, Any]) -> None:
    turn, problem = read_record(value)
    assert turn is None and problem is not None and len(problem) < 200


def test_a_replay_gives_each_call_a_fresh_id_and_the_stop_its_blocks_imply() -> None:
    """Ids and implied stop reasons are not kept (they are derived); a stop reason that is not
    the implied one is kept."""
    fields = _turn()
    fields["replies"][1]["stop_reason"] = "max_tokens"
    record = sign_record(build_record(**fields))
    assert "toolu_1" not in record["turn"] and "tool_use" not in record["turn"]
    turn, _problem = read_record(record)
    assert turn is not None
    assert [reply["stop_reason"] for reply in turn.replies] == ["tool_use", "max_tokens"]
    call = turn.replies[0]["content"][1]
    assert call == {
        "type": "tool_use",
        "id": "toolu_replay_1",
        "name": "read_file",
        "input": {"x": 1},
    }


def test_a_block_with_more_than_the_usual_fields_is_kept_as_it_came() -> None:
    """Only a plain text block and a plain call are written short; a text with citations is
    kept whole and read back as it was."""
    fields = _turn()
    cited = {"type": "text", "text": "See [1].", "citations": [{"url": "https://x.test"}]}
    fields["replies"][1]["content"] = [cited]
    turn, problem = read_record(sign_record(build_record(**fields)))
    assert problem is None and turn is not None
    assert turn.replies[1]["content"] == [cited]
