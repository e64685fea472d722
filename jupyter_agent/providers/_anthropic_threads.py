"""Server-side threads for ``AnthropicProvider``: after a conversation's first request, send only
the messages the server does not hold yet.

The agent owns the conversation and hands the provider all of it on every request, so that any
provider can serve the next turn and compaction can rewrite it. The Messages API can hold a
conversation itself (the beta ``message-threads-2026-08-12``, which the SDK's ``lib/threads`` and
its tool runner use by default): a request with ``"thread": {"type": "create"}`` stores the
conversation and its reply under the reply's ``id``; one with ``{"type": "continue",
"previous_message_id": id}`` carries only the messages after that reply, and no ``system`` or
``tools`` (the thread keeps them). Each reply can be continued once.

``Thread`` remembers what the server holds — the agent's own message dicts that were sent, then
the reply — and ``held_prefix`` says how many leading messages of the next request those are.
The agent keeps earlier message dicts identical between requests, so the check needs no
serialisation (C-level comparisons that stop at the first object that is the very one seen
before), and it is conservative: an earlier message counts as held only while it is the same
dict, holding the values it held when it was sent, its content a list of the blocks it held then,
each block holding the values it held then. An edit in place of a block's field, a replaced block
or message, a dropped or inserted message: each fails the check, and the request goes whole under
a new thread. The reply must equal, value for value, what the server sent. Not seen: an edit in
place *below* a block's own fields (a key of a tool call's ``input`` dict changed in that dict) —
replace the block instead. A change of model, system prompt, tools or thinking starts a new thread
as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_, methodcaller
from typing import Any

#: The beta that lets a request carry ``thread``.
THREADS_BETA = "message-threads-2026-08-12"
#: Thread errors after which the conversation is sent whole under a new thread.
REPLAY_ERROR_CODES = frozenset(
    {
        "thread_not_found",
        "thread_already_continued",
        "thread_continue_in_flight",
        "thread_fingerprint_mismatch",
    }
)
#: The server cannot thread this request (a field or an organisation setting): send it whole.
UNSUPPORTED_ERROR_CODE = "thread_unsupported_request"
CREATE: dict[str, str] = {"type": "create"}

Message = dict[str, Any]


_content = methodcaller("get", "content")

#: A conversation as the check compares it: each message's values, then every block of every
#: list content, then each such block's values.
Parts = tuple[list[tuple[object, ...]], list[object], list[tuple[object, ...]]]


def _parts(messages: Sequence[Message]) -> Parts:
    """What ``held_prefix`` compares (C-level maps, no serialisation). Raises ``TypeError`` for a
    message or a block that is not a dict."""
    fields = list(map(tuple, map(dict.values, messages)))
    blocks = [
        block for content in map(_content, messages) if type(content) is list for block in content
    ]
    return fields, blocks, list(map(tuple, map(dict.values, blocks)))


class Thread:
    """What the server holds under the reply ``reply_id``: ``held`` (the agent's messages that were
    sent, as ``parts`` saw them then) followed by that reply's ``reply`` content, for requests made
    with ``key``."""

    __slots__ = ("held", "key", "parts", "reply", "reply_id")

    def __init__(
        self,
        reply_id: str,
        key: tuple[object, ...],
        held: list[Message],
        parts: Parts,
        reply: list[Message],
    ) -> None:
        self.reply_id = reply_id
        self.key = key
        self.held = held
        self.parts = parts
        self.reply = reply

    def held_prefix(self, messages: Sequence[Message], key: tuple[object, ...]) -> int | None:
        """How many leading messages of ``messages`` the server holds (the reply included), or
        ``None`` when ``messages`` do not extend this thread."""
        held = self.held
        count = len(held)
        if not held or len(messages) <= count or messages[0] is not held[0] or key != self.key:
            return None  # (another conversation fails at its first message, at once)
        prefix = messages[:count]
        try:
            if not all(map(is_, prefix, held)) or _parts(prefix) != self.parts:
                return None
        except TypeError:
            return None
        if messages[count] != {"role": "assistant", "content": self.reply}:
            return None
        return count + 1

    def continuation(
        self, messages: Sequence[Message], reply_id: str, reply: list[Message]
    ) -> Thread | None:
        """This thread once ``messages`` (which extend it) got the reply ``reply_id`` (``None``
        when the new messages are not ones the check can follow)."""
        new = messages[len(self.held) :]
        fields, blocks, values = self.parts
        try:
            more_fields, more_blocks, more_values = _parts(new)
        except TypeError:
            return None
        fields += more_fields
        blocks += more_blocks
        values += more_values
        self.held += new
        return Thread(reply_id, self.key, self.held, self.parts, reply)


def new_thread(
    messages: Sequence[Message], key: tuple[object, ...], reply_id: str, reply: list[Message]
) -> Thread | None:
    """The thread a ``create`` with the whole of ``messages`` started (``None`` for messages the
    check cannot follow)."""
    try:
        parts = _parts(messages)
    except TypeError:
        return None
    return Thread(reply_id, key, list(messages), parts, reply)


def error_code(body: object) -> str | None:
    """The ``error.details.error_code`` of an API error body, if it has one."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else None
