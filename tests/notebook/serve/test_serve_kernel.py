"""``%agent serve`` in a real kernel, driven from outside by the ``mcp`` SDK's own HTTP client.

The kernel is a separate process (jupyter_client); the test plays both the notebook's frontend
(it executes cells, reads iopub, clicks Approve by sending the button's ``comm_msg``, applies
``update_display_data`` to the serve cell's outputs as a frontend does before saving) and the
outside agent (an MCP client over streamable HTTP with the printed URL and token).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from jupyter_client.manager import start_new_kernel

from jupyter_agent.notebook.inert import is_answer

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

pytestmark = pytest.mark.slow

CLAUDE_LINE = re.compile(
    r'claude mcp add --transport http (\S+) (http://\S+) --header "Authorization: Bearer ([^"\s]+)'
)
#: The file that keeps the token, as the printed lines name it: ``$(cat '/path')``.
KEPT_TOKEN = re.compile(r"\$\(cat (~/)?'([^']+)'\)")


class Kernel:
    """A kernel driven like a frontend; every iopub message is kept in ``messages``."""

    def __init__(self, cwd: Path) -> None:
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd))
        self.messages: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def close(self) -> None:
        self.client.stop_channels()
        if self.manager.is_alive():
            self.manager.shutdown_kernel(now=True)

    def drain(self, timeout: float = 0.05) -> None:
        """Move the iopub messages that arrived into ``messages``."""
        with self._lock:
            while True:
                try:
                    self.messages.append(self.client.get_iopub_msg(timeout=timeout))
                except Exception:
                    return

    def execute(
        self, code: str, timeout: float = 60, *, attended: bool = True
    ) -> tuple[dict[str, Any], str]:
        """Run ``code``; its reply and what it printed (``attended``: as a frontend that can
        answer the cell, not nbclient)."""
        msg_id = self.client.execute(code, allow_stdin=attended)
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, f"timed out running {code!r}"
            self.drain(0.1)
            if any(
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
                for m in self.messages
            ):
                break
        while True:
            reply = self.client.get_shell_msg(timeout=10)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        printed = "".join(
            m["content"]["text"]
            for m in self.messages
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream"
        )
        errors = [
            m["content"]
            for m in self.messages
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "error"
        ]
        assert not errors, errors
        reply["content"]["msg_id"] = msg_id
        return reply["content"], printed

    def wait_for(self, found: Callable[[dict[str, Any]], bool], timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            self.drain(0.1)
            for message in self.messages[seen:]:
                if found(message):
                    return message
            seen = len(self.messages)
        raise AssertionError("the kernel never sent the message waited for")

    def cell_outputs(self, msg_id: str) -> list[dict[str, Any]]:
        """The outputs of cell ``msg_id`` as a frontend holds them: its displays, updated in
        place by every later ``update_display_data`` for their ``display_id``."""
        self.drain()
        outputs: list[dict[str, Any]] = []
        for message in self.messages:
            kind, content = message["msg_type"], message["content"]
            if kind == "update_display_data":
                for output in outputs:
                    if output.get("display_id") == content["transient"]["display_id"]:
                        output["data"] = content["data"]
            elif message["parent_header"].get("msg_id") != msg_id:
                continue
            elif kind == "stream":
                outputs.append({"output_type": "stream", "text": content["text"]})
            elif kind == "display_data":
                outputs.append(
                    {
                        "output_type": "display_data",
                        "data": content["data"],
                        "display_id": content.get("transient", {}).get("display_id"),
                    }
                )
        return outputs

    def send_click(self, comm_id: str) -> None:
        click = {"method": "custom", "content": {"event": "click"}}
        message = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": click})
        self.client.shell_channel.send(message)


class Served:
    def __init__(self, kernel: Kernel, msg_id: str, printed: str) -> None:
        match = CLAUDE_LINE.search(printed)
        assert match is not None, printed
        self.kernel = kernel
        self.msg_id = msg_id
        self.printed = printed
        self.name, self.url, header_token = match.groups()
        #: the token, read from the file the printed line names (it is never printed itself)
        kept = KEPT_TOKEN.search(printed)
        self.token_file = (
            Path(os.path.expanduser((kept.group(1) or "") + kept.group(2)))
            if kept is not None
            else None
        )
        self.token = (
            self.token_file.read_text().strip() if self.token_file is not None else header_token
        )
        self.port = int(self.url.split(":")[2].split("/")[0])

    def record(self) -> str:
        """The serve cell's call record (text) as the saved notebook holds it."""
        texts = []
        for output in self.kernel.cell_outputs(self.msg_id):
            if output["output_type"] == "display_data":
                texts.append(output["data"].get("text/plain", ""))
        return "\n".join(texts)


def start_serving(kernel: Kernel, line: str = "%agent serve") -> Served:
    reply, printed = kernel.execute(line)
    assert reply["status"] == "ok", printed
    return Served(kernel, reply["msg_id"], printed)


async def _session(url: str, headers: dict[str, str]) -> Any:
    """An MCP client session (an async context manager) for ``url`` with ``headers``."""
    from contextlib import asynccontextmanager

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @asynccontextmanager
    async def opened() -> Any:
        client = create_mcp_http_client(headers=headers)
        async with (
            client,
            streamable_http_client(url, http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            yield session

    return opened()


def call(served: Served, name: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
    """One ``tools/call`` from outside, as an MCP client makes it."""

    async def go() -> Any:
        async with await _session(served.url, {"Authorization": f"Bearer {served.token}"}) as s:
            return await s.call_tool(name, arguments, **kwargs)

    return asyncio.run(go())


def result_text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    kernel = Kernel(tmp_path_factory.mktemp("serve"))
    try:
        reply, printed = kernel.execute(
            "%load_ext jupyter_agent\nimport pandas as pd\n"
            "sales = pd.DataFrame({'region': ['north', 'south'], 'units': [12, 7]})\n"
            "secret_note = 'only for the approved'"
        )
        assert reply["status"] == "ok", printed
        yield kernel
    finally:
        kernel.close()


@pytest.fixture(scope="module")
def served(kernel: Kernel) -> Served:
    kernel.execute("%agent_tools policy inspect_variable allow")
    return start_serving(kernel)


def test_the_printed_lines_connect_claude_code_codex_and_any_client(served: Served) -> None:
    """The lines name the 0600 file that keeps the token; the token itself is in no message the
    kernel sent (so in no saved output, checkpoint or collaboration store)."""
    import os
    import stat
    import subprocess

    assert served.url == f"http://127.0.0.1:{served.port}/mcp"
    assert served.token_file is not None
    assert stat.S_IMODE(os.stat(served.token_file).st_mode) == 0o600
    assert len(served.token) >= 40
    served.kernel.drain()
    assert served.token not in json.dumps(served.kernel.messages, default=str)
    assert f'[mcp_servers.{served.name}]\n  url = "{served.url}"' in served.printed
    assert 'bearer_token_env_var = "JUPYTER_AGENT_MCP_TOKEN"' in served.printed
    codex = re.search(r'start codex with (JUPYTER_AGENT_MCP_TOKEN="[^"]+")', served.printed)
    assert codex is not None
    shell = subprocess.run(
        ["bash", "-c", f"{codex.group(1)} bash -c 'printf %s \"$JUPYTER_AGENT_MCP_TOKEN\"'"],
        capture_output=True,
        text=True,
    )
    assert shell.stdout == served.token, shell.stderr
    entry = json.loads(served.printed.split("Any MCP client")[1].split("\n", 1)[1].split("\n")[0])
    assert entry == {
        "mcpServers": {
            served.name: {
                "type": "http",
                "url": served.url,
                "headers": {"Authorization": "Bearer ${JUPYTER_AGENT_MCP_TOKEN}"},
            }
        }
    }


def test_an_outside_agent_lists_tools_and_reads_kernel_variables(served: Served) -> None:
    async def go() -> tuple[list[str], Any, Any]:
        async with await _session(served.url, {"Authorization": f"Bearer {served.token}"}) as s:
            tools = [tool.name for tool in (await s.list_tools()).tools]
            listed = await s.call_tool("list_variables", {})
            inspected = await s.call_tool("inspect_variable", {"name": "sales"})
            return tools, listed, inspected

    tools, listed, inspected = asyncio.run(go())
    assert {"list_variables", "inspect_variable", "read_file"} <= set(tools)
    assert "run_python" not in tools  # disabled in the session: not offered
    assert not listed.is_error
    assert "sales: DataFrame" in result_text(listed)
    assert not inspected.is_error
    assert "north" in result_text(inspected) and "units" in result_text(inspected)
    # each call shows in the serve cell, as its static record
    served.kernel.wait_for(
        lambda m: (
            m["msg_type"] == "update_display_data"
            and "inspect_variable" in m["content"]["data"].get("text/plain", "")
            and "sales" in m["content"]["data"].get("text/plain", "")
        )
    )
    record = served.record()
    assert "list_variables" in record and "inspect_variable" in record


def test_a_denied_tool_is_refused_and_shown_denied(kernel: Kernel, served: Served) -> None:
    kernel.execute("%agent_tools policy read_file deny")
    try:
        result = call(served, "read_file", {"file_path": "anything.txt"})
    finally:
        kernel.execute("%agent_tools policy read_file allow")
    assert result.is_error
    assert "policy for this tool is 'deny'" in result_text(result)
    kernel.wait_for(
        lambda m: (
            m["msg_type"] == "update_display_data"
            and "read_file" in m["content"]["data"].get("text/plain", "")
            and "denied" in m["content"]["data"].get("text/plain", "")
        )
    )


def test_an_ask_policy_shows_the_prompt_in_the_serve_cell_and_approve_runs_it(
    kernel: Kernel, served: Served
) -> None:
    """The kernel is idle (no cell runs) while the prompt waits: the click is handled by the
    kernel's own loop, the prompt and the call's view are updates of the serve cell's displays."""
    kernel.execute("%agent_tools policy inspect_variable ask")
    clicked: dict[str, str] = {}

    def click_approve() -> None:
        message = kernel.wait_for(
            lambda m: (
                m["msg_type"] == "comm_open"
                and m["content"]["data"].get("state", {}).get("description") == "Approve"
            ),
            timeout=30,
        )
        clicked["comm"] = message["content"]["comm_id"]
        kernel.send_click(clicked["comm"])

    clicker = threading.Thread(target=click_approve)
    clicker.start()
    try:
        result = call(served, "inspect_variable", {"name": "secret_note"})
    finally:
        clicker.join(35)
        kernel.execute("%agent_tools policy inspect_variable allow")
    assert clicked
    assert not result.is_error, result_text(result)
    assert "only for the approved" in result_text(result)
    kernel.wait_for(
        lambda m: (
            m["msg_type"] == "update_display_data"
            and m["content"]["data"].get("text/plain", "").startswith("Approved: inspect_variable")
        )
    )
    # the prompt was shown in the serve cell (an update of its display), not in another cell
    outputs = kernel.cell_outputs(served.msg_id)
    prompt_ids = {o["display_id"] for o in outputs if o.get("display_id")}
    widget_updates = [
        m
        for m in kernel.messages
        if m["msg_type"] == "update_display_data"
        and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
    ]
    assert widget_updates
    assert {m["content"]["transient"]["display_id"] for m in widget_updates} <= prompt_ids


def test_an_ask_policy_is_refused_when_nobody_watches(kernel: Kernel, served: Served) -> None:
    """A kernel run by nbclient (no ``allow_stdin``) has nobody to click Approve: refused."""
    kernel.execute("%agent_tools policy inspect_variable ask", attended=False)
    try:
        result = call(served, "inspect_variable", {"name": "secret_note"})
    finally:
        kernel.execute("%agent_tools policy inspect_variable allow")
    assert result.is_error
    assert "no one could approve it" in result_text(result)
    assert "only for the approved" not in result_text(result)


def test_the_saved_notebook_keeps_the_record(
    kernel: Kernel, served: Served, tmp_path: Path
) -> None:
    call(served, "list_variables", {})
    kernel.wait_for(lambda m: m["msg_type"] == "update_display_data")
    time.sleep(0.5)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%agent serve")
    for output in kernel.cell_outputs(served.msg_id):
        if output["output_type"] == "stream":
            stream = nbformat.v4.new_output("stream", name="stdout", text=output["text"])
            cell.outputs.append(stream)
        else:
            cell.outputs.append(nbformat.v4.new_output("display_data", data=output["data"]))
    nb.cells = [cell]
    path = tmp_path / "served.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    htmls = "".join(o.get("data", {}).get("text/html", "") for o in saved.cells[0].outputs)
    assert "list_variables" in htmls and "inspect_variable" in htmls
    assert "application/vnd.jupyter.widget-view+json" not in json.dumps(saved.cells[0].outputs)


def test_requests_without_the_token_or_from_a_foreign_host_are_refused(served: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    bearer = {"Authorization": f"Bearer {served.token}"}
    with httpx.Client() as client:
        assert client.post(served.url, json=body, headers=headers).status_code == 401
        wrong = {"Authorization": "Bearer " + "x" * len(served.token)}
        assert client.post(served.url, json=body, headers=headers | wrong).status_code == 401
        rebound = headers | bearer | {"Host": f"evil.example:{served.port}"}
        assert client.post(served.url, json=body, headers=rebound).status_code == 421
        bare = headers | bearer | {"Host": "evil.example"}
        assert client.post(served.url, json=body, headers=bare).status_code == 421
        page = headers | bearer | {"Origin": "http://evil.example"}
        assert client.post(served.url, json=body, headers=page).status_code == 403
        other_port = headers | bearer | {"Origin": "http://127.0.0.1:8888"}
        assert client.post(served.url, json=body, headers=other_port).status_code == 403
    # nothing listens beyond loopback
    outward = _outward_address()
    if outward is not None:
        with socket.socket() as sock:
            sock.settimeout(1)
            assert sock.connect_ex((outward, served.port)) != 0


def _outward_address() -> str | None:
    """This machine's non-loopback address, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET: no packet is sent for a UDP connect
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_claude_codes_mcp_json_entry_connects(served: Served, tmp_path: Path) -> None:
    """Claude Code's project config (``.mcp.json``), the printed entry as it is, with
    ``${JUPYTER_AGENT_MCP_TOKEN}`` filled in from the environment as Claude Code does."""
    printed = served.printed.split("Any MCP client")[1].split("\n", 1)[1].split("\n")[0]
    (tmp_path / ".mcp.json").write_text(printed)
    import string

    environment = {"JUPYTER_AGENT_MCP_TOKEN": served.token}
    expanded = string.Template((tmp_path / ".mcp.json").read_text()).substitute(environment)
    (tmp_path / ".mcp.json").write_text(expanded)
    entry = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["jupyter"]
    assert entry["type"] == "http"

    async def go() -> Any:
        async with await _session(entry["url"], entry["headers"]) as session:
            return await session.call_tool("list_variables", {})

    result = asyncio.run(go())
    assert "sales: DataFrame" in result_text(result)


def test_a_second_serve_shows_the_status(kernel: Kernel, served: Served) -> None:
    reply, printed = kernel.execute("%agent serve")
    assert reply["status"] == "ok"
    assert "running" in printed and served.url in printed
    assert served.token not in printed


def test_main_thread_tools_queue_while_a_cell_runs(kernel: Kernel, served: Served) -> None:
    """``run_python`` runs on the kernel's main thread: between cells at once, and while a cell
    runs it waits for it, telling the caller "kernel busy, queued"."""
    kernel.execute("%agent_tools enable run_python\n%agent_tools policy run_python allow")
    try:
        code = "import threading\nthreading.current_thread().name"
        result = call(served, "run_python", {"code": code})
        assert not result.is_error, result_text(result)
        assert "MainThread" in result_text(result)

        busy_id = kernel.client.execute("import time\ntime.sleep(3)\nbusy_done = True")
        kernel.wait_for(
            lambda m: (
                m["parent_header"].get("msg_id") == busy_id and m["msg_type"] == "execute_input"
            )
        )
        notes: list[str] = []

        async def progress(_progress: float, _total: float | None, message: str | None) -> None:
            notes.append(message or "")

        result = call(served, "run_python", {"code": "busy_done"}, progress_callback=progress)
    finally:
        kernel.execute("%agent_tools policy run_python ask\n%agent_tools disable run_python")
    assert not result.is_error, result_text(result)
    # it ran after the cell (busy_done exists only once the cell's sleep is over), in its
    # namespace: the order, which a wall-clock "waited > 1 s" only suggested
    assert "True" in result_text(result)
    assert any("kernel busy, queued" in note for note in notes), notes


def test_serve_stop_closes_the_port(tmp_path: Path) -> None:
    kernel = Kernel(tmp_path)
    try:
        kernel.execute("%load_ext jupyter_agent")
        served = start_serving(kernel, "%agent serve --tools list_variables")
        assert [t for t in _tool_names(served)] == ["list_variables"]
        assert port_open(served.port)
        _reply, printed = kernel.execute("%agent serve stop")
        assert "stopped" in printed
        assert not port_open(served.port)
        # a new server: a new port or token
        again = start_serving(kernel)
        assert again.token != served.token
        assert served.token_file is not None and not served.token_file.exists()
        kernel.execute("%unload_ext jupyter_agent")
        assert not port_open(again.port)
        assert again.token_file is not None and not again.token_file.exists()
        assert "stopped" in again.record()
    finally:
        kernel.close()


def test_kernel_shutdown_ends_the_server(tmp_path: Path) -> None:
    kernel = Kernel(tmp_path)
    try:
        kernel.execute("%load_ext jupyter_agent")
        served = start_serving(kernel)
        assert port_open(served.port)
        kernel.manager.shutdown_kernel(now=False)
        deadline = time.monotonic() + 10
        while port_open(served.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not port_open(served.port)
        assert served.token_file is not None
        while served.token_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not served.token_file.exists(), "the token file outlived the kernel"
    finally:
        kernel.close()


def _tool_names(served: Served) -> list[str]:
    async def go() -> list[str]:
        async with await _session(served.url, {"Authorization": f"Bearer {served.token}"}) as s:
            return [tool.name for tool in (await s.list_tools()).tools]

    return asyncio.run(go())


class _SlowGate:
    """``Reply.gate`` that makes the model's answer trickle: one piece every 0.3 s."""

    async def wait(self) -> None:
        await asyncio.sleep(0.3)


def test_while_an_agent_cell_runs_its_pump_serves_the_outside_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """During a ``%%agent`` cell the main thread is the cell's pump: an outside call's approval
    prompt shows and is clicked, and ``run_python`` runs, while the cell still streams."""
    from fake_anthropic import FakeAnthropic, Reply
    from notebook_fake_server import serve

    fake = FakeAnthropic()
    fake.add(Reply([{"type": "text", "text": "word " * 100}], chunk=5, gate=_SlowGate()))  # type: ignore[arg-type]
    with serve(fake) as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
        kernel = Kernel(tmp_path)
        try:
            kernel.execute(
                "%load_ext jupyter_agent\nsecret_note = 'approved during a cell'\n"
                "%agent_tools policy inspect_variable ask\n"
                "%agent_tools enable run_python\n%agent_tools policy run_python allow"
            )
            served = start_serving(kernel)
            cell_id = kernel.client.execute("%%agent\nTell me a story", allow_stdin=True)
            kernel.wait_for(
                lambda m: (
                    m["parent_header"].get("msg_id") == cell_id
                    and is_answer(m["content"].get("metadata"))  # the answer is streaming
                )
            )

            def click_approve() -> None:
                message = kernel.wait_for(
                    lambda m: (
                        m["msg_type"] == "comm_open"
                        and m["content"]["data"].get("state", {}).get("description") == "Approve"
                    ),
                    timeout=30,
                )
                kernel.send_click(message["content"]["comm_id"])

            clicker = threading.Thread(target=click_approve)
            clicker.start()
            approved = call(served, "inspect_variable", {"name": "secret_note"})
            clicker.join(35)
            ran = call(served, "run_python", {"code": "secret_note.upper()"})
            kernel.drain()
            cell_ended = [
                m
                for m in kernel.messages
                if m["parent_header"].get("msg_id") == cell_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
            ]
            assert not cell_ended, "the calls waited for the %%agent cell to end"
            assert not approved.is_error, result_text(approved)
            assert "approved during a cell" in result_text(approved)
            assert not ran.is_error, result_text(ran)
            assert "APPROVED DURING A CELL" in result_text(ran)
            kernel.manager.interrupt_kernel()  # the story has made its point
            kernel.wait_for(
                lambda m: (
                    m["parent_header"].get("msg_id") == cell_id
                    and m["msg_type"] == "status"
                    and m["content"]["execution_state"] == "idle"
                ),
                timeout=60,
            )
        finally:
            kernel.close()


def test_half_sent_connections_never_starve_the_kernel(tmp_path: Path) -> None:
    """Many unauthenticated connections that each send half a request (a slowloris): the
    kernel's own cells still finish promptly, every attacker is dropped after the read deadline,
    and then an outside agent is served. The kernel gets the file-descriptor limit of a typical
    desktop session (1024) so that holding every attacker's socket would exhaust it."""
    import resource

    attackers_count = 1100
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < attackers_count + 100:
        if hard != resource.RLIM_INFINITY and hard < attackers_count + 100:
            pytest.skip("needs more file descriptors than the hard limit allows")
        resource.setrlimit(resource.RLIMIT_NOFILE, (attackers_count + 100, hard))
    kernel = Kernel(tmp_path)
    attackers: list[socket.socket] = []
    try:
        reply, printed = kernel.execute(
            "import resource\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, "
            "(1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
            "%load_ext jupyter_agent"
        )
        assert reply["status"] == "ok", printed
        served = start_serving(kernel, "%agent serve --tools list_variables")
        started = time.monotonic()
        for _ in range(attackers_count):
            try:
                sock = socket.create_connection(("127.0.0.1", served.port), timeout=2)
                sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n".encode())
            except OSError:
                continue  # refused or reset: the server is bounding them
            attackers.append(sock)
        time.sleep(1)
        # the cell runs under the attack (30 s only stops a hung test), and the kernel holds
        # few of the attackers' sockets: the cap, not a speed, is what keeps it responsive
        reply, printed = kernel.execute(
            "import os\nprint(len(os.listdir('/proc/self/fd')))", timeout=30
        )
        assert reply["status"] == "ok", printed
        assert int(printed.strip()) < 400, f"the kernel holds {printed.strip()} descriptors"
        # every attacker is dropped once the read deadline has passed
        deadline = started + 60
        for sock in attackers:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                while sock.recv(4096):
                    pass
            except ConnectionResetError:
                pass
            except TimeoutError:
                raise AssertionError("a half-sent connection was never dropped") from None
        try:
            result = call(served, "list_variables", {})
        except Exception:
            _reply, why = kernel.execute(
                "from jupyter_agent.notebook.front.extension import get_magics\n"
                "gate = get_magics(get_ipython()).server.server.connections\n"
                "print(gate.refused, gate.open_connections)"
            )
            raise AssertionError(f"the outside agent was not served: {why}") from None
        assert not result.is_error, result_text(result)
    finally:
        for sock in attackers:
            sock.close()
        kernel.close()


#: An MCP ``initialize`` over a raw socket, run by another local user: prints the answer.
_OTHER_USER_CLIENT = """
import json, socket, sys
port, token = int(sys.argv[1]), sys.argv[2]
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "other", "version": "1"}}}).encode()
head = (f"POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nAuthorization: Bearer {token}\\r\\n"
        "Accept: application/json, text/event-stream\\r\\nContent-Type: application/json\\r\\n"
        f"Content-Length: {len(body)}\\r\\nConnection: close\\r\\n\\r\\n").encode()
sock = socket.create_connection(("127.0.0.1", port), timeout=10)
answer = b""
try:
    sock.sendall(head + body)
    while chunk := sock.recv(65536):
        answer += chunk
except OSError as exc:
    answer += f"(connection error: {exc})".encode()
print(answer.decode("latin-1"))
"""


def test_another_local_user_cannot_drive_the_kernel_even_with_the_token(served: Served) -> None:
    """A second local user (made with ``useradd``, its client started with ``runuser``) who
    got hold of the right token is refused; the kernel's own user is served."""
    import shutil
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("the uid check is Linux's (/proc/net/tcp)")
    if os.geteuid() != 0 or not shutil.which("runuser") or not shutil.which("useradd"):
        pytest.skip("needs root with useradd and runuser to play a second local user")
    other = "jagent-other"
    if subprocess.run(["id", "-u", other], capture_output=True).returncode != 0:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", other],
            check=True,
        )
    command = ["/usr/bin/python3", "-c", _OTHER_USER_CLIENT, str(served.port), served.token]
    theirs = subprocess.run(
        ["runuser", "-u", other, "--", *command], capture_output=True, text=True, cwd="/"
    ).stdout
    mine = subprocess.run(command, capture_output=True, text=True, cwd="/").stdout
    assert theirs.startswith("HTTP/1.1 403"), theirs
    assert "another local user" in theirs and "jsonrpc" not in theirs
    assert mine.startswith("HTTP/1.1 200") and '"jsonrpc"' in mine, mine


def test_allow_for_this_session_in_the_serve_cell_holds_for_that_client_only(
    kernel: Kernel, served: Served
) -> None:
    """A click on "Allow for this session" in the serve cell lets that client's later calls
    through without asking — not another client's (asked again; Deny clicked with no words), and
    not the notebook's own agent (its policy is still ``ask``)."""
    kernel.execute("%agent_tools policy inspect_variable ask")
    kernel.drain()
    seen = len(kernel.messages) - 1

    def opened(description: str, after: int) -> int:
        """The index of the next button named ``description`` opened after ``after``."""
        message = kernel.wait_for(
            lambda m: (
                m["msg_type"] == "comm_open"
                and m["content"]["data"].get("state", {}).get("description") == description
                and kernel.messages.index(m) > after
            ),
            timeout=30,
        )
        return kernel.messages.index(message)

    def click(description: str) -> None:
        """Click ``description`` on the next prompt (its buttons open after its Approve)."""
        nonlocal seen
        button = opened(description, opened("Approve", seen))
        seen = button
        kernel.send_click(kernel.messages[button]["content"]["comm_id"])

    async def one_client() -> tuple[Any, Any]:
        async with await _session(served.url, {"Authorization": f"Bearer {served.token}"}) as s:
            first = await s.call_tool("inspect_variable", {"name": "secret_note"})
            again = await asyncio.wait_for(
                s.call_tool("inspect_variable", {"name": "secret_note"}), 20
            )
            return first, again

    try:
        clicker = threading.Thread(target=click, args=("Allow for this session",))
        clicker.start()
        first, again = asyncio.run(one_client())
        clicker.join(35)
        assert not first.is_error and not again.is_error, result_text(again)
        assert "only for the approved" in result_text(again)
        denier = threading.Thread(target=click, args=("Deny",))
        denier.start()
        other = call(served, "inspect_variable", {"name": "secret_note"})
        denier.join(35)
        assert other.is_error, "another client ran on the first one's approval"
        assert "only for the approved" not in result_text(other)
        assert "The user said" not in result_text(other), result_text(other)
        assert "the user declined this call of inspect_variable" in result_text(other)
        _reply, policy = kernel.execute(
            "from jupyter_agent.notebook.front.extension import get_magics\n"
            "print(get_magics(get_ipython()).session.toolbox.get_policy('inspect_variable'))"
        )
        assert policy.strip() == "ask", "the notebook's own agent was allowed too"
    finally:
        kernel.execute("%agent_tools policy inspect_variable allow")


def test_run_python_is_a_task_polled_to_its_result_and_an_interrupt_cancels_it(
    kernel: Kernel, served: Served, tasks_client: Any
) -> None:
    """For a client that speaks MCP tasks, ``run_python`` is a task at once (it runs on the
    kernel's main thread, for as long as the code takes); a kernel interrupt while it waits
    behind a running cell cancels it, and its code never runs."""
    kernel.execute("%agent_tools enable run_python\n%agent_tools policy run_python allow")
    client = tasks_client(served.url, served.token)
    try:
        handle = client.ask(call="run_python", arguments={"code": "6 * 7"})
        assert handle["shape"] == "task" and handle["status"] == "working", handle
        polled = client.ask(get=handle["taskId"])
        deadline = time.monotonic() + 30
        while polled["status"] == "working" and time.monotonic() < deadline:
            time.sleep(0.05)
            polled = client.ask(get=handle["taskId"])
        assert polled["status"] == "completed", polled
        assert "42" in polled["result"]["content"][0]["text"]

        busy_id = kernel.client.execute("import time\ntime.sleep(30)")
        kernel.wait_for(
            lambda m: (
                m["parent_header"].get("msg_id") == busy_id and m["msg_type"] == "execute_input"
            )
        )
        queued = client.ask(call="run_python", arguments={"code": "ran_after_interrupt = True"})
        assert queued["shape"] == "task"
        polled = client.ask(get=queued["taskId"])
        while "kernel busy, queued" not in polled["statusMessage"]:
            assert time.monotonic() < deadline, polled
            polled = client.ask(get=queued["taskId"])
        kernel.manager.interrupt_kernel()
        while polled["status"] == "working":
            assert time.monotonic() < deadline, polled
            time.sleep(0.05)
            polled = client.ask(get=queued["taskId"])
        assert polled["status"] == "cancelled", polled
        assert "interrupted" in polled["statusMessage"]
        _reply, printed = kernel.execute("print('ran_after_interrupt' in globals())")
        assert printed.strip() == "False"
    finally:
        kernel.execute("%agent_tools policy run_python ask\n%agent_tools disable run_python")


def test_a_run_python_task_tells_how_long_its_code_has_run_and_its_last_line(
    kernel: Kernel, served: Served, tasks_client: Any, tmp_path: Path
) -> None:
    """While a ``run_python`` task's code runs, ``tasks/get``'s statusMessage says how long it
    has run and the last line it printed so far (as ``run_cell``'s progress does); the code
    is let go only once a poll has shown it (it gives up waiting after 10 s)."""
    kernel.execute("%agent_tools enable run_python\n%agent_tools policy run_python allow")
    client = tasks_client(served.url, served.token)
    go = tmp_path / "go"
    code = (
        "import time, pathlib\nprint('loaded 3 of 10', flush=True)\n"
        f"for _ in range(200):\n    if pathlib.Path({str(go)!r}).exists():\n        break\n"
        "    time.sleep(0.05)\nprint('all loaded')"
    )
    said: list[str] = []
    try:
        handle = client.ask(call="run_python", arguments={"code": code})
        assert handle["shape"] == "task", handle
        polled = client.ask(get=handle["taskId"])
        deadline = time.monotonic() + 30
        while polled["status"] == "working":
            assert time.monotonic() < deadline, polled
            said.append(polled.get("statusMessage", ""))
            if "elapsed" in said[-1] and "last output: loaded 3 of 10" in said[-1]:
                go.write_text("")  # a poll showed it: the code may end
            time.sleep(0.1)
            polled = client.ask(get=handle["taskId"])
        assert any("elapsed" in m and "last output: loaded 3 of 10" in m for m in said), said
        assert polled["status"] == "completed", polled
        assert "all loaded" in polled["result"]["content"][0]["text"], polled
    finally:
        go.write_text("")
        kernel.execute("%agent_tools policy run_python ask\n%agent_tools disable run_python")


def interrupt_once_started(
    kernel: Kernel, client: Any, handle: dict[str, Any], started: Path, within_s: float
) -> dict[str, Any]:
    """Once the task's own code has begun (it wrote ``started``), interrupt the kernel; the
    task as polled once it no longer reads ``working``."""
    deadline = time.monotonic() + within_s
    while not started.exists():
        assert time.monotonic() < deadline, client.ask(get=handle["taskId"])
        time.sleep(0.05)
    kernel.manager.interrupt_kernel()
    polled: dict[str, Any] = client.ask(get=handle["taskId"])
    while polled["status"] == "working":
        assert time.monotonic() < deadline, polled
        time.sleep(0.05)
        polled = client.ask(get=handle["taskId"])
    return polled


def test_an_interrupt_while_a_tasks_own_code_runs_cancels_the_task(
    kernel: Kernel, served: Served, tasks_client: Any, tmp_path: Path
) -> None:
    """The kernel's Stop while a ``run_python`` task's code runs on the main thread (between
    cells) ends that code, and the task reads ``cancelled`` — not ``completed`` with an error
    result, which an outside agent would take for its code's own failure."""
    kernel.execute("%agent_tools enable run_python\n%agent_tools policy run_python allow")
    client = tasks_client(served.url, served.token)
    started = tmp_path / "started"
    code = (
        f"import time, pathlib\npathlib.Path({str(started)!r}).write_text('')\n"
        "for _ in range(1200):\n    time.sleep(0.05)\nfinished_uninterrupted = True"
    )
    try:
        handle = client.ask(call="run_python", arguments={"code": code})
        assert handle["shape"] == "task", handle
        # the task's own code runs on the main thread between cells
        polled = interrupt_once_started(kernel, client, handle, started, 10)
        assert polled["status"] == "cancelled", polled
        assert "interrupted" in polled["statusMessage"], polled
        _reply, printed = kernel.execute("print('finished_uninterrupted' in globals())")
        assert printed.strip() == "False"
    finally:
        kernel.execute("%agent_tools policy run_python ask\n%agent_tools disable run_python")


def test_an_interrupt_while_a_tasks_code_runs_in_an_agent_cells_pump_cancels_the_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tasks_client: Any
) -> None:
    """While a ``%%agent`` cell streams, its pump runs a served ``run_python`` task's code on
    the main thread. The kernel's Stop then ends that code (and the cell's turn); the task reads
    ``cancelled`` — not ``completed`` with an error result — and the next cell runs."""
    from fake_anthropic import FakeAnthropic, Reply
    from notebook_fake_server import serve

    fake = FakeAnthropic()
    fake.add(Reply([{"type": "text", "text": "word " * 200}], chunk=5, gate=_SlowGate()))  # type: ignore[arg-type]
    started = tmp_path / "started"
    code = (
        f"import time, pathlib\npathlib.Path({str(started)!r}).write_text('')\n"
        "for _ in range(1200):\n    time.sleep(0.05)\nfinished_uninterrupted = True"
    )
    with serve(fake) as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
        kernel = Kernel(tmp_path)
        try:
            kernel.execute(
                "%load_ext jupyter_agent\n"
                "%agent_tools enable run_python\n%agent_tools policy run_python allow"
            )
            served = start_serving(kernel)
            client = tasks_client(served.url, served.token)
            cell_id = kernel.client.execute("%%agent\nTell me a story", allow_stdin=True)
            kernel.wait_for(
                lambda m: (
                    m["parent_header"].get("msg_id") == cell_id
                    and is_answer(m["content"].get("metadata"))  # the answer is streaming
                )
            )
            handle = client.ask(call="run_python", arguments={"code": code})
            assert handle["shape"] == "task", handle
            # the pump runs the task's code on the main thread
            polled = interrupt_once_started(kernel, client, handle, started, 30)
            assert polled["status"] == "cancelled", polled
            assert "interrupted" in polled["statusMessage"], polled
            kernel.wait_for(
                lambda m: (
                    m["parent_header"].get("msg_id") == cell_id
                    and m["msg_type"] == "status"
                    and m["content"]["execution_state"] == "idle"
                ),
                timeout=60,
            )
            reply, printed = kernel.execute("print('finished_uninterrupted' in globals(), 6 * 7)")
            assert reply["status"] == "ok", printed
            assert printed.strip() == "False 42"
            again = client.ask(call="run_python", arguments={"code": "6 * 7"})
            polled = client.ask(get=again["taskId"])
            deadline = time.monotonic() + 30
            while polled["status"] == "working":
                assert time.monotonic() < deadline, polled
                time.sleep(0.05)
                polled = client.ask(get=again["taskId"])
            assert polled["status"] == "completed", polled
            assert "42" in polled["result"]["content"][0]["text"]
        finally:
            kernel.close()


def test_a_queued_task_never_runs_after_an_interrupt_even_when_the_server_is_slow_to_hear(
    tmp_path: Path, tasks_client: Any
) -> None:
    """A ``run_python`` task queued behind a running cell, and the kernel interrupted. The
    server's loop is held up by another call just then (a user's tool that blocks it), so the
    cancellation reaches the task only after the kernel is free again: the code must still never
    run — the interrupt, not the order in which two threads wake, decides. (It ran, and the task
    read ``cancelled`` all the same, when the main thread got to the queued work first.)"""
    hogging = tmp_path / "hogging"
    kernel = Kernel(tmp_path)
    try:
        kernel.execute(
            "%load_ext jupyter_agent\n"
            "%agent_tools enable run_python\n%agent_tools policy run_python allow\n"
            "import time as _time, pathlib as _pathlib\n"
            "from jupyter_agent import tool\n"
            "from jupyter_agent.notebook.front.extension import get_magics\n"
            "@tool\nasync def hog() -> str:\n"
            '    """Blocks its event loop for three seconds."""\n'
            f"    _pathlib.Path({str(hogging)!r}).write_text('')\n"
            "    _time.sleep(3)\n    return 'done'\n"
            "get_magics(get_ipython()).agent.add_tool(hog)"
        )
        served = start_serving(kernel)
        client = tasks_client(served.url, served.token)
        busy_id = kernel.client.execute("import time\ntime.sleep(30)")
        kernel.wait_for(
            lambda m: (
                m["parent_header"].get("msg_id") == busy_id and m["msg_type"] == "execute_input"
            )
        )
        queued = client.ask(call="run_python", arguments={"code": "ran_after_interrupt = True"})
        assert queued["shape"] == "task", queued
        polled = client.ask(get=queued["taskId"])
        deadline = time.monotonic() + 30
        while "kernel busy, queued" not in polled.get("statusMessage", ""):
            assert time.monotonic() < deadline, polled
            polled = client.ask(get=queued["taskId"])
        hogged: dict[str, Any] = {}
        hog = threading.Thread(target=lambda: hogged.update(result=call(served, "hog", {})))
        hog.start()
        while not hogging.exists():  # the server's loop is blocked now
            assert time.monotonic() < deadline
            time.sleep(0.02)
        kernel.manager.interrupt_kernel()
        kernel.wait_for(
            lambda m: (
                m["parent_header"].get("msg_id") == busy_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
            )
        )
        hog.join(30)
        polled = client.ask(get=queued["taskId"])
        while polled["status"] == "working":
            assert time.monotonic() < deadline, polled
            time.sleep(0.05)
            polled = client.ask(get=queued["taskId"])
        _reply, printed = kernel.execute("print('ran_after_interrupt' in globals())")
        assert printed.strip() == "False", "the queued code ran after the interrupt"
        assert polled["status"] == "cancelled", polled
        assert "interrupted" in polled["statusMessage"], polled
    finally:
        kernel.close()
