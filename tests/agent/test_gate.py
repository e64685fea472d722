"""``PolicyGate`` on its own: every policy × enabled/disabled/unknown × a tool that asks for this
call or not × a "yes, for this session" remembered or not, each verdict checked against the rule
written out here.

The rule, as the gate's docstring and SPEC give it: a tool the registry does not have, or has
disabled, is refused as unavailable; ``deny`` refuses whatever else holds; a tool that asks for a
call (``needs_approval``) is asked about, with its reason; otherwise ``allow`` runs and ``ask``
asks, and an unset policy is ``ask`` for a destructive tool and ``allow`` for the rest. A yes
"for this session" is remembered by the tool when its own question was asked (it stops asking),
else as the policy ``allow`` — so it never lifts ``deny`` and never reaches a disabled tool.

The tool is a real tool of this test's own in a real ``ToolRegistry`` inside a ``Toolbox``; the
remembered yes goes through ``PolicyGate.decide`` with an approval handler, as the agent does it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jupyter_agent.agent.gate import Ask, Refuse, Run, Verdict
from jupyter_agent.agent.toolbox import Toolbox
from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.tools.base import ToolCapabilities
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.registry import ToolRegistry

NAME = "probe"
ARGS: dict[str, object] = {"target": "staging"}
TOOLS_REASON = "it probes a machine outside the workspace"


class Plain:
    """A tool that declares only whether it is destructive."""

    name = NAME

    def __init__(self, destructive: bool) -> None:
        self.capabilities = ToolCapabilities(destructive=destructive)
        self.runs = 0

    def get_schema(self) -> dict[str, object]:
        return {
            "name": NAME,
            "description": "Probes a target.",
            "input_schema": {"type": "object", "properties": {"target": {"type": "string"}}},
        }

    async def execute(self, args: dict[str, object]) -> str:
        self.runs += 1
        return "probed"


class Asking(Plain):
    """A tool that asks for approval of its calls itself, until a yes for the session covers
    them (as ``web_fetch`` does for a host)."""

    def __init__(self, destructive: bool) -> None:
        super().__init__(destructive)
        self.covered = False

    def needs_approval(self, args: dict[str, object]) -> str | None:
        return None if self.covered else TOOLS_REASON

    def remember_approval(self, args: dict[str, object]) -> None:
        self.covered = True


async def yes_for_the_session(request: ApprovalRequest) -> Decision:
    return Decision(True, remember=True)


def expected(
    state: str, policy: str, destructive: bool, asks: bool, remembered: bool
) -> tuple[type[Verdict], str]:
    """The rule, written out: the verdict's type and its ``why`` (Refuse) or ``reason`` (Ask)."""
    if state != "enabled":
        return Refuse, "unavailable"
    if policy == "deny":
        return Refuse, "policy"
    effective = policy if policy != "unset" else ("ask" if destructive else "allow")
    if asks and not remembered:
        return Ask, TOOLS_REASON
    if asks and remembered:  # the tool stopped asking; its policy was left as it was
        return (Run, "") if effective == "allow" else (Ask, "")
    if effective == "ask" and remembered:  # the yes became the policy "allow"
        return Run, ""
    return (Run, "") if effective == "allow" else (Ask, "")


def verdict_of(
    tmp_path: Path, state: str, policy: str, destructive: bool, asks: bool, remembered: bool
) -> Verdict:
    """Set the gate up as the axes say, remember a yes if one was asked for, and judge the call
    again."""
    toolbox = Toolbox(ToolContext(tmp_path), registry=ToolRegistry())
    if state != "unknown":
        toolbox.add_tool(Asking(destructive) if asks else Plain(destructive))
        toolbox.registry.set_enabled(NAME, state == "enabled")
    if policy != "unset":
        toolbox.set_policy(NAME, policy)  # type: ignore[arg-type]
    gate = toolbox.gate
    if remembered:
        first = gate.verdict(NAME, ARGS)
        if isinstance(first, Ask):
            request = ApprovalRequest("toolu_1", NAME, dict(ARGS), first.reason)
            assert isinstance(asyncio.run(gate.decide(yes_for_the_session, request)), Run)
    return gate.verdict(NAME, ARGS)


@pytest.mark.parametrize("remembered", [False, True], ids=["fresh", "remembered"])
@pytest.mark.parametrize("asks", [False, True], ids=["plain", "asks"])
@pytest.mark.parametrize("destructive", [False, True], ids=["harmless", "destructive"])
@pytest.mark.parametrize("policy", ["allow", "ask", "deny", "unset"])
@pytest.mark.parametrize("state", ["enabled", "disabled", "unknown"])
def test_the_truth_table(
    tmp_path: Path, state: str, policy: str, destructive: bool, asks: bool, remembered: bool
) -> None:
    verdict = verdict_of(tmp_path, state, policy, destructive, asks, remembered)
    kind, detail = expected(state, policy, destructive, asks, remembered)
    assert type(verdict) is kind, verdict
    if isinstance(verdict, Refuse):
        assert verdict.why == detail
        if detail == "unavailable":
            wording = "not found" if state == "unknown" else "disabled"
            assert wording in verdict.reason and NAME in verdict.reason
        else:
            assert "'deny'" in verdict.reason
    elif isinstance(verdict, Ask):
        assert verdict.reason == detail


@pytest.mark.parametrize("raw_input", [None, "target", ["target"], 3])
@pytest.mark.parametrize("policy", ["allow", "ask", "deny"])
def test_input_that_is_not_an_object_is_refused_before_any_policy(
    tmp_path: Path, raw_input: object, policy: str
) -> None:
    toolbox = Toolbox(ToolContext(tmp_path), registry=ToolRegistry())
    toolbox.add_tool(Plain(destructive=False))
    toolbox.set_policy(NAME, policy)  # type: ignore[arg-type]
    verdict = toolbox.gate.verdict(NAME, raw_input)
    assert isinstance(verdict, Refuse) and verdict.why == "invalid"
    assert "not a JSON object" in verdict.reason


async def _declined(request: ApprovalRequest) -> Decision:
    return Decision(False, "not now")


async def _yes_once(request: ApprovalRequest) -> Decision:
    return Decision(True)


async def _broken(request: ApprovalRequest) -> Decision:
    raise RuntimeError("the prompt went away")


@pytest.mark.parametrize("tools_reason", ["", TOOLS_REASON], ids=["policy-ask", "tool-asks"])
@pytest.mark.parametrize(
    ("handler", "kind", "why", "later"),
    [
        (None, Refuse, "no_approver", Ask),
        (_declined, Refuse, "user", Ask),
        (_broken, Refuse, "user", Ask),
        (_yes_once, Run, "", Ask),
        (yes_for_the_session, Run, "", Run),
    ],
    ids=["nobody-to-ask", "declined", "handler-fails", "yes-once", "yes-for-the-session"],
)
async def test_deciding_an_ask(
    tmp_path: Path,
    handler: object,
    kind: type[Verdict],
    why: str,
    later: type[Verdict],
    tools_reason: str,
) -> None:
    """``decide`` turns an ``Ask`` into ``Run`` or ``Refuse``; only a yes for the session changes
    what the next call of the same tool gets."""
    toolbox = Toolbox(ToolContext(tmp_path), registry=ToolRegistry())
    toolbox.add_tool(Asking(destructive=True) if tools_reason else Plain(destructive=True))
    if tools_reason:
        toolbox.set_policy(NAME, "allow")  # the tool's own question is the only one asked
    first = toolbox.gate.verdict(NAME, ARGS)
    assert isinstance(first, Ask) and first.reason == tools_reason
    request = ApprovalRequest("toolu_1", NAME, dict(ARGS), first.reason)
    decided = await toolbox.gate.decide(handler, request)  # type: ignore[arg-type]
    assert type(decided) is kind
    if isinstance(decided, Refuse):
        assert decided.why == why and NAME in decided.reason
        if tools_reason:
            assert tools_reason in decided.reason
    assert type(toolbox.gate.verdict(NAME, ARGS)) is later
    expected_policy = "allow" if tools_reason or later is Run else "ask"
    assert toolbox.get_policy(NAME) == expected_policy
