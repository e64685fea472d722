"""run_bash leaves nothing behind and finds no secret (issue 11, points 4 and 6).

A model with ``run_bash`` enabled can start processes meant to outlive the call (``setsid -f``,
a double fork, ``nohup … &`` with its output redirected), read the kernel's environment through
``/proc/<pid>/environ`` — where ``ANTHROPIC_API_KEY`` lives even though the command's own
environment is clean — and write anywhere the user can. Each test plays one of these through the
real tool, in the default sandbox (bubblewrap) and, where the promise holds there too, in the
fallback (a subreaper). The old run_bash let every one of them through.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from pathlib import Path

import pytest
from process_watch import unique_sleep, wait_until_none_run, wait_until_running

from jupyter_agent.tools.base import ToolFailure
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.guard.sandbox import REDUCED_ISOLATION_NOTE, SANDBOX_ENV_VAR, bwrap_works
from jupyter_agent.tools.shell import RunBashTool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

needs_bwrap = pytest.mark.skipif(
    not bwrap_works() and not os.environ.get("CI"),
    reason="bubblewrap is not usable here (.ci/run installs it; on CI this test must run)",
)

SANDBOXES = [pytest.param("bwrap", marks=needs_bwrap), "subreaper"]

DETACHING = {
    "setsid -f": "setsid -f {sleep} >/dev/null 2>&1",
    "double fork": "( ( {sleep} >/dev/null 2>&1 & ) & )",
    "nohup with redirected output": "nohup {sleep} >/dev/null 2>&1 &",
    "disowned": "{sleep} >/dev/null 2>&1 & disown",
}


@pytest.fixture(params=SANDBOXES)
def sandbox(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(SANDBOX_ENV_VAR, request.param)
    return str(request.param)


@pytest.fixture
def tool(tmp_path: Path) -> RunBashTool:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return RunBashTool(ToolContext(workspace))


@pytest.mark.parametrize("how", DETACHING)
async def test_no_detached_process_outlives_the_call(
    tool: RunBashTool, sandbox: str, how: str
) -> None:
    sleep = unique_sleep()
    result = await tool.execute({"command": DETACHING[how].format(sleep=sleep) + "\necho done"})
    assert "done" in result and "Exit code: 0" in result
    survivors = await wait_until_none_run(sleep, within_s=3.0)
    assert not survivors, f"{how}: {survivors} still running after run_bash returned"
    if sandbox == "subreaper":
        assert REDUCED_ISOLATION_NOTE in result  # the fallback says what it cannot promise


@pytest.mark.parametrize("how", DETACHING)
async def test_no_detached_process_outlives_a_timeout(
    tool: RunBashTool, sandbox: str, how: str
) -> None:
    sleep = unique_sleep()
    command = DETACHING[how].format(sleep=sleep) + "\nsleep 60"
    with pytest.raises(ToolFailure, match="timed out"):
        await tool.execute({"command": command, "timeout_ms": 700})
    survivors = await wait_until_none_run(sleep, within_s=4.0)
    assert not survivors, f"{how}: {survivors} still running after the timeout"


async def test_a_cancelled_call_takes_its_detached_processes_along(
    tool: RunBashTool, sandbox: str
) -> None:
    sleep = unique_sleep()
    task = asyncio.create_task(tool.execute({"command": f"setsid -f {sleep}; sleep 60"}))
    await wait_until_running(sleep)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not await wait_until_none_run(sleep, within_s=4.0)


@needs_bwrap
async def test_the_kernels_environment_is_out_of_reach(
    tool: RunBashTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is in this process's environment (as in the kernel's): /proc must not show it."""
    secret = f"sk-ant-hostile-{secrets.token_hex(8)}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv(SANDBOX_ENV_VAR, "bwrap")
    command = (
        f"cat /proc/{os.getpid()}/environ; cat /proc/{os.getppid()}/environ; "
        "for f in /proc/[0-9]*/environ; do cat $f; done; "
        "env; echo; echo PROCESSES $(ls -d /proc/[0-9]* | wc -l)"
    )
    result = await tool.execute({"command": command})
    assert secret not in result
    # the command sees only its own few processes, none of ours
    processes = int(result.split("PROCESSES", 1)[1].split()[0])
    assert processes < 10, result


@needs_bwrap
async def test_only_the_workspace_is_writable(
    tool: RunBashTool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SANDBOX_ENV_VAR, "bwrap")
    outside = tmp_path / "outside"
    outside.mkdir()
    result = await tool.execute(
        {
            "command": f"touch {outside}/planted; echo x >> {outside}/.bashrc; "
            f"touch inside.txt; echo ok"
        }
    )
    assert "ok" in result
    assert not (outside / "planted").exists()
    assert not (outside / ".bashrc").exists()
    assert (tool.context.workspace / "inside.txt").exists()


@needs_bwrap
async def test_credential_stores_in_home_are_hidden(
    tool: RunBashTool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY MATERIAL")
    (home / ".netrc").write_text("machine example.com password hunter2")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv(SANDBOX_ENV_VAR, "bwrap")
    result = await tool.execute({"command": "cat ~/.ssh/id_ed25519 ~/.netrc; ls -a ~/.ssh"})
    assert "PRIVATE KEY MATERIAL" not in result
    assert "hunter2" not in result


async def test_the_ssh_agent_is_not_passed(
    tool: RunBashTool, sandbox: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.123")
    result = await tool.execute({"command": "echo sock=[$SSH_AUTH_SOCK]"})
    assert "sock=[]" in result


@needs_bwrap
async def test_kernel_connection_files_are_hidden(
    tool: RunBashTool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel's connection file holds its key and ports: a command that read it could run code
    in the kernel, outside the sandbox (found by the hostile review)."""
    home = tmp_path / "home"
    runtime = home / ".local" / "share" / "jupyter" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "kernel-abc.json").write_text('{"key": "HMAC-KEY-SECRET", "shell_port": 1}')
    (home / ".jupyter").mkdir()
    (home / ".jupyter" / "jupyter_server_config.json").write_text('{"token": "SERVER-TOKEN"}')
    elsewhere = tmp_path / "runtime-dir"
    elsewhere.mkdir()
    (elsewhere / "kernel-def.json").write_text('{"key": "OTHER-HMAC-KEY"}')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(elsewhere))
    monkeypatch.setenv(SANDBOX_ENV_VAR, "bwrap")
    result = await tool.execute(
        {"command": f"cat ~/.local/share/jupyter/runtime/* ~/.jupyter/* {elsewhere}/*; echo end"}
    )
    assert "end" in result
    for secret in ("HMAC-KEY-SECRET", "SERVER-TOKEN", "OTHER-HMAC-KEY"):
        assert secret not in result


def test_shell_network_follows_the_setting_without_a_rebuild(tmp_path: Path) -> None:
    """``%config AgentMagics.shell_network`` reaches the tools' context of a live session."""
    from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings

    session = NotebookSession(SessionSettings(workspace=str(tmp_path), provider="offline"))
    try:
        assert session.toolbox.context.shell_network is False
        registry = session.registry
        session.configure(shell_network=True)
        assert session.toolbox.context.shell_network is True
        assert session.registry is registry
        session.configure(workspace=str(tmp_path))  # a rebuild keeps it too
        assert session.toolbox.context.shell_network is True
    finally:
        session.close()
