"""Typed handles on the parts of IPython's API that ship without (usable) annotations.

mypy --strict refuses calls to IPython's untyped functions (``display``, the ``magic_arguments``
decorators) and mis-types ``line_cell_magic(name)``; the notebook layer goes through these
wrappers instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from IPython.core import magic as _magic_module
from IPython.core import magic_arguments as _magic_arguments_module
from IPython.core.error import UsageError
from IPython.display import DisplayHandle as _DisplayHandle
from IPython.display import display as _display

F = TypeVar("F", bound=Callable[..., Any])

_magic: Any = _magic_module
_magic_arguments: Any = _magic_arguments_module

display: Callable[..., Any] = _display
DisplayHandle: Callable[[], Any] = _DisplayHandle


def magic_arguments(name: str | None = None) -> Callable[[F], F]:
    """``magic_arguments``; ``name`` is what the usage line shows after its ``%``."""
    return cast(Callable[[F], F], _magic_arguments.magic_arguments(name))


def argument(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    return cast(Callable[[F], F], _magic_arguments.argument(*args, **kwargs))


def parse_argstring(magic_function: Callable[..., Any], line: str) -> Any:
    """Parse ``line``; every mistake, an unclosed quote too, is a one-line ``UsageError``."""
    try:
        return _magic_arguments.parse_argstring(magic_function, line)
    except ValueError as exc:  # shlex: "No closing quotation" and the like
        raise UsageError(f"{exc} in {line.strip()!r}") from None


def line_cell_magic(name: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], _magic.line_cell_magic(name))
