"""``QuestionForm``: a question in the cell, a button per option or a text field to answer it.

``answer`` stays ``None`` until a button is clicked (or text is sent); then the form locks.
``static_bundle`` is the answered question as one line without a widget: the asker puts it in
the form's place and closes the form's widgets (see ``user_questions.py``).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ...inert import html_bundle, html_text
from ..questions import Answer, Question
from .inert_html import InertHTML
from .tool_call_group import close_tree
from .tool_call_view import widget_bundle

#: What the answered line shows for a secret (never the value).
MASK = "•••• (a secret, not shown)"


class QuestionForm(widgets.VBox):  # type: ignore[misc]
    """Ask the user one question."""

    def __init__(self, question: Question) -> None:
        self.question = question
        self.answer: Answer | None = None
        # the question may be the model's or a server's words: escaped, shown as lines
        prompt = html_text(question.prompt).replace("\n", "<br>")
        self._label = InertHTML(f"<b>? {prompt}</b>")
        self.option_buttons = [
            widgets.Button(description=option[:60], tooltip=option) for option in question.options
        ]
        for button, option in zip(self.option_buttons, question.options, strict=True):
            button.on_click(lambda _b, chosen=option: self.decide(Answer(chosen)))
        box = widgets.Password if question.secret else widgets.Text  # a secret typed masked
        self.text = box(
            placeholder="or type an answer" if question.options else "your answer",
            layout=widgets.Layout(width="320px"),
        )
        self.send_button = widgets.Button(description="Send", button_style="primary")
        self.send_button.on_click(lambda _b: self._send_text())
        self.text.on_submit(lambda _t: self._send_text())
        self._parts = [
            self._label,
            widgets.HBox(self.option_buttons),
            widgets.HBox([self.text, self.send_button]),
        ]
        super().__init__(
            children=self._parts,
            layout=widgets.Layout(border="1px solid #1a73e8", padding="4px", margin="4px 0"),
        )

    def _send_text(self) -> None:
        typed = str(self.text.value).strip()
        if typed:
            self.decide(Answer(typed))

    def decide(self, answer: Answer) -> None:
        """Record the answer (the first one wins) and lock the form."""
        if self.answer is not None:
            return
        self.answer = answer
        for button in (*self.option_buttons, self.send_button):
            button.disabled = True
        self.text.disabled = True

    def answer_text(self) -> str:
        if self.answer is None:
            return f"? {self.question.prompt} — waiting for an answer"
        if self.answer.text is None:
            return f"? {self.question.prompt} — no answer ({self.answer.reason})"
        shown = self.answer.text
        if shown not in self.question.options:
            if self.question.secret:
                shown = MASK
            elif self.question.private:
                shown = f"answered ({len(shown):,} characters, sent to the server only)"
        return f"? {self.question.prompt} → {shown}"

    def static_bundle(self) -> dict[str, str]:
        """The answered question as one line, HTML and plain text, no widget."""
        return html_bundle(
            "<div style='border: 1px solid #ccc; padding: 4px; margin: 4px 0;'>"
            f"{html_text(self.answer_text())}</div>",
            self.answer_text(),
        )

    def close_all(self) -> None:
        for part in (*self._parts, self):
            close_tree(part)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(self, self.answer_text())
