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

The provider's side of it is here too: whether a client talks to Anthropic's own API (threads are
on by default only there), the stream opened on the beta endpoint with a ``thread``, whether an
error reads like a server that does not know threads, and whether a reply can be continued.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import anthropic

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


#: What ``held_prefix`` compares a sent message with: a copy of the message whose list content
#: is a list of copies of its blocks. ``prefix == snapshots`` then compares, in C and without
#: serialising, every message's fields, every content list's length and blocks, and every block's
#: fields, each value first by identity.
Snapshot = dict[str, Any]


def _snapshots(messages: Sequence[Message]) -> list[Snapshot]:
    """Copies of ``messages`` as ``held_prefix`` compares them. Raises ``TypeError`` for a message
    or a block that is not a dict."""
    out: list[Snapshot] = []
    for message in messages:
        if type(message) is not dict:
            raise TypeError("a message is not a dict")
        copy = dict(message)
        content = copy.get("content")
        if type(content) is list:
            if not all(type(block) is dict for block in content):
                raise TypeError("a block is not a dict")
            copy["content"] = list(map(dict.copy, content))
        out.append(copy)
    return out


class Thread:
    """What the server holds under the reply ``reply_id``: ``held`` (the agent's messages that were
    sent, and ``snapshots`` of them as they were then) followed by that reply's ``reply``
    content, for requests made with ``key``."""

    __slots__ = ("held", "key", "reply", "reply_id", "snapshots")

    def __init__(
        self,
        reply_id: str,
        key: tuple[object, ...],
        held: list[Message],
        snapshots: list[Snapshot],
        reply: list[Message],
    ) -> None:
        self.reply_id = reply_id
        self.key = key
        self.held = held
        self.snapshots = snapshots
        self.reply = reply

    def held_prefix(self, messages: Sequence[Message], key: tuple[object, ...]) -> int | None:
        """How many leading messages of ``messages`` the server holds (the reply included), or
        ``None`` when ``messages`` do not extend this thread."""
        held = self.held
        count = len(held)
        if not held or len(messages) <= count or messages[0] is not held[0] or key != self.key:
            return None  # (another conversation fails at its first message, at once)
        prefix = messages[:count]
        if not all(map(is_, prefix, held)) or prefix != self.snapshots:
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
        try:
            more = _snapshots(new)
        except TypeError:
            return None
        self.snapshots += more
        self.held += new
        return Thread(reply_id, self.key, self.held, self.snapshots, reply)


def new_thread(
    messages: Sequence[Message], key: tuple[object, ...], reply_id: str, reply: list[Message]
) -> Thread | None:
    """The thread a ``create`` with the whole of ``messages`` started (``None`` for messages the
    check cannot follow)."""
    try:
        snapshots = _snapshots(messages)
    except TypeError:
        return None
    return Thread(reply_id, key, list(messages), snapshots, reply)


def error_code(body: object) -> str | None:
    """The ``error.details.error_code`` of an API error body, if it has one."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else None


#: Statuses of a threaded request that a server without threads may answer (an unknown field or
#: beta, say).
_REFUSED_STATUSES = frozenset({400, 403, 404, 422})


#: Conversations whose server-side threads a provider keeps (one per chat of a notebook). A
#: thread holds its conversation's messages as they were sent: a compacted or reset chat's old
#: thread stays until newer ones push it out, so few are kept.
MAX_THREADS = 8
#: The host of Anthropic's own Messages API: the one place threads are known to be passed on.
ANTHROPIC_API_HOST = "api.anthropic.com"


def is_anthropic_api(client: anthropic.AsyncAnthropic) -> bool:
    """Whether ``client`` talks to Anthropic's own API (not a proxy or a local stand-in)."""
    try:
        return bool(client.base_url.host == ANTHROPIC_API_HOST)
    except AttributeError:  # a client object without a base_url: assume the worst
        return False


def refuses_threads(exc: anthropic.APIStatusError) -> bool:
    """Whether ``exc`` reads like a server (or proxy) that does not know threads: a client error
    that names them (``thread: Extra inputs are not permitted``, an unknown ``anthropic-beta``
    value). The request is tried again without a thread, and threads stay off if that works. Any
    other error is the request's own, and is not paid for twice."""
    if exc.status_code not in _REFUSED_STATUSES:
        return False
    return "thread" in f"{exc.message} {exc.body}".lower()


def open_stream(
    client: anthropic.AsyncAnthropic,
    params: dict[str, Any],
    thread: dict[str, str] | None,
    betas: list[str] | None = None,
) -> Any:
    """The SDK's stream manager for ``params``: on the beta endpoint with ``thread`` or
    ``betas``, else as ever."""
    betas = list(betas or [])
    if thread is None and not betas:
        return client.messages.stream(**params)
    if thread is None:
        return client.beta.messages.stream(**params, betas=cast(Any, betas))
    return client.beta.messages.stream(
        **params, thread=cast(Any, thread), betas=cast(Any, [THREADS_BETA, *betas])
    )


def continuable(message: Any) -> bool:
    """Whether the server holds ``message`` as the thread's latest reply. It may hold a refused
    turn, and it stores none that a fallback model wrote (as the SDK's threads say)."""
    if message.stop_reason == "refusal":
        return False
    iterations = getattr(message.usage, "iterations", None) or ()
    return not any(getattr(i, "type", None) == "fallback_message" for i in iterations)
