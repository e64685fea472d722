"""Our MCP client against the reference "everything" MCP server (npm, pinned).

That server registers its roots, elicitation and sampling tools only after ``initialize``, and
only when the client declares those capabilities, then says ``tools/list_changed``: a client
without them never sees those tools. These tests connect as a user's session does
(``Agent.add_mcp_server``), answer through ``ClientHooks`` as the notebook does (a form
answered, a sampling request approved), and check what the server reports back.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from npm_packages import SERVER_EVERYTHING, npm_package

from jupyter_agent import Agent
from jupyter_agent.mcp.client_features import Form, FormAnswer, SamplingRequest
from jupyter_agent.providers.offline import OfflineProvider

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def everything() -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    return [node, str(npm_package(SERVER_EVERYTHING) / "dist" / "index.js"), "stdio"]


@pytest.fixture
async def agent(tmp_path: Path, everything: list[str]) -> AsyncIterator[Agent]:
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    hooks = agent.toolbox.mcp.hooks
    asked: list[Form] = []
    sampled: list[SamplingRequest] = []

    async def answer(form: Form) -> FormAnswer:
        asked.append(form)
        return form.initial() | {"name": "Ada Lovelace", "check": True}

    async def complete(request: SamplingRequest) -> str:
        sampled.append(request)
        return "Roses are red."

    hooks.ask = answer
    hooks.sample = complete
    agent.asked = asked  # type: ignore[attr-defined]
    agent.sampled = sampled  # type: ignore[attr-defined]
    await agent.add_mcp_server("everything", command=everything, policy="allow", roots=[tmp_path])
    try:
        yield agent
    finally:
        await agent.toolbox.aclose()


async def tool_appears(agent: Agent, name: str) -> None:
    async with asyncio.timeout(20):
        while not agent.registry.has_tool(name):
            await asyncio.sleep(0.05)


async def test_tools_announced_after_initialize_join_the_registry(agent: Agent) -> None:
    """list_changed: without it the conditional tools were never seen."""
    for name in ("get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"):
        await tool_appears(agent, f"everything__{name}")
    assert agent.get_policy("everything__trigger-sampling-request") == "allow"


async def test_roots_are_the_folders_configured_for_the_server(
    agent: Agent, tmp_path: Path
) -> None:
    await tool_appears(agent, "everything__get-roots-list")
    result = await agent.registry.call("everything__get-roots-list", {})
    assert not result.is_error, result.content
    assert tmp_path.resolve().as_uri() in result.content


async def test_without_configured_roots_the_client_declares_none(
    tmp_path: Path, everything: list[str]
) -> None:
    """The server adds its roots tool only for a client that declares roots."""
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    try:
        await agent.add_mcp_server("plain", command=everything, policy="allow")
        await tool_appears(agent, "plain__trigger-elicitation-request")  # list_changed came
        assert not agent.registry.has_tool("plain__get-roots-list")
    finally:
        await agent.toolbox.aclose()


async def test_an_elicitation_is_answered_through_the_form(agent: Agent) -> None:
    await tool_appears(agent, "everything__trigger-elicitation-request")
    result = await agent.registry.call("everything__trigger-elicitation-request", {})
    assert not result.is_error, result.content
    (form,) = agent.asked  # type: ignore[attr-defined]
    assert form.server == "everything"
    assert {f.name for f in form.fields} >= {"name", "check", "firstLine"}
    assert "Ada Lovelace" in result.content
    assert "It was a dark and stormy night." in result.content  # the default kept


async def test_an_elicitation_nobody_can_answer_is_declined(agent: Agent) -> None:
    agent.toolbox.mcp.hooks.ask = None
    await tool_appears(agent, "everything__trigger-elicitation-request")
    result = await agent.registry.call("everything__trigger-elicitation-request", {})
    assert "declined" in result.content


async def test_sampling_goes_through_the_session_after_approval(agent: Agent) -> None:
    await tool_appears(agent, "everything__trigger-sampling-request")
    result = await agent.registry.call(
        "everything__trigger-sampling-request", {"prompt": "a rhyme", "maxTokens": 50}
    )
    assert not result.is_error, result.content
    assert "Roses are red." in result.content
    (request,) = agent.sampled  # type: ignore[attr-defined]
    assert request.server == "everything" and "a rhyme" in request.messages[0][1]


async def test_sampling_refused_by_the_user_reaches_the_server_as_an_error(agent: Agent) -> None:
    async def refuse(request: SamplingRequest) -> str:
        raise PermissionError("not now")

    agent.toolbox.mcp.hooks.sample = refuse
    await tool_appears(agent, "everything__trigger-sampling-request")
    result = await agent.registry.call(
        "everything__trigger-sampling-request", {"prompt": "a rhyme", "maxTokens": 50}
    )
    assert "Roses are red." not in result.content
    assert "declined" in result.content or result.is_error
