"""The one code executor: ``run_python`` and co-authoring's ``run_cell`` both run code with it.

Code runs as a notebook cell does — its statements, then its last line as an expression whose
value is the cell's result (kept as ``_``). Each caller reports the outcome its own way
(``run_python`` as text, ``run_cell`` as nbformat outputs), but the running is here once.
Must be called on the thread that owns the namespace (the kernel's main thread).
"""

from __future__ import annotations

import ast
from typing import Any


def parse_cell(code: str, filename: str) -> tuple[ast.Module, ast.Expression | None]:
    """``code`` parsed, its last line split off when it is an expression (``SyntaxError`` as
    ``ast.parse`` raises it)."""
    tree = ast.parse(code, filename=filename, mode="exec")
    last: ast.Expression | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)  # type: ignore[attr-defined]
    return tree, last


def run_cell_code(
    namespace: dict[str, Any], tree: ast.Module, last: ast.Expression | None, filename: str
) -> Any:
    """Run a parsed cell in ``namespace``: the value of its last expression (kept as ``_``), or
    ``None``. What the code raises propagates."""
    exec(compile(tree, filename, "exec"), namespace)
    if last is None:
        return None
    value = eval(compile(last, filename, "eval"), namespace)
    if value is not None:
        namespace["_"] = value
    return value
