"""``ApprovalPrompt``: Approve / Deny buttons for one tool call that waits for the user.

The prompt shows the tool and its full arguments; ``decision`` stays ``None`` until a button is
clicked. Then the prompt folds into one line that says what was decided (the buttons and the
arguments go: the tool-call view below already shows the call).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from ...agent.approvals import ApprovalRequest, Decision
from .. import tool_format
from .tool_call_view import widget_bundle


class ApprovalPrompt(widgets.VBox):  # type: ignore[misc]
    """Ask the user whether one tool call may run."""

    def __init__(self, request: ApprovalRequest) -> None:
        self.request = request
        self.decision: Decision | None = None
        self._question = widgets.HTML(
            f"<b>Allow <code>{html.escape(request.name)}</code> to run?</b>"
        )
        self._arguments = widgets.HTML(
            '<pre style="white-space: pre-wrap; margin: 0; font-size: 12px;">'
            f"{html.escape(tool_format.pretty_json(request.input))}</pre>"
        )
        self.approve_button = widgets.Button(
            description="Approve", button_style="success", icon="check"
        )
        self.deny_button = widgets.Button(description="Deny", button_style="danger", icon="times")
        self._status = widgets.HTML()
        self.approve_button.on_click(lambda _b: self.decide(Decision(True)))
        self.deny_button.on_click(
            lambda _b: self.decide(Decision(False, "the user clicked Deny in the notebook"))
        )
        super().__init__(
            children=[
                self._question,
                self._arguments,
                widgets.HBox([self.approve_button, self.deny_button, self._status]),
            ],
            layout=widgets.Layout(border="1px solid #e0a800", padding="4px", margin="4px 0"),
        )

    def decide(self, decision: Decision) -> None:
        """Record the decision (first one wins) and lock the buttons."""
        if self.decision is not None:
            return
        self.decision = decision
        self.approve_button.disabled = True
        self.deny_button.disabled = True
        name = html.escape(self.request.name)
        if decision.approved:
            verdict = f"<span style='color: green'>Approved</span>: <code>{name}</code> runs"
        else:
            verdict = (
                f"<span style='color: #b00020'>Denied</span>: <code>{name}</code> was not run"
                f" ({html.escape(decision.reason)})"
                if decision.reason
                else f"<span style='color: #b00020'>Denied</span>: <code>{name}</code> was not run"
            )
        self._status.value = verdict
        self.children = [self._status]
        self.layout.border = "1px solid #ccc"

    def as_text(self) -> str:
        state = (
            "waiting for approval"
            if self.decision is None
            else ("approved" if self.decision.approved else "denied")
        )
        args = tool_format.full_args(self.request.input)
        return f"Allow {self.request.name}? — {state}\n{args}"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(self, self.as_text())
