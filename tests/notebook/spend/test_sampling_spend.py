"""An MCP server's sampling request is a model request like any other (issue 33, point 3).

A server that asks the client's model for a completion (``sampling/createMessage``) spent the
user's tokens outside the spend caps: a $0.57 completion under a $1 cap showed as $0.0003 spent,
and the request went out with the provider's ``max_tokens`` (8,192) after an approval that
showed the server's ``maxTokens: 10``. Here a real MCP server (``mcp_servers/sampling_server.py``,
over stdio) asks, the user approves, and the model is the fake Messages API: the completion is
counted in ``%agent usage`` and the caps, is sent with no more ``max_tokens`` than the approval
showed, and one that could pass the cap is not sent at all.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use

from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.mcp.config import parse_server_entry
from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings
from jupyter_agent.providers.anthropic import AnthropicProvider

pytest.importorskip("mcp")

SERVER = Path(__file__).parents[2] / "mcp_servers" / "sampling_server.py"
#: A tenth of a cent per token, in and out: costs easy to reason about.
PRICES = {"claude-sonnet-5-5": {"input": 1000, "output": 1000}}


class Spender:
    """A session with the sampling server added and every approval granted (and kept)."""

    def __init__(
        self, tmp_path: Path, prices: dict[str, dict[str, float]] = PRICES, **settings: object
    ) -> None:
        self.approvals: list[ApprovalRequest] = []
        self.notes: list[str] = []

        async def approve(request: ApprovalRequest) -> Decision:
            self.approvals.append(request)
            return Decision(True)

        self.session = NotebookSession(
            SessionSettings(workspace=str(tmp_path), prices=prices, **settings),  # type: ignore[arg-type]
            namespace={},
            approvals=lambda _bridge: approve,
            notify=self.notes.append,
        )

    def add_server(self) -> None:
        entry = {"command": sys.executable, "args": [str(SERVER)], "policy": "allow"}
        manager = self.session.agent.toolbox.mcp
        self.session.bridge.background.run(manager.add(parse_server_entry("spender", entry)))

    def use(self, fake: FakeAnthropic) -> None:
        provider = AnthropicProvider("claude-sonnet-5-5", client=fake.client(), max_tokens=8192)
        self.session.use_provider(provider)

    def complete(self, max_tokens: int) -> str:
        """The server's tool, called as a tool call of the session would call it."""
        call = self.session.agent.registry.call(
            "spender__complete", {"prompt": "a rhyme", "max_tokens": max_tokens}
        )
        return self.session.bridge.background.run(call).content


@pytest.fixture
def spender(tmp_path: Path) -> Iterator[Spender]:
    spender = Spender(tmp_path, session_budget=1.0)
    try:
        yield spender
    finally:
        spender.session.close()


def test_a_sampling_request_is_counted_and_sent_with_the_max_tokens_shown(
    spender: Spender,
) -> None:
    fake = FakeAnthropic(text("Roses are red.", usage={"input_tokens": 100, "output_tokens": 10}))
    spender.use(fake)
    spender.add_server()
    assert "Roses are red." in spender.complete(max_tokens=10)
    [approval] = spender.approvals
    assert approval.input["max tokens"] == 10  # what the user was shown …
    [request] = fake.requests
    assert request["max_tokens"] == 10  # … is what was sent (was 8,192)
    assert math.isclose(spender.session.spent(), (100 + 10) / 1000)  # was 0
    assert "claude-sonnet-5-5" in spender.session.usage_report()


def test_a_sampling_request_that_could_pass_the_cap_is_not_sent(spender: Spender) -> None:
    fake = FakeAnthropic(
        text("Roses are red.", usage={"input_tokens": 100, "output_tokens": 10}),
        text("A long poem.", usage={"input_tokens": 100, "output_tokens": 5000}),
    )
    spender.use(fake)
    spender.add_server()
    assert "Roses are red." in spender.complete(max_tokens=10)  # $0.11 of the $1 spent
    refused = spender.complete(max_tokens=5000)  # up to $5 more: past the cap
    assert len(fake.requests) == 1, "the second completion was sent"
    assert "A long poem." not in refused
    assert "budget" in refused, refused
    assert math.isclose(spender.session.spent(), 0.11)


def test_sampling_during_a_turn_counts_against_the_cells_budget(tmp_path: Path) -> None:
    spender = Spender(tmp_path, prices={"claude-sonnet-5-5": {"input": 1, "output": 1}})
    try:
        fake = FakeAnthropic(
            Reply([tool_use("toolu_1", "spender__complete", {"prompt": "x", "max_tokens": 10})]),
            text("Roses are red.", usage={"input_tokens": 200_000, "output_tokens": 10}),
            text("never sent"),
        )
        spender.use(fake)
        spender.add_server()
        # $1 per million tokens: the first request fits a $0.10 budget, the completion the
        # server asks for costs $0.20, so the request after the tool call may not be sent
        outcome = spender.session.run("Ask the server for a rhyme", budget=0.10)
        assert [r["max_tokens"] for r in fake.requests[1:2]] == [10]
        assert len(fake.requests) == 2, "the request after the sampling was sent"
        assert outcome.answer is not None and "budget" in outcome.answer
        assert "Roses are red." in json.dumps(spender.session.agent.messages)
        assert spender.session.spent() >= 0.20
    finally:
        spender.session.close()
