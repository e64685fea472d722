"""``%agent serve`` without a kernel: the guard's rules over real HTTP, the printed lines, the
subcommand in a real ``InteractiveShell``, and the bridge's idle runner.

The kernel tests (``test_serve_kernel.py``) drive the whole thing from outside a real kernel;
these are the quick ones.
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from PIL import Image as PILImage

from jupyter_agent import Image
from jupyter_agent.agent.toolbox import Toolbox
from jupyter_agent.notebook.front.extension import get_magics
from jupyter_agent.notebook.runtime.bridge import BackgroundLoop, MainThreadBridge, NotPumpingError
from jupyter_agent.notebook.serve.serve import connection_lines
from jupyter_agent.notebook.serve.serve_http import ToolServer, to_call_tool_result
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.registry import ToolRegistry

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ToolServer]:
    background = BackgroundLoop("test-serve")
    served = ToolServer(Toolbox(ToolContext(tmp_path)), token="the-token")
    try:
        background.run(served.start(0), timeout=30)
        yield served
    finally:
        background.run(served.stop(), timeout=15)
        background.close()


def _post(server: ToolServer, **headers: str) -> httpx.Response:
    return httpx.post(server.url, json=BODY, headers=ACCEPT | headers)


def test_the_guard_refuses_before_the_server_sees_anything(server: ToolServer) -> None:
    bearer = "Bearer the-token"
    assert _post(server).status_code == 401
    assert _post(server).headers["www-authenticate"] == "Bearer"
    assert _post(server, Authorization="Bearer the-token-").status_code == 401
    assert _post(server, Authorization="the-token").status_code == 401
    assert _post(server, Authorization=bearer, Host="evil.example").status_code == 421
    assert (
        _post(server, Authorization=bearer, Host=f"127.0.0.1:{server.port + 1}").status_code == 421
    )
    assert _post(server, Authorization=bearer, Origin="null").status_code == 403
    # let through: the SDK answers (a bare tools/list without a session is its 400, not ours)
    passed = [
        _post(server, Authorization=bearer, Origin=f"http://localhost:{server.port}"),
        _post(server, Authorization=bearer, Host=f"localhost:{server.port}"),
        _post(server, Authorization=bearer, Host=f"[::1]:{server.port}"),
        _post(server, Authorization=bearer),
    ]
    for response in passed:
        assert response.status_code not in (401, 403, 421), response.text
        assert not response.text.startswith("Refused")


def test_it_listens_on_loopback_only(server: ToolServer) -> None:
    assert server.addresses[0] == f"127.0.0.1:{server.port}"
    for address in server.addresses:
        assert address.rsplit(":", 1)[0] in ("127.0.0.1", "[::1]")
    with socket.socket() as probe:  # the wildcard address would also take this
        probe.settimeout(1)
        assert probe.connect_ex(("127.0.0.2", server.port)) != 0


def test_a_kept_alive_connection_is_answered_request_after_request(server: ToolServer) -> None:
    """Replies on a reused connection. That each goes out at once (TCP_NODELAY on the accepted
    sockets: a response written in two parts was held by Nagle's algorithm until the client's
    delayed ACK, ~40 ms a request, figure 17 measured 48 ms a call) is figure 17's goal, a
    median of 5 ms a call."""
    with httpx.Client() as client:  # one connection, kept alive between the requests
        client.post(server.url, json=BODY, headers=ACCEPT)  # connect (the 401 of no token)
        for _ in range(7):
            response = client.post(server.url, json=BODY, headers=ACCEPT)
            assert response.status_code == 401


def test_the_printed_lines_are_well_formed() -> None:
    lines = connection_lines("http://127.0.0.1:9/mcp", Path("/run/user/me/serve-9.token"))
    home = connection_lines("http://127.0.0.1:9/mcp", Path.home() / ".local" / "it's.token")
    assert "$(cat ~/'.local/it'\\''s.token')" in home  # names no home; a quote escaped
    read = "$(cat '/run/user/me/serve-9.token')"
    assert (
        'claude mcp add --transport http jupyter http://127.0.0.1:9/mcp --header "Authorization: '
        f'Bearer {read}"' in lines
    )
    assert f'JUPYTER_AGENT_MCP_TOKEN="{read}"' in lines
    assert (
        "npx @modelcontextprotocol/inspector --cli http://127.0.0.1:9/mcp --transport http "
        f'--header "Authorization: Bearer {read}"' in lines
    )
    toml = lines.split("[mcp_servers.jupyter]")[1].split("\n\n")[0]
    import tomllib

    parsed = tomllib.loads("[mcp_servers.jupyter]" + toml.replace("\n  ", "\n"))
    assert parsed == {
        "mcp_servers": {
            "jupyter": {
                "url": "http://127.0.0.1:9/mcp",
                "bearer_token_env_var": "JUPYTER_AGENT_MCP_TOKEN",
            }
        }
    }
    entry = json.loads(lines.rsplit("\n", 1)[1])
    assert entry["mcpServers"]["jupyter"]["headers"] == {
        "Authorization": "Bearer ${JUPYTER_AGENT_MCP_TOKEN}"
    }


def test_the_subcommand_in_a_shell(shell: InteractiveShell) -> None:
    with pytest.raises(UsageError, match=r"unknown tool.*nope"):
        shell.run_line_magic("agent", "serve --tools nope")
    with pytest.raises(UsageError, match="--port must be"):
        shell.run_line_magic("agent", "serve --port 70000")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        with pytest.raises(UsageError, match="cannot listen on port"):
            shell.run_line_magic("agent", f"serve --port {taken.getsockname()[1]}")
    assert get_magics(shell).server is None
    with capture_output() as nothing:
        shell.run_line_magic("agent", "serve stop")
    assert "no server is running" in nothing.stdout
    with capture_output() as started:
        shell.run_line_magic("agent", "serve --tools list_variables,read_file,run_python")
    assert "Serving 2 tools" in started.stdout
    assert "Not offered while disabled: run_python" in started.stdout
    served: Any = get_magics(shell).server
    assert served is not None
    with capture_output() as status:
        shell.run_line_magic("agent", "serve")
    assert "running" in status.stdout and served.token not in status.stdout
    with socket.create_connection(("127.0.0.1", served.server.port), timeout=2):
        pass
    with capture_output():
        shell.run_line_magic("agent", "serve stop")
    with socket.socket() as probe:
        probe.settimeout(1)
        assert probe.connect_ex(("127.0.0.1", served.server.port)) != 0
    assert get_magics(shell).server is None


def test_unloading_the_extension_stops_the_server(shell: InteractiveShell) -> None:
    with capture_output():
        shell.run_line_magic("agent", "serve")
    port = get_magics(shell).server.server.port
    shell.run_line_magic("unload_ext", "jupyter_agent")
    with socket.socket() as probe:
        probe.settimeout(1)
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    shell.run_line_magic("load_ext", "jupyter_agent")  # for the fixture's unload


def test_main_thread_work_between_runs_goes_to_the_idle_runner() -> None:
    background = BackgroundLoop("test-idle")
    bridge = MainThreadBridge(background)
    ran_on: list[str] = []

    def work() -> str:
        ran_on.append(threading.current_thread().name)
        return "done"

    try:
        with pytest.raises(NotPumpingError):
            background.run(bridge.call_on_main(work), timeout=5)

        async def runner(fn: Any) -> Any:
            return await asyncio.to_thread(fn)

        bridge.idle_runner = runner
        assert background.run(bridge.call_on_main(work), timeout=5) == "done"
        assert ran_on and ran_on[0] != "test-idle"
    finally:
        background.close()


def test_a_served_result_keeps_each_image_under_its_text() -> None:
    """An MCP client of ``%agent serve`` (notebook_history's plots) gets the text and images in
    the tool's order, not every image after all the text."""
    out = io.BytesIO()
    PILImage.new("RGB", (20, 10)).save(out, format="PNG")
    png = Image(out.getvalue(), "image/png")

    @tool
    def two_cells() -> list[str | Image]:
        """Two cells and their plots."""
        return ["cell 1", png, "cell 2", png]

    registry = ToolRegistry()
    registry.register(two_cells)
    result = asyncio.run(registry.call("two_cells", {}))
    content = to_call_tool_result(result).content
    assert [block.type for block in content] == ["text", "image", "text", "image"]
    assert [getattr(block, "text", None) for block in content] == ["cell 1", None, "cell 2", None]


def test_the_token_is_never_printed_and_is_redacted(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    """The token stays out of the cell's output (so out of the saved notebook, its checkpoints,
    a collaboration store and ``notebook_history``): the printed lines name a file only the
    user can read, and they work as printed in a shell. No tool result carries the token."""
    import os
    import re
    import stat
    import subprocess

    with capture_output() as started:
        shell.run_line_magic("agent", "serve")
    served: Any = get_magics(shell).server
    token = served.token
    try:
        assert token not in started.stdout, "the token was printed into the cell's output"
        line = re.search(r"claude mcp add --transport http (.*)", started.stdout)
        assert line is not None, started.stdout
        # the line as the user pastes it into a shell: the header it gives Claude Code
        echoed = subprocess.run(
            ["bash", "-c", f"printf '%s\\n' {line.group(1)}"], capture_output=True, text=True
        ).stdout.splitlines()
        assert f"Authorization: Bearer {token}" in echoed, echoed
        kept = re.search(r"\$\(cat (~/)?'([^']+)'\)", started.stdout)
        assert kept is not None
        token_file = Path(os.path.expanduser((kept.group(1) or "") + kept.group(2)))
        mode = stat.S_IMODE(os.stat(token_file).st_mode)
        assert mode == 0o600, oct(mode)
        assert token_file.read_text().strip() == token
        # a tool result that would carry the token carries its name instead
        (tmp_path / "notes.txt").write_text(f"the token: {token}\n")
        registry = get_magics(shell).session.toolbox.registry
        result = asyncio.run(registry.call("read_file", {"file_path": "notes.txt"}))
        assert token not in result.content
        assert token[:16] not in result.content and token[-16:] not in result.content
        assert "[redacted: " in result.content
    finally:
        with capture_output():
            shell.run_line_magic("agent", "serve stop")
    assert not token_file.exists(), "the token file outlived the server"


def test_a_token_folder_others_can_write_or_own_is_refused(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token file lives in Jupyter's runtime folder; one that other users may write (a
    shared ``JUPYTER_RUNTIME_DIR=/tmp/jrt``, mode 0777), or that another user owns, lets them
    swap the file the printed ``$(cat …)`` reads (review S3): ``%agent serve`` refuses it with
    one line, and nothing is served."""
    import os
    import shutil
    import subprocess

    shared = tmp_path / "jrt"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(shared))
    with pytest.raises(UsageError, match="writable by other users") as refused:
        shell.run_line_magic("agent", "serve")
    assert "\n" not in str(refused.value) and str(shared) in str(refused.value)
    assert get_magics(shell).server is None and not list(shared.iterdir())
    if os.geteuid() == 0 and shutil.which("useradd"):
        other = "jagent-other"
        if subprocess.run(["id", "-u", other], capture_output=True).returncode != 0:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", other],
                check=True,
            )
        uid = int(subprocess.run(["id", "-u", other], capture_output=True, text=True).stdout)
        shared.chmod(0o700)
        os.chown(shared, uid, -1)
        with pytest.raises(UsageError, match="owned by another user"):
            shell.run_line_magic("agent", "serve")
        assert get_magics(shell).server is None


def test_serve_task_after_is_a_setting_the_server_takes(shell: InteractiveShell) -> None:
    """``%config AgentMagics.serve_task_after`` sets when a long call becomes an MCP task; a
    negative value is refused."""
    from traitlets import TraitError

    magics = get_magics(shell)
    assert magics.serve_task_after == 5.0
    with pytest.raises(TraitError):
        magics.serve_task_after = -1.0
    shell.run_line_magic("config", "AgentMagics.serve_task_after = 0.5")
    with capture_output():
        shell.run_line_magic("agent", "serve")
    try:
        assert magics.server.server.tasks.task_after == 0.5
    finally:
        with capture_output():
            shell.run_line_magic("agent", "serve stop")
