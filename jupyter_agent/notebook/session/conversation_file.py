"""The file ``%agent save`` writes and ``%agent load`` reads: one conversation as JSON.

``{"format": "jupyter-agent-session", "version": 1, "system_prompt": ..., "provider": ...,
"model": ..., "messages": [...]}`` — the messages in Anthropic Messages format, as the agent
keeps them, with ``"compaction"``: what compaction did to them, as data — and a ``signature``:
HMAC-SHA256 of the rest under the agent's key, kept outside the workspace (``tools.signing``).
The file may sit where the model's tools write, and a rewritten conversation would put words in
the model's mouth (or replace every chat's system prompt), so reading refuses a file whose
signature does not check. Reading also checks the shape before anything is replaced, so a wrong
file changes nothing; every problem is a one-line ``SessionError``.

Saving follows no symbolic link and creates no folder: a link planted at the path is refused (a
link swapped in meanwhile is replaced, never written through: the file is written beside it,
then renamed over it).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...agent.compaction import compaction_records, restore_compaction
from ...errors import SessionError, SigningError
from ...tools.guard.signing import sign, verify
from ...tools.one_line import one_line

SESSION_FORMAT = "jupyter-agent-session"
SESSION_VERSION = 1

_ROLES = ("user", "assistant")
#: What a saved conversation's signature is made for (see ``tools.signing``).
_PURPOSE = "jupyter-agent conversation v1"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _signed_bytes(payload: dict[str, Any]) -> bytes:
    unsigned = {key: value for key, value in payload.items() if key != "signature"}
    return json.dumps(unsigned, sort_keys=True, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class SavedConversation:
    messages: list[dict[str, Any]]
    system_prompt: str | None


def save_conversation(
    path: Path,
    messages: list[dict[str, Any]],
    *,
    system_prompt: str,
    provider: str,
    model: str,
) -> None:
    """Write ``messages`` (and what produced them), signed, to ``path``; its folder must exist,
    and a symbolic link at ``path`` is refused."""
    payload: dict[str, Any] = {
        "format": SESSION_FORMAT,
        "version": SESSION_VERSION,
        "system_prompt": system_prompt,
        "provider": provider,
        "model": model,
        "messages": messages,
    }
    compacted = compaction_records(messages)
    if compacted:  # what compaction did, as data (never read back out of the messages' text)
        payload["compaction"] = compacted
    shown = str(path)
    try:
        payload["signature"] = sign(_PURPOSE, _signed_bytes(payload))
    except SigningError as exc:
        raise SessionError(f"Cannot save the conversation: {exc}") from None
    data = json.dumps(payload, indent=1, ensure_ascii=False).encode("utf-8")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise SessionError(f"Cannot save the conversation to {shown!r}: {exc.strerror}") from None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise SessionError(
            f"Not saved: {shown!r} is a symbolic link, and %agent save never writes through "
            "one; give the path of a plain file"
        )
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise SessionError(f"Not saved: {shown!r} is not a regular file")
    if not path.parent.is_dir():
        raise SessionError(
            f"Not saved: the folder {str(path.parent)!r} does not exist (%agent save creates "
            "no folders; create it first)"
        )
    _write_beside(path, data, shown)


def _write_beside(path: Path, data: bytes, shown: str) -> None:
    """A new file (``O_EXCL``, no link followed) beside ``path``, renamed over it."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC,
            0o600,
        )
    except OSError as exc:
        raise SessionError(f"Cannot save the conversation to {shown!r}: {exc.strerror}") from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)  # replaces a link swapped in meanwhile, never follows it
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise SessionError(f"Cannot save the conversation to {shown!r}: {exc.strerror}") from None


def read_conversation(path: Path) -> SavedConversation:
    """The conversation saved at ``path``, checked."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SessionError(f"No saved conversation at {str(path)!r}") from None
    except (OSError, ValueError) as exc:
        raise SessionError(f"Cannot read {str(path)!r}: {one_line(str(exc))}") from None
    messages = payload.get("messages") if isinstance(payload, dict) else None
    if (
        not isinstance(payload, dict)
        or payload.get("format") != SESSION_FORMAT
        or not isinstance(messages, list)
        or not all(isinstance(m, dict) and m.get("role") in _ROLES for m in messages)
    ):
        raise SessionError(f"{str(path)!r} is not a conversation saved by %agent save")
    if not verify(_PURPOSE, _signed_bytes(payload), payload.get("signature")):
        raise SessionError(
            f"Not loaded: {str(path)!r} is not signed by this agent's key — it was changed after "
            "%agent save, saved on another machine or by an older version — and a changed "
            "conversation could put words in the model's mouth"
        )
    system_prompt = payload.get("system_prompt")
    messages = list(messages)
    restore_compaction(messages, payload.get("compaction"))
    return SavedConversation(messages, system_prompt if isinstance(system_prompt, str) else None)


def system_prompt_note(path: str | os.PathLike[str], *, used: bool) -> str:
    """What ``%agent load`` says of a saved system prompt that differs from the session's."""
    if used:
        return "The system prompt is now the saved conversation's (for every chat)."
    return (
        "The saved conversation has a different system prompt; this session keeps its "
        f"own. To use the saved one: %agent load {os.fspath(path)} --system-prompt"
    )
