"""Managed settings in a real kernel: the admin's ``jupyter_agent_managed.json`` in the
environment's system config folder, a user's own config and magics that try to loosen it.

Issue 35, point 6: a system-wide config set defaults everyone could override — their own
``ipython_kernel_config.py``, ``%config``, ``%agent_tools enable``. Here the kernel's Python has a
``sys.prefix`` of the test's own (``managed_env.py``), so its ``etc/jupyter`` is where the admin's
file goes, exactly as on a JupyterHub host.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from managed_env import ManagedEnv, ManagedKernel

MANAGED = {
    "tools": {"run_bash": {"enabled": False}, "web_fetch": {"policy": "ask"}},
    "shell_network": False,
    "budget": 1.0,
}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> ManagedEnv:
    return ManagedEnv(tmp_path_factory.mktemp("managed-env"))


def _text(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for output in outputs:
        if output["type"] == "stream":
            parts.append(output["text"])
        elif output["type"] == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
        elif "data" in output:
            parts.append(output["data"].get("text/plain", ""))
    return "".join(parts)


@pytest.fixture
def kernel(
    tmp_path: Path, env: ManagedEnv, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ManagedKernel]:
    # The user's own IPython config tries to loosen what the admin locked.
    ipython_dir = tmp_path / "ipython"
    profile = ipython_dir / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_kernel_config.py").write_text(
        "c.AgentMagics.shell_network = True\nc.AgentMagics.budget = 50.0\n"
    )
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "offline")
    work = tmp_path / "work"
    work.mkdir()
    kernel = ManagedKernel(work, env)
    try:
        yield kernel
    finally:
        kernel.close()


def _run(kernel: ManagedKernel, code: str) -> tuple[str, str]:
    reply, outputs = kernel.execute(code)
    return reply["status"], _text(outputs)


def test_a_user_cannot_loosen_what_the_admin_locked(env: ManagedEnv, kernel: ManagedKernel) -> None:
    path = env.write_managed(MANAGED)
    status, loaded = _run(kernel, "%load_ext jupyter_agent")
    assert status == "ok", loaded
    # The user's config file asked for the network and a bigger budget: the managed values
    # stand, and the load says so.
    assert "AgentMagics.shell_network is managed by" in loaded, loaded

    status, said = _run(kernel, "%agent_tools enable run_bash")
    assert status == "error", said
    assert f"tool run_bash is managed by {path}" in said, said
    assert len(said.strip().splitlines()) == 1, said

    status, said = _run(kernel, "%config AgentMagics.shell_network = True")
    assert "AgentMagics.shell_network is managed by" in said, said
    status, said = _run(kernel, "%agent_tools policy web_fetch allow")
    assert status == "error" and "web_fetch's policy is managed by" in said, said

    status, state = _run(
        kernel,
        "from jupyter_agent.notebook.front.extension import get_magics\n"
        "m = get_magics(get_ipython())\n"
        "print(m.session.registry.is_tool_enabled('run_bash'), m.shell_network, m.budget,"
        " m.session.get_policy('web_fetch'))",
    )
    assert state.split() == ["False", "False", "1.0", "ask"], state

    # Stricter is allowed: the user may turn a tool off and deny it.
    status, said = _run(kernel, "%agent_tools policy web_fetch deny")
    assert status == "ok", said
    status, said = _run(kernel, "%config AgentMagics.budget = 0.25")
    assert status == "ok" and "managed" not in said, said

    status, shown = _run(kernel, "%agent config")
    assert status == "ok", shown
    assert re.search(rf"managed: tools\.run_bash +enabled=False  \({re.escape(str(path))}\)", shown)
    assert "managed: shell_network" in shown and "managed: budget" in shown, shown
