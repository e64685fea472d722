"""The policy gate: whether one tool call may run, as a typed verdict.

Before any call runs, the gate answers ``Run``, ``Refuse(reason, why)`` (the model gets ``reason``
as an error result; ``why`` says, as data, who refused) or ``Ask`` (the user decides, through the
UI's approval handler; ``decide`` turns that into ``Run`` or ``Refuse``). The loop never reads
policy strings itself. Input that is not a JSON object is refused here too, so no tool ever sees it.

Approvals "for this session" belong to whoever was asked (``approvals.asker``): the session's
own agent, or one outside client of ``%agent serve``. The agent's yes makes the tool ``allow`` in
``policies`` (what ``%agent_tools`` shows); a client's yes is kept for that client only; neither
lets the other's calls through, and a policy the user sets clears both.

The gate fails closed. It judges the registry its owner holds *now* (``RegistryOwner``: the
``Toolbox``), never a copy taken earlier, and a tool that registry does not have, or has
disabled, is refused here — no verdict of "run" for a name the gate cannot judge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..approvals import POLICIES, ApprovalHandler, ApprovalRequest, Decision, Policy, asker
from ..events import Refusal
from ..tools.base import approval_reason, capabilities_of, remember_approval
from ..tools.registry import ToolRegistry


class RegistryOwner(Protocol):
    """Whoever holds the registry the gate judges (a ``Toolbox``); read at every verdict."""

    @property
    def registry(self) -> ToolRegistry: ...


@dataclass(frozen=True, slots=True)
class Run:
    """The call runs."""


@dataclass(frozen=True, slots=True)
class Refuse:
    """The call does not run; ``reason`` is its error result, ``why`` who refused it."""

    reason: str
    why: Refusal = "policy"


@dataclass(frozen=True, slots=True)
class Ask:
    """The user decides (``PolicyGate.decide``); ``reason`` says why when the tool asked for
    this call itself (``needs_approval``), "" when its policy is ``ask``."""

    reason: str = ""


Verdict = Run | Refuse | Ask


def _stricter(policy: Policy, than: Policy) -> bool:
    return POLICIES.index(policy) > POLICIES.index(than)


class PolicyGate:
    """Per-tool policies (``allow``/``ask``/``deny``) over a registry, and their verdicts."""

    def __init__(self, owner: RegistryOwner) -> None:
        self._owner = owner
        self.policies: dict[str, Policy] = {}
        #: Tools the agent's "allow for this session" set to ``allow``: the policy the user had
        #: (None: the default), which outside clients still get.
        self._allowed_by_agent: dict[str, Policy | None] = {}
        #: An outside client -> the tools it was allowed for its session.
        self._allowed_for_client: dict[str, set[str]] = {}
        #: The loosest policy a tool may have (an administrator's managed settings) and who
        #: says so, or None: a looser policy set here is judged as this one.
        self.ceiling: Callable[[str], tuple[Policy, str] | None] | None = None

    @property
    def registry(self) -> ToolRegistry:
        """The registry judged: the owner's, as it is now."""
        return self._owner.registry

    def policy(self, name: str) -> Policy:
        """The policy set for ``name``, else ``ask`` for destructive tools and ``allow`` — for
        the asker judged now (``approvals.asker``) — or the managed ceiling when that is
        stricter."""
        client = asker.get()
        if client is None:
            chosen = self.policies.get(name)
        else:  # the user's own setting, not what the agent was allowed
            chosen = self._allowed_by_agent.get(name, self.policies.get(name))
            if chosen in ("ask", None) and name in self._allowed_for_client.get(client, ()):
                chosen = "allow"
        if chosen is None:
            tool = self.registry.get_tool(name)
            chosen = "ask" if capabilities_of(tool).destructive else "allow"
        managed = self._managed(name)
        return managed[0] if managed is not None and _stricter(managed[0], chosen) else chosen

    def _managed(self, name: str) -> tuple[Policy, str] | None:
        return self.ceiling(name) if self.ceiling is not None else None

    def set_policy(self, name: str, policy: Policy) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}")
        self.policies[name] = policy
        self._forget_allowances(name)

    def forget(self, name: str) -> None:
        self.policies.pop(name, None)
        self._forget_allowances(name)

    def _forget_allowances(self, name: str) -> None:
        self._allowed_by_agent.pop(name, None)
        for allowed in self._allowed_for_client.values():
            allowed.discard(name)

    def allow_for_session(self, name: str) -> None:
        """The asker (``approvals.asker``) said "allow for this session" about ``name``."""
        client = asker.get()
        if client is not None:
            self._allowed_for_client.setdefault(client, set()).add(name)
            return
        self._allowed_by_agent.setdefault(name, self.policies.get(name))
        self.policies[name] = "allow"

    def verdict(self, name: str, raw_input: object) -> Verdict:
        """What happens to a call of ``name`` with ``raw_input`` (before asking anyone)."""
        if not isinstance(raw_input, dict):
            shown = str(raw_input)
            shown = shown if len(shown) <= 300 else shown[:300] + "…"
            return Refuse(
                f"Error: invalid arguments for {name}: the input was not a JSON object "
                f"({shown}). Call the tool again with a JSON object that matches its input_schema.",
                "invalid",
            )
        unavailable = self.registry.unavailable(name)
        if unavailable is not None:  # unknown or disabled: nothing to judge, nothing runs
            return Refuse(unavailable, "unavailable")
        policy = self.policy(name)
        if policy == "deny":  # deny wins, whatever else is set
            managed = self._managed(name)
            whose = "an administrator's" if managed and managed[0] == "deny" else "the user's"
            return Refuse(
                f"Error: {name} was not run: {whose} policy for this tool is 'deny'. "
                "Do not retry it; find another way or ask the user.",
                "policy",
            )
        # A tool may need approval for one call whatever its policy (git_commit of a CI
        # workflow, issue 20): it says why (``tools.base.approval_reason``).
        reason = approval_reason(self.registry.get_tool(name), raw_input)
        if reason is not None:
            return Ask(reason)
        return Run() if policy == "allow" else Ask()

    async def decide(
        self, handler: ApprovalHandler | None, request: ApprovalRequest
    ) -> Run | Refuse:
        """Ask ``handler`` about a call whose verdict was ``Ask``; no handler means refusal.

        A yes "for this session" is remembered: by the tool, for what its own question covers
        (``web_fetch``: the host), else as the policy ``allow`` for the tool.
        """
        why = f" ({request.reason})" if request.reason else ""
        if handler is None:
            return Refuse(
                f"Error: {request.name} was not run: it needs the user's approval and no "
                f"approval handler is available, so the call was denied.{why}",
                "no_approver",
            )
        try:
            decision = await handler(request)
        except Exception as exc:
            decision = Decision(False, f"the approval request failed ({exc})")
        if decision.approved:
            if decision.remember and request.reason:  # the tool's own question
                remember_approval(self.registry.get_tool(request.name), request.input)
            elif decision.remember:
                self.allow_for_session(request.name)
            return Run()
        if decision.said:
            return Refuse(
                f"Error: {request.name} was not run. Denied by the user: {decision.said}{why}",
                "user",
            )
        # ``reason`` says how it was declined ("the user clicked Deny in the notebook"), not
        # what the user said (that is ``said``, above)
        how = f" ({decision.reason})" if decision.reason else ""
        return Refuse(
            f"Error: the user declined this call of {request.name}; it was not run{how}.{why}",
            "user",
        )
