"""Every Python snippet in the docs runs, offline, as a reader would run it.

The fenced blocks of ``docs/**/*.md`` are collected page by page: a ``python`` block runs as
plain Python, an ``ipython`` block (magics, top-level ``await``, ``get_ipython()``) through a
real IPython shell with the extension loaded (the ``shell`` fixture). The blocks of one page run
in order in one namespace — a page reads top to bottom — in a temporary folder holding the
tutorials' ``data/``, with no API key, so the offline demo model answers.

A block that cannot run here (it needs Claude, a server on the network, Node.js) is marked with
``<!-- snippet: skip REASON -->`` on the line above it; the skips are counted, and a skip
without a reason, or a Python-like fence of another name (``py``, ``python3``, ``pycon``,
``ipython3``), fails: no snippet goes unchecked silently.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
DATA = REPO / "notebooks" / "data"

#: A fenced block: ```python, ```ipython, or MyST's ```{code-block} python.
FENCE = re.compile(r"^```(?:\{code-block\}\s+)?([\w-]+)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
SKIP = re.compile(r"<!--\s*snippet:\s*skip\b(.*?)-->\s*\Z", re.S)
RUN = {"python", "ipython"}
#: fence names that hold Python but would escape this test: use python or ipython instead
PYTHON_LIKE = {"py", "python3", "py3", "pycon", "ipython3", "ipy"}
#: pages written by the build, not by hand (the magics reference is all text blocks anyway)
GENERATED = {DOCS / "guide" / "magics.md"}


@dataclass(frozen=True)
class Snippet:
    page: str
    line: int
    language: str
    code: str
    skip: str | None  # the reason, when marked skipped


def page_snippets(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        language = match.group(1)
        if language not in RUN | PYTHON_LIKE:
            continue
        before = text[: match.start()]
        marked = SKIP.search(before)
        found.append(
            Snippet(
                page=path.relative_to(DOCS).as_posix(),
                line=before.count("\n") + 1,
                language=language,
                code=match.group(2),
                skip=marked.group(1).strip() if marked else None,
            )
        )
    return found


def all_snippets() -> list[Snippet]:
    pages = sorted(p for p in DOCS.rglob("*.md") if p not in GENERATED and "_build" not in p.parts)
    return [snippet for page in pages for snippet in page_snippets(page)]


SNIPPETS = all_snippets()


def pages_with(language: str) -> list[str]:
    return sorted({s.page for s in SNIPPETS if s.language == language})


def runnable(page: str, language: str) -> list[Snippet]:
    return [s for s in SNIPPETS if s.page == page and s.language == language and s.skip is None]


@pytest.fixture
def offline_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working folder, holding the tutorials' data, with no model keys."""
    shutil.copytree(DATA, tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "JUPYTER_AGENT_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_every_python_snippet_is_run_or_skipped_with_a_reason() -> None:
    counts = Counter("skipped" if s.skip is not None else s.language for s in SNIPPETS)
    print(f"docs snippets: {dict(counts)}")
    assert counts["python"] and counts["ipython"], counts
    odd = [f"{s.page}:{s.line} ```{s.language}" for s in SNIPPETS if s.language in PYTHON_LIKE]
    assert not odd, f"fence these as python or ipython, so they run: {odd}"
    bare = [f"{s.page}:{s.line}" for s in SNIPPETS if s.skip == ""]
    assert not bare, f"a skipped snippet says why (<!-- snippet: skip REASON -->): {bare}"


@pytest.mark.parametrize("page", pages_with("python"))
def test_python_snippets_run(page: str, offline_workspace: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    for snippet in runnable(page, "python"):
        code = compile(snippet.code, f"docs/{page}:{snippet.line}", "exec")
        exec(code, namespace)


@pytest.mark.parametrize("page", pages_with("ipython"))
def test_ipython_snippets_run(page: str, offline_workspace: Path, shell: InteractiveShell) -> None:
    for snippet in runnable(page, "ipython"):
        result = shell.run_cell(snippet.code, store_history=False)
        where = f"docs/{page}:{snippet.line}"
        assert result.error_before_exec is None, (where, result.error_before_exec)
        assert result.error_in_exec is None, (where, result.error_in_exec)


def test_the_snippet_collector_sees_what_a_reader_sees(tmp_path: Path) -> None:
    """The collector itself: fences by name, MyST's code-block, skip markers and their reasons."""
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n```python\nx = 1\n```\n\n```{code-block} ipython\n%agent config\n```\n\n"
        "<!-- snippet: skip needs Claude -->\n```python\nask_claude()\n```\n\n"
        "```text\nnot code\n```\n\n```py\ny = 2\n```\n",
        encoding="utf-8",
    )
    global DOCS
    saved, DOCS = DOCS, tmp_path
    try:
        found = page_snippets(page)
    finally:
        DOCS = saved
    assert [(s.line, s.language, s.skip) for s in found] == [
        (3, "python", None),
        (7, "ipython", None),
        (12, "python", "needs Claude"),
        (20, "py", None),
    ]
    assert found[0].code == "x = 1\n"
    assert os.sep not in found[0].page and sys.version_info >= (3, 11)
