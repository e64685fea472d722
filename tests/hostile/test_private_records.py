"""What the agent keeps is private: 0600 files in 0700 folders, created that way and fixed when
found looser; the files it writes for the user get the user's umask.

Issue 35 point 5 (SPEC "What the agent keeps cannot be forged"): on a shared host (JupyterHub,
Debian's 0755 homes) ``.jupyter_agent/`` was 0755, the undo journal's kept copies 0644 and its
labels 0644 — another local user read what the agent overwrote or removed. The records are made by
the public tools (registry calls with a journal), the OAuth store and the signing key; the
non-root variant reads them as another local user.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_anthropic import text
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import run_ok, use_fake

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.guard.journal import ChangeJournal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX modes")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def umask022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _loose(root: Path) -> list[str]:
    """Everything under ``root`` (and root) that others could read: not 0700/0600."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            path = Path(folder, name) if name != "." else Path(folder)
            mode = _mode(path)
            if path.is_symlink():
                continue
            if mode & 0o077:
                found.append(f"{path.relative_to(root.parent)} {mode:o}")
    return sorted(set(found))


def _agent_turn(ws: Path) -> ChangeJournal:
    """What one %%agent cell does with files: overwrite, edit, remove (file and folder), create,
    and save the session context."""
    (ws / "over.txt").write_text("old secret content\n")
    (ws / "edit.txt").write_text("alpha beta\n")
    (ws / "gone.txt").write_text("removed secret\n")
    (ws / "data").mkdir()
    (ws / "data" / "x.csv").write_text("1,2\n")
    for path in ("over.txt", "edit.txt", "gone.txt", "data/x.csv"):
        (ws / path).chmod(0o644)
    journal = ChangeJournal(ws)
    registry = create_default_registry(ToolContext(ws, journal=journal))
    registry.enable("remove")
    journal.begin("cell [1]")

    async def calls() -> None:
        for name, args in [
            ("write_file", {"file_path": "over.txt", "content": "new\n"}),
            ("edit_file", {"file_path": "edit.txt", "old_string": "beta", "new_string": "b"}),
            ("remove", {"path": "gone.txt"}),
            ("remove", {"path": "data", "recursive": True}),
            ("write_file", {"file_path": "made/new.txt", "content": "fresh\n"}),
            ("save_session_context", {"reason": "test"}),
        ]:
            result = await registry.call(name, args)
            assert not result.is_error, (name, result.content)

    asyncio.run(calls())
    return journal


def test_the_journal_and_session_file_are_private(tmp_path: Path, umask022: None) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    journal = _agent_turn(ws)
    agent = ws / ".jupyter_agent"
    assert (agent / "session.md").is_file()
    assert list(agent.rglob("kept-*")), "nothing kept"
    assert _loose(agent) == []
    # the user's files keep the user's umask, and undo gives back their modes
    assert _mode(ws / "made" / "new.txt") == 0o644
    assert _mode(ws / "made") == 0o755
    report = journal.undo()
    assert report.skipped == (), report.message
    for path in ("over.txt", "edit.txt", "gone.txt", "data/x.csv"):
        assert _mode(ws / path) == 0o644, path
    assert (ws / "over.txt").read_text() == "old secret content\n"
    assert (ws / "gone.txt").read_text() == "removed secret\n"


def test_files_the_agent_writes_follow_the_users_umask(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    old = os.umask(0o077)
    try:
        registry = create_default_registry(ToolContext(ws))
        result = asyncio.run(registry.call("write_file", {"file_path": "a/b.txt", "content": "x"}))
    finally:
        os.umask(old)
    assert not result.is_error, result.content
    assert _mode(ws / "a" / "b.txt") == 0o600 and _mode(ws / "a") == 0o700


def test_a_looser_agent_folder_is_fixed(tmp_path: Path, umask022: None) -> None:
    """A ``.jupyter_agent/`` left 0755 (by an older version) is made 0700 at the next record."""
    ws = tmp_path / "ws"
    (ws / ".jupyter_agent" / "undo").mkdir(parents=True)
    (ws / ".jupyter_agent").chmod(0o755)
    (ws / ".jupyter_agent" / "undo").chmod(0o755)
    _agent_turn(ws)
    assert _loose(ws / ".jupyter_agent") == []


def test_oauth_tokens_and_signing_key_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask022: None
) -> None:
    pytest.importorskip("mcp")
    from mcp.shared.auth import OAuthToken

    from jupyter_agent.mcp.oauth import TokenFile
    from jupyter_agent.tools.guard.signing import key_path, sign

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("JUPYTER_AGENT_CONFIG_DIR", raising=False)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    store = TokenFile("https://mcp.example.test/mcp")
    asyncio.run(store.set_tokens(OAuthToken(access_token="A", token_type="Bearer")))
    assert _loose(tmp_path / "config" / "jupyter-agent") == []
    sign("test", b"x")
    assert _loose(key_path().parent) == []

    # found looser (an older version, a copied home): fixed at the next use
    (tmp_path / "config" / "jupyter-agent").chmod(0o755)
    store.path.parent.chmod(0o755)
    asyncio.run(store.set_tokens(OAuthToken(access_token="B", token_type="Bearer")))
    assert _loose(tmp_path / "config" / "jupyter-agent") == []


# -- as an ordinary user, read by another ---------------------------------------------------

OWNER, OTHER = "ja_owner", "ja_other"
SYSTEM_PYTHON = "/usr/bin/python3"


def _ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        return pwd.getpwnam(name)


@pytest.mark.skipif(
    os.geteuid() != 0
    or shutil.which("useradd") is None
    or shutil.which("setpriv") is None
    or not os.access(SYSTEM_PYTHON, os.X_OK),
    reason="needs root to create two local users (plays a shared JupyterHub host)",
)
def test_another_local_user_reads_nothing_the_agent_keeps(tmp_path: Path) -> None:
    owner, other = _ensure_user(OWNER), _ensure_user(OTHER)
    home = Path(owner.pw_dir)
    home.chmod(0o755)  # Debian's default: homes others can enter
    ws = home / "project"
    shutil.rmtree(ws, ignore_errors=True)
    script = textwrap.dedent(
        f"""
        import os, sys
        os.umask(0o022)
        sys.path.insert(0, {str(ROOT / "tests" / "hostile")!r})
        from pathlib import Path
        import test_private_records as t
        ws = Path({str(ws)!r})
        ws.mkdir()
        t._agent_turn(ws)
        """
    )
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        # the venv's interpreter lives under /root (0700): Debian's, with the venv's packages
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT), str(ROOT / "tests"), sysconfig.get_paths()["purelib"]]
        ),
        "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
    }
    as_user = ["setpriv", f"--reuid={owner.pw_uid}", f"--regid={owner.pw_gid}", "--init-groups"]
    done = subprocess.run(
        [*as_user, SYSTEM_PYTHON, "-c", script], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    kept = sorted(str(p) for p in (ws / ".jupyter_agent").rglob("*") if p.is_file())
    assert kept
    probe = textwrap.dedent(
        """
        import sys
        opened = []
        for path in sys.argv[1:]:
            try:
                open(path, "rb").read()
                opened.append(path)
            except OSError:
                pass
        print(len(opened), opened)
        """
    )
    as_other = ["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--init-groups"]
    seen = subprocess.run(
        [*as_other, SYSTEM_PYTHON, "-c", probe, *kept], env=env, capture_output=True, text=True
    )
    assert seen.stdout.startswith("0 "), seen.stdout + seen.stderr
    show = (
        "import os, stat, sys\n"
        "for p in sys.argv[1:]: print(p, oct(stat.S_IMODE(os.lstat(p).st_mode)))"
    )
    modes = subprocess.run(
        [*as_user, SYSTEM_PYTHON, "-c", show, *kept], env=env, capture_output=True, text=True
    )
    assert modes.stdout and all(line.endswith("0o600") for line in modes.stdout.splitlines()), (
        modes.stdout
    )


def test_a_saved_conversation_is_private(
    shell: InteractiveShell, tmp_path: Path, umask022: None
) -> None:
    """``%agent save`` in a real IPython shell: the file is 0600 whatever the umask."""
    use_fake(shell, text("Hello."))
    run_ok(shell, "%%agent\nhi")
    run_ok(shell, f"%agent save {tmp_path / 'chat.json'}")
    assert _mode(tmp_path / "chat.json") == 0o600
