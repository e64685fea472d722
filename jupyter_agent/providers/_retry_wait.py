"""A cap on how long the SDK waits before it retries, whatever ``retry-after`` says.

The ``anthropic`` SDK retries rate-limited and overloaded requests itself (``max_retries``,
exponential backoff) and honours the API's ``retry-after`` header — any value, up to about 49
days: a header of ``3600`` kept a notebook cell waiting an hour (the ``openai`` SDK, built from the
same generator, honours up to two minutes). ``RetryWaitCap`` gives an SDK client one override,
``_calculate_retry_timeout`` (where both SDKs compute each wait from the header or the backoff),
so the SDK's own retry loop runs unchanged with no wait longer than ``max_retry_wait`` seconds;
each provider mixes it into the client class it builds (this module imports neither SDK). The
same cap bounds the backoff of the Anthropic provider's own retries of errors that arrive inside
a stream (which the SDK does not retry).
"""

from __future__ import annotations

import random
from typing import Any

#: The longest wait before a retry, in seconds, unless the provider is told otherwise.
DEFAULT_MAX_RETRY_WAIT = 60.0
#: The SDK's backoff: 0.5 s doubling up to 8 s (anthropic._constants).
_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0


class RetryWaitCap:
    """Mixin for an SDK client class: retries never wait longer than ``max_retry_wait``."""

    max_retry_wait: float

    def __init__(self, *, max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT, **options: Any) -> None:
        super().__init__(**options)
        self.max_retry_wait = max_retry_wait

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        wait: float = super()._calculate_retry_timeout(*args, **kwargs)  # type: ignore[misc]
        return min(wait, self.max_retry_wait)

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        """The SDK's ``copy``/``with_options``, keeping the cap."""
        client = super().copy(*args, **kwargs)  # type: ignore[misc]
        client.max_retry_wait = self.max_retry_wait
        return client

    with_options = copy


def backoff(attempt: int, max_wait: float) -> float:
    """The wait before retry number ``attempt`` (from 1): the SDK's schedule, capped."""
    delay = min(_INITIAL_DELAY * 2.0 ** (attempt - 1), _MAX_DELAY)
    return min(delay * (1 - 0.25 * random.random()), max_wait)
