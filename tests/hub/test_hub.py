"""JupyterHub with two real local users (issue 35): managed settings hold in a spawned user's
kernel, what the agent keeps in a user's home is private, and a user's ``%agent serve`` refuses
another user.

One hub for the module (``hub_harness.py``: DummyAuthenticator, LocalProcessSpawner, loopback,
configurable-http-proxy from npm); users ``jahub_a`` and ``jahub_b`` each get a single-user server
running as themselves. The admin's ``jupyter_agent_managed.json`` is in the servers' system config
folder (root's, 0644). The model is the fake Messages API on loopback.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use
from hub_harness import USERS, Hub, HubKernel, as_user, running_hub
from notebook_fake_server import serve

pytestmark = pytest.mark.slow

A, B = USERS
MANAGED = {
    "tools": {"run_bash": {"enabled": False}, "web_fetch": {"policy": "ask"}},
    "shell_network": False,
}


#: What the tests make the agent keep in a home (removed before each run).
LEFTOVERS = (
    ".jupyter_agent",
    ".local/share/jupyter/jupyter_agent",
    "notes.txt",
    "conversation.json",
)


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True


@pytest.fixture(scope="module")
def fake_api() -> Iterator[tuple[FakeAnthropic, str]]:
    fake = FakeAnthropic()
    with serve(fake) as base_url:
        yield fake, base_url


@pytest.fixture(scope="module")
def hub(fake_api: tuple[FakeAnthropic, str]) -> Iterator[Hub]:
    for user in USERS:  # what an earlier run's agent left in the homes
        home = Path(pwd.getpwnam(user).pw_dir) if _exists(user) else None
        for leftover in LEFTOVERS if home is not None else ():
            path = home / leftover
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    with running_hub(fake_api[1]) as hub:
        managed = hub.env.write_managed(MANAGED)
        managed.chmod(0o644)  # root's file in root's folder: the users read it, cannot change it
        hub.start_servers(USERS)
        yield hub


@pytest.fixture
def kernel_a(hub: Hub) -> Iterator[HubKernel]:
    kernel = hub.kernel(A)
    try:
        status, said = kernel.execute("%load_ext jupyter_agent")
        assert status == "ok", said
        yield kernel
    finally:
        kernel.close()


def test_the_kernel_runs_as_its_user(kernel_a: HubKernel) -> None:
    status, said = kernel_a.execute("import os, sys; print(os.getuid(), sys.prefix)")
    assert status == "ok", said
    uid, prefix = said.split()
    assert int(uid) == pwd.getpwnam(A).pw_uid
    assert prefix == str(kernel_a.hub.env.root)


def test_managed_settings_hold_in_a_users_kernel(hub: Hub, kernel_a: HubKernel) -> None:
    path = hub.env.config_dir / "jupyter_agent_managed.json"
    status, said = kernel_a.execute("%agent_tools enable run_bash")
    assert status == "error", said
    lines = said.strip().splitlines()
    assert len(lines) == 1 and f"tool run_bash is managed by {path}" in lines[0], said

    kernel_a.execute("%config AgentMagics.shell_network = True")
    status, said = kernel_a.execute(
        "from jupyter_agent.notebook.front.extension import get_magics\n"
        "m = get_magics(get_ipython())\n"
        "print(m.shell_network, m.session.registry.is_tool_enabled('run_bash'),"
        " m.session.get_policy('web_fetch'))"
    )
    assert said.split() == ["False", "False", "ask"], said

    status, shown = kernel_a.execute("%agent config")
    assert status == "ok" and f"({path})" in shown and "managed: tools.run_bash" in shown, shown

    # The user cannot edit the admin's file either.
    tried = as_user(A, "/bin/sh", "-c", f"echo '{{}}' > {path}")
    assert tried.returncode != 0
    assert json.loads(path.read_text()) == MANAGED


def _modes(folder: Path) -> dict[str, str]:
    """``path: mode`` of ``folder`` and everything in it."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in [".", *dirs, *files]:
            path = Path(root) / name if name != "." else Path(root)
            found[str(path)] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def test_what_the_agent_keeps_in_a_users_home_is_private(
    hub: Hub, kernel_a: HubKernel, fake_api: tuple[FakeAnthropic, str]
) -> None:
    fake, _ = fake_api
    fake.add(
        Reply([tool_use("toolu_w", "write_file", {"file_path": "notes.txt", "content": "one\n"})]),
        Reply(
            [
                tool_use(
                    "toolu_e",
                    "edit_file",
                    {"file_path": "notes.txt", "old_string": "one", "new_string": "two"},
                )
            ]
        ),
        text("Done."),
    )
    for line in ("%agent_tools policy write_file allow", "%agent_tools policy edit_file allow"):
        status, said = kernel_a.execute(line)
        assert status == "ok", said
    status, said = kernel_a.execute("%%agent\nWrite notes.txt, then change it.")
    assert status == "ok", said
    status, said = kernel_a.execute("%agent save conversation.json")
    assert status == "ok", said
    status, umask = kernel_a.execute("import os; u = os.umask(0); os.umask(u); print(u)")

    home = Path(pwd.getpwnam(A).pw_dir)
    kept = {
        **_modes(home / ".jupyter_agent"),
        **_modes(home / ".local" / "share" / "jupyter" / "jupyter_agent"),
    }
    assert any(path.endswith("signing_key") for path in kept), kept
    assert any("/undo/" in path for path in kept), kept
    wrong = {
        path: mode
        for path, mode in kept.items()
        if mode != ("0o700" if Path(path).is_dir() else "0o600")
    }
    conversation = oct(stat.S_IMODE((home / "conversation.json").stat().st_mode))
    assert wrong == {} and conversation == "0o600", (wrong, conversation)
    # A file the agent writes for the user is the user's, as their umask says.
    written = stat.S_IMODE((home / "notes.txt").stat().st_mode)
    assert written == 0o666 & ~int(umask), oct(written)


def _serve(kernel: HubKernel) -> tuple[str, str]:
    """Start ``%agent serve`` in ``kernel``; its URL and token (read from the kernel: the test
    plays a user who got hold of the token, however it leaked)."""
    status, said = kernel.execute("%agent serve")
    assert status == "ok", said
    status, said = kernel.execute(
        "from jupyter_agent.notebook.front.extension import get_magics\n"
        "s = get_magics(get_ipython()).server\nprint(s.url, s.token)"
    )
    url, token = said.split()
    return url, token


def _initialize_as(user: str, hub: Hub, url: str, token: str) -> str:
    """An MCP ``initialize`` to ``url`` sent by a process of ``user``; the HTTP status."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hub-test", "version": "1"},
        },
    }
    script = (
        "import httpx, json, sys\n"
        f"r = httpx.post({url!r}, json=json.loads({json.dumps(json.dumps(request))}), "
        f"headers={{'Authorization': 'Bearer {token}', "
        "'Accept': 'application/json, text/event-stream'}, timeout=20)\n"
        "print(r.status_code)"
    )
    done = as_user(user, str(hub.env.python), "-c", script)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_serve_answers_its_own_user(hub: Hub, kernel_a: HubKernel) -> None:
    url, token = _serve(kernel_a)
    try:
        assert _initialize_as(A, hub, url, token) == "200"
    finally:
        kernel_a.execute("%agent serve stop")


def test_serve_refuses_another_local_user_even_with_the_token(
    hub: Hub, kernel_a: HubKernel
) -> None:
    url, token = _serve(kernel_a)
    try:
        status = _initialize_as(B, hub, url, token)
        assert re.fullmatch(r"40[13]", status), status
    finally:
        kernel_a.execute("%agent serve stop")


def test_a_managed_file_the_user_cannot_read_locks_everything(hub: Hub) -> None:
    path = hub.env.config_dir / "jupyter_agent_managed.json"
    path.chmod(0o600)  # an admin's slip: only root may read it
    kernel = hub.kernel(B)
    try:
        status, said = kernel.execute("%load_ext jupyter_agent")
        assert status == "ok", said
        assert f"the managed settings file {path} cannot be read (PermissionError)" in said, said
        status, said = kernel.execute(
            "from jupyter_agent.notebook.front.extension import get_magics\n"
            "m = get_magics(get_ipython())\n"
            "print(m.session.registry.is_tool_enabled('read_file'), m.budget)"
        )
        assert said.split() == ["False", "0.0"], said
    finally:
        path.chmod(0o644)
        kernel.close()
