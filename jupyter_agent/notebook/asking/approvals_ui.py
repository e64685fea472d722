"""The notebook's ``ApprovalHandler``: ask the user before a tool with policy ``ask`` runs.

The agent awaits the handler on the background loop; the question itself is asked on the main
thread through the bridge. In a kernel with a frontend that can answer, an ``ApprovalPrompt``
(Approve / Deny) appears in the running cell and the main thread keeps widget messages flowing
until a button is clicked; then a static line saying what was decided takes the prompt's place
and the prompt's widgets are closed (nothing stays open in the kernel per approval, and the
saved cell holds no widget view). In terminal IPython it asks with ``input()``. With nobody to ask —
nbclient, nbval, a script without stdin — the call is denied with a message that says why. The
cell's Stop button answers a waiting prompt "denied" and ends the turn, as an interrupt would.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

from ...approvals import ApprovalRequest, Decision, one_line
from ..inert import visible
from ..runtime.bridge import MainThreadBridge
from ..runtime.kernel_comm import KernelCommPoller
from ..views import tool_format
from .waiting_widget import someone_can_answer, wait_for_click

NO_ONE_TO_ASK = (
    "no one could approve it: this session is not interactive (no frontend or stdin to ask). "
    "Allow the tool first with `%agent_tools policy NAME allow` if it should run unattended."
)


class NotebookApprovals:
    """An ``ApprovalHandler`` that asks on the main thread, with widgets or with ``input()``."""

    def __init__(
        self,
        bridge: MainThreadBridge,
        shell: Any,
        *,
        use_widgets: Callable[[], bool],
        on_waiting: Callable[[str, bool], None] | None = None,
    ) -> None:
        self._bridge = bridge
        self._shell = shell
        self._use_widgets = use_widgets
        self._on_waiting = on_waiting
        #: The pump's widget poller for the current run (set by the magics), if any.
        self.poller: KernelCommPoller | None = None

    async def __call__(self, request: ApprovalRequest) -> Decision:
        return await self._bridge.call_on_main(lambda: self.ask(request))

    # -- on the main thread ------------------------------------------------------------------

    def ask(self, request: ApprovalRequest) -> Decision:
        if self._on_waiting is not None:
            self._on_waiting(request.call_id, True)
        try:
            if self._use_widgets():
                return self._ask_with_widget(request)
            return self._ask_with_input(request)
        finally:
            if self._on_waiting is not None:
                self._on_waiting(request.call_id, False)

    def _interactive_frontend(self) -> bool:
        return someone_can_answer(self._shell)

    def _ask_with_widget(self, request: ApprovalRequest) -> Decision:
        from ..views.widgets.approval_prompt import ApprovalPrompt

        if not self._interactive_frontend():
            return Decision(False, NO_ONE_TO_ASK)
        prompt = wait_for_click(
            self._shell,
            self.poller,
            self._bridge,
            lambda: ApprovalPrompt(request),
            answered=lambda shown: shown.decision is not None,
            give_up=lambda shown, why: shown.decide(Decision(False, why)),
        )
        if prompt is None:
            return self._ask_with_input(request)
        decision = prompt.decision
        assert decision is not None  # decided by a click, or given up above
        return decision

    def _ask_with_input(self, request: ApprovalRequest) -> Decision:
        if not self._interactive_frontend():
            return Decision(False, NO_ONE_TO_ASK)
        # Every argument in full, wrapped to the terminal, control and invisible characters as
        # escapes (``full_args``): nothing of the call may be hidden or drawn over.
        width = shutil.get_terminal_size((100, 24)).columns
        name = visible(request.name)
        print(f"{name} wants to run with:\n{tool_format.full_args(request.input, width)}")
        if request.reason:
            print(visible(request.reason))
        print("(y: yes; a: yes, and don't ask again this session; anything else: no)")
        question = f"Allow {name}? [y/N] "
        try:
            answer = input(question)
        except (EOFError, OSError, RuntimeError) as exc:  # StdinNotImplementedError: RuntimeError
            return Decision(False, f"{NO_ONE_TO_ASK} ({type(exc).__name__})")
        if answer.strip().lower() in ("y", "yes"):
            return Decision(True)
        if answer.strip().lower() in ("a", "always"):
            return Decision(True, remember=True)
        try:
            said = input("Why? (optional, Enter to skip) ")
        except (EOFError, OSError, RuntimeError):
            said = ""
        said = one_line(said)
        if said:
            print(f"Denied: {name} was not run (the user said: {visible(said)})")
        return Decision(False, "denied at the prompt", said=said)
