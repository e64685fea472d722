"""``OpenAIProvider`` against servers that hold it to their documented rules (issue 32, point 6).

OpenAI's reasoning models — gpt-5.x, the provider's default ``gpt-5.4-mini`` included, and the
o-series — refuse ``max_tokens`` (a 400 that names it) and take ``max_completion_tokens``; other
servers may refuse it too. Ollama versions that lose tool calls while streaming
(ollama/ollama#12557, #9632) end the stream ``stop`` with the calls announced but none in it, so
the agent silently never ran the tool. The fake server (``fake_openai.RULES``) answers as those
servers do; the provider is driven through the real ``openai`` SDK.
"""

from __future__ import annotations

from pathlib import Path

import agent_builder
import pytest
from fake_openai import FakeChatServer, add, chunk, fail, text_reply, tool_reply

from jupyter_agent.agent.agent import Agent
from jupyter_agent.events import AgentFinished, TextDelta, TextReset, ToolCallFinished
from jupyter_agent.providers.openai_compat import DEFAULT_MODEL, OpenAIProvider


def _agent(provider: OpenAIProvider, tmp_path: Path) -> Agent:
    return agent_builder.make_agent(provider, tmp_path, add, fail, system_prompt="Be brief.")


@pytest.mark.parametrize("model", [DEFAULT_MODEL, "gpt-5", "gpt-5.1", "o3-mini", "o4-mini", "o1"])
async def test_reasoning_models_get_max_completion_tokens(model: str, tmp_path: Path) -> None:
    server = FakeChatServer(text_reply("Hi."), model=model)
    agent = _agent(server.provider(max_tokens=500), tmp_path)
    assert await agent.chat("hello") == "Hi."
    assert server.refused == []
    [request] = server.requests
    assert request["max_completion_tokens"] == 500
    assert "max_tokens" not in request


@pytest.mark.parametrize("model", ["local-model", "llama3.2", "qwen3-coder:30b", "gpt-4o"])
async def test_other_models_keep_max_tokens(model: str, tmp_path: Path) -> None:
    """llama.cpp, vLLM and Ollama know ``max_tokens``; some older builds ignore the new name."""
    server = FakeChatServer(text_reply("Hi."), model=model)
    assert await _agent(server.provider(max_tokens=500), tmp_path).chat("hello") == "Hi."
    assert server.requests[0]["max_tokens"] == 500
    assert "max_completion_tokens" not in server.requests[0]


async def test_a_server_that_refuses_max_tokens_gets_max_completion_tokens(
    tmp_path: Path,
) -> None:
    """A proxy or deployment serving a reasoning model under another name: the 400 naming
    ``max_tokens`` is answered by sending the other field, then and from then on."""
    server = FakeChatServer(
        text_reply("First."), text_reply("Second."), model="my-deployment", refuses_max_tokens=True
    )
    agent = _agent(server.provider(max_tokens=300), tmp_path)
    assert await agent.chat("one") == "First."
    assert await agent.chat("two") == "Second."
    refused, retried, later = server.requests
    assert refused["max_tokens"] == 300 and len(server.refused) == 1
    assert retried["max_completion_tokens"] == 300 and "max_tokens" not in retried
    assert later["max_completion_tokens"] == 300 and "max_tokens" not in later


async def test_a_stream_that_drops_its_tool_calls_is_retried_once_without_streaming(
    tmp_path: Path,
) -> None:
    server = FakeChatServer(
        tool_reply([("call_1", "add", '{"a": 19, "b": 23}')]),
        text_reply("The answer is 42."),
        drops_streamed_tool_calls=True,
    )
    agent = _agent(server.provider(), tmp_path)
    events = [e async for e in agent.stream_chat("What is 19 + 23?")]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.name, e.output) for e in finished] == [("add", "42")], events
    streamed, again, after_tool = server.requests
    assert streamed["stream"] is True
    assert again["stream"] is False and "stream_options" not in again
    assert again["messages"] == streamed["messages"] and again["tools"] == streamed["tools"]
    assert after_tool["stream"] is True
    final = events[-1]
    assert isinstance(final, AgentFinished)
    assert final.text == "Working on it.\n\nThe answer is 42."
    # the streamed text was voided before the complete reply's text: the cell shows it once
    assert any(isinstance(e, TextReset) for e in events)
    shown: list[str] = []
    for event in events:
        if isinstance(event, TextReset):
            shown.clear()
        elif isinstance(event, TextDelta):
            shown.append(event.text)
    assert "".join(shown).count("Working on it.") == 1


async def test_a_reply_that_never_delivers_its_calls_is_retried_only_once(tmp_path: Path) -> None:
    announced = [
        chunk({"role": "assistant", "content": "", "tool_calls": []}),
        chunk({}, "tool_calls"),
    ]
    server = FakeChatServer(announced, text_reply("unused"))
    agent = _agent(server.provider(), tmp_path)
    events = [e async for e in agent.stream_chat("go")]
    assert len(server.requests) == 2  # the stream, then once without streaming; no loop
    assert isinstance(events[-1], AgentFinished)
    assert not [e for e in events if isinstance(e, ToolCallFinished)]


async def test_a_plain_answer_is_not_asked_again(tmp_path: Path) -> None:
    server = FakeChatServer(text_reply("Just text."), drops_streamed_tool_calls=True)
    assert await _agent(server.provider(), tmp_path).chat("hi") == "Just text."
    assert len(server.requests) == 1


async def test_an_empty_tool_calls_field_in_a_text_reply_is_not_an_announcement(
    tmp_path: Path,
) -> None:
    """Some servers put ``"tool_calls": []`` in every delta: a plain answer is not asked twice."""
    noisy = [
        chunk({"role": "assistant", "content": "", "tool_calls": []}),
        chunk({"content": "Plain.", "tool_calls": []}),
        chunk({}, "stop"),
    ]
    server = FakeChatServer(noisy)
    assert await _agent(server.provider(), tmp_path).chat("hi") == "Plain."
    assert len(server.requests) == 1
