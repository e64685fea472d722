"""Every exception of the package lives in ``errors.py``, drawn in its docstring as one tree.

A reader looking for what can be raised opens one file; the tree there must name every class, and
every class must be a ``JupyterAgentError`` (so one ``except`` catches all of them). Private
signals that never leave their module (a leading underscore) may stay beside their code.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from jupyter_agent import errors

PACKAGE = Path(__file__).parent.parent / "jupyter_agent"


def _exception_classes_outside_errors() -> list[str]:
    """Public classes named like an exception (``...Error``, ``...Exception``) or deriving from a
    name that is one, defined anywhere but ``errors.py``."""
    exception_names = {name for name, value in vars(errors).items() if isinstance(value, type)} | {
        "Exception",
        "ValueError",
        "RuntimeError",
        "LookupError",
        "TimeoutError",
        "OSError",
    }
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
            if bases & exception_names:
                found.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    return found


def test_no_exception_is_defined_outside_errors_py() -> None:
    assert _exception_classes_outside_errors() == []


def test_the_tree_names_every_exception_and_each_is_a_jupyter_agent_error() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    ]
    tree = errors.__doc__ or ""
    assert len(classes) >= 25
    for cls in classes:
        assert issubclass(cls, errors.JupyterAgentError), cls
        assert f" {cls.__name__} " in tree or f" {cls.__name__}\n" in tree, cls
