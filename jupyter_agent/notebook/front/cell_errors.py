"""The notebook's last exception, for ``%agent error``: the cell that raised and its traceback.

IPython reports every finished cell to ``post_run_cell`` listeners with the cell's raw source,
execution count and the exception it raised (``error_in_exec``, or ``error_before_exec`` for a
syntax error). ``LastError`` keeps the last failing one; a ``UsageError`` (a mistyped magic,
IPython's one-line complaint) is not one. For an error raised before the extension
was loaded, ``sys.last_value`` (set by IPython's ``showtraceback``) and the cell lines IPython keeps
in ``linecache`` stand in. Nothing here imports IPython: the shell is duck-typed.

A cell left unfinished (an unclosed bracket or string) fails in IPython's compiler, which compiles
with ``codeop``'s flags: since Python 3.11 the error says only "incomplete input", and 3.13 raises
it as the private ``_IncompleteInputError``. The cell's source is compiled again the way Python runs
a file, so the prompt carries the ``SyntaxError`` that says what was left open.

``error_prompt`` turns a failed cell into the request the agent gets: explain it, fix it.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ...providers.demo_model import ERROR_REQUEST
from ...tools.cut_mark import cut_mark

#: Characters of a traceback (and of a cell's source) the prompt carries, head and tail kept.
MAX_TRACEBACK_CHARS = 12_000
MAX_SOURCE_CHARS = 20_000

_IPYTHON_FOLDER = f"{os.sep}IPython{os.sep}"
#: Cells of our own magics are not "the user's error" (a UsageError of ``%agent error`` itself).
_OWN_MAGICS = ("%agent", "%%agent", "%agent_tools")


@dataclass(frozen=True, slots=True)
class FailedCell:
    """A cell that raised: its execution count (``None`` when unknown), source and traceback."""

    execution_count: int | None
    source: str
    traceback: str


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    dropped = len(text) - head - tail
    return f"{text[:head]}\n{cut_mark(dropped)}\n{text[-tail:]}"


def _user_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without IPython's own frames at its top (``run_code`` and the like)."""
    while tb is not None and _IPYTHON_FOLDER in tb.tb_frame.f_code.co_filename:
        tb = tb.tb_next
    return tb


def _is_incomplete_input(error: BaseException) -> bool:
    """``codeop``'s "incomplete input" (``_IncompleteInputError`` on 3.13, a ``SyntaxError``)."""
    return isinstance(error, SyntaxError) and (
        type(error).__name__ == "_IncompleteInputError" or error.msg == "incomplete input"
    )


def _syntax_error_of_source(error: SyntaxError) -> SyntaxError:
    """The ``SyntaxError`` the cell's compiled source (IPython keeps it in ``linecache`` under the
    error's file name) gives without ``codeop``'s incomplete-input flag — "'(' was never closed"
    — else ``error`` as a plain ``SyntaxError``."""
    lines = linecache.getlines(error.filename) if error.filename else []
    source = "".join(lines) or (error.text or "")
    try:
        compile(source, error.filename or "<cell>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as plain:
        if not _is_incomplete_input(plain):
            return plain
    except (ValueError, OverflowError, MemoryError, RecursionError):
        pass
    where = (error.filename, error.lineno, error.offset, error.text)
    return SyntaxError(error.msg, (*where, error.end_lineno, error.end_offset))


def format_error(error: BaseException, tb: TracebackType | None = None) -> str:
    """The traceback of ``error`` as plain text (no colours), IPython's frames left out."""
    tb = _user_frames(tb if tb is not None else error.__traceback__)
    if isinstance(error, SyntaxError) and _is_incomplete_input(error):
        error = _syntax_error_of_source(error)
    lines = traceback.format_exception(type(error), error, tb)
    return _clip("".join(lines).rstrip(), MAX_TRACEBACK_CHARS)


def _is_own_magic(source: str) -> bool:
    first = source.lstrip().split(maxsplit=1)
    return bool(first) and first[0] in _OWN_MAGICS


def _is_usage_error(error: BaseException) -> bool:
    """IPython's ``UsageError``: a mistyped magic or option, said in one line — not an exception
    of the user's code (duck-typed: nothing here imports IPython)."""
    kind = type(error)
    return kind.__name__ == "UsageError" and kind.__module__.startswith("IPython")


class LastError:
    """Keeps the last failing cell; register ``post_run_cell`` with the shell's events."""

    def __init__(self) -> None:
        self.cell: FailedCell | None = None

    def post_run_cell(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is None or _is_usage_error(error):
            return
        info = getattr(result, "info", None)
        source = str(getattr(info, "raw_cell", "") or "")
        if _is_own_magic(source):
            return
        count = getattr(result, "execution_count", None)
        self.cell = FailedCell(
            count if isinstance(count, int) else None, source, format_error(error)
        )

    def last(self) -> FailedCell | None:
        """The last failing cell seen, else the exception IPython last showed, else ``None``."""
        if self.cell is not None:
            return self.cell
        return failed_cell_from_sys()


def failed_cell_from_sys() -> FailedCell | None:
    """The exception IPython's ``showtraceback`` last recorded in ``sys``, with its cell's lines."""
    error = getattr(sys, "last_value", None)
    if not isinstance(error, BaseException) or _is_usage_error(error):
        return None
    tb = _user_frames(getattr(sys, "last_traceback", None))
    source = ""
    if tb is not None:
        source = "".join(linecache.getlines(tb.tb_frame.f_code.co_filename))
    elif isinstance(error, SyntaxError) and error.filename:  # raised compiling: no cell frame
        source = "".join(linecache.getlines(error.filename))
    if _is_own_magic(source):
        return None
    return FailedCell(None, source, format_error(error, tb))


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return fence


def error_prompt(cell: FailedCell) -> str:
    """The request ``%agent error`` sends: the cell, its traceback, and what to do."""
    which = f"Cell [{cell.execution_count}]" if cell.execution_count is not None else "A cell"
    source = _clip(cell.source.rstrip(), MAX_SOURCE_CHARS) or "(its source is not available)"
    source_fence = _fence(source)
    trace_fence = _fence(cell.traceback)
    return (
        f"{which} {ERROR_REQUEST} Explain briefly what went wrong, then "
        "give the corrected code for the cell.\n\n"
        f"The cell:\n{source_fence}python\n{source}\n{source_fence}\n\n"
        f"The traceback:\n{trace_fence}\n{cell.traceback}\n{trace_fence}"
    )
