"""Who may hold a connection to ``%agent serve``, how many, and for how long.

The server listens on loopback, but loopback is shared by every process of every user on the
machine (a JupyterHub host, a lab server). Without limits, 700 half-sent unauthenticated
connections held the kernel's file descriptors until a one-line cell could no longer finish.
So every accepted connection passes this gate before uvicorn's HTTP protocol sees a byte:

- **Only the kernel's own user.** On Linux the connection is mapped to the user that owns the
  client's socket, as identd does (RFC 1413): one exact ``sock_diag`` netlink query (what ``ss``
  uses; ~15 µs), else ``/proc/net/tcp`` and ``/proc/net/tcp6`` (which the kernel writes out
  whole: ~25 ms on a host with a thousand sockets). A connection from any other user is answered
  403 and closed, whatever token it would send. One whose owner cannot be found is refused too,
  and so is one no process holds any more (its inode is 0: the client sent its request and
  exited; the kernel then reports uid 0 for the socket, which a root kernel would take as its
  own).
  Elsewhere (macOS, Windows) there is no such lookup: the token alone stands between other local
  users and the kernel.
- **Bounded.** At most ``MAX_CONNECTIONS`` connections are open at once, and at most
  ``MAX_CONNECTIONS_PER_CLIENT`` from one client (its user and address); one more is answered 503
  and closed at once, so its descriptor is given back.
- **Read deadlines.** A request must arrive whole — head and body — within ``read_timeout_s`` of
  the connection opening or of the previous answer ending; a slow or half-sent one is dropped
  (408). The deadline does not run while the server answers: a call that waits for the user's
  approval, or an SSE stream, keeps its connection.

The gate wraps uvicorn's protocol (``config.http``); ``LoopbackGuard`` tells it, through
``reading_done`` and ``answer_done``, when a request has been read and when its answer ended.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import sys
from collections import Counter
from typing import Any

#: Connections open at once, in total and from one client (its user and address).
MAX_CONNECTIONS = 64
MAX_CONNECTIONS_PER_CLIENT = 16
#: Seconds a request may take to arrive whole (head and body).
READ_TIMEOUT_S = 10.0

OTHER_USER = (
    "Refused: this server serves only the processes of the user who started it; this "
    "connection came from another local user.\n"
)
UNKNOWN_OWNER = (
    "Refused: the user who opened this connection could not be found (/proc/net/tcp), so it is "
    "not served.\n"
)


def _response(status: int, reason: str, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


def _proc_address(host: str, port: int) -> str:
    """``host:port`` as ``/proc/net/tcp{,6}`` writes it: the address's 32-bit words in the
    machine's byte order, in hex, then the port in hex."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    packed = socket.inet_pton(family, host.split("%", 1)[0])
    words = struct.unpack(f"={len(packed) // 4}I", packed)
    return "".join(f"{word:08X}" for word in words) + f":{port:04X}"


#: ``NETLINK_SOCK_DIAG`` and its one request: one socket by its addresses (``linux/sock_diag.h``).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
#: Where ``idiag_uid`` sits in the answer: the netlink header (16 bytes), then ``inet_diag_msg``'s
#: family, state, timer, retrans (4), its socket id (48), expires, rqueue, wqueue (12); then
#: ``idiag_inode``.
_UID_OFFSET = 16 + 4 + 48 + 12


def owner_by_netlink(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
    """Ask the kernel (``sock_diag``) for the socket whose local end is ``peer`` and remote end
    ``local``: its uid, or ``None`` when there is none. ``OSError`` when netlink is unavailable."""
    family = socket.AF_INET6 if ":" in peer[0] else socket.AF_INET
    source = socket.inet_pton(family, peer[0].split("%", 1)[0]).ljust(16, b"\0")
    target = socket.inet_pton(family, local[0].split("%", 1)[0]).ljust(16, b"\0")
    no_cookie = 0xFFFFFFFF
    socket_id = (
        struct.pack("!HH", peer[1], local[1])
        + source
        + target
        + struct.pack("=III", 0, no_cookie, no_cookie)
    )
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + socket_id
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as link:
        link.settimeout(1)
        link.sendto(header + request, (0, 0))
        answer = link.recv(8192)
    if len(answer) < _UID_OFFSET + 4:
        return None
    _length, kind = struct.unpack_from("=IH", answer)
    if kind != _SOCK_DIAG_BY_FAMILY:  # NLMSG_ERROR: no such socket
        return None
    uid: int
    inode: int
    uid, inode = struct.unpack_from("=II", answer, _UID_OFFSET)
    # no inode: no process holds the socket any more (its owner exited: an orphan, or one in
    # TIME_WAIT), and the kernel reports uid 0 for it, which a root kernel would take as its own
    return uid if inode else None


def socket_owner(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
    """The uid that owns the client end of the loopback connection ``peer`` → ``local`` (Linux),
    or ``None`` when no such socket is found."""
    try:
        return owner_by_netlink(peer, local)
    except (OSError, AttributeError, ValueError):  # no netlink here (a sandbox): the tables
        return owner_by_table(peer, local)


def owner_by_table(peer: tuple[str, int], local: tuple[str, int]) -> int | None:
    """``socket_owner`` through the line of ``/proc/net/tcp{,6}`` whose local address is
    ``peer`` and remote ``local``."""
    table = "/proc/net/tcp6" if ":" in peer[0] else "/proc/net/tcp"
    client, server = _proc_address(*peer), _proc_address(*local)
    try:
        with open(table, encoding="ascii") as lines:
            next(lines, None)
            for line in lines:
                fields = line.split()
                if len(fields) > 9 and fields[1] == client and fields[2] == server:
                    # inode 0: no process holds it (an orphan, whose uid reads 0): unknown
                    return int(fields[7]) if int(fields[9]) else None
    except (OSError, ValueError):
        return None
    return None


class ConnectionGate:
    """Admits connections (owner, caps) and drops slow requests; uvicorn's ``config.http``."""

    def __init__(
        self,
        *,
        read_timeout_s: float = READ_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        max_per_client: int = MAX_CONNECTIONS_PER_CLIENT,
        own_uid_only: bool | None = None,
    ) -> None:
        self.read_timeout_s = read_timeout_s
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        #: Map each connection to its owner and serve only this process's user (Linux).
        linux = sys.platform.startswith("linux")
        self.own_uid_only = linux if own_uid_only is None else own_uid_only
        self.uid = os.geteuid() if hasattr(os, "geteuid") else None
        self._open: dict[tuple[str, int], GuardedConnection] = {}
        self._per_client: Counter[object] = Counter()
        #: Connections refused so far, by why (for the status line and the tests).
        self.refused: Counter[str] = Counter()

    # uvicorn calls this for each accepted connection (``Config.http``)
    def __call__(self, **options: Any) -> GuardedConnection:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        return GuardedConnection(self, AutoHTTPProtocol(**options))

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def admit(self, connection: GuardedConnection) -> bytes | None:
        """Take ``connection`` in, or the response that refuses it."""
        peer, local = connection.peer, connection.local
        owner: int | None = None
        if self.own_uid_only:
            owner = socket_owner(peer, local)
            if owner is None:
                self.refused["unknown owner"] += 1
                return _response(403, "Forbidden", UNKNOWN_OWNER)
            if owner != self.uid:
                self.refused["other user"] += 1
                return _response(403, "Forbidden", OTHER_USER)
        client = (owner, peer[0])
        if len(self._open) >= self.max_connections:
            self.refused["too many"] += 1
            return _response(
                503,
                "Service Unavailable",
                f"Refused: the server holds {len(self._open)} connections, its limit; try again "
                "later.\n",
            )
        if self._per_client[client] >= self.max_per_client:
            self.refused["too many from one client"] += 1
            return _response(
                503,
                "Service Unavailable",
                f"Refused: {self._per_client[client]} connections from this client are open, "
                "its limit; close some or try again later.\n",
            )
        connection.client = client
        self._per_client[client] += 1
        self._open[peer] = connection
        return None

    def release(self, connection: GuardedConnection) -> None:
        if self._open.get(connection.peer) is connection:
            del self._open[connection.peer]
            self._per_client[connection.client] -= 1
            if self._per_client[connection.client] <= 0:
                del self._per_client[connection.client]

    def find(self, client: object) -> GuardedConnection | None:
        """The open connection of an ASGI scope's ``client`` (host, port)."""
        if not isinstance(client, (tuple, list)) or len(client) < 2:
            return None
        return self._open.get((str(client[0]), int(client[1])))


class GuardedConnection(asyncio.Protocol):
    """One connection: admitted by the gate, then handed to uvicorn's protocol, with a deadline
    for reading each request."""

    def __init__(self, gate: ConnectionGate, inner: Any) -> None:
        self.gate = gate
        self.inner = inner
        self.peer: tuple[str, int] = ("", 0)
        self.local: tuple[str, int] = ("", 0)
        self.client: object = None
        self.admitted = False
        self._transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername") or ("", 0)
        local = transport.get_extra_info("sockname") or ("", 0)
        self.peer = (str(peer[0]), int(peer[1]))
        self.local = (str(local[0]), int(local[1]))
        refusal = self.gate.admit(self)
        if refusal is not None:
            transport.write(refusal)
            transport.abort()  # the descriptor goes back now, whatever the client does
            return
        self.admitted = True
        self.inner.connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.admitted:
            self.inner.data_received(data)
            transport = self._transport
            if transport is not None and transport.get_protocol() is not self:
                self._handed_over(transport)

    def _handed_over(self, transport: asyncio.Transport) -> None:
        """uvicorn gave the transport to another protocol (a WebSocket upgrade, should one be
        configured): this one never hears it close, so its slot is given back now, and the
        connection is closed (the server speaks no WebSocket)."""
        self._disarm()
        self.admitted = False
        self.gate.release(self)
        self.gate.refused["handed over"] += 1
        transport.abort()

    def eof_received(self) -> bool | None:
        if self.admitted:
            result: bool | None = self.inner.eof_received()
            return result
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.admitted:
            self.admitted = False
            self.gate.release(self)
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.inner.resume_writing()

    # -- the read deadline (LoopbackGuard says when a request was read and answered) ----------

    def reading_done(self) -> None:
        """The request arrived whole: no deadline while it is answered."""
        self._disarm()

    def answer_done(self) -> None:
        """The answer ended: the next request on this connection must arrive in time."""
        if self.admitted:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(self.gate.read_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        self.gate.refused["too slow"] += 1
        transport.write(
            _response(
                408,
                "Request Timeout",
                "Refused: the request did not arrive whole within "
                f"{self.gate.read_timeout_s:g} s.\n",
            )
        )
        transport.abort()
