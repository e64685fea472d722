"""Plan first: ``%%agent --plan`` lets the agent look but not touch, and end with a plan.

For a task the user wants to review before anything changes. The plan turn runs with only the
tools that read (``READ_ONLY_TOOLS``: reading and searching files, the kernel's variables, the
notebook's history, the web, asking the user); every other tool is switched off for that turn and
back on after it, so the model is not even offered them. The prompt says it is to investigate
and answer with a numbered plan. ``%agent go`` then sends ``GO_PROMPT`` in the same chat,
with the tools as they normally are.

With the co-authoring extension connected (``coauthor/link.py``) the plan ends with a Go button
(``show_go``): plain HTML, no widget, which the extension answers by inserting a
``%agent go --plan NONCE`` cell right after the plan cell and running it through the front end —
the run gets a cell of its own for its output, and the saved notebook holds no widget view.
Without the extension there is no button (a click would run outside any cell, its output nowhere
to go): the line says to run ``%agent go``.

The button carries a nonce the kernel made for this plan (``data-agent-go``), because anything
can show a ``jp-agent-go`` button — a Markdown cell, an untrusted output, a fetched page — and a
click must not carry out a plan the user has not reviewed. ``%agent go --plan NONCE`` runs the
pending plan only when the nonce is its own; ``%agent go`` typed by the user needs none.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...tools.registry import ToolRegistry

#: The tools a plan turn keeps: none of them changes a file, the kernel or the notebook.
READ_ONLY_TOOLS = frozenset(
    {
        "read_file",
        "list_dir",
        "search_files",
        "search_text",
        "read_notebook",
        "notebook_history",
        "list_variables",
        "inspect_variable",
        "web_fetch",
        "ask_user",
    }
)

PLAN_INSTRUCTIONS = (
    "[Plan mode: change nothing now. Look at what you need with the read-only tools you have, "
    "then answer with a short numbered plan of the steps you would take (which files, cells or "
    "commands). The user will review the plan and then tell you to go ahead.]"
)

GO_PROMPT = "Go ahead: carry out the plan you proposed above, step by step."

#: The line under a plan (and the button's plain-text fallback).
GO_LINE = "▶ Review the plan; %agent go carries it out with the normal tools."


#: The button the co-authoring extension answers (its class is what it looks for, in a code
#: cell's outputs; ``data-agent-go`` the plan's nonce, which it sends back).
def _nonce() -> str:
    # hex: it goes on a magic's line as an option's value (never starts with "-", no quoting)
    return secrets.token_hex(16)


@dataclass(frozen=True, slots=True)
class PendingPlan:
    """A plan waiting for Go: the chat it was made in, and the nonce its Go button carries."""

    chat: str
    nonce: str = field(default_factory=_nonce)

    def is_this(self, nonce: str) -> bool:
        """Whether a Go button's ``nonce`` is this plan's."""
        return secrets.compare_digest(nonce.encode(), self.nonce.encode())


def show_go(shell: Any, plan: PendingPlan) -> None:
    """Under a finished plan: the Go button (with ``plan``'s nonce) when the extension is there
    to answer it, else the line that says to run ``%agent go``."""
    from ..coauthor.link import link_for

    link = link_for(shell)
    if link is None or not link.connected:
        print(GO_LINE)
        return
    from .._ipython import display
    from ..inert import go_button_bundle

    display(go_button_bundle(plan.nonce, GO_LINE), raw=True)


def plan_prompt(prompt: str) -> str:
    """The user's request, with the plan-mode instructions after it."""
    return f"{prompt}\n\n{PLAN_INSTRUCTIONS}"


@contextmanager
def read_only_tools(registry: ToolRegistry) -> Iterator[list[str]]:
    """Switch off every enabled tool that is not read-only, for the ``with`` block; yields the
    names switched off (switched on again at the end)."""
    switched = [
        name
        for name in registry.get_tool_names()
        if registry.is_tool_enabled(name) and name not in READ_ONLY_TOOLS
    ]
    for name in switched:
        registry.set_enabled(name, False)
    try:
        yield switched
    finally:
        for name in switched:
            if registry.has_tool(name):
                registry.set_enabled(name, True)
