"""``LivePanel``: the one live ``%agent_tools`` panel of a shell, and its retirement.

A panel of toggles is live while its cell is the last one run: when the next cell ends, its
display becomes the static table of the tools, as a finished ``%%agent`` cell's calls do. A
notebook saved after that holds no widget view, which after a kernel restart would read "Error
displaying widget: model not found". One panel at a time is live: each kept ~150 widget models
open for the rest of the session (a cell with ``%agent_tools`` run again made another), and every
change from a line redrew them all. A kernel nobody watches (nbconvert ``--execute``, papermill,
nbval) gets the table straight away: nbclient saves every widget model a cell opens.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ...errors import SessionError
from .._ipython import DisplayHandle, display
from ..inert import text_bundle
from ..runtime.kernel_comm import unattended_kernel

if TYPE_CHECKING:
    from ..session.session import NotebookSession

#: Under a tool panel's table once another cell has run (the panel was live until then).
PANEL_RETIRED_NOTE = "(the tools when the next cell ran; %agent_tools shows a live panel again)"


class LivePanel:
    """Shows ``%agent_tools``'s panel in ``shell``; the one shown before becomes a table."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        #: The live panel and its display handle, if one is live.
        self._shown: tuple[Any, Any] | None = None
        self._cells_ended = 0

    def show(self, session: NotebookSession) -> None:
        """Display a new live panel of ``session``'s tools (a table where nobody watches)."""
        from ..views.widgets.tool_panel import ToolPanel, static_tools_bundle

        self.retire("(an earlier panel: the latest %agent_tools is the live one)")
        if unattended_kernel(self.shell):
            display(static_tools_bundle(session), raw=True)
            return
        panel = ToolPanel(session)
        handle = DisplayHandle()
        handle.display(panel)
        self._shown = (panel, handle)
        self._cells_ended = 0
        events = getattr(self.shell, "events", None)
        if events is not None:
            events.register("post_run_cell", self._after_cell)

    def refresh(self) -> None:
        """A line changed the tools: the live panel shows it."""
        if self._shown is not None:
            self._shown[0].refresh()

    def rebind(self, session: NotebookSession) -> None:
        """The session rebuilt its chats: the live panel acts on the new ones."""
        if self._shown is not None:
            self._shown[0].rebind(session)

    def _after_cell(self, _result: Any) -> None:
        self._cells_ended += 1  # the first is the panel's own cell
        if self._cells_ended > 1:
            self.retire(PANEL_RETIRED_NOTE)

    def retire(self, note: str) -> None:
        """Replace the live panel's display by a table of the tools and close its widgets."""
        if self._shown is None:
            return
        panel, handle = self._shown
        self._shown = None
        events = getattr(self.shell, "events", None)
        if events is not None:
            with contextlib.suppress(ValueError):  # not registered
                events.unregister("post_run_cell", self._after_cell)
        try:
            bundle = panel.static_bundle(note)
        except SessionError:  # the agents can't be rebuilt (a workspace that is gone)
            bundle = text_bundle(note)
        handle.update(bundle, raw=True)
        panel.close_all()
