"""``AnthropicProvider`` on its own: configuration, what it sends, how failures read."""

from __future__ import annotations

import asyncio
import re
import warnings
from pathlib import Path

import anthropic
import httpx2
import pytest
from fake_anthropic import (
    ErrorReply,
    FakeAnthropic,
    Reply,
    overloaded_stream,
    text,
    tool_use,
    user_texts,
)
from notebook_fake_server import serve

from jupyter_agent.agent.agent import Agent
from jupyter_agent.errors import ProviderError
from jupyter_agent.events import TextDelta, Usage
from jupyter_agent.providers.anthropic import DEFAULT_MODEL, AnthropicProvider
from jupyter_agent.providers.base import ModelRequest, ModelResponse, Provider
from jupyter_agent.tools.registry import ToolRegistry

SDK_MODELS = Path(anthropic.__file__).parent / "types" / "model_param.py"


def test_default_model_is_the_newest_sonnet_the_sdk_lists() -> None:
    listed = re.findall(r'"(claude-sonnet-[\d-]+)"', SDK_MODELS.read_text())
    assert DEFAULT_MODEL in listed

    def version(name: str) -> tuple[int, ...]:
        parts = [int(p) for p in name.removeprefix("claude-sonnet-").split("-") if len(p) < 8]
        return tuple(parts) + (0,) * (2 - len(parts))

    assert version(DEFAULT_MODEL) == max(version(name) for name in listed)


def test_model_from_argument_environment_or_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example.test")
    monkeypatch.delenv("JUPYTER_AGENT_MODEL", raising=False)
    provider = AnthropicProvider()
    assert provider.model == DEFAULT_MODEL and provider.name == "anthropic"
    assert isinstance(provider, Provider)
    assert provider.client.api_key == "sk-test-env"
    assert str(provider.client.base_url).startswith("https://proxy.example.test")
    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "claude-from-env")
    assert AnthropicProvider().model == "claude-from-env"
    assert AnthropicProvider("claude-explicit").model == "claude-explicit"
    assert "sk-test-env" not in repr(AnthropicProvider())


async def test_a_client_passed_in_is_used_as_is_and_not_closed() -> None:
    fake = FakeAnthropic(text("hi"))
    client = fake.client()
    provider = AnthropicProvider("claude-sonnet-5-5", client=client, max_tokens=123)
    assert provider.client is client
    events = [
        e async for e in provider.stream(ModelRequest("", [{"role": "user", "content": "x"}], []))
    ]
    assert fake.requests[0]["max_tokens"] == 123
    assert "system" not in fake.requests[0] and "tools" not in fake.requests[0]
    await provider.aclose()
    assert not client.is_closed()
    assert isinstance(events[-1], ModelResponse)


async def test_stream_yields_deltas_then_one_complete_response() -> None:
    fake = FakeAnthropic(
        Reply(
            [
                {"type": "text", "text": "Reading both files now."},
                tool_use("toolu_9", "read_file", {"file_path": "a b.txt", "n": [1, 2]}),
            ],
            usage={
                "input_tokens": 7,
                "output_tokens": 3,
                "cache_creation_input_tokens": 11,
                "cache_read_input_tokens": 13,
            },
            chunk=3,
        )
    )
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client())
    request = ModelRequest(
        "sys",
        [{"role": "user", "content": [{"type": "text", "text": "go"}]}],
        [
            {
                "name": "read_file",
                "description": "Read.",
                "input_schema": {"type": "object", "properties": {}},
            }
        ],
    )
    events = [e async for e in provider.stream(request)]
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(d.text for d in deltas) == "Reading both files now."
    assert len(deltas) == 8
    response = events[-1]
    assert (
        isinstance(response, ModelResponse)
        and sum(isinstance(e, ModelResponse) for e in events) == 1
    )
    assert response.content[1] == {
        "type": "tool_use",
        "id": "toolu_9",
        "name": "read_file",
        "input": {"file_path": "a b.txt", "n": [1, 2]},
    }
    assert response.stop_reason == "tool_use"
    assert response.usage == Usage(7, 3, 11, 13)
    assert response.model == "claude-sonnet-5-5"
    # the caller's request is not modified by the caching marks
    assert "cache_control" not in request.messages[0]["content"][0]
    assert "cache_control" not in request.tools[0]


async def test_cache_can_be_turned_off() -> None:
    fake = FakeAnthropic(text("ok"))
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client(), cache=False)
    request = ModelRequest(
        "sys",
        [{"role": "user", "content": "x"}],
        [{"name": "t", "description": "", "input_schema": {"type": "object"}}],
    )
    _ = [e async for e in provider.stream(request)]
    assert '"cache_control"' not in str(fake.requests[0]).replace("'", '"')


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [
        (
            401,
            "authentication_error",
            "401 — authentication_error: invalid x-api-key. Check ANTHROPIC_API_KEY.",
        ),
        (404, "not_found_error", "404 — not_found_error: invalid x-api-key. Check the model name"),
        (429, "rate_limit_error", "429 — rate_limit_error: invalid x-api-key"),
    ],
)
async def test_status_errors_read_clearly(status: int, kind: str, expected: str) -> None:
    fake = FakeAnthropic(
        ErrorReply(status, kind, "invalid x-api-key", headers={"retry-after-ms": "1"})
    )
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client())
    with pytest.raises(ProviderError) as caught:
        _ = [
            e
            async for e in provider.stream(ModelRequest("", [{"role": "user", "content": "x"}], []))
        ]
    assert expected in str(caught.value)
    assert "req_fake_error" in str(caught.value)
    assert "sk-test" not in str(caught.value)
    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)


async def test_401_is_not_retried() -> None:
    fake = FakeAnthropic(ErrorReply(401, "authentication_error", "bad key"), text("never"))
    provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client(max_retries=3))
    with pytest.raises(ProviderError, match="401"):
        _ = [
            e
            async for e in provider.stream(ModelRequest("", [{"role": "user", "content": "x"}], []))
        ]
    assert len(fake.requests) == 1


async def test_connection_failure_names_the_endpoint() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    client = anthropic.AsyncAnthropic(
        api_key="sk-test",
        base_url="https://unreachable.test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(refuse)),
    )
    provider = AnthropicProvider("claude-sonnet-5-5", client=client)
    with pytest.raises(
        ProviderError, match=r"Could not connect to the Anthropic API at https://unreachable\.test"
    ):
        _ = [
            e
            async for e in provider.stream(ModelRequest("", [{"role": "user", "content": "x"}], []))
        ]


async def test_overloaded_error_event_mid_stream_is_a_provider_error() -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return overloaded_stream()

    client = anthropic.AsyncAnthropic(
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    provider = AnthropicProvider("claude-sonnet-5-5", client=client)
    with pytest.raises(ProviderError, match="overloaded"):
        _ = [
            e
            async for e in provider.stream(ModelRequest("", [{"role": "user", "content": "x"}], []))
        ]


async def test_missing_credentials_say_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://nowhere.invalid")
    provider = AnthropicProvider("claude-sonnet-5-5")
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        _ = [
            e
            async for e in provider.stream(ModelRequest("", [{"role": "user", "content": "x"}], []))
        ]
    await provider.aclose()


def test_one_provider_serves_several_asyncio_runs_without_resending(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A script calling ``asyncio.run`` per chat: each run is a new event loop.

    Against a keep-alive server (like the real API) the SDK's pooled connection belongs to the
    first loop; reusing it failed after the request was written and the SDK's retry sent it a
    second time. The provider rebuilds the client it owns on a new loop instead.
    """
    fake = FakeAnthropic(text("first"), text("second"), text("third"))
    with serve(fake, keep_alive=True) as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        provider = AnthropicProvider("claude-sonnet-5-5")
        agent = Agent(provider, workspace=tmp_path, registry=ToolRegistry())
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # an owned client: no warning
            assert asyncio.run(agent.chat("one")) == "first"
            assert asyncio.run(agent.chat("two")) == "second"
            assert asyncio.run(agent.chat("three")) == "third"
        asyncio.run(provider.aclose())  # on yet another loop: nothing to close, no error
    assert [user_texts(r)[-1] for r in fake.requests] == ["one", "two", "three"]


def test_a_client_passed_in_on_a_new_loop_is_kept_with_a_warning(tmp_path: Path) -> None:
    fake = FakeAnthropic(text("first"), text("second"))
    client = fake.client()
    agent = Agent(
        AnthropicProvider("claude-sonnet-5-5", client=client),
        workspace=tmp_path,
        registry=ToolRegistry(),
    )
    assert asyncio.run(agent.chat("one")) == "first"
    with pytest.warns(RuntimeWarning, match="different event loop"):
        assert asyncio.run(agent.chat("two")) == "second"
    assert agent.provider.client is client  # type: ignore[attr-defined]
    assert len(fake.requests) == 2
