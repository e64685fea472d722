"""The tests' fake Messages API speaks the contract the installed SDK types.

``model_contract.py`` is the one table the fake enforces. These tests pin it to the SDK: a model,
a thinking type, an effort level, a ``display`` value, a capability or a stop reason that an SDK
upgrade adds makes them fail until someone reads the docs and decides what the fake (and the
package) does with it. They also play the table's rules through the real SDK against the fake.
"""

from __future__ import annotations

import asyncio
import typing
from typing import Any

import anthropic
import pytest
from anthropic.types import (
    EffortCapability,
    ModelCapabilities,
    ModelInfo,
    OutputConfigParam,
    ThinkingConfigAdaptiveParam,
    ThinkingTypes,
)
from anthropic.types.model_param import ModelParam
from anthropic.types.stop_reason import StopReason
from anthropic.types.thinking_config_param import ThinkingConfigParam
from fake_anthropic import FakeAnthropic, progress, text, thinking, tool_use
from model_contract import (
    BY_ID,
    CAPABILITY_KEYS,
    DISPLAYS,
    EFFORT_LEVELS,
    RULES,
    STOP_REASONS,
    THINKING_TYPES,
)

TOOL = {"name": "look", "description": "d", "input_schema": {"type": "object"}}


def _literals(annotation: Any) -> set[str]:
    """The string literals inside a (possibly nested, Optional, Union) annotation."""
    found: set[str] = set()
    for arg in typing.get_args(annotation):
        if isinstance(arg, str):
            found.add(arg)
        else:
            found |= _literals(arg)
    return found


# -- the table against the installed SDK ---------------------------------------------------------


def test_every_model_the_sdk_names_has_a_row() -> None:
    named = _literals(ModelParam)
    assert named, "the SDK's ModelParam lists no model ids"
    assert named - set(BY_ID) == set(), "a model the SDK knows is missing from model_contract"


def test_thinking_types_match_the_sdk() -> None:
    assert set(ThinkingTypes.model_fields) == set(THINKING_TYPES)
    request_types: set[str] = set()
    for member in typing.get_args(ThinkingConfigParam):
        request_types |= _literals(typing.get_type_hints(member)["type"])
    assert request_types == set(THINKING_TYPES)
    assert _literals(typing.get_type_hints(ThinkingConfigAdaptiveParam)["display"]) == set(DISPLAYS)


def test_effort_levels_match_the_sdk() -> None:
    assert set(EffortCapability.model_fields) - {"supported"} == set(EFFORT_LEVELS)
    assert _literals(typing.get_type_hints(OutputConfigParam)["effort"]) == set(EFFORT_LEVELS)


def test_capabilities_and_model_info_fields_match_the_sdk() -> None:
    assert set(ModelCapabilities.model_fields) == set(CAPABILITY_KEYS)
    assert set(ModelInfo.model_fields) == {
        "id",
        "capabilities",
        "created_at",
        "deprecated_at",
        "display_name",
        "lifecycle",
        "line",
        "max_input_tokens",
        "max_tokens",
        "retires_at",
        "type",
    }


def test_stop_reasons_match_the_sdk() -> None:
    assert _literals(StopReason) == set(STOP_REASONS)


def test_every_row_reads_as_the_sdk_model_info() -> None:
    from model_contract import model_info

    for rule in RULES:
        info = ModelInfo.model_validate(model_info(rule))
        assert info.capabilities is not None
        assert info.capabilities.thinking.types.adaptive.supported == ("adaptive" in rule.thinking)
        assert rule.source, rule.id


# -- the rules, played through the SDK -----------------------------------------------------------


def _run(fake: FakeAnthropic, **params: Any) -> Any:
    async def go() -> Any:
        client = fake.client()
        try:
            return await client.messages.create(**params)
        finally:
            await client.close()

    return asyncio.run(go())


def _request(model: str = "claude-sonnet-5-5", **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 4000,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 2000}}, "thinking.type.enabled"),
        ({"thinking": {"type": "disabled"}}, "thinking.type.disabled"),
        ({"extra_body": {"temperature": 0.5}}, "temperature"),
        ({"tools": [TOOL], "tool_choice": {"type": "any"}}, "forced tool use"),
        (
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "Sure"},
                ]
            },
            "prefill",
        ),
    ],
)
def test_sonnet_5_5_refuses_what_its_migration_guide_says(
    extra: dict[str, Any], message: str
) -> None:
    fake = FakeAnthropic(text("never"))
    with pytest.raises(anthropic.BadRequestError, match=message):
        _run(fake, **_request(**extra))


def test_budgets_work_where_the_model_takes_them() -> None:
    fake = FakeAnthropic(text("ok"))
    reply = _run(
        fake,
        **_request("claude-haiku-4-5", thinking={"type": "enabled", "budget_tokens": 1024}),
    )
    assert reply.content[0].text == "ok"


def test_an_unknown_or_retired_model_is_a_404() -> None:
    for model in ("claude-nonesuch", "claude-3-7-sonnet-20250219"):
        with pytest.raises(anthropic.NotFoundError):
            _run(FakeAnthropic(text("never")), **_request(model))


def test_the_models_api_answers_model_info() -> None:
    fake = FakeAnthropic()

    async def go() -> tuple[Any, list[str]]:
        client = fake.client()
        info = await client.models.retrieve("claude-sonnet-5-5")
        ids = [m.id async for m in client.models.list()]
        with pytest.raises(anthropic.NotFoundError):
            await client.models.retrieve("claude-nope")
        await client.close()
        return info, ids

    info, ids = asyncio.run(go())
    assert info.max_input_tokens == 1_000_000
    assert info.capabilities is not None
    assert info.capabilities.thinking.types.enabled.supported is False
    assert "claude-fable-5-2" in ids


def test_display_decides_what_thinking_text_comes_back() -> None:
    def reply() -> Any:
        return FakeAnthropic(
            _reply(
                [
                    thinking("deep reasoning"),
                    progress("Reading the file now"),
                    {"type": "text", "text": "done"},
                ]
            )
        )

    omitted = _run(reply(), **_request())
    assert [b.thinking for b in omitted.content if b.type == "thinking"] == ["", ""]
    summarized = _run(reply(), **_request(thinking={"type": "adaptive", "display": "summarized"}))
    assert [b.thinking for b in summarized.content if b.type == "thinking"] == [
        "deep reasoning",
        "Reading the file now",
    ]


def _reply(content: list[dict[str, Any]]) -> Any:
    from fake_anthropic import Reply

    return Reply(content)


def test_a_thinking_block_is_bound_to_its_prefix() -> None:
    fake = FakeAnthropic(
        _reply([thinking("plan"), tool_use("t1", "look", {})]), text("ok"), text("never")
    )
    first = _run(fake, **_request(tools=[TOOL]))
    assistant = {"role": "assistant", "content": [b.to_dict() for b in first.content]}
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
    }
    messages = [{"role": "user", "content": "hi"}, assistant, result]
    # sent back exactly as received: accepted
    _run(fake, **_request(tools=[TOOL], messages=messages))
    # the tool list changed under the block: refused
    other = {**TOOL, "description": "changed"}
    with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
        _run(fake, **_request(tools=[other], messages=messages))


def test_mid_conversation_system_messages_and_tool_changes() -> None:
    fake = FakeAnthropic(text("a"), text("b"), text("c"))
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "go on"},
        {
            "role": "system",
            "content": [
                {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "look"}}
            ],
        },
    ]

    async def go(betas: list[str]) -> Any:
        client = fake.client()
        try:
            return await client.beta.messages.create(
                model="claude-sonnet-5-5",
                max_tokens=100,
                tools=[TOOL],
                messages=messages,
                betas=betas,
            )
        finally:
            await client.close()

    with pytest.raises(anthropic.BadRequestError, match="mid-conversation-tool-changes"):
        asyncio.run(go([]))
    asyncio.run(go(["mid-conversation-tool-changes-2026-07-01"]))
    # Sonnet 5 has no system messages
    with pytest.raises(anthropic.BadRequestError, match="role 'system' is not supported"):
        _run(
            fake,
            **_request(
                "claude-sonnet-5",
                messages=[*messages[:3], {"role": "system", "content": "be brief"}],
            ),
        )


def test_usage_accounts_the_prompt_cache_by_prefix() -> None:
    fake = FakeAnthropic(text("a"), text("b"))
    system = [{"type": "text", "text": "S" * 4000, "cache_control": {"type": "ephemeral"}}]
    first = _run(fake, **_request(system=system))
    second = _run(fake, **_request(system=system))
    assert first.usage.cache_creation_input_tokens > 0
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
