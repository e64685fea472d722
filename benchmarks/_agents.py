"""Both sides of the agent-loop figures (2 and 3), pointed at the same loopback server.

Ours: ``Agent`` + ``AnthropicProvider`` (its defaults: server-side threads, like the SDK runner's)
with a registry holding one ``@tool``. Theirs: the SDK's
``client.beta.messages.tool_runner`` with the equivalent ``@beta_async_tool``, streaming like ours
(``stream=True``; each streamed reply is read to the end, as a UI would). Each side gets its own
``AsyncAnthropic`` client (no retries) so connection reuse is the same for both.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any

from ._harness import require

ToolBody = Callable[[int], Awaitable[str]]


def sdk_client(base_url: str) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=0)


class OurSide:
    """Builds a fresh ``Agent`` for each chat over one provider (one connection pool)."""

    def __init__(self, base_url: str, model: str, body: ToolBody, *, max_turns: int) -> None:
        agent_module = require("jupyter_agent.agent.agent")
        provider_module = require("jupyter_agent.providers.anthropic")
        decorator = require("jupyter_agent.tools.decorator")
        self._registry_module = require("jupyter_agent.tools.registry")
        self._agent_class = agent_module.Agent
        self.client = sdk_client(base_url)
        # threads on, as against Anthropic's own API (off by default through another base_url)
        self.provider = provider_module.AnthropicProvider(model, client=self.client, threads=True)
        self._max_turns = max_turns
        self._workspace = tempfile.mkdtemp(prefix="jabench-agent-")

        async def work(i: int) -> str:
            """Do the benchmark's unit of work.

            Args:
                i: which call this is
            """
            return await body(i)

        self._tool = decorator.tool(name="work")(work)

    async def chat(self) -> str:
        registry = self._registry_module.ToolRegistry()
        registry.register(self._tool)
        agent = self._agent_class(
            self.provider,
            workspace=self._workspace,
            max_turns=self._max_turns,
            registry=registry,
        )
        text: str = await agent.chat("Go.")
        if "Done after" not in text:
            raise RuntimeError(f"our agent ended unexpectedly: {text!r}")
        return text

    async def aclose(self) -> None:
        import shutil

        await self.client.close()
        shutil.rmtree(self._workspace, ignore_errors=True)


class TheirSide:
    """The SDK tool runner, streaming, with its default options unless ``thread=False``."""

    def __init__(self, base_url: str, model: str, body: ToolBody, *, thread: bool = True) -> None:
        from anthropic.lib.tools import beta_async_tool

        self.client = sdk_client(base_url)
        self._model = model
        self._thread = thread

        async def work(i: int) -> str:
            """Do the benchmark's unit of work.

            Args:
                i: which call this is
            """
            return await body(i)

        self._tool = beta_async_tool(work)

    async def chat(self) -> str:
        extra: dict[str, Any] = {} if self._thread else {"thread": False}
        runner = self.client.beta.messages.tool_runner(
            model=self._model,
            max_tokens=1024,
            messages=[{"role": "user", "content": "Go."}],
            tools=[self._tool],
            stream=True,
            **extra,
        )
        text = ""
        async for stream in runner:
            async for _event in stream:
                pass
            message = await stream.get_final_message()
            text = "".join(b.text for b in message.content if b.type == "text")
        if "Done after" not in text:
            raise RuntimeError(f"the SDK runner ended unexpectedly: {text!r}")
        return text

    async def aclose(self) -> None:
        await self.client.close()


async def trivial(i: int) -> str:
    return f"ok {i}"


def sleeper(seconds: float) -> ToolBody:
    async def body(i: int) -> str:
        await asyncio.sleep(seconds)
        return f"slept {i}"

    return body
