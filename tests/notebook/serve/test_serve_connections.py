"""``%agent serve`` on a shared host: who may connect, and how many, for how long.

Played over real loopback sockets against a running ``ToolServer``: half-sent requests (a
slowloris) are dropped after the read deadline and never hold more than the cap of connections;
a connection from another local user (a real second user made with ``useradd``, its process
started with ``runuser``) is refused even with the right token, while the server's own user is
served.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jupyter_agent.agent.toolbox import Toolbox
from jupyter_agent.notebook.runtime.bridge import BackgroundLoop
from jupyter_agent.notebook.serve.serve_connections import MAX_CONNECTIONS
from jupyter_agent.notebook.serve.serve_http import ToolServer
from jupyter_agent.tools.context import ToolContext

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

TOKEN = "the-right-token-for-this-test"
BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
ACCEPT = {"Accept": "application/json, text/event-stream"}
#: A user other than the one running the tests (made if missing; loopback only).
OTHER_USER = "jagent-other"


def _serving(tmp_path: Path, **options: float) -> Iterator[ToolServer]:
    background = BackgroundLoop("test-serve-connections")
    served = ToolServer(Toolbox(ToolContext(tmp_path)), token=TOKEN, **options)  # type: ignore[arg-type]
    try:
        background.run(served.start(0), timeout=30)
        yield served
    finally:
        background.run(served.stop(), timeout=15)
        background.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ToolServer]:
    yield from _serving(tmp_path)


def _half_sent(port: int) -> socket.socket:
    """A connection that starts a request and never finishes it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Le".encode())
    return sock


def _closed_by_server(sock: socket.socket, wait: float) -> bool:
    """Whether the server closed ``sock`` (EOF or reset) within ``wait`` seconds."""
    sock.settimeout(wait)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"needs {needed} file descriptors (hard limit {hard})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def _open_connections(port: int) -> int:
    """Established TCP connections to ``port`` on this machine (both ends counted once: the
    server's side), from /proc/net/tcp."""
    local = f":{port:04X}"
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[1].endswith(local) and fields[3] == "01":  # ESTABLISHED
                    count += 1
    return count


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts through /proc/net/tcp")
def test_half_sent_connections_are_capped_and_never_starve_the_server(server: ToolServer) -> None:
    """200 connections that each send half a request: the server holds at most its cap of them
    open (the rest are closed at once), so it never runs out of file descriptors."""
    _raise_fd_limit(1024)
    attackers = [_half_sent(server.port) for _ in range(200)]
    try:
        deadline = time.monotonic() + 5
        while (held := _open_connections(server.port)) > MAX_CONNECTIONS:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert held <= MAX_CONNECTIONS, (
            f"the server holds {held} half-sent connections open ({server.connections.refused})"
        )
    finally:
        for sock in attackers:
            sock.close()


def test_a_half_sent_or_trickled_request_is_dropped_after_the_read_deadline(
    tmp_path: Path,
) -> None:
    """A request head that never ends, and one sent a byte at a time, are both dropped once the
    read deadline passes; a whole request on a fresh connection is then answered."""
    for served in _serving(tmp_path, read_timeout_s=1.5):
        half = _half_sent(served.port)
        trickle = socket.create_connection(("127.0.0.1", served.port), timeout=5)
        # a head that never ends, a byte every 0.1 s: never idle, so only a deadline on the
        # whole head drops it, while the client is still sending (600 bytes stop a hung test)
        head = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nX-Slow: ".encode()
        sent, dropped_trickle = 0, False
        for byte in head + b"x" * 600:
            try:
                trickle.sendall(bytes([byte]))
            except OSError:
                dropped_trickle = True
                break
            sent += 1
            time.sleep(0.1)
        assert dropped_trickle, f"the trickled request lived on ({sent} bytes sent)"
        assert _closed_by_server(half, 5), "the half-sent request was never dropped"
        response = httpx.post(
            served.url, json=BODY, headers=ACCEPT | {"Authorization": f"Bearer {TOKEN}"}
        )
        assert response.status_code not in (401, 403, 421, 503), response.text
        half.close()
        trickle.close()


def test_a_long_answer_is_not_cut_by_the_read_deadline(tmp_path: Path) -> None:
    """The deadline is for reading a request, not for the answer: a request that arrived whole
    keeps its connection while the server works on it (here: an SSE stream kept open)."""
    for served in _serving(tmp_path, read_timeout_s=1.0):
        headers = ACCEPT | {"Authorization": f"Bearer {TOKEN}"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
        with httpx.Client(timeout=10) as client:
            opened = client.post(served.url, json=init, headers=headers)
            assert opened.status_code == 200, opened.text
            session = opened.headers["mcp-session-id"]
            with client.stream(
                "GET",
                served.url,
                headers={
                    "Accept": "text/event-stream",
                    "Authorization": f"Bearer {TOKEN}",
                    "mcp-session-id": session,
                    "mcp-protocol-version": "2025-06-18",
                },
            ) as stream:
                assert stream.status_code == 200
                time.sleep(2.5)  # well past the read deadline
                assert not stream.is_closed
                pong = client.post(
                    served.url,
                    json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                    headers=headers
                    | {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"},
                )
                assert pong.status_code == 200, pong.text


# -- another local user ------------------------------------------------------------------------

CLIENT = """
import json, socket, sys
port, token = int(sys.argv[1]), sys.argv[2]
body = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "other", "version": "1"}},
}).encode()
request = (
    f"POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nAuthorization: Bearer {token}\\r\\n"
    "Accept: application/json, text/event-stream\\r\\nContent-Type: application/json\\r\\n"
    f"Content-Length: {len(body)}\\r\\nConnection: close\\r\\n\\r\\n"
).encode() + body
sock = socket.create_connection(("127.0.0.1", port), timeout=10)
answer = b""
try:
    sock.sendall(request)
    while chunk := sock.recv(65536):
        answer += chunk
except OSError as exc:
    answer += f"(connection error: {exc})".encode()
print(json.dumps(answer.decode("latin-1")))
"""


def _other_user() -> str:
    if os.geteuid() != 0 or shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("needs root with useradd and runuser to play a second local user")
    known = subprocess.run(["id", "-u", OTHER_USER], capture_output=True, text=True)
    if known.returncode != 0:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
            check=True,
        )
    return OTHER_USER


def _ask_as(user: str | None, port: int, token: str) -> str:
    command = ["/usr/bin/python3", "-c", CLIENT, str(port), token]
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, cwd="/")
    assert done.returncode == 0, done.stderr
    answer: str = json.loads(done.stdout)
    return answer


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the uid check is Linux's")
def test_another_local_user_is_refused_even_with_the_right_token(server: ToolServer) -> None:
    other = _other_user()
    theirs = _ask_as(other, server.port, TOKEN)
    assert " 200 " not in theirs.split("\r\n")[0], theirs
    assert "jsonrpc" not in theirs  # the MCP server never answered them
    assert "another local user" in theirs, theirs
    mine = _ask_as(None, server.port, TOKEN)
    assert mine.startswith("HTTP/1.1 200"), mine
    assert "jsonrpc" in mine


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the uid lookups are Linux's")
@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_both_owner_lookups_name_the_user_of_a_loopback_connection(host: str) -> None:
    """The netlink query and the /proc/net/tcp fallback agree: the client end's uid, and
    ``None`` for a connection that does not exist."""
    from jupyter_agent.notebook.serve.serve_connections import owner_by_netlink, owner_by_table

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as listener:
        try:
            listener.bind((host, 0))
        except OSError:
            pytest.skip(f"no {host} here")
        listener.listen()
        server = listener.getsockname()[:2]
        with socket.create_connection(server) as client:
            accepted, _ = listener.accept()
            with accepted:
                peer = client.getsockname()[:2]
                assert owner_by_netlink(peer, server) == os.geteuid()
                assert owner_by_table(peer, server) == os.geteuid()
                gone = (peer[0], 1 if peer[1] != 1 else 2)
                assert owner_by_netlink(gone, server) is None
                assert owner_by_table(gone, server) is None


ORPHAN_CLIENT = """
import socket, sys
sock = socket.create_connection((sys.argv[1], int(sys.argv[2])))
print(sock.getsockname()[1], flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the uid lookups are Linux's")
@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_a_client_whose_process_is_gone_has_no_known_owner(host: str) -> None:
    """When the client's process exits, its socket is an orphan (FIN_WAIT2) that no process
    holds, and both lookups report uid 0 for it: a kernel running as root would take it for its
    own user's (review S1; another user sends a whole request and exits). Neither lookup may
    name an owner then (inode 0), so the gate refuses it as "owner unknown"."""
    from jupyter_agent.notebook.serve.serve_connections import (
        owner_by_netlink,
        owner_by_table,
        socket_owner,
    )

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as listener:
        try:
            listener.bind((host, 0))
        except OSError:
            pytest.skip(f"no {host} here")
        listener.listen()
        server = listener.getsockname()[:2]
        command = [sys.executable, "-c", ORPHAN_CLIENT, host, str(server[1])]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        accepted, address = listener.accept()
        with accepted:
            peer = (str(address[0]), int(address[1]))
            assert peer[1] == int(done.stdout)
            assert owner_by_netlink(peer, server) is None
            assert owner_by_table(peer, server) is None
            assert socket_owner(peer, server) is None  # what the gate asks: refused


def test_websocket_upgrades_give_their_slots_back(tmp_path: Path) -> None:
    """With ``websockets`` importable (common where Jupyter is), uvicorn handed an upgraded
    connection to its WebSocket protocol and the gate never heard it close: more upgrades than
    the cap (no token needed) and serve answered everyone 503 (review S2). The server speaks no
    WebSocket, and every closed connection gives its slot back."""
    pytest.importorskip("websockets")  # the dev environment has it (pyproject's dev extra)
    for served in _serving(tmp_path):
        upgrade = (
            f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        for _ in range(MAX_CONNECTIONS + 6):
            with socket.create_connection(("127.0.0.1", served.port), timeout=2) as sock:
                sock.sendall(upgrade)
                with contextlib.suppress(OSError):
                    sock.recv(200)
        deadline = time.monotonic() + 5
        while served.connections.open_connections and time.monotonic() < deadline:
            time.sleep(0.05)
        assert served.connections.open_connections == 0
        answer = httpx.post(
            f"http://127.0.0.1:{served.port}/mcp",
            json=BODY,
            headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}"},
            timeout=10,
        )
        # served by the MCP app (which wants a session first), not refused by the gate
        assert answer.status_code != 503 and "jsonrpc" in answer.text, answer.text
