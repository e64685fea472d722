"""The turn record: what a finished ``%%agent`` cell keeps so that a re-run can replay it.

A record is one JSON object, kept under ``"jupyter_agent.turn"`` (``TURN_KEY``) in the metadata
of the cell (the frontend extension) or of the output that carries the cell's answer (nbclient,
nbconvert). It has three fields: ``format`` (``"jupyter-agent-turn/2"``: the format and its
version), ``turn`` and ``signature``. ``turn`` is one string, the compact JSON of the rest — one
line in the saved file, because nbformat indents every nested key of a notebook (measured: the
same replies as nested JSON take half as much again). It holds:

- ``prompt``: the digest of the prompt the model answered (after ``{{name}}`` expansion and
  redaction) — the digest only: the cell's source is in the notebook already;
- ``model``: the model's id;
- ``options``: the cell options that change the turn (chat, ``--new``, ``--plan``, provider,
  model, ``--max-turns``, ``--think``, ``--effort``), those not at their default only (absent
  when all are); a re-run with other options asks the model;
- ``replies``: per model turn, its content blocks (thinking blocks dropped: they are signed by
  the provider for one conversation and are not needed to act the turn again), each as short as
  it can be said without loss: a text block as its string, a tool call as ``[name, input]``, any
  block with more fields as it came. A tool call's id is not kept: a replay gives each call a
  fresh one (ids only pair a call with its result within one conversation). ``stops`` names a
  reply's ``stop_reason`` only where it is not the one its blocks imply (``tool_use`` for a
  reply with calls, else ``end_turn``);
- ``results``: per tool call, in the order the replies made them, the digest of its result as
  the model saw it (``result_digest``; whether it failed is part of what is digested). Results
  are kept by digest only, whatever their size (``INLINE_RESULT_CHARS`` is 0): the text a cell
  shows of a result is in its output already, and a record that repeated it would double what
  the notebook saves;
- ``usage`` (input, output, cache-write and cache-read tokens, absent when all are 0) and
  ``cost`` (micro-dollars, an integer: the record holds no float — ``canonical_json`` writes
  integral floats of tool inputs as integers — so a round trip through JavaScript, which writes
  ``1.0`` as ``1``, cannot change the signed bytes).

**Digests** are the first 128 bits of a SHA-256, in base64url (22 characters). That is enough
here: a digest is never what keeps a forged reply out — the signature is — and it is not a
secret. A result's digest only tells a replay that the data changed under it; for a change to go
unnoticed by chance takes a 1-in-2^128 coincidence, and an adversary who wants a changed file to
pass must find a second preimage of a fixed 128-bit value (2^128 work). Even one who controls
both versions of the data and finds a colliding pair (2^64 work) gains nothing a replay would
not grant anyway: the replayed calls run under the same policies and approvals as live ones,
and the tools act on the data that is really there. The prompt's digest only picks which signed
record a cell may replay, and every record was signed for a turn this user ran. The
**signature** stays full strength: HMAC-SHA256 under the agent's key (``tools/guard/signing.py``)
with its own purpose string, over the canonical JSON of ``format`` and ``turn``, in base64url (43
characters). A record of another version (``version`` 1 wrote hex digests and more fields) is
not replayed; the cell says so in one line and asks the model.

Every string passes the package's redactor (``tools/redact.py``) before it is kept, so no secret
the redactor knows reaches the saved notebook. A record larger than ``MAX_RECORD_BYTES`` (its
canonical JSON) is not kept at all (``RecordTooLarge`` says why); the cell then simply has no
record. ``read_record`` checks shape, size and signature, and anything it refuses is never
replayed; it gives the replies back in the offline provider's cassette form (``content`` blocks
with their ``type``, ``stop_reason``), the form ``TurnReplay`` plays.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, replace
from typing import Any

from ...errors import RecordTooLarge, SigningError, UnrecordableTurn
from ...tools.guard.signing import sign
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

#: The fields of a record, every one a string.
_RECORD_KEYS = frozenset({"format", "turn", "signature"})
#: Where the record is kept: a cell's metadata, or the metadata of its answer's output.
TURN_KEY = "jupyter_agent.turn"
RECORD_FORMAT = "jupyter-agent-turn"
RECORD_VERSION = 2
#: The ``format`` field of a record of this version.
_FORMAT = f"{RECORD_FORMAT}/{RECORD_VERSION}"
#: Part of every record's signature: a journal's or conversation's never passes for a record.
SIGNING_PURPOSE = "jupyter-agent notebook turn record v2"
#: The largest record kept, in bytes of its canonical JSON; a larger turn is not recorded.
MAX_RECORD_BYTES = 256_000
#: Characters of a tool result kept as text beside its digest: none (see the module).
INLINE_RESULT_CHARS = 0
#: Bytes of a SHA-256 a digest keeps (128 bits; see the module).
DIGEST_BYTES = 16
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
#: The token counts of ``usage``, in the order the record lists them.
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
_KEPT_BLOCKS = ("text", "tool_use")


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


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _digest(*parts: bytes) -> str:
    """The first ``DIGEST_BYTES`` of the SHA-256 of ``parts`` one after another, in base64url
    (hashed in turn: a 40 KB result is not copied to be joined with its head)."""
    hashed = hashlib.sha256()
    for part in parts:
        hashed.update(part)
    return _b64(hashed.digest()[:DIGEST_BYTES])


def prompt_digest(prompt: str) -> str:
    """The digest of the prompt the model answered (exactly: a changed prompt asks again)."""
    return _digest(prompt.encode("utf-8"))


def result_digest(content: object, is_error: bool) -> str:
    """The digest of a tool result as the model saw it: whether it was an error, then its
    content — a text as its UTF-8 bytes, blocks (text and images) as canonical JSON."""
    head = b"error\0" if is_error else b"ok\0"
    if isinstance(content, str):  # the common case, hashed without a JSON pass over it
        return _digest(head, b"text\0", content.encode("utf-8", "surrogatepass"))
    return _digest(head, b"blocks\0", canonical_json(content))


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, dict):  # a secret can be a key too (``{"headers": {TOKEN: ...}}``)
        return {_redacted(key): _redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


def _uses(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in reply.get("content") or [] if b.get("type") == "tool_use"]


def _implied_stop(blocks: list[dict[str, Any]]) -> str:
    return "tool_use" if any(block.get("type") == "tool_use" for block in blocks) else "end_turn"


def _short_block(block: dict[str, Any]) -> Any:
    """A block as the record writes it: a text as its string, a call as ``[name, input]``."""
    keys = set(block)
    if keys == {"type", "text"} and block["type"] == "text" and isinstance(block["text"], str):
        return block["text"]
    if (
        keys == {"type", "id", "name", "input"}
        and block["type"] == "tool_use"
        and isinstance(block["name"], str)
        and isinstance(block["input"], dict)
    ):
        return [block["name"], block["input"]]
    return dict(block)  # anything else as it came (read back as it was)


def _full_block(short: object, call: int) -> dict[str, Any] | None:
    """A block as a reply has it, from the record's form (``call``: the call's ordinal, for its
    fresh id); None for what no record of this version writes."""
    if isinstance(short, str):
        return {"type": "text", "text": short}
    if isinstance(short, list):
        if len(short) != 2 or not isinstance(short[0], str) or not isinstance(short[1], dict):
            return None
        name, arguments = short
        return {"type": "tool_use", "id": f"toolu_replay_{call}", "name": name, "input": arguments}
    if isinstance(short, dict) and isinstance(short.get("type"), str):
        return dict(short)
    return None


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
    returned it; ``calls``: per tool call ``{"reply", "sha256", ...}`` in the order the replies
    made them, ``sha256`` its ``result_digest`` (other keys are not kept). Raises
    ``RecordTooLarge`` when the record would pass ``MAX_RECORD_BYTES``.
    """
    for index, reply in enumerate(replies):
        uses = _uses(reply)
        results = [call for call in calls if call.get("reply") == index]
        if len(uses) != len(results):  # every call's result must be checked on a replay
            raise UnrecordableTurn(
                f"reply {index + 1} made {len(uses)} tool calls but {len(results)} results "
                "were seen; this cell is not replayable"
            )
        for block in uses:
            if _redacted(block.get("input")) != block.get("input"):
                # a replay runs the recorded input: redacted, it is one no model sent (a file
                # overwritten with "[redacted: …]", a command cut short); unredacted, the secret
                # would be in the notebook — so the turn is not kept
                raise UnrecordableTurn(
                    f"a {block.get('name')} call's input held what looks like a secret, which is "
                    "kept out of the notebook; this cell is not replayable"
                )
    ordered = sorted(calls, key=lambda call: int(call["reply"]))  # stable: the replies' order
    kept_replies = []
    stops: dict[str, Any] = {}
    for index, reply in enumerate(replies):
        blocks = [
            block
            for block in reply.get("content") or []
            if isinstance(block, dict) and block.get("type") in _KEPT_BLOCKS
        ]
        kept_replies.append([_short_block(block) for block in blocks])
        if reply.get("stop_reason") != _implied_stop(blocks):
            stops[str(index)] = reply.get("stop_reason")
    turn: dict[str, Any] = {
        "prompt": prompt_digest(prompt),
        "model": model,
        # the replies are the model's text: redacted (digests are not text a secret could be
        # in, and a redacted digest would no longer match)
        "replies": _redacted(kept_replies),
        "results": [str(call["sha256"]) for call in ordered],
    }
    kept_options = {
        name: options[name]
        for name, default in OPTION_DEFAULTS.items()
        if options.get(name, default) != default
    }
    if kept_options:
        turn["options"] = _redacted(kept_options)
    if stops:
        turn["stops"] = _redacted(stops)
    counts = [int(usage.get(key, 0)) for key in USAGE_KEYS]
    if any(counts):
        turn["usage"] = counts
    if cost_micro_usd is not None:
        turn["cost"] = int(cost_micro_usd)
    record = {"format": _FORMAT, "turn": canonical_json(turn).decode("utf-8")}
    size = record_size(record)
    if size > MAX_RECORD_BYTES:
        raise RecordTooLarge(
            f"the turn's record would take {size:,} bytes, more than the {MAX_RECORD_BYTES:,} "
            "kept in a notebook; this cell is not replayable"
        )
    return record


def _signature(body: dict[str, Any]) -> str:
    """The HMAC-SHA256 of ``body``'s canonical JSON under the agent's key, in base64url."""
    return _b64(bytes.fromhex(sign(SIGNING_PURPOSE, canonical_json(body))))


def sign_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its ``signature`` (HMAC-SHA256 under the agent's key, ``SIGNING_PURPOSE``,
    over the canonical JSON of everything else); raises ``SigningError`` without a key."""
    body = {key: value for key, value in record.items() if key != "signature"}
    return {**body, "signature": _signature(body)}


def _signed(body: dict[str, Any], signature: object) -> bool:
    if not isinstance(signature, str) or not signature.isascii():  # compare_digest raises on
        return False  # a non-ASCII str: a hostile signature is a wrong one, not an error
    try:
        expected = _signature(body)
    except SigningError:
        return False
    return hmac.compare_digest(expected, signature)


def record_size(record: object) -> int:
    """The record's size in bytes of canonical JSON (what ``MAX_RECORD_BYTES`` bounds)."""
    return len(canonical_json(record))


def record_digest(record: object) -> str:
    """The SHA-256 of the record's canonical JSON (signature included): its identity."""
    return hashlib.sha256(canonical_json(record)).hexdigest()


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

    #: The prompt's digest (``prompt_digest``).
    prompt_sha256: str
    options: dict[str, Any]
    model: str
    #: Per model turn, ``{"content": [...], "stop_reason": ...}`` (the cassette form).
    replies: list[dict[str, Any]]
    #: Per tool call, in order, ``{"reply": index, "sha256": its result's digest}``.
    calls: list[dict[str, Any]]
    cost_micro_usd: int | None
    #: The signed record as read (kept again when a replay diverges).
    raw: dict[str, Any]


def _other_version(value: dict[str, Any]) -> str | None:
    """Why a record of this package's but another version is not read, or None."""
    found = value.get("format")
    if not isinstance(found, str) or found == _FORMAT:
        return None
    if found == RECORD_FORMAT:  # version 1 had a field of its own for the version
        version = value.get("version")
    elif found.startswith(RECORD_FORMAT + "/"):
        version = found[len(RECORD_FORMAT) + 1 :]
    else:
        return None
    if isinstance(version, str):
        shown = version[:20]
    elif isinstance(version, int) and not isinstance(version, bool) and abs(version) < 10**9:
        shown = str(version)  # (a huge int has no str at all past 4,300 digits)
    else:
        shown = "unknown"
    return (
        f"the turn record was written by another version of jupyter-agent (format version "
        f"{shown}, this one reads {RECORD_VERSION})"
    )


def _read_turn(turn: object) -> tuple[TurnRecord | None, str | None]:
    """The verified ``turn``'s contents, or why they are malformed."""
    if not isinstance(turn, dict):
        return None, "the turn is not an object"
    prompt, model = turn.get("prompt"), turn.get("model")
    if not isinstance(prompt, str) or not isinstance(model, str):
        return None, "no prompt digest or model"
    options = turn.get("options", {})
    stops = turn.get("stops", {})
    if not isinstance(options, dict) or not isinstance(stops, dict):
        return None, "malformed options"
    short_replies, results = turn.get("replies"), turn.get("results")
    if not isinstance(short_replies, list) or not short_replies:
        return None, "no replies"
    if not isinstance(results, list) or not all(isinstance(r, str) for r in results):
        return None, "no results"
    replies: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for index, short in enumerate(short_replies):
        if not isinstance(short, list):
            return None, "a reply without content"
        blocks = []
        for item in short:
            block = _full_block(item, len(calls) + 1)
            if block is None:
                return None, "a reply with a malformed block"
            if block["type"] == "tool_use":
                if len(calls) >= len(results):
                    return None, "a call without a result"
                calls.append({"reply": index, "sha256": results[len(calls)]})
            blocks.append(block)
        stop = stops.get(str(index), _implied_stop(blocks))
        replies.append({"content": blocks, "stop_reason": stop})
    if len(calls) != len(results):
        return None, "a result without a call"
    cost = turn.get("cost")
    return (
        TurnRecord(
            prompt_sha256=prompt,
            options=dict(options),
            model=model,
            replies=replies,
            calls=calls,
            cost_micro_usd=cost if isinstance(cost, int) and not isinstance(cost, bool) else None,
            raw={},
        ),
        None,
    )


def read_record(value: object) -> tuple[TurnRecord | None, str | None]:
    """The record ``value`` holds, or ``None`` and why not (a one-line reason)."""
    if not isinstance(value, dict):
        return None, "the turn record is not an object"
    other = _other_version(value)
    if other is not None:
        return None, other
    # its shape first, flat and cheap: nothing nested is walked before it is known to be flat
    if set(value) != _RECORD_KEYS or not all(isinstance(value[key], str) for key in _RECORD_KEYS):
        return None, "the turn record is malformed (not the fields of a turn record)"
    if value["format"] != _FORMAT:
        return None, "the turn record is malformed (not a turn record of this version)"
    if len(value["turn"]) > MAX_RECORD_BYTES:
        return None, f"the turn record is larger than {MAX_RECORD_BYTES:,} bytes"
    body = {"format": value["format"], "turn": value["turn"]}
    try:
        size = record_size(value)
    except (TypeError, ValueError, RecursionError):
        return None, "the turn record is not JSON data"
    if size > MAX_RECORD_BYTES + 1_000:
        return None, f"the turn record is larger than {MAX_RECORD_BYTES:,} bytes"
    if not _signed(body, value["signature"]):
        return (
            None,
            "the turn record's signature does not verify (edited, or recorded with another "
            "machine's key)",
        )
    try:  # signed by this machine's key, so written by this package — checked all the same
        turn = json.loads(value["turn"])
    except (ValueError, RecursionError):
        turn = None
    record, problem = _read_turn(turn)
    if record is None:
        return None, f"the turn record is malformed ({problem})"
    return replace(record, raw=value), None
