"""``ApprovalPrompt``: Approve / Deny buttons for one tool call that waits for the user.

The prompt shows the tool and its full arguments — exactly what the tool receives, one argument
per line, multi-line text as its lines, control, bidi and zero-width characters as escapes
(``tool_format.full_args``), nothing cut; ``decision`` stays ``None`` until a button is
clicked. Then the prompt folds into one line that says what was decided (the buttons and the
arguments go: the tool-call view below already shows the call). ``static_bundle`` is that line
without a widget: the asker puts it in the prompt's place and closes the prompt's widgets, so an
answered prompt leaves nothing open in the kernel and no widget view in the saved cell.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ....approvals import ApprovalRequest, Decision, one_line
from ...inert import html_bundle, html_text, visible
from .. import tool_format
from .inert_html import InertHTML
from .tool_call_group import close_tree
from .tool_call_view import widget_bundle


class ApprovalPrompt(widgets.VBox):  # type: ignore[misc]
    """Ask the user whether one tool call may run."""

    def __init__(self, request: ApprovalRequest) -> None:
        self.request = request
        self.decision: Decision | None = None
        why = (
            f"<div style='margin: 2px 0;'>{html_text(request.reason)}</div>"
            if request.reason
            else ""
        )
        self._question = InertHTML(
            f"<b>Allow <code>{html_text(request.name)}</code> to run?</b>{why}"
        )
        self._arguments = InertHTML(
            '<pre style="white-space: pre-wrap; margin: 0; font-size: 12px;">'
            f"{html_text(tool_format.full_args(request.input, None, indent=''))}</pre>"
        )
        self.approve_button = widgets.Button(
            description="Approve", button_style="success", icon="check"
        )
        self.session_button = widgets.Button(
            description="Allow for this session",
            tooltip=(
                "Don't ask again for this host" if request.reason else "Set this tool to 'allow'"
            ),
            layout=widgets.Layout(width="auto"),
        )
        self.deny_button = widgets.Button(description="Deny", button_style="danger", icon="times")
        #: Why (optional, one line): what the user types here goes to the model with the Deny.
        self.why = widgets.Text(
            placeholder="why? (optional, told to the agent)",
            layout=widgets.Layout(width="22em"),
        )
        self._status = InertHTML()
        self.approve_button.on_click(lambda _b: self.decide(Decision(True)))
        self.session_button.on_click(lambda _b: self.decide(Decision(True, remember=True)))
        self.deny_button.on_click(lambda _b: self._deny())
        self._buttons = widgets.HBox(
            [self.approve_button, self.session_button, self.deny_button, self.why, self._status]
        )
        super().__init__(
            children=[self._question, self._arguments, self._buttons],
            layout=widgets.Layout(border="1px solid #e0a800", padding="4px", margin="4px 0"),
        )

    def _deny(self) -> None:
        said = one_line(str(self.why.value))
        self.decide(Decision(False, "the user clicked Deny in the notebook", said=said))

    def decide(self, decision: Decision) -> None:
        """Record the decision (first one wins) and lock the buttons."""
        if self.decision is not None:
            return
        self.decision = decision
        self.approve_button.disabled = True
        self.session_button.disabled = True
        self.deny_button.disabled = True
        self.why.disabled = True
        name = html_text(self.request.name)
        if decision.approved:
            scope = " (and from now on, this session)" if decision.remember else ""
            verdict = f"<span style='color: green'>Approved</span>: <code>{name}</code> runs{scope}"
        else:
            why = _why(decision)
            verdict = (
                f"<span style='color: #b00020'>Denied</span>: <code>{name}</code> was not run"
                f" ({html_text(why)})"
                if why
                else f"<span style='color: #b00020'>Denied</span>: <code>{name}</code> was not run"
            )
        self._status.value = verdict
        self.children = [self._status]
        self.layout.border = "1px solid #ccc"

    def verdict_text(self) -> str:
        """The decided prompt's line as plain text (empty while it waits)."""
        decision = self.decision
        if decision is None:
            return ""
        if decision.approved:
            scope = " (and from now on, this session)" if decision.remember else ""
            return f"Approved: {self.request.name} runs{scope}"
        why = _why(decision)
        reason = f" ({visible(why)})" if why else ""
        return f"Denied: {visible(self.request.name)} was not run{reason}"

    def static_bundle(self) -> dict[str, str]:
        """What a decided prompt leaves in the cell: its one line, HTML and plain, no widget."""
        return html_bundle(
            f"<div style='border: 1px solid #ccc; padding: 4px; margin: 4px 0;'>"
            f"{self._status.value}</div>",
            self.verdict_text(),
        )

    def close_all(self) -> None:
        """Close the prompt and every widget it was built from (a decided prompt no longer
        shows the question, arguments and buttons, so ``close_tree`` alone would miss them)."""
        for part in (self._question, self._arguments, self._buttons, self.why, self):
            close_tree(part)

    def as_text(self) -> str:
        state = (
            "waiting for approval"
            if self.decision is None
            else ("approved" if self.decision.approved else "denied")
        )
        args = tool_format.full_args(self.request.input)
        why = f"\n{self.request.reason}" if self.request.reason else ""
        return f"Allow {self.request.name}? — {state}{why}\n{args}"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(self, self.as_text())


def _why(decision: Decision) -> str:
    """What a Deny's line says in brackets: the user's words if they typed some."""
    return f"the user said: {decision.said}" if decision.said else decision.reason
