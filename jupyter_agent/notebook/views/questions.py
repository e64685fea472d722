"""A question for the user and the answer: the types ``user_questions.py`` asks with and the
form widget (``widgets/question_form.py``) shows, apart from both so neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Question:
    """What to ask: the question, and the answers to choose from (none: free text)."""

    prompt: str
    options: tuple[str, ...] = field(default=())
    #: The answer is a secret (a server's "password" field): typed masked, never shown again.
    secret: bool = False
    #: Typed words go to someone other than the model (a server's form): the record says the
    #: question was answered and how long the answer was, not what it was.
    private: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    """The user's answer (``text``), or why there is none (``text`` is ``None``)."""

    text: str | None
    reason: str = ""
