"""The types of the magics' arguments and settings: each turns a word of a line into a value or
says, in one line, why it cannot (``argparse.ArgumentTypeError``; ``TraitError`` for a
``%config`` value), so ``magic_arguments`` reports it as the argument's error.
"""

from __future__ import annotations

import argparse

from traitlets import TraitError

from ...errors import SessionError
from ..session.settings import check_chat_name


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def dollars(text: str) -> float:
    try:
        value = float(text.lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs dollars, like 0.50, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("a budget is 0 or more dollars")
    return value


def identifier(text: str) -> str:
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"needs a variable name, not {text!r}")
    return text


#: ``--effort`` and ``AgentMagics.effort`` (the API's ``output_config.effort`` levels).
EFFORT_CHOICES = ("low", "medium", "high", "xhigh", "max")


def thinking_budget(value: int | str) -> int:
    """A thinking budget the API accepts (checked where the provider checks it)."""
    from ...providers.anthropic import MIN_THINKING_BUDGET  # imports the SDK: only when used

    try:
        budget = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {value!r}") from None
    if budget < MIN_THINKING_BUDGET:
        raise TraitError(f"a thinking budget is at least {MIN_THINKING_BUDGET} tokens")
    return budget


def think(text: str) -> int:
    try:
        return thinking_budget(text)
    except TraitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def unquoted(text: str) -> str:
    """``"my chat"`` → ``my chat``: ``magic_arguments`` splits a line at spaces outside quotes but
    keeps the quotes themselves."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def chat_name(text: str) -> str:
    try:
        return check_chat_name(unquoted(text))
    except SessionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
