"""Retries against a loopback Messages API, through the client the provider builds.

Played faults: a 429 whose ``retry-after`` asks for an hour (the SDK honoured any value, so a
cell could wait an hour); an ``overloaded_error`` event inside a 200 stream (the SDK does not
retry it; it surfaced as "API error 200" on the first occurrence), also after text was shown.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import anthropic
import httpx2
import pytest
from anthropic._models import FinalRequestOptions
from fake_anthropic import ErrorReply, FakeAnthropic, overloaded_stream, text
from notebook_fake_server import serve

from jupyter_agent.errors import ProviderError
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.base import ModelRequest, ModelResponse

REQUEST = ModelRequest("", [{"role": "user", "content": "hello"}], [])


class OverloadedStreams:
    """Answers the first ``failures`` requests with a 200 stream that breaks with an
    ``overloaded_error`` event (after ``text_first``, if given), then serves ``fake``."""

    def __init__(self, fake: FakeAnthropic, failures: int, text_first: str = "") -> None:
        self.fake = fake
        self.failures = failures
        self.text_first = text_first
        self.requests = 0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        if self.requests > self.failures:
            return await self.fake.handle(request)
        return overloaded_stream(self.text_first)


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")

    def start(fake: object) -> object:
        context = serve(fake)  # type: ignore[arg-type]
        monkeypatch.setenv("ANTHROPIC_BASE_URL", context.__enter__())
        contexts.append(context)
        return fake

    contexts: list[object] = []
    yield start
    for context in contexts:
        context.__exit__(None, None, None)  # type: ignore[attr-defined]


async def reply_of(provider: AnthropicProvider) -> ModelResponse:
    events = [event async for event in provider.stream(REQUEST)]
    response = events[-1]
    assert isinstance(response, ModelResponse)
    await provider.aclose()
    return response


async def test_an_hour_of_retry_after_waits_only_the_cap(loopback) -> None:  # type: ignore[no-untyped-def]
    fake = loopback(
        FakeAnthropic(
            ErrorReply(429, "rate_limit_error", "Slow down", headers={"retry-after": "3600"}),
            text("Back."),
        )
    )
    provider = AnthropicProvider("claude-sonnet-5-5", max_retries=1, max_retry_wait=0.2)
    started = time.monotonic()
    # waiting the hour would outlast the 60 s that only stops a hung test
    response = await asyncio.wait_for(reply_of(provider), 60)
    elapsed = time.monotonic() - started
    assert response.content == [{"type": "text", "text": "Back."}]
    assert len(fake.requests) == 2
    assert elapsed >= 0.2  # the cap was waited (a lower bound: load cannot break it)


def test_the_default_cap_is_a_minute() -> None:
    provider = AnthropicProvider("claude-sonnet-5-5", client=None)
    client = provider.client
    options = FinalRequestOptions(method="post", url="/v1/messages")
    for header in ({"retry-after": "3600"}, {"retry-after-ms": "3600000"}):
        wait = client._calculate_retry_timeout(2, options, httpx2.Headers(header))
        assert wait == 60.0
    assert client._calculate_retry_timeout(2, options, httpx2.Headers({"retry-after": "3"})) == 3.0
    tighter = AnthropicProvider("claude-sonnet-5-5", max_retry_wait=5).client.with_options(
        timeout=9
    )
    assert (
        tighter._calculate_retry_timeout(2, options, httpx2.Headers({"retry-after": "3600"})) == 5
    )


async def test_rate_limit_after_the_retries_says_what_the_api_asked(loopback) -> None:  # type: ignore[no-untyped-def]
    fake = loopback(
        FakeAnthropic(
            *[ErrorReply(429, "rate_limit_error", "Slow down", headers={"retry-after": "3600"})] * 2
        )
    )
    provider = AnthropicProvider("claude-sonnet-5-5", max_retries=1, max_retry_wait=0.01)
    with pytest.raises(ProviderError) as caught:
        await reply_of(provider)
    message = str(caught.value)
    assert "rate_limit_error: Slow down" in message and "wait 3600 s" in message
    assert len(fake.requests) == 2


async def test_an_overloaded_stream_is_retried(loopback) -> None:  # type: ignore[no-untyped-def]
    server = loopback(OverloadedStreams(FakeAnthropic(text("Made it.")), failures=2))
    provider = AnthropicProvider("claude-sonnet-5-5", max_retries=2, max_retry_wait=0.01)
    response = await reply_of(provider)
    assert response.content == [{"type": "text", "text": "Made it."}]
    assert server.requests == 3


async def test_an_overloaded_stream_that_stays_overloaded_names_the_error(loopback) -> None:  # type: ignore[no-untyped-def]
    server = loopback(OverloadedStreams(FakeAnthropic(text("never")), failures=3))
    provider = AnthropicProvider("claude-sonnet-5-5", max_retries=2, max_retry_wait=0.01)
    with pytest.raises(ProviderError) as caught:
        await reply_of(provider)
    message = str(caught.value)
    assert "overloaded_error: Overloaded" in message and "after 3 attempts" in message
    assert "200" not in message
    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)
    assert server.requests == 3


async def test_a_stream_that_already_showed_text_is_retried_and_taken_back(loopback) -> None:  # type: ignore[no-untyped-def]
    """The SPEC (issue 22): an ``overloaded_error`` after text was shown is retried too; a
    ``TextReset`` tells the caller that the text it showed is replaced by the retry's."""
    from jupyter_agent.events import TextDelta, TextReset

    server = loopback(
        OverloadedStreams(FakeAnthropic(text("again")), failures=1, text_first="Half an ans")
    )
    provider = AnthropicProvider("claude-sonnet-5-5", max_retries=2, max_retry_wait=0.01)
    seen = [event async for event in provider.stream(REQUEST)]
    await provider.aclose()
    assert server.requests == 2
    assert seen[:2] == [TextDelta("Half an ans"), TextReset()]
    assert "".join(e.text for e in seen[2:] if isinstance(e, TextDelta)) == "again"
    assert isinstance(seen[-1], ModelResponse)


async def test_a_client_passed_in_keeps_its_retry_count_for_streams() -> None:
    server = OverloadedStreams(FakeAnthropic(text("ok")), failures=1)
    client = anthropic.AsyncAnthropic(
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(server.handle)),
    )
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, max_retry_wait=0.01)
    with pytest.raises(ProviderError, match="in the stream — overloaded_error: Overloaded"):
        await reply_of(provider)
    assert server.requests == 1
