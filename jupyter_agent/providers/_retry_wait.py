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

A client the user passes in (a proxy's, ``AsyncAnthropicBedrock``, ``AsyncAnthropicVertex``, an
``AsyncOpenAI`` of their own) is not of that class: ``capped_copy`` gives the provider a copy of
it (the SDK's ``with_options()``: same class, options, credentials and HTTP connection pool) whose
``_calculate_retry_timeout`` is capped on the instance. Why there and not elsewhere: the SDK's
retry loop also knows which failures are worth a retry (``x-should-retry``, timeouts, connection
errors, a Bedrock or Vertex token refreshed per attempt), which retries of our own with
``max_retries=0`` would have to copy; an httpx event hook that shortened the header would have to
be put on the user's own HTTP client, which other code shares. The user's client object itself
is left alone.
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


def capped_copy(client: Any, max_retry_wait: float) -> Any:
    """A copy of an SDK ``client`` whose retries wait at most ``max_retry_wait`` seconds; the
    client itself when it cannot be copied (an object that only looks like a client)."""
    if isinstance(client, RetryWaitCap):
        return client
    try:
        copy = client.with_options()
        calculate = copy._calculate_retry_timeout
    except Exception:
        return client

    def capped(*args: Any, **kwargs: Any) -> float:
        return min(float(calculate(*args, **kwargs)), max_retry_wait)

    copy._calculate_retry_timeout = capped
    return copy


def backoff(attempt: int, max_wait: float) -> float:
    """The wait before retry number ``attempt`` (from 1): the SDK's schedule, capped."""
    delay = min(_INITIAL_DELAY * 2.0 ** (attempt - 1), _MAX_DELAY)
    return min(delay * (1 - 0.25 * random.random()), max_wait)
