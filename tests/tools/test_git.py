"""git_commit in throwaway repositories with the real git binary."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from git_repo import git, init_repo

from jupyter_agent.errors import PathOutsideWorkspaceError
from jupyter_agent.tools.base import ToolFailure
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.git import GitCommitTool
from jupyter_agent.tools.registry import ToolRegistry

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def committed_files(repo: Path, rev: str = "HEAD") -> list[str]:
    return git(repo, "show", "--name-only", "--format=", rev).split()


async def test_commit_lands_with_message_and_given_paths_only(repo: Path) -> None:
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    (repo / "data").mkdir()
    (repo / "data" / "c.csv").write_text("x,y\n")
    result = await GitCommitTool(ToolContext(repo)).execute(
        {"message": "Add a and data\n\nBody line.", "paths": ["a.txt", "data"]}
    )
    short_hash = git(repo, "rev-parse", "--short", "HEAD").strip()
    assert result.startswith(f"Committed {short_hash}: Add a and data")
    assert "2 files changed" in result
    assert git(repo, "log", "-1", "--format=%B").strip() == "Add a and data\n\nBody line."
    assert sorted(committed_files(repo)) == ["a.txt", "data/c.csv"]
    assert git(repo, "status", "--porcelain").strip() == "?? b.txt"


async def test_commit_all_changes_by_default(repo: Path) -> None:
    (repo / "a.txt").write_text("a\n")
    tool = GitCommitTool(ToolContext(repo))
    await tool.execute({"message": "first"})
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    result = await tool.execute({"message": "second"})
    assert "second" in result
    assert sorted(committed_files(repo)) == ["a.txt", "new.txt"]
    assert git(repo, "status", "--porcelain") == ""


async def test_deletions_and_glob_characters_are_literal(repo: Path) -> None:
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    tool = GitCommitTool(ToolContext(repo))
    await tool.execute({"message": "both"})
    (repo / "a.txt").unlink()
    (repo / "*.txt").write_text("star\n")
    (repo / "b.txt").write_text("b2\n")
    await tool.execute({"message": "remove a", "paths": ["a.txt"]})
    assert git(repo, "show", "--name-status", "--format=", "HEAD").split() == ["D", "a.txt"]
    await tool.execute({"message": "star", "paths": ["*.txt"]})
    assert committed_files(repo) == ["*.txt"]  # b.txt was not matched as a glob


async def test_not_a_repository_is_a_clean_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    registry = ToolRegistry()
    registry.register(GitCommitTool(ToolContext(plain)))
    result = await registry.call("git_commit", {"message": "x"})
    assert result.is_error
    assert "not inside a git repository" in result.content
    assert not (plain / ".git").exists()  # never git init


async def test_nothing_to_commit_is_a_clean_error(repo: Path) -> None:
    tool = GitCommitTool(ToolContext(repo))
    with pytest.raises(ToolFailure, match="Nothing to commit"):
        await tool.execute({"message": "empty repo"})
    (repo / "a.txt").write_text("a\n")
    await tool.execute({"message": "first"})
    with pytest.raises(ToolFailure, match="Nothing to commit"):
        await tool.execute({"message": "again"})
    (repo / "b.txt").write_text("b\n")
    with pytest.raises(ToolFailure, match="no changes in the given paths"):
        await tool.execute({"message": "only a", "paths": ["a.txt"]})


async def test_paths_outside_the_workspace_are_refused(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("o\n")
    tool = GitCommitTool(ToolContext(repo))
    with pytest.raises(PathOutsideWorkspaceError):
        await tool.execute({"message": "escape", "paths": ["../outside.txt"]})
    with pytest.raises(PathOutsideWorkspaceError):
        await tool.execute({"message": "escape", "paths": [str(tmp_path / "outside.txt")]})


async def test_workspace_inside_a_bigger_repository_commits_only_the_workspace(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "big")
    workspace = repo / "project"
    workspace.mkdir()
    (repo / "elsewhere.txt").write_text("user's own staged work\n")
    git(repo, "add", "elsewhere.txt")
    (workspace / "notes.md").write_text("# notes\n")
    await GitCommitTool(ToolContext(workspace)).execute({"message": "project notes"})
    assert committed_files(repo) == ["project/notes.md"]
    assert git(repo, "status", "--porcelain").strip() == "A  elsewhere.txt"


async def test_git_failure_carries_git_output(repo: Path) -> None:
    # Another git holds the index lock (hooks, which used to be the example, no longer run).
    (repo / ".git" / "index.lock").write_text("")
    (repo / "a.txt").write_text("a\n")
    with pytest.raises(ToolFailure) as excinfo:
        await GitCommitTool(ToolContext(repo)).execute({"message": "blocked"})
    assert "git add failed" in str(excinfo.value)
    assert "index.lock" in str(excinfo.value)


async def test_message_with_a_leading_dash_and_a_hanging_editor_configured(repo: Path) -> None:
    # An editor that would hang for ever; GIT_EDITOR=true in the environment wins.
    git(repo, "config", "core.editor", "sleep 1000")
    (repo / "a.txt").write_text("a\n")
    result = await GitCommitTool(ToolContext(repo)).execute({"message": "-starts with a dash"})
    assert "-starts with a dash" in result


def test_schema(tmp_path: Path) -> None:
    tool = GitCommitTool(ToolContext(tmp_path))
    schema = tool.get_schema()
    assert schema["name"] == "git_commit"
    assert schema["input_schema"]["required"] == ["message"]
    assert set(schema["input_schema"]["properties"]) == {"message", "paths"}
    assert tool.destructive is False
