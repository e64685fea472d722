"""A start-up file planted for a *later* kernel: the runs-later refusal covers every folder
where a kernel may start, not only the current kernel's.

Issue 33 point 0 (SPEC "Nothing the model writes runs by itself later"): with
``sub/analysis.ipynb`` in the workspace, ``write_file sub/ipykernel_launcher.py`` (or
``sub/uuid.py``, ``sub/jupyter_agent/__init__.py``) was written, and the kernel started for that
notebook runs it, unsandboxed, with the API key; the same in the workspace root when the workspace
is not the kernel's folder. Also when the notebook is created in the same turn (after the module),
and through move, mkdir and edit. Everything goes through the public tools of the default registry.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.registry import ToolRegistry

NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _call(context: ToolContext, name: str, args: dict[str, object]) -> tuple[bool, str]:
    registry = create_default_registry(context)
    result = asyncio.run(registry.call(name, args))
    return bool(result.is_error), result.content


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace that is NOT the kernel's folder (the kernel runs in another folder)."""
    kernel_folder = tmp_path / "kernel"
    kernel_folder.mkdir()
    monkeypatch.chdir(kernel_folder)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace.resolve()


@pytest.mark.parametrize(
    "path", ["sub/ipykernel_launcher.py", "sub/uuid.py", "sub/jupyter_agent/__init__.py"]
)
def test_folder_with_a_notebook_is_a_start_folder(elsewhere: Path, path: str) -> None:
    (elsewhere / "sub").mkdir()
    (elsewhere / "sub" / "analysis.ipynb").write_text(NOTEBOOK)
    error, text = _call(ToolContext(elsewhere), "write_file", {"file_path": path, "content": "1"})
    assert error and "Refusing to create or change" in text, text
    assert "kernel" in text
    assert not (elsewhere / path).exists()


@pytest.mark.parametrize("path", ["ipykernel_launcher.py", "uuid.py", "jupyter_agent/__init__.py"])
def test_workspace_root_is_a_start_folder_when_not_the_kernels(elsewhere: Path, path: str) -> None:
    error, text = _call(ToolContext(elsewhere), "write_file", {"file_path": path, "content": "1"})
    assert error and "Refusing to create or change" in text, text
    assert not (elsewhere / path).exists()


def test_notebook_created_after_the_module_is_refused(elsewhere: Path) -> None:
    """A shadowing module already there (put by hand), then a notebook next to it: refused, as
    it would make the folder a kernel's start folder where the module shadows one."""
    context = ToolContext(elsewhere)
    (elsewhere / "sub").mkdir()
    (elsewhere / "sub" / "uuid.py").write_text("1")
    error, text = _call(
        context, "write_file", {"file_path": "sub/analysis.ipynb", "content": NOTEBOOK}
    )
    assert error and "Refusing to create or change" in text and "uuid" in text, text
    assert not (elsewhere / "sub" / "analysis.ipynb").exists()
    # a notebook moved in, or a folder holding both moved to a new place, is refused the same way
    (elsewhere / "other.ipynb").write_text(NOTEBOOK)
    error, text = _call(context, "move", {"source": "other.ipynb", "destination": "sub"})
    assert error and "Refusing" in text, text
    (elsewhere / "pair").mkdir()
    (elsewhere / "pair" / "a.ipynb").write_text(NOTEBOOK)
    (elsewhere / "pair" / "uuid.py").write_text("1")
    error, text = _call(context, "move", {"source": "pair", "destination": "moved"})
    assert error and "Refusing" in text, text
    assert (elsewhere / "pair" / "uuid.py").exists() and not (elsewhere / "moved").exists()


def test_move_mkdir_and_edit_into_a_notebook_folder(elsewhere: Path) -> None:
    context = ToolContext(elsewhere)
    (elsewhere / "nb").mkdir()
    (elsewhere / "nb" / "analysis.ipynb").write_text(NOTEBOOK)
    (elsewhere / "lib").mkdir()
    (elsewhere / "lib" / "uuid.py").write_text("x = 1\n")
    (elsewhere / "pkg").mkdir()
    (elsewhere / "pkg" / "__init__.py").write_text("x = 1\n")
    error, text = _call(context, "move", {"source": "lib/uuid.py", "destination": "nb"})
    assert error and "Refusing" in text, text
    error, text = _call(context, "move", {"source": "pkg", "destination": "nb/jupyter_agent"})
    assert error and "Refusing" in text, text
    error, text = _call(context, "mkdir", {"path": "nb/.ipython/profile_default/startup"})
    assert error and "Refusing" in text, text
    # a planted module found there already (written by hand) is not the agent's to edit
    (elsewhere / "nb" / "uuid.py").write_text("x = 1\n")
    error, text = _call(
        context, "edit_file", {"file_path": "nb/uuid.py", "old_string": "x = 1", "new_string": "2"}
    )
    assert error and "Refusing" in text, text
    assert (elsewhere / "nb" / "uuid.py").read_text() == "x = 1\n"


def test_ordinary_files_next_to_a_notebook_stay_writable(elsewhere: Path) -> None:
    context = ToolContext(elsewhere)
    (elsewhere / "sub").mkdir()
    (elsewhere / "sub" / "analysis.ipynb").write_text(NOTEBOOK)
    for path in ("sub/my_helpers_x.py", "sub/mypkg/__init__.py", "sub/data.csv", "other/x.py"):
        error, text = _call(context, "write_file", {"file_path": path, "content": "1"})
        assert not error, (path, text)
    error, text = _call(context, "write_file", {"file_path": "sub/b.ipynb", "content": NOTEBOOK})
    assert not error, text


@pytest.mark.parametrize(
    "path", ["other/uuid.py", "a/b/ipykernel_launcher.py", "c/json/__init__.py"]
)
def test_folder_without_a_notebook_is_a_later_start_folder(elsewhere: Path, path: str) -> None:
    """The user may start a notebook in any folder later: a shadowing module is refused in every
    folder of the workspace, notebook or not (review F1)."""
    error, text = _call(ToolContext(elsewhere), "write_file", {"file_path": path, "content": "1"})
    assert error and "Refusing to create or change" in text, text
    assert not (elsewhere / path).exists()


def test_module_and_notebook_in_one_reply_cannot_both_land(elsewhere: Path) -> None:
    """Two tool calls of one model reply run in parallel; neither may see the folder before the
    other wrote and so let the pair through (review F1: 10/10 turns wrote both)."""
    for attempt in range(5):
        workspace = elsewhere / f"w{attempt}"
        workspace.mkdir()
        registry = create_default_registry(ToolContext(workspace))

        async def both(registry: ToolRegistry = registry) -> None:
            await asyncio.gather(
                registry.call("write_file", {"file_path": "sub/uuid.py", "content": "1"}),
                registry.call("write_file", {"file_path": "sub/a.ipynb", "content": NOTEBOOK}),
            )

        asyncio.run(both())
        assert not (workspace / "sub" / "uuid.py").exists(), attempt
