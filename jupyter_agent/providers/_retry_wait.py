"""A cap on how long the SDK waits before it retries, whatever ``retry-after`` says.

The ``anthropic`` SDK retries rate-limited and overloaded requests itself (``max_retries``,
exponential backoff) and honours the API's ``retry-after`` header — any value, up to about 49
days: a header of ``3600`` kept a notebook cell waiting an hour. ``AsyncAnthropicWithWaitCap`` is
the SDK's client with one override, ``_calculate_retry_timeout`` (where the SDK computes each
wait from the header or the backoff), so the SDK's own retry loop runs unchanged with no wait
longer than ``max_retry_wait`` seconds. The same cap bounds the backoff of the provider's own
retries of errors that arrive inside a stream (which the SDK does not retry).
"""

from __future__ import annotations

import random
from typing import Any

import anthropic

#: The longest wait before a retry, in seconds, unless the provider is told otherwise.
DEFAULT_MAX_RETRY_WAIT = 60.0
#: The SDK's backoff: 0.5 s doubling up to 8 s (anthropic._constants).
_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0


class AsyncAnthropicWithWaitCap(anthropic.AsyncAnthropic):
    """``anthropic.AsyncAnthropic`` whose retries never wait longer than ``max_retry_wait``."""

    def __init__(self, *, max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT, **options: Any) -> None:
        super().__init__(**options)
        self.max_retry_wait = max_retry_wait

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        wait: float = super()._calculate_retry_timeout(*args, **kwargs)
        return min(wait, self.max_retry_wait)


def backoff(attempt: int, max_wait: float) -> float:
    """The wait before retry number ``attempt`` (from 1): the SDK's schedule, capped."""
    delay = min(_INITIAL_DELAY * 2.0 ** (attempt - 1), _MAX_DELAY)
    return min(delay * (1 - 0.25 * random.random()), max_wait)
