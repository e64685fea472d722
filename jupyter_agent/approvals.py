"""Approval policies: which tool calls run freely, which wait for the user, which never run.

A leaf of the package (like ``events.py`` and ``errors.py``): the gate (``agent/gate.py``), MCP
servers' entries (``mcp/config.py``) and the notebook's prompts all speak these types.

The policy is per tool: ``allow`` runs it, ``deny`` refuses it (the model gets an error result),
``ask`` hands an ``ApprovalRequest`` to the UI's handler and waits for its ``Decision``. Tools
marked destructive (``remove``, ``run_bash``, ``run_python``) default to ``ask`` once a user enables
them. With no handler (a plain script), ``ask`` falls back to ``deny`` — never to ``allow``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

Policy = Literal["allow", "ask", "deny"]
POLICIES: tuple[Policy, ...] = ("allow", "ask", "deny")


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    call_id: str
    name: str
    input: dict[str, Any]
    #: Why this call asks although its policy may allow it (the tool's own reason), else "".
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    approved: bool
    #: Told to the model when the call is denied ("the user said: ...").
    reason: str = ""
    #: Approved "for this session": the tool's own question (``ApprovalRequest.reason``) is
    #: not asked again for what it covers (``web_fetch``: that host); a tool asked about for its
    #: ``ask`` policy gets ``allow``.
    remember: bool = False
    #: On a Deny, the user's own words (typed in the prompt; one line, may be empty): told to the
    #: model as "Denied by the user: ...".
    said: str = ""


def one_line(text: str, limit: int = 500) -> str:
    """What the user typed as a reason, as one line of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


ApprovalHandler = Callable[[ApprovalRequest], Awaitable[Decision]]


#: Whose call is being judged: ``None`` for the session's own agent, else an outside client of
#: ``%agent serve`` (its MCP session). An approval "for this session" holds for that asker only:
#: the gate keeps a client's allowed tools apart from the agent's, and a tool that remembers
#: what a yes covers (``web_fetch``'s hosts) keeps it per asker.
asker: ContextVar[str | None] = ContextVar("jupyter_agent_asker", default=None)
