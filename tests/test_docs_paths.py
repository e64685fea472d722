"""What the docs and the README name exists: a file path (``tests/...py``,
``jupyter_agent/...py``) is a file of the repository, and a dotted name in backticks
(``jupyter_agent.tools.git.RUNS_ELSEWHERE``) imports.

Modules move (the package's wings, tests named after their module); a page that still names the
old place would send a reader nowhere, and Sphinx cannot see it, since these are code spans, not
links.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FILE = re.compile(r"(?<![\w/.-])((?:tests|jupyter_agent|benchmarks|notebooks)/[\w/.-]*\w)")
DOTTED = re.compile(r"`(jupyter_agent(?:\.\w+)+)`")


def mentions(pattern: re.Pattern[str]) -> dict[str, list[str]]:
    """Each match of ``pattern`` in the pages, with the pages that name it."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for name in pattern.findall(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(page.relative_to(REPO).as_posix())
    return found


def resolves(dotted: str) -> bool:
    """``dotted`` is a module, or an attribute of the longest module prefix of it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_every_file_the_docs_name_exists() -> None:
    named = mentions(FILE)
    assert "tests/test_wheel_install.py" in named  # the pattern sees what it is for
    elided = {path for path in named if "..." in path}  # "tests/...py": a pattern, not a file
    missing = {
        path: pages
        for path, pages in named.items()
        if path not in elided and not (REPO / path).exists()
    }
    assert not missing, f"the docs name files that do not exist: {missing}"


def test_every_dotted_name_the_docs_give_imports() -> None:
    named = mentions(DOTTED)
    assert "jupyter_agent.tools.git.RUNS_ELSEWHERE" in named
    missing = {name: pages for name, pages in named.items() if not resolves(name)}
    assert not missing, f"the docs give names that do not import: {missing}"
