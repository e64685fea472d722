"""git_commit never runs a command the model planted (issue 11, point 1).

Each test plays one route a prompt-injected model has with only the *enabled-by-default* file
tools (``write_file``, ``edit_file``, ``mkdir``): it plants configuration, a hook or a driver
through the real tools, then asks ``git_commit`` to commit. The planted command would create a
canary file outside the workspace; the test asserts that it never appears and that nothing of
the user's (ssh agent, signing program) was handed to git. Every route here made the old
``git_commit`` run the planted command.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from git_repo import git, init_repo

from jupyter_agent.tools.base import ToolFailure
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.files.files import EditFileTool, MkdirTool, WriteFileTool
from jupyter_agent.tools.git import GitCommitTool

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    """Where a planted command would leave its mark: outside every workspace."""
    marks = tmp_path / "outside"
    marks.mkdir()
    return marks / "PWNED"


class Model:
    """The model's hands: the default registry's file tools, confined to ``workspace``."""

    def __init__(self, workspace: Path) -> None:
        context = ToolContext(workspace)
        self.write = WriteFileTool(context)
        self.edit = EditFileTool(context)
        self.mkdir = MkdirTool(context)
        self.commit = GitCommitTool(context)

    async def write_file(self, path: str, content: str) -> None:
        await self.write.execute({"file_path": path, "content": content})

    async def git_commit(self, **args: object) -> str:
        """The call as the gate runs it once the user approved what it asked about (hooks and
        attributes run elsewhere, so committing them asks; what git runs here is tested)."""
        call = {"message": "agent commit", **args}
        self.commit.needs_approval(call)
        try:
            return await self.commit.execute(call)
        except ToolFailure as exc:
            return f"failure: {exc}"


def planted_config(canary: Path) -> str:
    command = f"touch {canary}"
    return (
        "[core]\n"
        f"\tfsmonitor = {command}\n"
        f"\thooksPath = hooks\n"
        '[filter "evil"]\n'
        f"\tclean = sh -c '{command}; cat'\n"
        "\trequired = true\n"
        '[diff "evil"]\n'
        f"\ttextconv = sh -c '{command}; cat'\n"
        f"\tcommand = {command}\n"
        "[diff]\n"
        f"\texternal = {command}\n"
        "[commit]\n"
        "\tgpgSign = true\n"
        "[gpg]\n"
        f"\tprogram = {command}\n"
    )


async def test_a_bare_repository_planted_in_a_subfolder_workspace(
    tmp_path: Path, canary: Path
) -> None:
    """The workspace is a folder of a larger repository; the model makes it look like a bare repo.

    git's discovery checks each folder for ``.git`` and then whether the folder itself is a bare
    repository — so the planted one wins over the real repository above it.
    """
    repo = init_repo(tmp_path / "project", first_commit=True)
    workspace = repo / "notebooks"
    workspace.mkdir()
    model = Model(workspace)
    await model.write_file("HEAD", "ref: refs/heads/main\n")
    await model.mkdir.execute({"path": "objects"})
    await model.mkdir.execute({"path": "refs/heads"})
    await model.write_file(
        "config", planted_config(canary) + "[core]\n\tbare = false\n\tworktree = .\n"
    )
    await model.write_file("analysis.py", "print('hi')\n")
    result = await model.git_commit(paths=["analysis.py"])
    assert not canary.exists(), f"git ran the planted command ({result})"
    # git_commit finds the real repository above the workspace; the planted one is ignored
    assert result.startswith("Committed"), result
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "notebooks/analysis.py"
    ]


async def test_a_gitconfig_planted_when_the_workspace_is_home(
    tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace that is (or contains) ``$HOME``: the model writes ``~/.gitconfig``."""
    workspace = init_repo(tmp_path / "home", first_commit=True)
    monkeypatch.setenv("HOME", str(workspace))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    model = Model(workspace)
    await model.write_file(".gitconfig", planted_config(canary))
    await model.write_file(".gitattributes", "* filter=evil diff=evil\n")
    await model.write_file("data.txt", "some data\n")
    result = await model.git_commit()
    assert not canary.exists(), f"git ran the planted command ({result})"
    assert result.startswith("Committed"), result
    # the user's identity (repository config) was kept
    assert git(workspace, "log", "-1", "--format=%an <%ae>").strip() == (
        "Test Author <test@example.com>"
    )


async def test_an_xdg_git_config_planted_in_the_workspace(
    tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = init_repo(tmp_path / "repo", first_commit=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workspace / ".config"))
    model = Model(workspace)
    await model.write_file(".config/git/config", planted_config(canary))
    await model.write_file(".config/git/attributes", "* filter=evil\n")
    await model.write_file("data.txt", "some data\n")
    result = await model.git_commit()
    assert not canary.exists(), f"git ran the planted command ({result})"


async def test_a_hook_the_user_configured_cannot_be_rewritten_into_a_command(
    tmp_path: Path, canary: Path
) -> None:
    """The user's repository uses husky (``core.hooksPath = .husky``); the model edits the hook.

    ``edit_file`` keeps the file's mode, so the executable hook stays executable with the
    model's content — the next commit would run it.
    """
    repo = init_repo(tmp_path / "repo", first_commit=True)
    git(repo, "config", "core.hooksPath", ".husky")
    hook = repo / ".husky" / "pre-commit"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\necho lint ok\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    model = Model(repo)
    await model.edit.execute(
        {
            "file_path": ".husky/pre-commit",
            "old_string": "echo lint ok",
            "new_string": f"touch {canary}",
        }
    )
    await model.write_file("data.txt", "some data\n")
    result = await model.git_commit()
    assert not canary.exists(), f"git ran the rewritten hook ({result})"
    assert result.startswith("Committed"), result


async def test_a_pre_commit_framework_config_is_not_run(tmp_path: Path, canary: Path) -> None:
    """pre-commit installs ``.git/hooks/pre-commit``, which runs what ``.pre-commit-config.yaml``
    names; the model writes that file. (The hook here stands in for pre-commit's: it runs the
    ``entry`` lines of the config.)"""
    repo = init_repo(tmp_path / "repo", first_commit=True)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        "#!/bin/sh\n"
        "sed -n 's/^ *entry: //p' .pre-commit-config.yaml |\n"
        'while read -r cmd; do sh -c "$cmd"; done\n'
    )
    hook.chmod(0o755)
    model = Model(repo)
    await model.write_file(
        ".pre-commit-config.yaml",
        f"repos:\n- repo: local\n  hooks:\n  - id: x\n    name: x\n    entry: touch {canary}\n"
        "    language: system\n",
    )
    result = await model.git_commit()
    assert not canary.exists(), f"the pre-commit hook ran the model's entry ({result})"
    assert result.startswith("Committed"), result


async def test_the_users_signing_program_and_ssh_agent_are_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git_commit commits with the user's identity and nothing else of theirs: no signing (whose
    program would see the ssh agent), no ``SSH_AUTH_SOCK`` in git's environment."""
    repo = init_repo(tmp_path / "repo", first_commit=True)
    seen = tmp_path / "signer-env"
    signer = tmp_path / "signer.sh"
    signer.write_text(f"#!/bin/sh\nenv > {seen}\nexit 1\n")
    signer.chmod(0o755)
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "gpg.program", str(signer))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    model = Model(repo)
    await model.write_file("data.txt", "some data\n")
    result = await model.git_commit()
    assert not seen.exists(), "git ran the signing program"
    assert result.startswith("Committed"), result
    assert git(repo, "log", "-1", "--format=%G?").strip() == "N"  # not signed


async def test_git_sees_no_secret_in_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a command the user configured (a clean filter here) sees no key and no agent."""
    repo = init_repo(tmp_path / "repo", first_commit=True)
    dump = tmp_path / "filter-env"
    git(repo, "config", "filter.dump.clean", f"sh -c 'env > {dump}; cat'")  # the user's own
    (repo / ".gitattributes").write_text("*.txt filter=dump\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "--quiet", "-m", "attributes")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    model = Model(repo)
    await model.write_file("data.txt", "some data\n")
    result = await model.git_commit()
    assert result.startswith("Committed"), result
    if dump.exists():  # the user's own filter may run; it must see nothing secret
        env = dump.read_text()
        assert "sk-ant-test-secret" not in env
        assert "SSH_AUTH_SOCK" not in env
    assert "ANTHROPIC_API_KEY" not in os.environ.get("GIT_CONFIG_PARAMETERS", "")


@pytest.mark.parametrize("folder", ["plain", "café"])
@pytest.mark.parametrize("include", ["../.gitconfig", "ABSOLUTE"])
async def test_a_repository_config_that_includes_a_workspace_file_is_refused(
    tmp_path: Path, canary: Path, folder: str, include: str
) -> None:
    """The user's ``.git/config`` includes a file the model can write (relative ``../x``, or
    absolute in a folder with a non-ASCII name, which git prints quoted): git_commit must
    refuse, not run the filter the model wrote there."""
    repo = init_repo(tmp_path / folder, first_commit=True)
    target = str(repo / ".gitconfig") if include == "ABSOLUTE" else include
    git(repo, "config", "include.path", target)
    model = Model(repo)
    await model.write_file(
        ".gitconfig", f'[filter "x"]\n\tclean = "sh -c \'touch {canary}; cat\'"\n'
    )
    await model.write_file(".gitattributes", "* filter=x\n")
    await model.write_file("data.txt", "some data\n")
    result = await model.git_commit()
    assert not canary.exists(), f"git ran the filter the model wrote ({result})"
    assert "includes" in result and "inside the workspace" in result, result


async def test_git_runs_sandboxed_so_a_repo_config_changed_by_run_bash_cannot_reach_outside(
    tmp_path: Path, canary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With run_bash enabled the model can edit ``.git/config`` itself (it is in the
    workspace); git_commit then runs git in the same sandbox as run_bash, so a filter planted
    there cannot write outside the workspace or see the kernel's environment."""
    from jupyter_agent.tools.guard.sandbox import bwrap_works
    from jupyter_agent.tools.shell import RunBashTool

    if not bwrap_works():
        pytest.skip("needs bubblewrap (.ci/run installs it)")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-for-the-filter")
    repo = init_repo(tmp_path / "repo", first_commit=True)
    seen = tmp_path / "outside" / "filter-saw"
    bash = RunBashTool(ToolContext(repo))
    command = (
        "git config filter.y.clean \"sh -c 'touch "
        f"{canary}; cat /proc/*/environ > {seen} 2>/dev/null; cat'\"; "
        "echo '* filter=y' > .gitattributes; echo data > data.txt; echo ok"
    )
    assert "ok" in await bash.execute({"command": command})
    result = await Model(repo).git_commit()
    assert not canary.exists(), f"the planted filter wrote outside ({result})"
    assert not seen.exists()
