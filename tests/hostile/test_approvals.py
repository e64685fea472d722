"""Approvals fail closed: no setting turns them off, and the gate refuses what it cannot judge.

A hostile model gets to call tools; the only thing between it and ``run_bash`` is the policy
gate. These tests play the attacks on it through the public API: the session rebuilt by a
setting (``allow_private_network``, the workspace), tools the gate's registry does not know, and
the gate's truth table itself. The model is faked at the HTTP boundary (the real ``anthropic``
SDK against a loopback fake).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use

from jupyter_agent import Agent, ToolRegistry, tool
from jupyter_agent.agent.gate import Ask, Refuse, Run
from jupyter_agent.agent.toolbox import Toolbox
from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.events import ToolCallFinished
from jupyter_agent.notebook.session.session import NotebookSession
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.tools.context import ToolContext


def use_fake(session: NotebookSession, *script: Reply) -> FakeAnthropic:
    fake = FakeAnthropic(*script)
    session.use_provider(AnthropicProvider(client=fake.client()))
    return fake


def finished_events(session: NotebookSession, prompt: str) -> list[ToolCallFinished]:
    events: list[object] = []
    session.run(prompt, on_event=events.append)
    return [event for event in events if isinstance(event, ToolCallFinished)]


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@needs_bash
@pytest.mark.parametrize("setting", ["allow_private_network", "workspace"])
@pytest.mark.parametrize("policy", ["deny", "ask"])
def test_a_setting_that_rebuilds_the_tools_keeps_every_policy(
    session: NotebookSession, tmp_path: Path, setting: str, policy: str
) -> None:
    """The critical hole: after ``allow_private_network = True`` the gate judged the old registry
    and let every tool it did not have enabled run — run_bash with policy ``deny`` included."""
    session.registry.enable("run_bash")
    session.set_policy("run_bash", policy)  # type: ignore[arg-type]
    other = tmp_path / "other"
    other.mkdir()
    change = {"allow_private_network": True, "workspace": str(other)}[setting]
    session.configure(**{setting: change})
    marker = (other if setting == "workspace" else tmp_path) / "pwned"
    fake = use_fake(
        session,
        Reply([tool_use("toolu_1", "run_bash", {"command": f"touch {marker}"})]),
        text("done"),
    )
    (finished,) = finished_events(session, "clean up")
    assert not marker.exists(), "run_bash ran although its policy is " + policy
    assert finished.refused in ("policy", "no_approver")
    assert finished.status == "denied"
    assert "was not run" in result_text(tool_results(fake.requests[1])[0])
    assert session.get_policy("run_bash") == policy
    assert session.registry.is_tool_enabled("run_bash")


def test_a_rebuild_keeps_enabled_states_user_tools_and_their_places(
    session: NotebookSession, tmp_path: Path
) -> None:
    @tool
    def mine(x: int) -> str:
        """Mine."""
        return str(x)

    session.agent.add_tool(mine)
    session.set_policy("mine", "deny")
    session.registry.disable("web_fetch")
    before = session.registry.get_tool_names()
    old_read = session.registry.get_tool("read_file")
    session.configure(allow_private_network=True)
    session.agent  # noqa: B018 -- the rebuild happens on next use
    assert session.registry.get_tool_names() == before
    assert session.registry.get_tool("read_file") is not old_read
    assert not session.registry.is_tool_enabled("web_fetch")
    assert session.get_policy("mine") == "deny"
    assert session.registry.get_tool("mine") is mine


async def test_the_gate_refuses_a_tool_its_registry_does_not_have(tmp_path: Path) -> None:
    """An agent whose registry is replaced wholesale: the gate judges the new one at once."""
    agent = Agent(
        AnthropicProvider(client=FakeAnthropic().client()), workspace=tmp_path, registry=None
    )
    agent.registry.enable("run_bash")
    agent.set_policy("run_bash", "deny")
    replacement = ToolRegistry()
    agent.registry = replacement  # nothing registered: nothing may run
    assert isinstance(agent.gate.verdict("run_bash", {"command": "true"}), Refuse)
    assert agent.gate.registry is replacement


def _toolbox(tmp_path: Path) -> Toolbox:
    return Toolbox(ToolContext(tmp_path))


@pytest.mark.parametrize(
    ("enabled", "policy", "expected"),
    [
        (True, "allow", Run),
        (True, "ask", Ask),
        (True, "deny", Refuse),
        (False, "allow", Refuse),
        (False, "ask", Refuse),
        (False, "deny", Refuse),
    ],
)
def test_the_gate_truth_table(
    tmp_path: Path, enabled: bool, policy: str, expected: type[object]
) -> None:
    toolbox = _toolbox(tmp_path)
    toolbox.registry.set_enabled("read_file", enabled)
    toolbox.set_policy("read_file", policy)  # type: ignore[arg-type]
    verdict = toolbox.gate.verdict("read_file", {"file_path": "x"})
    assert isinstance(verdict, expected)
    if isinstance(verdict, Refuse):
        assert verdict.why == ("policy" if enabled else "unavailable")


def test_the_gate_refuses_unknown_names_and_input_that_is_not_an_object(tmp_path: Path) -> None:
    gate = _toolbox(tmp_path).gate
    unknown = gate.verdict("no_such_tool", {})
    assert isinstance(unknown, Refuse) and unknown.why == "unavailable"
    assert "not found" in unknown.reason
    odd = gate.verdict("read_file", ["not", "an", "object"])
    assert isinstance(odd, Refuse) and odd.why == "invalid"


def test_destructive_tools_default_to_ask_and_deny_always_wins(tmp_path: Path) -> None:
    toolbox = _toolbox(tmp_path)
    toolbox.registry.enable("remove")
    assert isinstance(toolbox.gate.verdict("remove", {"path": "x"}), Ask)
    toolbox.set_policy("remove", "deny")
    assert isinstance(toolbox.gate.verdict("remove", {"path": "x"}), Refuse)


async def test_a_declined_call_and_a_cut_off_reply_are_told_apart_as_data(
    tmp_path: Path,
) -> None:
    """The views used to read "declined"/"was not run" out of the result text: a ``max_tokens``
    refusal showed as *denied*. The refusal is now typed on the event."""
    (tmp_path / "a.txt").write_text("a")

    async def decline(_request: ApprovalRequest) -> Decision:
        return Decision(False, "not now")

    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "read_file", {"file_path": "a.txt"})]),
        Reply([tool_use("toolu_2", "read_file", {"file_path": "a.txt"})], stop_reason="max_tokens"),
        text("ok"),
    )
    agent = Agent(
        AnthropicProvider(client=fake.client()), workspace=tmp_path, approval_handler=decline
    )
    agent.set_policy("read_file", "ask")
    finished = [
        event async for event in agent.stream_chat("read it") if isinstance(event, ToolCallFinished)
    ]
    assert [(event.refused, event.status) for event in finished] == [
        ("user", "denied"),
        ("incomplete", "error"),
    ]
