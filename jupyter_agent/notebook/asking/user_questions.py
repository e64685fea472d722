"""Ask the user a question and wait for the answer: a small form in the cell, ``input()`` in a
terminal, and a plain "no one can answer" when nobody is there.

The agent's ``ask_user`` tool asks through it, and so can anything else that needs a word from
the user mid-turn (an MCP server's elicitation request is the next one: a message and, at its
simplest, a choice or a line of text). Like the approval prompt (``approvals_ui.py``), the
question is put on the main thread through the session's bridge, where the form's widget
messages are pumped while it waits; an answered form becomes one static line (no widget left
open, no widget view saved). The cell's Stop button, or an interrupt, ends the wait unanswered.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from typing import Any

from ..runtime.bridge import MainThreadBridge
from ..runtime.kernel_comm import KernelCommPoller
from ..views.questions import Answer as Answer
from ..views.questions import Question as Question
from .waiting_widget import someone_can_answer, wait_for_click

NO_ONE_TO_ANSWER = (
    "no one can answer: this session has nobody at a frontend or terminal (a notebook run by "
    "nbconvert, papermill or a script). Decide yourself, and say what you assumed."
)


class UserQuestions:
    """Puts a ``Question`` to the user on the main thread, with widgets or with ``input()``."""

    def __init__(
        self,
        bridge: MainThreadBridge,
        shell: Any,
        *,
        use_widgets: Callable[[], bool],
        poller: Callable[[], KernelCommPoller | None] = lambda: None,
    ) -> None:
        self._bridge = bridge
        self._shell = shell
        self._use_widgets = use_widgets
        #: The running cell's widget poller (the magics hold it), if any.
        self._poller = poller

    async def ask(self, question: Question) -> Answer:
        """Ask from the background loop; the answer once the user gave one."""
        return await self._bridge.call_on_main(lambda: self.ask_on_main(question))

    # -- on the main thread ------------------------------------------------------------------

    def ask_on_main(self, question: Question) -> Answer:
        if not self._someone_there():
            return Answer(None, NO_ONE_TO_ANSWER)
        if self._use_widgets():
            return self._ask_with_form(question)
        return self._ask_with_input(question)

    def _someone_there(self) -> bool:
        return someone_can_answer(self._shell)

    def _ask_with_form(self, question: Question) -> Answer:
        from ..views.widgets.question_form import QuestionForm

        form = wait_for_click(
            self._shell,
            self._poller(),
            self._bridge,
            lambda: QuestionForm(question),
            answered=lambda shown: shown.answer is not None,
            give_up=lambda shown, why: shown.decide(Answer(None, why)),
        )
        if form is None:
            return self._ask_with_input(question)
        answer = form.answer
        assert answer is not None  # answered, or given up above
        return answer

    @staticmethod
    def _ask_with_input(question: Question) -> Answer:
        print(f"? {question.prompt}")
        for number, option in enumerate(question.options, 1):
            print(f"  {number}. {option}")
        hint = f"[1-{len(question.options)} or your own words] " if question.options else "> "
        try:
            # a secret is read without echo, and never printed back
            typed = (getpass.getpass(hint) if question.secret else input(hint)).strip()
        except (EOFError, OSError, RuntimeError) as exc:  # StdinNotImplementedError: RuntimeError
            return Answer(None, f"{NO_ONE_TO_ANSWER} ({type(exc).__name__})")
        if typed.isdigit() and 1 <= int(typed) <= len(question.options):
            return Answer(question.options[int(typed) - 1])
        if not typed:
            return Answer(None, "the user gave no answer")
        return Answer(typed)
