"""Token estimates: how big the next request is, and what the model's window holds.

The context window of a model (``context_window_for``, from the model facts), whether a failed
request was a prompt too long for it (``is_overflow``, ``reported_sizes``), and
``TokenEstimator``, which estimates a request's tokens from the last reply's reported count plus
what was added since — cheap enough to run before every request of a 200-turn session.
"""

from __future__ import annotations

import json
import re

from ..providers.model_facts import built_in
from .conversation import Block, Message, content_blocks
from .results import CHARS_PER_TOKEN

#: The window of a model neither the Models API nor the built-in table knows.
DEFAULT_CONTEXT_WINDOW = 200_000
#: Tokens an image costs in the estimate when its size is unknown (1568 × 1568 / 750).
IMAGE_TOKENS = 3_300

_OVERFLOW = re.compile(
    r"prompt is too long|context[_ ]length[_ ]exceeded|maximum context length|"
    r"exceeds the context window",
    re.IGNORECASE,
)
_REPORTED = re.compile(r"(\d[\d,]*) tokens > (\d[\d,]*) maximum")
#: ``json.dumps(value, ensure_ascii=False)`` without building an encoder per call (it does for
#: any argument but the defaults): a reply's tool inputs are measured before every request.
_JSON = json.JSONEncoder(ensure_ascii=False)


def context_window_for(model: str) -> int:
    """The window of ``model`` from the built-in table of model facts (the Models API's answer,
    once a provider has it, comes from ``provider.facts()``); ``DEFAULT_CONTEXT_WINDOW`` if
    unknown."""
    facts = built_in(model)
    return facts.context_window if facts is not None else DEFAULT_CONTEXT_WINDOW


def is_overflow(error: BaseException) -> bool:
    """Whether a failed request was refused because the prompt exceeds the context window."""
    return bool(_OVERFLOW.search(str(error)))


def reported_sizes(error: BaseException) -> tuple[int, int] | None:
    """``(tokens, maximum)`` from an API answer ``prompt is too long: N tokens > M maximum``."""
    match = _REPORTED.search(str(error))
    if match is None:
        return None
    return parse_count(match[1]), parse_count(match[2])


def parse_count(digits: str) -> int:
    """``"12,345"`` as ``12345``."""
    return int(digits.replace(",", ""))


# -- estimating ----------------------------------------------------------------------------------


def block_chars(block: Block) -> int:
    """About how many characters ``block`` costs (images at their token estimate)."""
    kind = block.get("type")
    if kind == "text":
        return len(str(block.get("text", ""))) + 8
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return len(content) + 40
        return 40 + sum(block_chars(part) for part in content if isinstance(part, dict))
    if kind == "image":
        return IMAGE_TOKENS * CHARS_PER_TOKEN
    if kind == "tool_use":
        return len(_JSON.encode(block.get("input", {}))) + 60
    return len(_JSON.encode(block))


def messages_tokens(messages: list[Message]) -> int:
    chars = sum(block_chars(b) + 0 for m in messages for b in content_blocks(m))
    return chars // CHARS_PER_TOKEN + 4 * len(messages)


class TokenEstimator:
    """Estimates the size of the next request from the last reply's reported input tokens.

    ``record`` after each reply: the provider's count of what was sent is exact; what was added
    since (the reply itself, tool results, a new prompt) is estimated at four characters a token,
    scaled by how the last report compared with the estimate. Only the new messages are walked,
    so estimating costs the same on turn 200 as on turn 2. With no report (the offline model
    reports none) the running estimate stands in for it.
    """

    def __init__(self) -> None:
        self._messages: list[Message] | None = None
        self._sent = 0
        #: Estimated (unscaled) tokens of what was sent, and the tokens it really was.
        self._raw = 0
        self._tokens = 0
        #: Reported tokens ÷ estimated tokens (1 before any report).
        self.scale = 1.0
        #: What ``estimate`` last walked of the messages added since the last report: (how many
        #: messages there were, how many of them were sent, their raw tokens). ``record`` right
        #: after it (the agent's request does both, with only the request between) takes it
        #: instead of walking them again; ``estimate`` itself always walks.
        self._walked: tuple[int, int, int] | None = None

    def forget(self) -> None:
        """After the conversation was rewritten: no report describes it any more."""
        self._messages = None
        self._walked = None

    def _new_tokens(self, messages: list[Message], *, reuse: bool = False) -> int:
        """Raw tokens of ``messages`` added since the last report (``_messages`` is them);
        ``reuse``: what the last ``estimate`` walked, if it walked these."""
        walked = self._walked
        if reuse and walked is not None and walked[:2] == (len(messages), self._sent):
            return walked[2]
        new = messages_tokens(messages[self._sent :])
        self._walked = (len(messages), self._sent, new)
        return new

    def _raw_total(self, messages: list[Message], fixed_tokens: int) -> int:
        if self._messages is messages and self._sent <= len(messages):
            return self._raw + self._new_tokens(messages, reuse=True)
        return messages_tokens(messages) + fixed_tokens

    def record(self, messages: list[Message], fixed_tokens: int, reported_tokens: int) -> None:
        """A reply came for a request carrying ``messages`` (all of them, as they are now)."""
        raw = self._raw_total(messages, fixed_tokens)
        self._walked = None  # what was walked is sent now: the next estimate walks what follows
        # a report far below the estimate (a proxy that counts nothing) is not believed
        if reported_tokens > 0 and raw > 0 and reported_tokens * 2 >= raw:
            self.scale = max(0.25, min(4.0, reported_tokens / raw))
            self._tokens = reported_tokens
        else:
            self._tokens = int(raw * self.scale)
        self._messages = messages
        self._sent = len(messages)
        self._raw = raw

    def estimate(self, messages: list[Message], fixed_tokens: int) -> int:
        """Tokens of a request carrying ``messages`` plus ``fixed_tokens`` (system, tools)."""
        if self._messages is messages and self._sent <= len(messages):
            return self._tokens + int(self._new_tokens(messages) * self.scale)
        return int((messages_tokens(messages) + fixed_tokens) * self.scale)
