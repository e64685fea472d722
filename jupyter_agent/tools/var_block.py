"""``VarBlock``: a context variable set to a value for the time of a ``with`` block.

A tool call finds some of its settings without arguments — its progress callback
(``progress.py``), its result budget (``result_budget.py``) — through context variables that the
agent sets around each call, so that concurrent calls and their worker threads each see their
own. One small class sets and resets them: it wraps every tool call, and a generator context
manager (``contextlib.contextmanager``) costs about a microsecond more on each.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Generic, TypeVar

__all__ = ["VarBlock"]

T = TypeVar("T")


class VarBlock(Generic[T]):
    """``with VarBlock(var, value):`` — ``var`` is ``value`` inside, as it was before after."""

    __slots__ = ("_token", "_value", "_var")

    def __init__(self, var: ContextVar[T], value: T) -> None:
        self._var = var
        self._value = value
        self._token: Token[T] | None = None

    def __enter__(self) -> None:
        self._token = self._var.set(self._value)

    def __exit__(self, *_exc: object) -> None:
        if self._token is not None:
            self._var.reset(self._token)
            self._token = None
