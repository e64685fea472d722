"""Approvals of calls made through ``%agent serve``: each outside client's own, kept apart from
the notebook model's, and a bounded queue of outside prompts.

Played by real MCP clients (the ``mcp`` SDK's streamable-HTTP client, one session each) against
a running ``ToolServer`` whose approval handler plays the user: it answers "Allow for this
session", "Deny" (with the notebook's own prompt widget, clicked), or waits.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agent.gate import Ask
from jupyter_agent.agent.toolbox import Toolbox
from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.notebook.runtime.bridge import BackgroundLoop
from jupyter_agent.notebook.serve.serve_http import MAX_WAITING_PROMPTS, ToolServer
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.decorator import tool

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

TOKEN = "approvals-test-token"


@tool
def shout(text: str) -> str:
    """Say ``text`` loudly."""
    return text.upper()


class User:
    """The approval handler: answers with ``answer`` and counts the questions."""

    def __init__(self, answer: Callable[[ApprovalRequest], Awaitable[Decision]]) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return await self.answer(request)


class Served:
    def __init__(self, tmp_path: Path) -> None:
        self.background = BackgroundLoop("test-serve-approvals")
        self.toolbox = Toolbox(ToolContext(tmp_path))
        self.toolbox.add_tool(shout)
        self.toolbox.set_policy("shout", "ask")
        self.server = ToolServer(self.toolbox, token=TOKEN)

    def handle_with(self, user: User) -> None:
        self.server.approval_handler = user

    def close(self) -> None:
        self.background.run(self.server.stop(), timeout=15)
        self.background.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    served = Served(tmp_path)
    try:
        served.background.run(served.server.start(0), timeout=30)
        yield served
    finally:
        served.close()


@asynccontextmanager
async def client(served: Served) -> Any:
    """One outside agent: an MCP session of its own."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with (
        http,
        streamable_http_client(served.server.url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def allow_for_session(_request: ApprovalRequest) -> Decision:
    return Decision(True, remember=True)


async def deny(_request: ApprovalRequest) -> Decision:
    return Decision(False, "the user clicked Deny in the notebook")


def test_allow_for_this_session_holds_for_that_client_only(served: Served) -> None:
    user = User(allow_for_session)
    served.handle_with(user)

    async def go() -> tuple[Any, Any, Any]:
        async with client(served) as first:
            once = await first.call_tool("shout", {"text": "one"})
            again = await first.call_tool("shout", {"text": "two"})
            user.answer = deny
            async with client(served) as second:
                other = await second.call_tool("shout", {"text": "three"})
        return once, again, other

    once, again, other = asyncio.run(go())
    assert text_of(once) == "ONE" and text_of(again) == "TWO"
    assert [r.input["text"] for r in user.asked] == ["one", "three"], "the client was asked again"
    assert other.is_error, "another client ran on the first one's approval"
    # and the notebook's own model still asks
    verdict = served.toolbox.gate.verdict("shout", {"text": "model"})
    assert isinstance(verdict, Ask), f"the notebook's model got {verdict}"
    assert served.toolbox.get_policy("shout") == "ask"


def test_the_notebook_models_allow_for_this_session_does_not_let_outside_calls_through(
    served: Served,
) -> None:
    model_user = User(allow_for_session)
    request = ApprovalRequest("toolu_1", "shout", {"text": "model"})
    decided = served.background.run(served.toolbox.gate.decide(model_user, request), timeout=10)
    assert type(decided).__name__ == "Run"
    # the model itself is allowed from now on
    assert not isinstance(served.toolbox.gate.verdict("shout", {"text": "m"}), Ask)
    outside = User(deny)
    served.handle_with(outside)

    async def go() -> Any:
        async with client(served) as session:
            return await session.call_tool("shout", {"text": "outside"})

    result = asyncio.run(go())
    assert [r.input["text"] for r in outside.asked] == ["outside"], "the outside call was not asked"
    assert result.is_error


def test_outside_prompts_queue_up_to_a_cap(served: Served) -> None:
    answer = threading.Event()

    async def wait_for_the_user(_request: ApprovalRequest) -> Decision:
        while not answer.is_set():
            await asyncio.sleep(0.02)
        return Decision(True)

    user = User(wait_for_the_user)
    served.handle_with(user)
    calls = MAX_WAITING_PROMPTS + 3

    async def go() -> list[Any]:
        async with client(served) as session:
            pending = [
                asyncio.ensure_future(session.call_tool("shout", {"text": f"c{i}"}))
                for i in range(calls)
            ]
            done, _ = await asyncio.wait(pending, timeout=5)
            refused = [task.result() for task in done]
            answer.set()
            rest = await asyncio.gather(*(task for task in pending if task not in done))
            return [*refused, *rest]

    results = asyncio.run(asyncio.wait_for(go(), 60))
    refused = [r for r in results if r.is_error]
    ran = [r for r in results if not r.is_error]
    assert len(refused) == calls - MAX_WAITING_PROMPTS, [text_of(r) for r in results]
    assert len(ran) == MAX_WAITING_PROMPTS
    assert all("wait for the user's approval" in text_of(r) for r in refused), text_of(refused[0])


def test_a_deny_without_a_reason_reads_sensibly(served: Served) -> None:
    """The notebook's own prompt, Deny clicked with nothing typed."""
    from jupyter_agent.notebook.views.widgets.approval_prompt import ApprovalPrompt

    async def click_deny(request: ApprovalRequest) -> Decision:
        prompt = ApprovalPrompt(request)
        prompt.deny_button.click()
        assert prompt.decision is not None
        return prompt.decision

    served.handle_with(User(click_deny))

    async def go() -> Any:
        async with client(served) as session:
            return await session.call_tool("shout", {"text": "no"})

    result = asyncio.run(go())
    said = text_of(result)
    assert result.is_error
    assert "The user said: the user clicked Deny" not in said, said
    assert said.startswith("Error: the user declined this call of shout"), said
    assert "not run" in said


def test_a_host_allowed_to_an_outside_client_is_not_allowed_to_others(tmp_path: Path) -> None:
    """``web_fetch`` asks before a new host; "allow for this session" given to an outside
    client's call covers that client only (the question is the tool's own: the host)."""
    served = Served(tmp_path)
    served.toolbox.registry.enable("web_fetch")
    url = {"url": "http://192.0.2.1/page"}  # TEST-NET: refused before any request
    try:
        served.background.run(served.server.start(0), timeout=30)
        user = User(allow_for_session)
        served.handle_with(user)

        async def go() -> None:
            async with client(served) as first:
                await first.call_tool("web_fetch", url)
                await first.call_tool("web_fetch", url)
            user.answer = deny
            async with client(served) as second:
                await second.call_tool("web_fetch", url)

        asyncio.run(go())
        assert len(user.asked) == 2, [r.input for r in user.asked]
        assert "192.0.2.1" in user.asked[0].reason
        assert isinstance(served.toolbox.gate.verdict("web_fetch", url), Ask)  # the agent asks
    finally:
        served.close()
