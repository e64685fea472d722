"""``ask_user``: the agent asks the user a question mid-turn and gets the answer as the result.

For a choice the agent can't make alone (which of two files, which region first): the question
is shown in the cell with a button per option (or a text field), in a terminal as a prompt
(``user_questions.py``). With nobody to answer, the result says so and the model goes on.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...tools.base import BuiltinTool, ToolFailure
from ...tools.context import ToolContext
from .user_questions import Question, UserQuestions

#: Options shown at most (a question with more is better as free text).
MAX_OPTIONS = 8


class AskUserTool(BuiltinTool):
    name = "ask_user"
    description = (
        "Ask the user a question and wait for the answer: only when you can't go on without "
        "their choice or a fact only they know. Give 'options' (2 to 8 short answers) for a "
        "choice; leave them out for a free answer. If no one can answer, decide yourself and "
        "say what you assumed."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "description": "The question."},
            "options": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": MAX_OPTIONS,
                "description": "Answers to choose from (the user may also type their own).",
            },
        },
        "required": ["question"],
        "additionalProperties": False,
    }

    def __init__(self, context: ToolContext, questions: UserQuestions) -> None:
        super().__init__(context)
        self.questions = questions

    async def execute(self, args: dict[str, object]) -> str:
        prompt = str(args["question"]).strip()
        raw_options = args.get("options") or []
        assert isinstance(raw_options, list)  # the schema was checked
        options = tuple(str(option).strip() for option in raw_options if str(option).strip())
        answer = await self.questions.ask(Question(prompt, options))
        if answer.text is None:
            raise ToolFailure(f"The user did not answer: {answer.reason}")
        return f"The user answered: {answer.text}"
