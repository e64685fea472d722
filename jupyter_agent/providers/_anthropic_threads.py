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
The agent keeps earlier message dicts identical between requests, so the check is by identity,
with no serialisation, and conservative: an earlier message counts as held only while it is the
same dict holding the same values, its content the same list of the same blocks, each block
holding the same values. An edit in place of a block's field, a replaced block or message, a
dropped or inserted message: each fails the check, and the request goes whole under a new thread.
The reply must equal, value for value, what the server sent. Not seen: an edit in place *below* a
block's own fields (a key of a tool call's ``input`` dict changed in that dict) — replace the
block instead. A change of model, system prompt, tools or thinking starts a new thread as well.
"""

from __future__ import annotations

from collections.abc import Sequence
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


class _Held:
    """One message of the agent's that the server holds, as it was when it was sent."""

    __slots__ = ("block_values", "blocks", "fields", "message")

    def __init__(self, message: Message) -> None:
        self.message = message
        self.fields = tuple(message.values())
        content = message.get("content")
        blocks = tuple(content) if isinstance(content, list) else ()
        self.blocks = blocks
        self.block_values = tuple(
            tuple(block.values()) if isinstance(block, dict) else () for block in blocks
        )

    def holds(self, message: Message) -> bool:
        """Whether ``message`` is still this message, unedited down to its blocks' values."""
        if message is not self.message or len(message) != len(self.fields):
            return False
        if not all(map(_same, message.values(), self.fields)):
            return False
        content = message.get("content")
        if not isinstance(content, list):
            return True
        if len(content) != len(self.blocks) or not all(map(_same, content, self.blocks)):
            return False
        for block, values in zip(content, self.block_values, strict=True):
            if isinstance(block, dict) and (
                len(block) != len(values) or not all(map(_same, block.values(), values))
            ):
                return False
        return True


def _same(a: object, b: object) -> bool:
    return a is b


class Thread:
    """What the server holds under the reply ``reply_id``: ``held`` (the agent's messages that were
    sent) followed by that reply's ``reply`` content, for requests made with ``key``."""

    __slots__ = ("held", "key", "reply", "reply_id")

    def __init__(
        self, reply_id: str, key: tuple[object, ...], held: list[_Held], reply: list[Message]
    ) -> None:
        self.reply_id = reply_id
        self.key = key
        self.held = held
        self.reply = reply

    def held_prefix(self, messages: Sequence[Message], key: tuple[object, ...]) -> int | None:
        """How many leading messages of ``messages`` the server holds (the reply included), or
        ``None`` when ``messages`` do not extend this thread."""
        held = self.held
        if key != self.key or len(messages) <= len(held):
            return None
        for entry, message in zip(held, messages, strict=False):
            if not entry.holds(message):
                return None
        reply = messages[len(held)]
        if reply != {"role": "assistant", "content": self.reply}:
            return None
        return len(held) + 1

    def continuation(
        self, messages: Sequence[Message], reply_id: str, reply: list[Message]
    ) -> Thread:
        """This thread once ``messages`` (which extend it) got the reply ``reply_id``."""
        held = self.held
        held.extend(_Held(message) for message in messages[len(held) :])
        return Thread(reply_id, self.key, held, reply)


def new_thread(
    messages: Sequence[Message], key: tuple[object, ...], reply_id: str, reply: list[Message]
) -> Thread:
    """The thread a ``create`` with the whole of ``messages`` started."""
    return Thread(reply_id, key, [_Held(message) for message in messages], reply)


def error_code(body: object) -> str | None:
    """The ``error.details.error_code`` of an API error body, if it has one."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else None
