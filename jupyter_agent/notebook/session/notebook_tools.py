"""Every tool a notebook adds to the built-ins, assembled in this one place.

Two sets, because they live differently:

* ``notebook_tools`` — built with the session's toolbox: the kernel's (``list_variables``,
  ``inspect_variable``, ``run_python``), with the extension loaded ``notebook_history`` and
  ``propose_cell`` (each needs its service: the recorder, the proposals), and ``ask_user``;
* ``cell_tools`` — the co-authoring tools (``notebook_cells``, ``insert_cell``, ``edit_cell``,
  ``run_cell``, ``delete_cell``), on the toolbox only while a notebook page is connected:
  ``sync_cell_tools`` puts them on and takes them off as the link changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...approvals import Policy
from ...tools.base import ExecutableTool
from ...tools.context import ToolContext
from ..asking.ask_user_tool import AskUserTool
from ..asking.user_questions import UserQuestions
from ..coauthor.cell_tools import (
    TOOL_NAMES,
    DeleteCellTool,
    EditCellTool,
    InsertCellTool,
    NotebookCellsTool,
    RunCellTool,
)
from ..coauthor.link import link_for
from ..kernel.history_tool import NotebookHistoryTool
from ..kernel.kernel_tools import InspectVariableTool, ListVariablesTool, RunPythonTool
from ..kernel.propose_cell import ProposeCellTool, proposals_for
from ..kernel.recorder import recorder_for
from ..runtime.bridge import MainThreadBridge

if TYPE_CHECKING:
    from ...agent.toolbox import Toolbox

#: The policies the cell tools start with (``delete_cell`` is destructive: disabled, ``ask``).
_START_POLICIES: dict[str, Policy] = {"edit_cell": "ask", "run_cell": "ask"}


def notebook_tools(
    context: ToolContext,
    namespace: dict[str, Any],
    bridge: MainThreadBridge,
    shell: Any,
    questions: UserQuestions,
) -> list[ExecutableTool]:
    """The kernel tools bound to ``namespace`` (``run_python`` through ``bridge``), with the
    extension loaded in ``shell`` also ``notebook_history`` and ``propose_cell``, and
    ``ask_user`` asking through ``questions``."""
    tools: list[ExecutableTool] = [
        ListVariablesTool(context, namespace, shell),
        InspectVariableTool(context, namespace, shell),
        RunPythonTool(context, namespace, bridge, shell),
    ]
    recorder = recorder_for(shell)
    if recorder is not None:
        tools.append(NotebookHistoryTool(context, recorder))
    proposals = proposals_for(shell)
    if proposals is not None:
        tools.append(ProposeCellTool(context, proposals))
    tools.append(AskUserTool(context, questions))
    return tools


def cell_tools(
    context: ToolContext,
    bridge: MainThreadBridge,
    shell: Any,
    timeout: Callable[[], float | None],
) -> list[ExecutableTool]:
    """The co-authoring tools, when a frontend is connected to ``shell``'s kernel; else none."""
    link = link_for(shell)
    if link is None or not link.connected:
        return []
    return [
        NotebookCellsTool(context, link, bridge),
        InsertCellTool(context, link, bridge),
        EditCellTool(context, link, bridge),
        RunCellTool(context, link, bridge, timeout),
        DeleteCellTool(context, link, bridge),
    ]


def sync_cell_tools(toolbox: Toolbox, bridge: MainThreadBridge, shell: Any) -> None:
    """Put the cell tools on ``toolbox`` while a frontend is connected; take them off when
    none is. Newly added, ``edit_cell`` and ``run_cell`` ask; ``delete_cell`` starts disabled."""
    tools = cell_tools(toolbox.context, bridge, shell, lambda: toolbox.tool_timeout)
    # The user's policies outlive the pages: a page that leaves and comes back (a reload) must
    # not turn run_cell back from the "allow" they chose to "ask", or the reverse.
    kept: dict[str, Policy] = toolbox.__dict__.setdefault("_jupyter_agent_notebook_policies", {})
    if not tools:
        for name in TOOL_NAMES:
            if toolbox.registry.has_tool(name):
                kept[name] = toolbox.get_policy(name)
                toolbox.remove_tool(name)
        return
    new = [tool.name for tool in tools if not toolbox.registry.has_tool(tool.name)]
    toolbox.rebuild(toolbox.context, tools)
    for name in new:
        policy = kept.get(name, _START_POLICIES.get(name))
        if policy is not None:
            toolbox.set_policy(name, policy)
