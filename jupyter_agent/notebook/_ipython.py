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


def parse_command(
    handler: Callable[..., Any], words: str | list[str], usage: str | None = None
) -> Any:
    """``words`` (the rest of the line, or its words already split) parsed by ``handler``'s
    ``magic_arguments``: the one parse helper of every subcommand. A mistake is one
    ``UsageError`` that names the command and ends with its usage line (or ``usage``), e.g.
    ``%agent save: the following arguments are required: PATH; usage: %agent save PATH``."""
    parser = handler.parser  # type: ignore[attr-defined]
    try:
        if isinstance(words, str):
            return parse_argstring(handler, words)
        return parser.parse_args(words)
    except UsageError as exc:
        if usage is None:
            usage = "usage: " + " ".join(parser.format_usage().split()).removeprefix(":: ")
        raise UsageError(f"%{parser.prog}: {exc}; {usage}") from None


def line_cell_magic(name: str) -> Callable[[F], F]:
    return cast(Callable[[F], F], _magic.line_cell_magic(name))
