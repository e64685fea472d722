"""Credential stores and Jupyter's folders stay hidden from every tool — also when the workspace
is the home folder (a notebook at the top of it), and wherever environment variables move
Jupyter's folders. run_bash's sandbox hides the same list, and has no network unless
``shell_network`` is on.

Found by the hostile review: with the workspace at ``~``, read_file and search_text returned
``~/.ssh``, ``~/.aws``, ``~/.netrc``, the gh token and the Jupyter token; with
``JUPYTER_DATA_DIR``/``XDG_DATA_HOME``/``JUPYTER_CONFIG_DIR`` set, a sandboxed command read the
kernel's connection file; and the sandbox shared the network.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.guard.sandbox import REDUCED_ISOLATION_NOTE, SANDBOX_ENV_VAR, bwrap_works
from jupyter_agent.tools.registry import ToolRegistry
from jupyter_agent.tools.search.search import SearchFilesTool, SearchTextTool, find_ripgrep
from jupyter_agent.tools.shell import RunBashTool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux paths")

needs_bwrap = pytest.mark.skipif(
    not bwrap_works() and not os.environ.get("CI"),
    reason="bubblewrap is not usable here (.ci/run installs it; on CI this test must run)",
)

#: Each planted secret, by where it lies relative to the home folder.
PLANTED = {
    ".ssh/id_ed25519": "SSH-PRIVATE-MARKER",
    ".aws/credentials": "AWS-CREDENTIALS-MARKER",
    ".netrc": "NETRC-PASSWORD-MARKER",
    ".git-credentials": "GIT-CREDENTIALS-MARKER",
    ".config/gh/hosts.yml": "GH-TOKEN-MARKER",
    ".docker/config.json": "DOCKER-AUTH-MARKER",
    ".kube/config": "KUBE-TOKEN-MARKER",
    ".local/share/jupyter/runtime/kernel-1.json": "KERNEL-KEY-MARKER",
    ".local/share/jupyter/runtime/jpserver-1.json": "SERVER-TOKEN-MARKER",
    ".jupyter/jupyter_server_config.json": "SERVER-CONFIG-MARKER",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home folder, used as the workspace, with credential stores planted in it."""
    home = tmp_path / "home"
    for relative, marker in PLANTED.items():
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"secret = {marker}\n")
    (home / "notes.txt").write_text("visible = NOTES-MARKER\n")
    monkeypatch.setenv("HOME", str(home))
    for name in (
        "JUPYTER_DATA_DIR",
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_RUNTIME_DIR",
        "XDG_DATA_HOME",
        "XDG_CONFIG_HOME",
        "XDG_RUNTIME_DIR",
        "JUPYTER_PLATFORM_DIRS",
    ):
        monkeypatch.delenv(name, raising=False)
    return home


def call(registry: ToolRegistry, name: str, args: dict[str, object]) -> tuple[bool, str]:
    result = asyncio.run(registry.call(name, args))
    return result.is_error, result.content


@pytest.mark.parametrize("relative", sorted(PLANTED))
def test_file_tools_refuse_credential_stores_in_a_home_workspace(home: Path, relative: str) -> None:
    registry = create_default_registry(ToolContext(home))
    marker = PLANTED[relative]
    for how in (relative, str(home / relative), f"./notes.txt/../{relative}"):
        is_error, content = call(registry, "read_file", {"file_path": how})
        assert is_error, content
        assert marker not in content
        assert "credential store" in content
    folder = relative.rsplit("/", 1)[0] if "/" in relative else None
    if folder is not None:
        is_error, content = call(registry, "list_dir", {"path": folder})
        assert is_error and "credential store" in content, content
    is_error, content = call(registry, "read_notebook", {"file_path": relative})
    assert is_error and marker not in content
    is_error, _ = call(registry, "write_file", {"file_path": relative, "content": "x"})
    assert is_error
    assert marker in (home / relative).read_text()
    # ordinary files of the home folder stay readable
    is_error, content = call(registry, "read_file", {"file_path": "notes.txt"})
    assert not is_error and "NOTES-MARKER" in content


def test_a_symlink_into_a_store_is_refused(home: Path) -> None:
    (home / "keys").symlink_to(home / ".ssh")
    registry = create_default_registry(ToolContext(home))
    is_error, content = call(registry, "read_file", {"file_path": "keys/id_ed25519"})
    assert is_error and "SSH-PRIVATE-MARKER" not in content


BACKENDS = ["python", "ripgrep"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_searches_skip_the_stores(home: Path, backend: str) -> None:
    if backend == "ripgrep" and find_ripgrep() is None:
        pytest.skip("ripgrep is not installed")
    context = ToolContext(home)
    registry = ToolRegistry()
    registry.register(SearchTextTool(context, backend=backend))  # type: ignore[arg-type]
    registry.register(SearchFilesTool(context, backend=backend))  # type: ignore[arg-type]
    is_error, content = call(registry, "search_text", {"pattern": "MARKER"})
    assert not is_error
    assert content == "notes.txt:1: visible = NOTES-MARKER"
    is_error, content = call(registry, "search_files", {"pattern": "**/*"})
    assert not is_error
    assert content.splitlines() == ["notes.txt"]
    # searching inside a store by path is refused like reading it
    is_error, content = call(registry, "search_text", {"pattern": "MARKER", "path": ".ssh"})
    assert is_error and "SSH-PRIVATE-MARKER" not in content


@pytest.mark.parametrize(
    "variables",
    [
        {"JUPYTER_DATA_DIR": "project/jdata"},
        {"XDG_DATA_HOME": "project/xdg"},
        {"JUPYTER_CONFIG_DIR": "project/jconfig"},
        {"JUPYTER_RUNTIME_DIR": "project/jruntime"},
    ],
    ids=lambda variables: next(iter(variables)),
)
def test_relocated_jupyter_folders_are_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]
) -> None:
    from jupyter_core import paths

    workspace = home / "project"
    workspace.mkdir()
    for name, relative in variables.items():
        monkeypatch.setenv(name, str(home / relative))
    secrets_by_folder = {
        paths.jupyter_runtime_dir(): "RELOCATED-KERNEL-KEY",
        paths.jupyter_data_dir(): "RELOCATED-DATA",
        paths.jupyter_config_dir(): "RELOCATED-CONFIG",
    }
    relocated = [f for f in secrets_by_folder if Path(f).is_relative_to(workspace)]
    assert relocated, secrets_by_folder
    for folder in relocated:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "kernel-7.json").write_text(secrets_by_folder[folder])
    registry = create_default_registry(ToolContext(workspace))
    for folder in relocated:
        relative = os.path.relpath(Path(folder) / "kernel-7.json", workspace)
        is_error, content = call(registry, "read_file", {"file_path": relative})
        assert is_error and secrets_by_folder[folder] not in content, content
    is_error, content = call(registry, "search_text", {"pattern": "RELOCATED"})
    assert not is_error and "RELOCATED-" not in content, content


# -- run_bash's sandbox: the same list --------------------------------------------------------


@needs_bwrap
def test_sandbox_hides_the_stores_when_the_workspace_is_home(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SANDBOX_ENV_VAR, "bwrap")
    tool = RunBashTool(ToolContext(home))
    paths = " ".join(PLANTED)
    result = asyncio.run(tool.execute({"command": f"cat {paths} notes.txt; echo end"}))
    assert "NOTES-MARKER" in result and "end" in result
    for marker in PLANTED.values():
        assert marker not in result, result


@needs_bwrap
def test_sandbox_hides_relocated_jupyter_folders(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kernel connection files and the server's config moved (by the environment) into a folder
    the command can read — here, the workspace itself."""
    workspace = home / "project"
    runtime = workspace / "jdata" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "kernel-9.json").write_text('{"key": "RELOCATED-HMAC-KEY"}')
    (workspace / "xdg" / "jupyter" / "runtime").mkdir(parents=True)
    config = workspace / "jconfig"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text('{"token": "RELOCATED-TOKEN"}')
    own_runtime = workspace / "own-runtime"
    own_runtime.mkdir()
    (own_runtime / "kernel-10.json").write_text('{"key": "OWN-RUNTIME-KEY"}')
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(workspace / "jdata"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(config))
    monkeypatch.setenv(SANDBOX_ENV_VAR, "bwrap")
    tool = RunBashTool(ToolContext(workspace))
    command = "cat jdata/runtime/kernel-*.json jconfig/*; echo end"
    result = asyncio.run(tool.execute({"command": command}))
    assert "end" in result
    assert "RELOCATED-HMAC-KEY" not in result and "RELOCATED-TOKEN" not in result, result
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(own_runtime))
    result = asyncio.run(tool.execute({"command": "cat $PWD/own-runtime/kernel-*.json; echo e"}))
    assert "OWN-RUNTIME-KEY" not in result, result


# -- run_bash without network -----------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback TCP server that answers every connection with a greeting."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            with connection:
                connection.sendall(b"HELLO-FROM-LISTENER\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    stop.set()
    thread.join(2)
    server.close()


def _connect(port: int) -> str:
    return f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -n 1 <&3 || echo NO-CONNECTION; echo done"


@needs_bwrap
def test_run_bash_has_no_network_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listener: int
) -> None:
    monkeypatch.setenv(SANDBOX_ENV_VAR, "bwrap")
    context = ToolContext(tmp_path)
    tool = RunBashTool(context)
    result = asyncio.run(tool.execute({"command": _connect(listener)}))
    assert "HELLO-FROM-LISTENER" not in result, result
    assert "NO-CONNECTION" in result
    context.shell_network = True  # AgentMagics.shell_network
    result = asyncio.run(tool.execute({"command": _connect(listener)}))
    assert "HELLO-FROM-LISTENER" in result, result


def test_shell_network_reaches_the_default_registry(tmp_path: Path) -> None:
    context = ToolContext(tmp_path)
    assert context.shell_network is False
    create_default_registry(context, shell_network=True)
    assert context.shell_network is True


def test_shell_network_is_a_setting_off_by_default() -> None:
    from jupyter_agent.notebook.front.magics import AgentMagics
    from jupyter_agent.notebook.session.settings import SETTING_NAMES, SessionSettings

    assert "shell_network" in SETTING_NAMES
    assert SessionSettings().shell_network is False
    assert AgentMagics.class_traits()["shell_network"].default_value is False


def test_the_subreaper_says_it_cannot_cut_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SANDBOX_ENV_VAR, "subreaper")
    result = asyncio.run(RunBashTool(ToolContext(tmp_path)).execute({"command": "true"}))
    assert REDUCED_ISOLATION_NOTE in result
    assert "network" in REDUCED_ISOLATION_NOTE
