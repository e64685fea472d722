"""Fixtures shared across the test folders.

A fixture used by one folder only lives in that folder's ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from race_arena import racing_arena

from jupyter_agent.notebook.extension import get_magics


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ip = InteractiveShell.instance()
    ip.config.pop("AgentMagics", None)  # %config of an earlier test
    ip.run_line_magic("load_ext", "jupyter_agent")
    magics = get_magics(ip)
    assert magics is not None
    magics.workspace = str(tmp_path)
    yield ip
    ip.run_line_magic("unload_ext", "jupyter_agent")
    ip.config.pop("AgentMagics", None)
    for name in ("ans", "df", "x", "y", "numbers"):
        ip.user_ns.pop(name, None)


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace whose ``dir`` a swapper keeps exchanging with a symlink to ``outside``."""
    with racing_arena(tmp_path) as workspace_and_outside:
        yield workspace_and_outside
