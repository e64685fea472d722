"""The turn record: what a finished ``%%agent`` cell keeps so that a re-run can replay it.

A record is one JSON object, kept under ``"jupyter_agent.turn"`` (``TURN_KEY``) in the metadata
of the cell (the frontend extension) or of the output that carries the cell's answer (nbclient,
nbconvert). It holds:

- ``prompt_sha256``: the SHA-256 of the prompt the model answered (after ``{{name}}`` expansion
  and redaction) — the digest only: the cell's source is in the notebook already;
- ``model``: the model's id;
- ``turn``: one string, the compact JSON of the rest — one line in the saved file, because
  nbformat indents every nested key of a notebook (measured: the same replies as nested JSON
  take half as much again):

  - ``options``: the cell options that change the turn (chat, ``--new``, ``--plan``, provider,
    model, ``--max-turns``, ``--think``, ``--effort``), those not at their default only; a
    re-run with other options asks the model;

  - ``replies``: the model's reply per model turn, its content blocks as the provider returned
    them (``text``, ``tool_use``) and its ``stop_reason``; thinking blocks are dropped (they are
    signed by the provider for one conversation and are not needed to act the turn again);
  - ``calls``: per tool call, in the order the replies made them, the index of its reply and the
    SHA-256 of its result as the model saw it (``result_digest``; ``is_error`` when it
    failed). Results are kept by digest only, whatever their size (``INLINE_RESULT_CHARS`` is
    0): the text a cell shows of a result is in its output already, and a record that repeated
    it would double what the notebook saves; the call's tool and input are in its reply's
    ``tool_use`` block;
  - ``usage`` (non-zero token counts) and ``cost_micro_usd`` (an integer: the record holds no
    float — ``canonical_json`` writes integral floats of tool inputs as integers — so a round
    trip through JavaScript, which writes ``1.0`` as ``1``, cannot change the signed bytes).

Every string passes the package's redactor (``tools/redact.py``) before it is kept, so no secret
the redactor knows reaches the saved notebook. A record larger than ``MAX_RECORD_BYTES`` (its
canonical JSON) is not kept at all (``RecordTooLarge`` says why); the cell then simply has no
record. It is signed with the agent's key (``tools/guard/signing.py``) under its own purpose
string over its canonical JSON, so an edited notebook never replays forged replies:
``verify_record`` checks shape, size and signature, and anything it refuses is never replayed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ...errors import RecordTooLarge, SigningError, UnrecordableTurn
from ...tools.guard.signing import sign, verify
from ...tools.redact import redact

__all__ = [
    "INLINE_RESULT_CHARS",
    "MAX_RECORD_BYTES",
    "OPTION_DEFAULTS",
    "OPTION_NAMES",
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "SIGNING_PURPOSE",
    "TURN_KEY",
    "RecordTooLarge",
    "TurnRecord",
    "UnrecordableTurn",
    "build_record",
    "canonical_json",
    "prompt_digest",
    "read_record",
    "record_digest",
    "record_size",
    "result_digest",
    "same_options",
    "sign_record",
    "verify_record",
]

#: The fields of a record, every one a string but ``version``.
_RECORD_KEYS = frozenset({"format", "version", "prompt_sha256", "model", "turn", "signature"})
#: Where the record is kept: a cell's metadata, or the metadata of its answer's output.
TURN_KEY = "jupyter_agent.turn"
RECORD_FORMAT = "jupyter-agent-turn"
RECORD_VERSION = 1
#: Part of every record's signature: a journal's or conversation's never passes for a record.
SIGNING_PURPOSE = "jupyter-agent notebook turn record v1"
#: The largest record kept, in bytes of its canonical JSON; a larger turn is not recorded.
MAX_RECORD_BYTES = 256_000
#: Characters of a tool result kept as text beside its digest: none (see the module).
INLINE_RESULT_CHARS = 0
#: The options of a cell that change its turn (what a re-run must repeat to replay), with their
#: defaults (an option at its default is not written).
OPTION_DEFAULTS: dict[str, Any] = {
    "chat": "default",
    "new": False,
    "plan": False,
    "provider": None,
    "model": None,
    "max_turns": None,
    "think": None,
    "effort": None,
}
OPTION_NAMES = tuple(OPTION_DEFAULTS)
_KEPT_BLOCKS = ("text", "tool_use")
_REPLY_KEYS = ("content", "stop_reason")


def _plain(value: Any) -> Any:
    """``value`` as canonical JSON data: integral floats as integers, tuples as lists."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


def canonical_json(value: Any) -> bytes:
    """The bytes a record is signed and measured by: sorted keys, no spaces, UTF-8."""
    return json.dumps(
        _plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prompt_digest(prompt: str) -> str:
    """The SHA-256 of the prompt the model answered (exactly: a changed prompt asks again)."""
    return _sha256(prompt.encode("utf-8"))


def result_digest(content: object, is_error: bool) -> str:
    """The SHA-256 of a tool result as the model saw it: whether it was an error, then its
    content — a text as its UTF-8 bytes, blocks (text and images) as canonical JSON."""
    head = b"error\0" if is_error else b"ok\0"
    if isinstance(content, str):  # the common case, hashed without a JSON pass over it
        return _sha256(head + b"text\0" + content.encode("utf-8", "surrogatepass"))
    return _sha256(head + b"blocks\0" + canonical_json(content))


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, dict):  # a secret can be a key too (``{"headers": {TOKEN: ...}}``)
        return {_redacted(key): _redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


def _reply(reply: dict[str, Any]) -> dict[str, Any]:
    content = reply.get("content") or []
    blocks = [
        dict(block)
        for block in content
        if isinstance(block, dict) and block.get("type") in _KEPT_BLOCKS
    ]
    return {"content": blocks, "stop_reason": reply.get("stop_reason")}


def build_record(
    *,
    prompt: str,
    options: dict[str, Any],
    model: str,
    replies: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    usage: dict[str, int],
    cost_micro_usd: int | None,
) -> dict[str, Any]:
    """An unsigned record of one finished turn (``sign_record`` signs it).

    ``replies``: per model turn ``{"content": [...], "stop_reason": ...}`` as the provider
    returned it; ``calls``: per tool call ``{"reply", "sha256", "is_error", ...}`` (other keys
    are not kept). Raises ``RecordTooLarge`` when the record would pass ``MAX_RECORD_BYTES``.
    """
    for index, reply in enumerate(replies):
        uses = [b for b in reply.get("content") or [] if b.get("type") == "tool_use"]
        results = [call for call in calls if call.get("reply") == index]
        if len(uses) != len(results):  # every call's result must be checked on a replay
            raise UnrecordableTurn(
                f"reply {index + 1} made {len(uses)} tool calls but {len(results)} results "
                "were seen; this cell is not replayable"
            )
    for reply in replies:
        for block in reply.get("content") or []:
            if block.get("type") == "tool_use" and _redacted(block.get("input")) != block.get(
                "input"
            ):
                # a replay runs the recorded input: redacted, it is one no model sent (a file
                # overwritten with "[redacted: …]", a command cut short); unredacted, the secret
                # would be in the notebook — so the turn is not kept
                raise UnrecordableTurn(
                    f"a {block.get('name')} call's input held what looks like a secret, which is "
                    "kept out of the notebook; this cell is not replayable"
                )
    kept_calls = []
    for call in calls:
        entry = {"reply": int(call["reply"]), "sha256": str(call["sha256"])}
        if call.get("is_error"):
            entry["is_error"] = True
        kept_calls.append(entry)
    # the replies and short results are the model's and the tools' text: redacted (digests and
    # ids are not text a secret could be in, and a redacted digest would no longer match)
    record = {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "prompt_sha256": prompt_digest(prompt),
        "model": model,
        "turn": canonical_json(
            {
                "options": _redacted(
                    {
                        name: options[name]
                        for name, default in OPTION_DEFAULTS.items()
                        if options.get(name, default) != default
                    }
                ),
                "replies": _redacted([_reply(reply) for reply in replies]),
                "calls": kept_calls,
                "usage": {str(k): int(v) for k, v in usage.items() if v},
                "cost_micro_usd": cost_micro_usd,
            }
        ).decode("utf-8"),
    }
    size = record_size(record)
    if size > MAX_RECORD_BYTES:
        raise RecordTooLarge(
            f"the turn's record would take {size:,} bytes, more than the {MAX_RECORD_BYTES:,} "
            "kept in a notebook; this cell is not replayable"
        )
    return _plain(record)  # type: ignore[no-any-return]


def sign_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its ``signature`` (HMAC-SHA256 under the agent's key, ``SIGNING_PURPOSE``,
    over the canonical JSON of everything else); raises ``SigningError`` without a key."""
    body = {key: value for key, value in record.items() if key != "signature"}
    return {**body, "signature": sign(SIGNING_PURPOSE, canonical_json(body))}


def record_size(record: object) -> int:
    """The record's size in bytes of canonical JSON (what ``MAX_RECORD_BYTES`` bounds)."""
    return len(canonical_json(record))


def record_digest(record: object) -> str:
    """The SHA-256 of the record's canonical JSON (signature included): its identity."""
    return _sha256(canonical_json(record))


def _shape_problem(value: dict[str, Any]) -> str | None:
    if value.get("format") != RECORD_FORMAT or value.get("version") != RECORD_VERSION:
        return "not a turn record of this version"
    if not isinstance(value.get("prompt_sha256"), str):
        return "no prompt digest"
    if not isinstance(value.get("model"), str) or not isinstance(value.get("turn"), str):
        return "no model or turn"
    return None


def _turn_problem(value: object) -> str | None:
    if not isinstance(value, dict):
        return "the turn is not an object"
    if not isinstance(value.get("options"), dict):
        return "no options"
    replies = value.get("replies")
    if not isinstance(replies, list) or not replies:
        return "no replies"
    for reply in replies:
        if not isinstance(reply, dict) or not isinstance(reply.get("content"), list):
            return "a reply without content"
        if any(not isinstance(block, dict) for block in reply["content"]):
            return "a reply with a malformed block"
    calls = value.get("calls")
    if not isinstance(calls, list):
        return "no calls"
    for call in calls:
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("reply"), int)
            or not isinstance(call.get("sha256"), str)
        ):
            return "a malformed call"
    return None


def same_options(recorded: dict[str, Any], options: dict[str, Any]) -> bool:
    """Whether a cell's ``options`` are those ``recorded`` (an absent option: its default)."""
    return all(
        recorded.get(name, default) == options.get(name, default)
        for name, default in OPTION_DEFAULTS.items()
    )


def verify_record(value: object) -> bool:
    """True only for a record of this format, within size, whose signature checks under this
    machine's key; anything else (unsigned, edited, another machine's, malformed) is False."""
    return read_record(value)[0] is not None


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """A record that verified: what a replay needs of it."""

    prompt_sha256: str
    options: dict[str, Any]
    model: str
    replies: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    cost_micro_usd: int | None
    #: The signed record as read (kept again when a replay diverges).
    raw: dict[str, Any]


def read_record(value: object) -> tuple[TurnRecord | None, str | None]:
    """The record ``value`` holds, or ``None`` and why not (a one-line reason)."""
    if not isinstance(value, dict):
        return None, "the turn record is not an object"
    # its shape first, flat and cheap: nothing nested is walked before it is known to be flat
    if set(value) != _RECORD_KEYS or not all(
        isinstance(value[key], int if key == "version" else str) for key in _RECORD_KEYS
    ):
        return None, "the turn record is malformed (not the fields of a turn record)"
    if len(value["turn"]) > MAX_RECORD_BYTES:
        return None, f"the turn record is larger than {MAX_RECORD_BYTES:,} bytes"
    try:
        size = record_size(value)
    except (TypeError, ValueError, RecursionError):
        return None, "the turn record is not JSON data"
    if size > MAX_RECORD_BYTES + 1_000:
        return None, f"the turn record is larger than {MAX_RECORD_BYTES:,} bytes"
    problem = _shape_problem(value)
    if problem is not None:
        return None, f"the turn record is malformed ({problem})"
    body = {key: item for key, item in value.items() if key != "signature"}
    try:
        signed = verify(SIGNING_PURPOSE, canonical_json(body), value.get("signature"))
    except SigningError:
        signed = False
    if not signed:
        return None, "the turn record's signature does not verify"
    try:  # signed by this machine's key, so written by this package — checked all the same
        turn = json.loads(value["turn"])
    except (ValueError, RecursionError):
        turn = None
    problem = _turn_problem(turn)
    if problem is not None:
        return None, f"the turn record is malformed ({problem})"
    cost = turn.get("cost_micro_usd")
    return (
        TurnRecord(
            prompt_sha256=value["prompt_sha256"],
            options=dict(turn["options"]),
            model=value["model"],
            replies=list(turn["replies"]),
            calls=list(turn["calls"]),
            cost_micro_usd=cost if isinstance(cost, int) else None,
            raw=value,
        ),
        None,
    )
