"""``%agent_tools list|enable|disable|policy``: the tool commands, each with its
``magic_arguments`` parser.

``AgentMagics.agent_tools`` (``magics.py``) splits the line and shows the panel; each command
here acts on the session's registry and policies, which every chat shares, under the managed
settings (``session/managed.py``). A notebook co-authoring tool named before the notebook's
frontend has connected (in the cell that loads the extension) is waited for, not refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

from ...approvals import POLICIES, Policy
from .._ipython import argument, magic_arguments, parse_command
from .output import say

if TYPE_CHECKING:
    from ..session.managed import ManagedSettings
    from ..session.session import NotebookSession


class ToolsOwner(Protocol):
    """What the commands act through: the magics (``AgentMagics``)."""

    managed: ManagedSettings
    shell: Any

    @property
    def session(self) -> NotebookSession: ...


@magic_arguments("agent_tools list")
def tools_list(magics: ToolsOwner, rest: str) -> None:
    """The tools as a table: enabled, policy, description."""
    parse_command(tools_list, rest)
    print_tools(magics)


@magic_arguments("agent_tools enable")
@argument("names", nargs="+", metavar="NAME", help="Tools to offer the model.")
def tools_enable(magics: ToolsOwner, rest: str) -> None:
    """Offer tools to the model (every chat)."""
    names: list[str] = parse_command(tools_enable, rest).names
    check_tool_names(magics, names)
    for name in names:
        magics.managed.refuse(magics.managed.check_enable(name))
    for name in names:
        magics.session.registry.set_enabled(name, True)
    states = ", ".join(f"{name} (policy {magics.session.get_policy(name)})" for name in names)
    say(f"enabled: {states}")


@magic_arguments("agent_tools disable")
@argument("names", nargs="+", metavar="NAME", help="Tools to take away from the model.")
def tools_disable(magics: ToolsOwner, rest: str) -> None:
    """Take tools away from the model (every chat)."""
    names: list[str] = parse_command(tools_disable, rest).names
    check_tool_names(magics, names)
    for name in names:
        magics.session.registry.set_enabled(name, False)
    say(f"disabled: {', '.join(names)}")


@magic_arguments("agent_tools policy")
@argument("name", metavar="NAME", help="The tool.")
@argument("policy", choices=POLICIES, metavar="allow|ask|deny", help="What a call may do.")
def tools_policy(magics: ToolsOwner, rest: str) -> None:
    """Set whether a tool's calls run, ask first, or are refused."""
    args = parse_command(tools_policy, rest)
    check_tool_names(magics, [args.name])
    policy: Policy = args.policy
    magics.managed.refuse(magics.managed.check_policy(args.name, policy))
    magics.session.set_policy(args.name, policy)
    say(f"{args.name}: policy {policy}")


#: ``%agent_tools WORD ...`` → the function that handles the rest of the line.
TOOLS_COMMANDS: dict[str, Callable[[ToolsOwner, str], None]] = {
    "list": tools_list,
    "enable": tools_enable,
    "disable": tools_disable,
    "policy": tools_policy,
}


def check_tool_names(magics: ToolsOwner, names: list[str]) -> None:
    from ..coauthor.cell_tools import TOOL_NAMES
    from ..coauthor.link import notebook_connected

    known = magics.session.registry.get_tool_names()
    unknown = [name for name in names if name not in known]
    # a notebook tool named in the cell that loads the extension: the notebook's frontend
    # connects in a moment (its comm waits behind this cell), and brings the tool
    if set(unknown) & set(TOOL_NAMES) and notebook_connected(magics.shell):
        known = magics.session.registry.get_tool_names()
        unknown = [name for name in names if name not in known]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        notebook = [name for name in unknown if name in TOOL_NAMES]
        hint = (
            f" ({', '.join(notebook)}: notebook co-authoring, there while JupyterLab or "
            "Notebook 7 with the jupyter-agent extension has this notebook open)"
            if notebook
            else ""
        )
        raise UsageError(
            f"Unknown tool {listed}; valid names: {', '.join(known) or '(none)'}{hint}"
        )


def print_tools(magics: ToolsOwner) -> None:
    """The tools as a table (``%agent_tools`` where widgets are not used, and ``list``)."""
    from ..views.widgets.tool_panel import tools_table

    say(tools_table(magics.session))
