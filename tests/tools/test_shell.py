"""run_bash with real subprocesses: timeouts kill the tree, output is bounded, no secrets leak."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_watch import (
    unique_sleep,
    wait_until_none_run,
    wait_until_running,
)

from jupyter_agent.tools.base import ToolFailure
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.guard.processes import (
    NON_INTERACTIVE_VARIABLES,
    is_secret_name,
    safe_environment,
)
from jupyter_agent.tools.registry import ToolRegistry
from jupyter_agent.tools.shell import MAX_RESULT_CHARS, RunBashTool

#: Stops a hung test, never measures one: what these tests guard against takes ~100 s (a
#: background ``unique_sleep``) or for ever (a blocked read).
SAFETY_S = 60.0

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

PLANTED_SECRETS = {
    "FOO_API_KEY": "planted-foo-api-key",
    "MY_TOKEN": "planted-my-token",
    "DB_PASSWORD": "planted-db-password",
    "AWS_SECRET_ACCESS_KEY": "planted-aws-secret",
    "ANTHROPIC_API_KEY": "sk-test-planted",
    "github_token": "planted-lowercase-token",
}


@pytest.fixture
def tool(tmp_path: Path) -> RunBashTool:
    return RunBashTool(ToolContext(tmp_path))


async def wait_for_file(path: Path, within_s: float = 5.0) -> str:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was not written")


async def test_output_and_exit_code(tool: RunBashTool) -> None:
    result = await tool.execute({"command": "echo out; echo err >&2; exit 3"})
    assert "out" in result
    assert "err" in result
    assert result.endswith("Exit code: 3")


async def test_success_and_no_output(tool: RunBashTool) -> None:
    assert await tool.execute({"command": "true"}) == "(no output)\n\nExit code: 0"


async def test_runs_in_the_workspace(tool: RunBashTool, tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("here")
    result = await tool.execute({"command": "pwd; cat marker.txt"})
    assert result.splitlines()[0] == str(tmp_path.resolve())
    assert "here" in result


async def test_killed_by_signal_is_reported(tool: RunBashTool) -> None:
    result = await tool.execute({"command": "kill -9 $$"})
    # -9 when the shell is our child; 137 = 128 + 9 through the sandbox's init, as shells say it
    assert re.search(r"Exit code: (-9|137) \(killed by SIGKILL", result), result


async def test_read_from_stdin_does_not_hang(tool: RunBashTool) -> None:
    # an inherited stdin would block the read for ever (SAFETY_S only stops a hung test)
    command = 'read x; echo "read status=$? x=[$x]"'
    result = await asyncio.wait_for(tool.execute({"command": command}), SAFETY_S)
    assert "read status=1 x=[]" in result


async def test_no_controlling_terminal(tool: RunBashTool) -> None:
    # A password prompt (ssh, sudo) would open /dev/tty; in a new session there is none.
    result = await tool.execute({"command": "exec 3</dev/tty && echo HAVE_TTY || echo NO_TTY"})
    assert "NO_TTY" in result


async def test_environment_carries_no_secrets(
    tool: RunBashTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in PLANTED_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SOME_UNLISTED_VARIABLE", "unlisted-value")
    monkeypatch.setenv("LC_TIME", "C")
    result = await tool.execute({"command": "env"})
    for name, value in PLANTED_SECRETS.items():
        assert name not in result
        assert value not in result
    assert "unlisted-value" not in result
    assert "LC_TIME=C" in result
    assert "PATH=" in result
    for name, value in NON_INTERACTIVE_VARIABLES.items():
        assert f"{name}={value}" in result


def test_safe_environment_filters_by_allowlist_and_secret_names() -> None:
    base = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": "/c",
        "RANDOM_THING": "x",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "LC_SECRET_KEY": "leak",  # allowed prefix, but a secret name
        **PLANTED_SECRETS,
    }
    env = safe_environment(base)
    assert env["PATH"] == "/usr/bin"
    assert env["HOME"] == "/home/u"
    assert env["XDG_CACHE_HOME"] == "/c"
    assert "RANDOM_THING" not in env
    assert "SSH_AUTH_SOCK" not in env
    assert "LC_SECRET_KEY" not in env
    assert not set(PLANTED_SECRETS) & set(env)
    assert env["GIT_EDITOR"] == "true"
    assert env["PAGER"] == "cat"
    assert safe_environment(base, extra_names=["RANDOM_THING"])["RANDOM_THING"] == "x"
    # the ssh agent's socket is a credential too (AUTH): not even asked for by name
    assert "SSH_AUTH_SOCK" not in safe_environment(base, extra_names=["SSH_AUTH_SOCK"])
    assert "MY_TOKEN" not in safe_environment(base, extra_names=["MY_TOKEN"])


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("openai_api_key", True),
        ("GH_TOKEN", True),
        ("TOKENIZERS_PARALLELISM", True),  # over-cautious by design: contains TOKEN
        ("PGPASSWORD", True),
        ("CLIENT_SECRET", True),
        ("OAUTH_CLIENT_SECRET", True),
        ("GITLAB_AUTH", True),
        ("SSH_AUTH_SOCK", True),
        ("GIT_AUTHOR_NAME", False),
        ("CERT_AUTHORITY", False),
        ("PATH", False),
        ("HOME", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


async def test_timeout_kills_background_grandchild(tool: RunBashTool, tmp_path: Path) -> None:
    sleep = unique_sleep()  # ~100 s: waiting for it would outlast SAFETY_S
    with pytest.raises(ToolFailure, match=r"timed out after 0\.5 s"):
        call = tool.execute({"command": f"{sleep} & wait", "timeout_ms": 500})
        await asyncio.wait_for(call, SAFETY_S)
    assert not await wait_until_none_run(sleep), "the background sleep survived the timeout"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="descendants found via /proc")
async def test_timeout_kills_a_child_that_left_the_process_group(
    tool: RunBashTool, tmp_path: Path
) -> None:
    sleep = unique_sleep()
    with pytest.raises(ToolFailure, match="timed out"):
        await tool.execute({"command": f"setsid {sleep} & wait", "timeout_ms": 500})
    assert not await wait_until_none_run(sleep), "the setsid child survived the timeout"


async def test_timeout_escalates_to_sigkill(tool: RunBashTool) -> None:
    marker = f"stubborn-{secrets.token_hex(4)}"
    # it logs every signal it can catch and goes on: only SIGKILL (uncatchable) can end it
    caught = " ".join(
        f"trap 'echo {name} >> signals.log' {name};"
        for name in ("TERM", "INT", "HUP", "QUIT", "USR1", "USR2", "ALRM", "PIPE")
    )
    command = f"{caught} echo before; while :; do sleep 0.1; done # {marker}"
    with pytest.raises(ToolFailure) as excinfo:
        await tool.execute({"command": command, "timeout_ms": 300})
    assert "before" in str(excinfo.value)  # the output so far comes with the timeout
    # gone, so it got the one signal it cannot catch (in the sandbox, bubblewrap's SIGTERM ends
    # bubblewrap and the kernel SIGKILLs the command with it; run_command's own escalation,
    # TERM then KILL, is tests/tools/guard/test_processes.py)
    assert not await wait_until_none_run(marker)


async def test_timeout_through_registry_is_an_error_result(tmp_path: Path) -> None:
    registry = ToolRegistry()
    registry.register(RunBashTool(ToolContext(tmp_path)))
    result = await registry.call("run_bash", {"command": "sleep 5", "timeout_ms": 200})
    assert result.is_error
    assert result.content.startswith("Error executing run_bash: The command timed out")


@pytest.mark.parametrize("timeout_ms", [0, 600_001, "10"])
async def test_timeout_is_validated_by_schema(tmp_path: Path, timeout_ms: object) -> None:
    registry = ToolRegistry()
    registry.register(RunBashTool(ToolContext(tmp_path)))
    result = await registry.call("run_bash", {"command": "touch ran", "timeout_ms": timeout_ms})
    assert result.is_error
    assert "invalid arguments" in result.content
    assert not (tmp_path / "ran").exists()


async def test_cancellation_kills_the_tree(tool: RunBashTool, tmp_path: Path) -> None:
    sleep = unique_sleep()
    marker = f"shell-{secrets.token_hex(4)}"
    task = asyncio.create_task(tool.execute({"command": f"{sleep} & wait # {marker}"}))
    await wait_until_running(sleep)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not await wait_until_none_run(marker)
    assert not await wait_until_none_run(sleep)


async def test_background_child_holding_output_is_stopped(
    tool: RunBashTool, tmp_path: Path
) -> None:
    sleep = unique_sleep()  # ~100 s: waiting for it would outlast SAFETY_S
    result = await asyncio.wait_for(tool.execute({"command": f"{sleep} & echo started"}), SAFETY_S)
    assert "started" in result
    assert "Exit code: 0" in result
    assert not await wait_until_none_run(sleep)


async def test_huge_output_is_cut_in_the_middle(tool: RunBashTool) -> None:
    result = await tool.execute({"command": "seq 1 200000"})
    assert len(result) <= MAX_RESULT_CHARS
    assert result.startswith("1\n2\n3\n")
    assert "199999\n200000" in result
    assert result.endswith("Exit code: 0")
    marker = re.search(r"\[… ([\d,]+) of ([\d,]+) characters cut …\]", result)
    assert marker is not None
    omitted, total = (int(group.replace(",", "")) for group in marker.groups())
    expected_total = len("".join(f"{n}\n" for n in range(1, 200001)))
    assert total == expected_total
    head, _, rest = result.partition("\n\n[…")
    tail = rest.split("…]\n\n", 1)[1].rsplit("\n\nExit code", 1)[0]
    assert omitted == expected_total - len(head) - len(tail) - 1  # tail's trailing newline


async def test_fifty_megabytes_stay_within_cap(tool: RunBashTool) -> None:
    result = await asyncio.wait_for(tool.execute({"command": "yes | head -c 50M"}), SAFETY_S)
    assert len(result) <= MAX_RESULT_CHARS
    assert "of 52,428,800 characters cut …]" in result
    assert result.endswith("Exit code: 0")


MEMORY_PROBE = """
import asyncio, json, resource, sys
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.shell import RunBashTool

tool = RunBashTool(ToolContext(sys.argv[1]))
asyncio.run(tool.execute({"command": "echo warm-up"}))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = asyncio.run(tool.execute({"command": "yes | head -c 50M"}))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kb": before, "after_kb": after, "length": len(result)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB on Linux")
def test_fifty_megabytes_use_bounded_memory(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(completed.stdout)
    assert report["length"] <= MAX_RESULT_CHARS
    # Buffering the output would cost well over 50 MB (bytes, then text); streaming costs ~nothing.
    assert report["after_kb"] - report["before_kb"] < 16 * 1024, report


async def test_binary_output_survives(tool: RunBashTool) -> None:
    result = await tool.execute({"command": "head -c 1000 /dev/urandom"})
    assert result.endswith("Exit code: 0")
    assert len(result) <= MAX_RESULT_CHARS
    result = await tool.execute({"command": r"printf 'ok\xff\xfe\x00done'"})
    assert "ok\ufffd\ufffd\x00done" in result


async def test_multibyte_characters_split_across_reads(tool: RunBashTool) -> None:
    result = await tool.execute({"command": "python3 -c \"print('é' * 5000)\""})
    assert "é" * 4000 in result
    assert "\ufffd" not in result


def test_schema_and_flags(tmp_path: Path) -> None:
    tool = RunBashTool(ToolContext(tmp_path))
    schema = tool.get_schema()
    assert schema["name"] == "run_bash"
    assert schema["input_schema"]["required"] == ["command"]
    assert schema["input_schema"]["properties"]["timeout_ms"]["maximum"] == 600_000
    assert tool.destructive is True
