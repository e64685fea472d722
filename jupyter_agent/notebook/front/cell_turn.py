"""``CellTurn``: the wiring of one ``%%agent`` cell while its turn runs.

A turn in a cell needs more than the session's ``run``: a renderer for the cell's output (widgets
with a Stop button in Jupyter, plain text in a terminal), a comm poller that lets the pump sleep
on the kernel's widget socket so that a click on Stop, Approve or a question form's Send is
answered at once, the approvals and question forms pointed at that poller while the turn runs,
the cell's label for the journal, and the session's refusals turned into one-line errors. All of
it is set up when the turn starts and taken down when it ends, whatever way it ends; that is
this class, so that the magics only parse the line and say what happened.

Widgets are shown only when someone could click them: a kernel nobody watches (nbconvert
``--execute``, papermill, nbval) gets the rich output without a live Stop button or poller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import FailedModelRequest, ModelRequestError, SessionError
from ..coauthor.undo_scope import name_turn, scope_journal
from ..inert import visible
from ..runtime.kernel_comm import KernelCommPoller, unattended_kernel
from ..runtime.restart_watch import RESTARTED, RestartWatch
from ..runtime.turn_gc import TurnGC
from ..views.render import Renderer
from ..views.rich_renderer import RichRenderer
from ..views.text_renderer import TextRenderer
from .turn_options import DEFAULT_TURN, TurnOptions

if TYPE_CHECKING:
    from ..asking.approvals_ui import NotebookApprovals
    from ..session.session import NotebookSession
    from ..session.turn_transcript import TurnOutcome


def cell_label(shell: Any) -> str | None:
    """``cell N``, N the running cell's number as the notebook shows it.

    IPython 9 counts a cell before running it (``execution_count`` is then the next cell's
    number), IPython 8 after; the displayhook's ``prompt_count`` — the N of ``Out[N]`` — is the
    running cell's number in both.
    """
    count = getattr(getattr(shell, "displayhook", None), "prompt_count", None)
    return f"cell {count}" if isinstance(count, int) else None


class CellTurn:
    """One turn of a chat, shown in the running cell: renderer, Stop, poller and approvals.

    ``rich``: widgets (Jupyter) rather than text (a terminal). ``approvals`` (the session's, if
    it made them yet) answer through this cell's poller while the turn runs.
    """

    def __init__(
        self,
        session: NotebookSession,
        shell: Any,
        *,
        rich: bool,
        render_interval: float,
        approvals: NotebookApprovals | None = None,
        gc: TurnGC | None = None,
    ) -> None:
        self.session = session
        self.shell = shell
        self.rich = rich
        live = rich and not unattended_kernel(shell)  # no widgets nobody could click
        self.poller = KernelCommPoller.for_shell(shell) if live else None
        stop = session.bridge.request_stop if self.poller else None  # the cell's Stop button
        self.renderer: Renderer = (
            RichRenderer(render_interval, on_stop=stop, live=live) if rich else TextRenderer()
        )
        self.approvals = approvals
        # full collections of the older heap wait for the turn's end (``gc``: a scope the caller
        # began before the turn's setup)
        self.gc = gc if gc is not None else TurnGC()

    def mark_waiting(self, call_id: str, waiting: bool) -> None:
        """Show (or stop showing) that call ``call_id`` waits for the user's approval."""
        self.renderer.mark_waiting(call_id, waiting)

    def _on_idle(self) -> None:
        self.gc.check()
        self.renderer.tick()
        if self.poller is not None:
            self.poller.poll(0)

    def run(self, prompt: str, options: TurnOptions = DEFAULT_TURN) -> TurnOutcome:
        """Run the turn, rendering its events in the cell; the renderer is closed either way.

        A failed model request raises ``FailedModelRequest`` (one line), a session's refusal a
        ``UsageError``; an interrupt is the outcome's ``interrupted``.
        """
        # the whole cell, closing the renderer included: a full collection of the older heap
        # waits for the cell's end (``turn_gc.py``)
        with self.gc:
            return self._run(prompt, options)

    def _run(self, prompt: str, options: TurnOptions) -> TurnOutcome:
        renderer, poller = self.renderer, self.poller
        bridge = self.session.bridge
        if self.approvals is not None:
            self.approvals.poller = poller
        bridge.comm_waiter = poller  # the pump sleeps on the widget socket too: clicks wake it
        journal = self.session.journal()
        scope_journal(journal, self.shell)  # this notebook's undo entry, not the folder's

        def restarting() -> None:  # on the watch's thread: the record says so, the turn stops
            renderer.ended_by = RESTARTED
            bridge.request_stop()

        watch = RestartWatch(self.shell, restarting) if self.rich else None
        try:
            outcome = self.session.run(
                prompt,
                **options.keywords(),
                label=cell_label(self.shell),
                on_event=renderer.handle,
                on_idle=self._on_idle,
                # a terminal prints text as it comes; the widgets' throttle is for displays
                text_growth=None if self.rich else 0.0,
            )
        except ModelRequestError as exc:
            renderer.close(interrupted=False)
            raise FailedModelRequest(exc.detail) from None
        except SessionError as exc:
            renderer.close(interrupted=False)
            raise UsageError(visible(str(exc))) from None
        finally:
            if watch is not None:
                watch.stop()
            name_turn(self.shell, journal, cell_label(self.shell))  # as the cell shows itself
            bridge.comm_waiter = None
            if self.approvals is not None:
                self.approvals.poller = None
            if poller is not None:
                poller.close()
        renderer.close(interrupted=outcome.interrupted)
        return outcome
