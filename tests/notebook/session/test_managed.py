"""Managed settings (``managed.py``): the admin's file read, merged and enforced — through a real
IPython shell for the magics, the tool panel's widgets as a frontend drives them, and the
registry and gate a turn uses. The kernel-level test is ``test_managed_kernel.py``; the JupyterHub
one ``tests/hub/test_hub.py``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from widget_frontend import frontend_update

from jupyter_agent import Agent
from jupyter_agent.notebook.front import extension
from jupyter_agent.notebook.front.magics import AgentMagics
from jupyter_agent.notebook.session.managed import FILE_NAME, ManagedSettings, system_config_dirs
from jupyter_agent.notebook.views.widgets.tool_panel import ToolPanel
from jupyter_agent.providers.offline import OfflineProvider

Make = Callable[[dict[str, Any] | str], AgentMagics]


def _write(folder: Path, settings: dict[str, Any] | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE_NAME
    path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
    return path


@pytest.fixture
def managed_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Make]:
    """Build the shell's magics under an admin file (the extension's own, reading ``folder``)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "offline")
    ip = InteractiveShell.instance()
    ip.config.pop("AgentMagics", None)

    def make(settings: dict[str, Any] | str) -> AgentMagics:
        folder = tmp_path / "etc-jupyter"
        _write(folder, settings)
        magics = AgentMagics(shell=ip, managed=ManagedSettings.load([folder]))
        ip.register_magics(magics)
        magics.workspace = str(tmp_path)
        return magics

    yield make
    extension.unload_ipython_extension(ip)
    ip.config.pop("AgentMagics", None)


def _refused(ip: InteractiveShell, line: str) -> str:
    with pytest.raises(UsageError) as raised:
        ip.run_line_magic(*line.lstrip("%").split(" ", 1))
    said = str(raised.value)
    assert "\n" not in said, said
    return said


# -- the file ----------------------------------------------------------------------------------


def test_files_merge_to_the_strictest(tmp_path: Path) -> None:
    first = _write(
        tmp_path / "a",
        {
            "budget": 2,
            "shell_network": True,
            "models": ["claude-haiku-4-5", "claude-sonnet-*"],
            "tools": {"run_bash": {"policy": "allow"}},
        },
    )
    second = _write(
        tmp_path / "b",
        {
            "budget": 0.5,
            "shell_network": False,
            "models": ["claude-sonnet-*"],
            "tools": {"run_*": {"policy": "ask"}},
        },
    )
    managed = ManagedSettings.load([tmp_path / "a", tmp_path / "b"])
    assert managed.problems == []
    assert managed.files == [str(first), str(second)]
    assert managed.budget is not None and managed.budget.value == 0.5
    assert managed.shell_network is not None and managed.shell_network.value is False
    assert managed.model_allowed("claude-sonnet-5-5") and not managed.model_allowed(
        "claude-haiku-4-5"
    )
    assert managed.policy_ceiling("run_bash") == ("ask", str(second))
    assert managed.check("budget", 0.5) is None
    assert "at most $0.5" in (managed.check("budget", None) or "")


def test_a_malformed_file_is_one_line_and_locks_what_it_names(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"tools": {"web_fetch": {"enabled": false}}, "shell_network": tru')
    managed = ManagedSettings.load([tmp_path])
    assert len(managed.problems) == 1 and "\n" not in managed.problems[0]
    assert str(path) in managed.problems[0] and "is not JSON" in managed.problems[0]
    assert managed.tool_off("web_fetch") == str(path)
    assert managed.check("shell_network", True) is not None
    assert managed.tool_off("read_file") is None  # not named: not locked


def test_a_file_that_cannot_be_read_locks_everything(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_bytes(b'{"budget": 1, "\xff": 2}')
    managed = ManagedSettings.load([tmp_path])
    assert len(managed.problems) == 1 and "cannot be read" in managed.problems[0]
    assert managed.tool_off("read_file") is not None
    assert managed.check("budget", 0.01) is not None and managed.check_serve() is not None
    assert not managed.model_allowed("claude-haiku-4-5")


def test_a_bad_value_locks_its_setting_to_the_strictest(tmp_path: Path) -> None:
    _write(tmp_path, {"budget": "lots", "web_allow": "example.com", "serve": "no", "shell": 1})
    managed = ManagedSettings.load([tmp_path])
    assert len(managed.problems) == 4, managed.problems
    assert managed.budget is not None and managed.budget.value == 0.0
    assert managed.web_allow is not None and managed.web_allow.value == ()
    assert managed.check_serve() is not None
    assert any("shell: is not a managed setting" in problem for problem in managed.problems)


def test_only_system_folders_outside_the_home_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the user can point at (their config dir, JUPYTER_CONFIG_PATH) is never a managed
    # folder, and moving $HOME does not drop the system's.
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "also-mine"))
    monkeypatch.setenv("HOME", "/")
    folders = [str(folder) for folder in system_config_dirs()]
    assert str(tmp_path / "mine") not in folders and str(tmp_path / "also-mine") not in folders
    assert "/etc/jupyter" in folders
    # jupyter_core's system folders move with JUPYTER_PLATFORM_DIRS (read when it is imported):
    # /etc/jupyter is read all the same.
    moved = subprocess.run(
        [
            sys.executable,
            "-c",
            "from jupyter_agent.notebook.session.managed import system_config_dirs;"
            "print(*system_config_dirs())",
        ],
        env={**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "XDG_CONFIG_DIRS": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "/etc/jupyter" in moved and "/usr/local/etc/jupyter" in moved, moved


# -- the magics --------------------------------------------------------------------------------


def test_model_provider_and_budget_are_held(managed_shell: Make) -> None:
    magics = managed_shell(
        {
            "models": ["claude-haiku-4-5", "claude-haiku-*"],
            "providers": ["anthropic"],
            "session_budget": 3,
        }
    )
    ip = magics.shell
    assert magics.model == "claude-haiku-4-5"  # what the file sets: its first model
    assert magics.session_budget == 3
    said = _refused(ip, "agent model claude-opus-4-5")
    assert "AgentMagics.model is managed by" in said and "claude-haiku-*" in said
    assert magics.model != "claude-opus-4-5"
    ip.run_line_magic("agent", "model claude-haiku-4-7")  # within the list: allowed
    assert magics.model == "claude-haiku-4-7"
    # An empty model is the provider's default, which the environment can name: refused.
    ip.run_line_magic("config", "AgentMagics.model = ''")
    assert magics.model == "claude-haiku-4-7"
    with pytest.raises(UsageError, match=r"--model is managed by"):
        ip.run_cell_magic("agent", "--model claude-opus-4-5", "hello")
    with pytest.raises(UsageError, match=r"--provider is managed by"):
        ip.run_cell_magic("agent", "--provider openai", "hello")
    ip.run_line_magic("config", "AgentMagics.session_budget = None")  # looser: refused
    assert magics.session_budget == 3


def test_auto_cannot_reach_a_provider_the_admin_did_not_allow(
    managed_shell: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JUPYTER_AGENT_PROVIDER")
    magics = managed_shell({"providers": ["anthropic"]})
    assert magics.provider == "auto"  # auto is Claude here: allowed
    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "openai")  # what 'auto' would follow now
    with pytest.raises(UsageError, match=r"AgentMagics.provider is managed by"):
        magics.shell.run_cell_magic("agent", "", "hello")


def test_per_cell_budget_cannot_pass_the_cap(managed_shell: Make) -> None:
    magics = managed_shell({"budget": 0.5})
    assert magics.budget == 0.5
    with pytest.raises(UsageError, match=r"--budget is managed by .*at most \$0.5"):
        magics.shell.run_cell_magic("agent", "--budget 2", "hello")


def test_serve_and_mcp_servers_are_held(managed_shell: Make, tmp_path: Path) -> None:
    magics = managed_shell({"serve": False, "mcp_servers": ["uvx mcp-server-git*"]})
    ip = magics.shell
    said = _refused(ip, "agent serve")
    assert said.startswith("%agent serve is managed by")
    ip.run_line_magic("agent", "serve status")  # saying what runs is not serving
    said = _refused(ip, "agent mcp add evil -- python -c pass")
    assert "MCP server 'evil' is managed by" in said
    ip.run_line_magic("config", "AgentMagics.mcp_servers = {'x': {'command': 'python'}}")
    assert magics.mcp_servers == {}


def test_mcp_servers_match_their_command_line_or_url(tmp_path: Path) -> None:
    from jupyter_agent.notebook.front.mcp_commands import parse_add

    _write(tmp_path, {"mcp_servers": ["uvx mcp-server-git*", "https://mcp.example.com/*"]})
    managed = ManagedSettings.load([tmp_path])
    git = parse_add(["git", "--", "uvx", "mcp-server-git", "--repository", "."])
    assert managed.check_mcp_server("git", git) is None
    remote = parse_add(["remote", "--url", "https://mcp.example.com/mcp"])
    assert managed.check_mcp_server("remote", remote) is None
    other = parse_add(["other", "--url", "https://evil.example/mcp"])
    assert managed.check_mcp_server("other", other) is not None
    assert (
        managed.check("mcp_servers", {"g": {"command": "uvx", "args": ["mcp-server-git"]}}) is None
    )


def test_the_tool_panel_cannot_loosen_a_lock(managed_shell: Make) -> None:
    magics = managed_shell(
        {"tools": {"run_bash": {"enabled": False}, "web_fetch": {"policy": "ask"}}}
    )
    panel = ToolPanel(magics.session)
    row = panel.rows["run_bash"]
    assert row.checkbox.disabled  # greyed, its tooltip saying why
    frontend_update(row.checkbox, value=True)
    assert row.checkbox.value is False
    assert "managed by" in row.checkbox.tooltip
    assert not magics.session.registry.is_tool_enabled("run_bash")
    assert "run_bash" not in [s["name"] for s in magics.session.registry.get_enabled_schemas()]

    fetch = panel.rows["web_fetch"]
    assert fetch.policy.value == "ask"
    frontend_update(fetch.policy, index=fetch.policy.options.index("allow"))
    assert fetch.policy.value == "ask"
    assert magics.session.get_policy("web_fetch") == "ask"
    frontend_update(fetch.policy, index=fetch.policy.options.index("deny"))  # stricter: taken
    assert magics.session.get_policy("web_fetch") == "deny"


def test_an_approval_for_the_session_does_not_loosen_a_managed_ask(managed_shell: Make) -> None:
    magics = managed_shell({"tools": {"web_fetch": {"policy": "ask"}}})
    gate = magics.session.toolbox.gate
    gate.set_policy("web_fetch", "allow")  # what "allow for this session" does
    assert gate.verdict("web_fetch", {"url": "https://example.com"}).__class__.__name__ == "Ask"


def test_a_managed_deny_wins_and_says_whose(managed_shell: Make) -> None:
    magics = managed_shell({"tools": {"read_file": {"policy": "deny"}}})
    verdict = magics.session.toolbox.gate.verdict("read_file", {"file_path": "x"})
    assert "not available: an administrator turned it off" in getattr(verdict, "reason", "")
    assert not magics.session.registry.is_tool_enabled("read_file")


def test_web_fetch_reaches_only_managed_hosts(managed_shell: Make) -> None:
    magics = managed_shell({"web_allow": ["*.python.org"]})
    assert magics.web_allow == ["*.python.org"]
    magics.shell.run_line_magic("config", "AgentMagics.web_allow = ['example.com']")
    assert magics.web_allow == ["*.python.org"]
    registry = magics.session.registry
    tool = registry.get_tool("web_fetch")
    assert tool is not None
    # Not asked about (an approval could not make it reachable) and refused before any DNS.
    assert tool.needs_approval({"url": "https://example.com/"}) is None  # type: ignore[attr-defined]
    result = asyncio.run(registry.call("web_fetch", {"url": "https://example.com/"}))
    assert result.is_error
    assert "example.com is not among the hosts an administrator" in result.content


def test_a_plain_agent_is_untouched(tmp_path: Path) -> None:
    # The core alone (no notebook, no admin file) keeps its behaviour.
    agent = Agent(OfflineProvider(), workspace=tmp_path)
    agent.registry.enable("run_bash")
    assert agent.registry.is_tool_enabled("run_bash")


def test_a_tool_added_later_is_locked_by_its_pattern(managed_shell: Make) -> None:
    # MCP servers' tools ({server}__{tool}) arrive after the lock was installed.
    from jupyter_agent import tool

    magics = managed_shell({"tools": {"*__*": {"enabled": False}}})
    registry = magics.session.registry

    @tool
    def srv__echo(text: str) -> str:
        """Say it back."""
        return text

    registry.register(srv__echo)
    assert not registry.is_tool_enabled("srv__echo")
    said = _refused(magics.shell, "agent_tools enable srv__echo")
    assert "tool srv__echo is managed by" in said
    result = asyncio.run(registry.call("srv__echo", {"text": "hi"}))
    assert result.is_error and "an administrator turned it off" in result.content


def test_what_a_file_sets_is_where_the_user_starts(managed_shell: Make) -> None:
    magics = managed_shell(
        {"tools": {"run_bash": {"enabled": True}, "write_file": {"policy": "allow"}}}
    )
    session = magics.session
    assert session.registry.is_tool_enabled("run_bash")  # destructive: off unless the file says
    assert session.get_policy("write_file") == "allow"
    ip = magics.shell
    ip.run_line_magic("agent_tools", "disable run_bash")  # stricter: taken
    assert not session.registry.is_tool_enabled("run_bash")
    ip.run_line_magic("agent_tools", "policy write_file deny")  # the user's deny wins
    assert session.get_policy("write_file") == "deny"
