"""Plan first: ``%%agent --plan`` lets the agent look but not touch, and end with a plan.

For a task the user wants to review before anything changes. The plan turn runs with only the
tools that read (``READ_ONLY_TOOLS``: reading and searching files, the kernel's variables, the
notebook's history, the web, asking the user); every other tool is switched off for that turn and
back on after it, so the model is not even offered them. The prompt says it is to investigate
and answer with a numbered plan. ``%agent go`` then sends ``GO_PROMPT`` in the same chat,
with the tools as they normally are.

With the co-authoring extension connected (``coauthor.py``) the plan ends with a Go button
(``show_go``): plain HTML, no widget, which the extension answers by inserting a ``%agent go``
cell right after the plan cell and running it through the front end — the run gets a cell of its
own for its output, and the saved notebook holds no widget view. Without the extension there is
no button (a click would run outside any cell, its output nowhere to go): the line says to run
``%agent go``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..tools.registry import ToolRegistry

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
#: The button the co-authoring extension answers (its class is what it looks for).
GO_BUTTON_HTML = (
    "<div style='margin: 4px 0;'>▶ Review the plan, then "
    "<button class='jp-agent-go jp-mod-styled jp-mod-accept' "
    "title='Insert a %agent go cell below and run it'>Go</button>"
    " — or run <code>%agent go</code>.</div>"
)


def show_go(shell: Any) -> None:
    """Under a finished plan: the Go button when the extension is there to answer it, else the
    line that says to run ``%agent go``."""
    from .coauthor import link_for

    link = link_for(shell)
    if link is None or not link.connected:
        print(GO_LINE)
        return
    from ._ipython import display

    display({"text/html": GO_BUTTON_HTML, "text/plain": GO_LINE}, raw=True)


@dataclass(frozen=True, slots=True)
class PendingPlan:
    """A plan waiting for Go: the chat it was made in."""

    chat: str


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
