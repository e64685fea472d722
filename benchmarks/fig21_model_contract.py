"""Figure 21 (issue 32): the prompt cache across mid-conversation changes.

Both rows run our ``Agent`` on an ``AnthropicProvider`` against the loopback Messages API, which
accounts every whole (unthreaded) request by the prompt cache as the API documents it (each
breakpoint writes its prefix, a breakpoint reads the longest prefix written before ending at most
20 blocks earlier) and answers the Models API. The script comes from the system prompt
(``bench-tN-c1``: N turns of one tool call each), so the model can be a real id:
``claude-sonnet-5-5`` takes mid-conversation system messages and tool changes;
``claude-sonnet-5`` does not, so on it a toggle rewrites the top of the prompt — which is what
every model got before issue 32.
Server-side threads are off here (the loopback accounts only whole requests).

(a) A 30-turn session, then ``disable`` of one of its two tools (a ``%agent_tools`` toggle), then
the next cell: the share of that request's input tokens read from the cache. (b) Figure 2's
50-turn session: the share of all its requests' input tokens read from the cache. The figures are
the *uncached* shares (so a bound below is the goal): ≤ 5 % for (a), ≤ 10 % for (b).
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from typing import Any

from ._harness import BenchContext, Row, Stats, limit, require
from ._loopback import LoopbackServer

FIGURE = "21"
#: The notebook's default system prompt (``SessionSettings.system_prompt``).
DEFAULT_PROMPT = (
    "You are a helpful assistant working inside the user's Jupyter notebook. You can use tools "
    "to read and change files in the workspace, run shell commands, search, and fetch web pages."
)


def _uncached(usage: Any) -> float:
    total = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    return 100.0 * (1 - usage.cache_read_input_tokens / total) if total else 100.0


async def _session(base_url: str, model: str, turns: int, toggle: bool) -> tuple[float, float]:
    """(uncached % of the whole session, uncached % of the request after the toggle)."""
    agent_module = require("jupyter_agent.agent.agent")
    provider_module = require("jupyter_agent.providers.anthropic")
    decorator = require("jupyter_agent.tools.decorator")
    registry_module = require("jupyter_agent.tools.registry")
    events = require("jupyter_agent.events")
    from ._agents import sdk_client

    async def work(i: int) -> str:
        """Do the benchmark's unit of work.

        Args:
            i: which call this is
        """
        return f"result {i}"

    async def spare(i: int) -> str:
        """A second tool, toggled off mid-chat.

        Args:
            i: which call this is
        """
        return f"spare {i}"

    registry = registry_module.ToolRegistry()
    registry.register(decorator.tool(name="work")(work))
    registry.register(decorator.tool(name="spare")(spare))
    client = sdk_client(base_url)
    provider = provider_module.AnthropicProvider(model, client=client, threads=False)
    agent = agent_module.Agent(
        provider,
        workspace=tempfile.mkdtemp(prefix="jabench-contract-"),
        # a prefix of its own (the loopback's cache outlives a session), the script, and the
        # notebook's default system prompt: two small tools and 300 characters are the smallest
        # stable prefix a session has, the hardest case for the shares
        system_prompt=f"Session {uuid.uuid4()}. Script: bench-t{turns}-c1. {DEFAULT_PROMPT}",
        registry=registry,
        max_turns=turns + 5,
    )
    try:
        await agent.chat("Go.")
        session = _uncached(agent.usage)
        if not toggle:
            return session, 0.0
        agent.disable_tool("spare")
        after_usage = None
        async for event in agent.stream_chat("And now?"):
            if isinstance(event, events.AgentFinished):
                after_usage = event.usage
        assert after_usage is not None
        return session, _uncached(after_usage)
    finally:
        await client.close()


def run(ctx: BenchContext) -> list[Row]:
    repetitions = ctx.reps(5, 1)
    toggle_turns = ctx.size(30, 3)
    session_turns = ctx.size(50, 3)

    async def measure() -> dict[str, list[float]]:
        found: dict[str, list[float]] = {"toggle": [], "before": [], "session": []}
        with LoopbackServer() as server:
            for _ in range(repetitions):
                _, after = await _session(server.base_url, "claude-sonnet-5-5", toggle_turns, True)
                found["toggle"].append(after)
                _, rewritten = await _session(
                    server.base_url, "claude-sonnet-5", toggle_turns, True
                )
                found["before"].append(rewritten)
                session, _ = await _session(
                    server.base_url, "claude-sonnet-5-5", session_turns, False
                )
                found["session"].append(session)
        return found

    ctx.log(f"figure 21: {repetitions} sessions of {toggle_turns} and {session_turns} turns")
    found = asyncio.run(measure())
    return [
        limit(
            FIGURE,
            f"uncached share of the request after a tool toggle ({toggle_turns}-turn session)",
            Stats(found["toggle"], "%"),
            Stats(found["before"], "%"),
            "the toggle rewriting the tool list (before issue 32; `claude-sonnet-5` still)",
            below=5.0,
            on_median=True,
            goal_text="≤ 5 % (cache-read share ≥ 95 %)",
            note=__doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else "",
        ),
        limit(
            FIGURE,
            f"uncached share of a whole {session_turns}-turn session (figure 2's)",
            Stats(found["session"], "%"),
            None,
            "",
            below=10.0,
            on_median=True,
            goal_text="≤ 10 % (cached share ≥ 90 %)",
        ),
    ]
