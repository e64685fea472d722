"""``%agent mcp`` and ``AgentMagics.mcp_servers`` in a real shell, and no orphans in a real kernel.

The shell tests drive the magics through IPython's ``InteractiveShell`` with the model faked at
the HTTP boundary; the kernel tests run a notebook through nbclient and scan /proc for the
server's marker after ``%unload_ext`` and after the kernel has shut down.
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from ipython_shell import magics_of
from kernel_frontend import run_notebook
from mcp_processes import SERVER, processes_with, server_command

from jupyter_agent.providers.anthropic import AnthropicProvider

pytest.importorskip("mcp")


def add_line(name: str, marker: str, *options: str) -> str:
    command = " ".join(server_command(marker=marker))
    return f"mcp add {name} {' '.join(options)} -- {command}"


def test_add_list_call_and_remove_from_the_magics(shell: InteractiveShell) -> None:
    marker = uuid.uuid4().hex
    with capture_output() as added:
        shell.run_line_magic("agent", add_line("srv", marker, "--policy", "allow"))
    assert "MCP server 'srv' added: srv__echo" in added.stdout
    assert processes_with(marker)

    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "srv__echo", {"text": "from mcp"})]),
        text("It said: from mcp"),
    )
    magics_of(shell).use_provider(AnthropicProvider(client=fake.client()))
    with capture_output():
        shell.run_cell_magic("agent", "", "Use the echo tool")
    assert "srv__echo" in [tool["name"] for tool in fake.requests[0]["tools"]]
    results = tool_results(fake.requests[1])
    assert result_text(results[0]) == "from mcp"

    with capture_output() as listing:
        shell.run_line_magic("agent", "mcp list")
        shell.run_line_magic("agent", "mcp list srv")
        shell.run_line_magic("agent_tools", "list")
    assert "srv" in listing.stdout and "running" in listing.stdout
    assert "instructions: A test server" in listing.stdout
    assert "srv__add (enabled, policy allow): Add two integers" in listing.stdout
    assert "testserver starting" in listing.stdout  # its stderr, kept for the listing
    assert "srv__echo" in listing.stdout.split("instructions")[-1]

    with capture_output() as removed:
        shell.run_line_magic("agent", "mcp remove srv")
    assert "removed" in removed.stdout
    assert not processes_with(marker)
    assert "srv__echo" not in magics_of(shell).agent.registry.get_tool_names()


def test_mcp_tools_start_with_policy_ask(shell: InteractiveShell) -> None:
    with capture_output():
        shell.run_line_magic("agent", add_line("asks", uuid.uuid4().hex))
    assert magics_of(shell).agent.get_policy("asks__echo") == "ask"


def test_user_mistakes_are_one_line_usage_errors(shell: InteractiveShell) -> None:
    for line, expected in [
        ("mcp", "usage: %agent mcp add"),
        ("mcp add x", "usage: %agent mcp add"),
        ("mcp add x --policy maybe -- python x.py", "policy must be one of"),
        ("mcp add bad.name -- python x.py", "must be 1-32 letters"),
        ("mcp remove nothere", "No MCP server named 'nothere'"),
        ("mcp frob", "Unknown %agent mcp command 'frob'"),
        (f"mcp add broken -- {sys.executable} {SERVER} --bad-start", "missing configuration FOO"),
    ]:
        with pytest.raises(UsageError, match=expected) as info:
            shell.run_line_magic("agent", line)
        assert "\n" not in str(info.value)


def test_without_the_mcp_extra_add_is_one_line_naming_the_extra(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``pip install 'jupyter-claude-agent[mcp]'`` the line printed a ~75-line
    ``ModuleNotFoundError`` traceback and no hint."""
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # "import mcp" now fails, as when not installed
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("agent", f"mcp add tools -- {sys.executable} -c pass")
    message = str(info.value)
    assert "\n" not in message
    assert "pip install 'jupyter-claude-agent[mcp]'" in message
    # and a configured server says the same in one line
    with capture_output() as captured:
        magics_of(shell).mcp_servers = {"tools": {"command": sys.executable, "args": ["-c", "0"]}}
        shell.run_line_magic("agent", "mcp list")
    assert "pip install 'jupyter-claude-agent[mcp]'" in captured.stderr
    assert "Traceback" not in captured.stderr + captured.stdout


def test_with_mcp_but_not_the_extra_add_fails_at_once_naming_the_extra(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pip install mcp`` alone leaves out the extra's ``regex``: the server was added, and its
    first call failed with ``No module named 'regex'``."""
    monkeypatch.setitem(sys.modules, "regex", None)  # "import regex" fails, as when not installed
    marker = uuid.uuid4().hex
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("agent", add_line("partial", marker, "--policy", "allow"))
    message = str(info.value)
    assert "\n" not in message
    assert "pip install 'jupyter-claude-agent[mcp]'" in message and "regex" in message, message
    assert not processes_with(marker)  # nothing was started


def test_mcp_servers_setting_connects_on_first_use(shell: InteractiveShell) -> None:
    marker = uuid.uuid4().hex
    command = server_command(marker=marker)
    magics = magics_of(shell)
    magics.mcp_servers = {
        "conf": {"command": command[0], "args": command[1:], "policy": "deny"},
    }
    assert not processes_with(marker)  # not before first use
    with capture_output() as out:
        shell.run_line_magic("agent", "mcp list")
    assert "conf" in out.stdout
    assert magics.agent.get_policy("conf__echo") == "deny"
    assert processes_with(marker)
    shell.run_line_magic("unload_ext", "jupyter_agent")
    assert not processes_with(marker)


def test_servers_survive_a_settings_change(shell: InteractiveShell, tmp_path: Path) -> None:
    with capture_output():
        shell.run_line_magic("agent", add_line("keep", uuid.uuid4().hex, "--policy", "allow"))
    magics = magics_of(shell)
    before = magics.agent
    (tmp_path / "sub").mkdir()
    magics.workspace = str(tmp_path / "sub")  # the toolbox's tools are rebuilt
    after = magics.agent
    assert after.context.workspace == (tmp_path / "sub").resolve()
    assert after.toolbox is before.toolbox
    assert after.registry.has_tool("keep__echo") and after.get_policy("keep__echo") == "allow"
    with capture_output() as out:
        shell.run_line_magic("agent", "mcp list keep")
    assert "keep__echo (enabled, policy allow)" in out.stdout


# -- a real kernel -----------------------------------------------------------------------------


def _gone(marker: str, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not processes_with(marker)


@pytest.mark.slow
def test_no_orphans_after_unload_ext_or_kernel_shutdown_in_a_real_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    unloaded, shut_down = uuid.uuid4().hex, uuid.uuid4().hex
    nb = run_notebook(
        tmp_path,
        [
            "%load_ext jupyter_agent",
            f"%agent {add_line('a', unloaded)}",
            "import subprocess, sys\n"
            f"marker = {unloaded!r}\n"
            "out = subprocess.run(['pgrep', '-f', marker], capture_output=True, text=True)\n"
            "assert out.stdout.strip(), 'the server should run'",
            "%unload_ext jupyter_agent",
            "out = subprocess.run(['pgrep', '-f', marker], capture_output=True, text=True)\n"
            "assert not out.stdout.strip(), 'unload_ext should end the server'",
            "%load_ext jupyter_agent",
            f"%agent {add_line('b', shut_down)}",
            # a call the server hangs in while the kernel shuts down
            "import asyncio\n"
            "from jupyter_agent.notebook.front.extension import get_magics\n"
            "m = get_magics(get_ipython())\n"
            "future = m.bridge.background.submit(m.agent.registry.call('b__hang', {}))",
        ],
    )
    errors = [o for cell in nb.cells for o in cell.outputs if o.output_type == "error"]
    assert errors == []
    assert _gone(unloaded)
    assert _gone(shut_down)
