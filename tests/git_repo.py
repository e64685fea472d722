"""Throwaway git repositories for the git_commit tests, made with the real ``git`` binary: its own
user and no signing (whatever the machine's global config says), branch ``main``, and optionally
a first commit so that ``HEAD`` exists.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo``; its standard output (a failure raises)."""
    completed = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return completed.stdout


def init_repo(path: Path, *, first_commit: bool = False) -> Path:
    """A new repository at ``path``; with ``first_commit``, a committed ``README.md``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "config", "user.name", "Test Author")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    if first_commit:
        (path / "README.md").write_text("readme\n")
        git(path, "add", "README.md")
        git(path, "commit", "--quiet", "-m", "initial")
    return path
