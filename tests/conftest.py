"""Fixtures shared across the test folders.

A fixture used by one folder only lives in that folder's ``conftest.py``. IPython and the
notebook layer are imported when a fixture that needs them runs, so that a core test does not
load them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from git_repo import init_repo
from race_arena import racing_arena

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    """A real IPython shell with the extension loaded, working in ``tmp_path``, no API key."""
    from IPython.core.interactiveshell import InteractiveShell

    from jupyter_agent.notebook.front.extension import get_magics

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ip = InteractiveShell.instance()
    ip.config.pop("AgentMagics", None)  # %config of an earlier test
    ip.run_line_magic("load_ext", "jupyter_agent")
    magics = get_magics(ip)
    assert magics is not None
    magics.workspace = str(tmp_path)
    yield ip
    if get_magics(ip) is not None:  # a test may have unloaded it
        ip.run_line_magic("unload_ext", "jupyter_agent")
    ip.config.pop("AgentMagics", None)
    for name in ("ans", "df", "x", "y", "numbers"):
        ip.user_ns.pop(name, None)


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A workspace whose ``dir`` a swapper keeps exchanging with a symlink to ``outside``."""
    with racing_arena(tmp_path) as workspace_and_outside:
        yield workspace_and_outside


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository at ``tmp_path/repo`` (its own user, no signing)."""
    return init_repo(tmp_path / "repo")


@pytest.fixture
def session_settings(tmp_path: Path) -> SessionSettings:
    """The ``session`` fixture's settings; a test module overrides this fixture to change them."""
    from jupyter_agent.notebook.session.session import SessionSettings

    return SessionSettings(workspace=str(tmp_path))


@pytest.fixture
def session(
    session_settings: SessionSettings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[NotebookSession]:
    """A ``NotebookSession`` without IPython and without an API key; the lines it would show the
    user are kept in ``session.notes``."""
    from jupyter_agent.notebook.session.session import NotebookSession

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    notes: list[str] = []
    session = NotebookSession(session_settings, namespace={}, notify=notes.append)
    session.notes = notes  # type: ignore[attr-defined]
    yield session
    session.close()
