"""The MCP server behind ``%agent serve``: the session's tools over streamable HTTP, on loopback.

Other agents (Claude Code, Codex, any MCP client) reach the live kernel through it. The server
is the official ``mcp`` SDK's low-level ``Server`` and its streamable-HTTP session manager, run by
uvicorn as a task on the session's background loop — the loop where the tools already run for
``%%agent`` cells — so the kernel's main thread is never blocked by it. uvicorn parses HTTP with
``httptools`` (the ``[mcp]`` extra installs it) when it can: about 0.2 ms less a call than h11.

What it lets in, checked before the SDK sees a request (``LoopbackGuard``):

- it listens on 127.0.0.1 (and ::1 when the machine has it), never beyond loopback;
- the ``Host`` header must name a loopback address with the server's port (421 otherwise) and an
  ``Origin``, when a browser sends one, must be that same origin (403): a web page that rebinds
  its DNS name to 127.0.0.1 cannot drive the kernel;
- every request carries ``Authorization: Bearer TOKEN``, a random token made for this server
  (401 otherwise, compared in constant time).

Before that, each connection passes ``serve_connections.ConnectionGate``: only the kernel's own
user (Linux), a bounded number of connections, a read deadline for each request.

Each ``tools/call`` goes through the toolbox's policy gate exactly as the session's own agent's
calls do (``allow`` runs, ``deny`` refuses, ``ask`` waits for the approval handler; no handler:
refused), then through ``tool_round.invoke`` (the tool timeout and the result cap). The call is
judged for its client (``approvals.asker``: its MCP session): an "allow for this session" holds
for that client only, never for the notebook's own agent, and the agent's never for it. At most
``MAX_WAITING_PROMPTS`` outside calls wait for the user at once; one more is refused at once.
What happens is told to ``on_event`` as ``ToolCallStarted``/``ToolCallFinished``, the events the
notebook's views already draw. A tool that needs the kernel's main thread can say the kernel
is busy with ``report_progress`` (an MCP progress notification to the caller).

A tool's own progress (``tools/progress.py``: ``run_cell``'s elapsed seconds and last output
line, from ``cell_run``'s ticker, or an MCP tool's notifications) reaches the caller the same
way, as one line (``progress_line``) — a progress notification for a plain client, the task's
``statusMessage`` for one that speaks tasks (``tasks.py``). ``ProgressRelay`` takes it from
whichever thread reports and sends the latest line only: a tool that reports faster than the
caller reads never queues a backlog.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import hmac
import itertools
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from ...agent.gate import Ask, Refuse
from ...agent.tool_round import invoke
from ...agent.toolbox import Toolbox
from ...approvals import ApprovalHandler, ApprovalRequest, asker
from ...events import Refusal, ToolCallFinished, ToolCallStarted
from ...tools.base import ToolResult, capabilities_of
from ...tools.progress import progress_amount, reporting, with_amount
from ...tools.redact import redact
from .serve_connections import READ_TIMEOUT_S, ConnectionGate
from .tasks import ServeTasks, speaks_tasks

if TYPE_CHECKING:
    from mcp import types

#: The path the server answers on (what clients are given).
MCP_PATH = "/mcp"
#: Host names a loopback client may put in ``Host`` (with the server's port).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Seconds uvicorn waits for open streams when the server stops.
SHUTDOWN_GRACE_S = 1
#: Outside calls that may wait for the user's approval at once (shown one at a time).
MAX_WAITING_PROMPTS = 8

#: What a call whose policy is ``ask`` tells its caller while the user has not answered.
APPROVAL_NOTE = "waiting for the user's approval in the notebook"

#: How a tool that waits for the kernel tells the MCP caller (set around each call).
_progress: contextvars.ContextVar[Callable[[str], Awaitable[None]] | None] = contextvars.ContextVar(
    "jupyter_agent_serve_progress", default=None
)


async def report_progress(message: str) -> None:
    """Send ``message`` as an MCP progress notification to the caller of the running tool
    (nothing outside a served call, or when the caller asked for no progress)."""
    report = _progress.get()
    if report is not None:
        with contextlib.suppress(Exception):  # a client that went away: the call goes on
            await report(message)


#: Characters of a tool's progress line passed on to the caller.
MAX_PROGRESS_LINE = 500


def progress_line(progress: float, total: float | None, message: str | None) -> str:
    """A tool's progress as the one line its caller reads: ``3 s elapsed; last output: …``
    (``run_cell``), ``3/10 copying files`` (an MCP tool); one line, printable, capped, its
    secrets redacted."""
    amount = progress_amount(progress, total)
    text = with_amount(amount, message.lstrip(), " ") if message else amount
    text = "".join(ch if ch.isprintable() else " " for ch in text[: MAX_PROGRESS_LINE * 2])
    # the caller is an outside agent: a secret the cell printed is redacted as in its result
    return redact(" ".join(text.split()))[0][:MAX_PROGRESS_LINE]


class ProgressRelay:
    """A served call's progress callback (``tools/progress.ProgressCallback``): each report,
    from the loop or from another thread (``cell_run``'s ticker), becomes a line sent to the
    caller with ``report`` on the call's loop — the latest one only, one send at a time."""

    def __init__(self, report: Callable[[str], Awaitable[None]]) -> None:
        self._report = report
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._line: str | None = None
        self._sending: asyncio.Task[None] | None = None

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        line = progress_line(progress, total, message)
        if threading.get_ident() == self._loop_thread:
            self._note(line)
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
            self._loop.call_soon_threadsafe(self._note, line)

    def _note(self, line: str) -> None:
        self._line = line
        if self._sending is None:
            self._sending = self._loop.create_task(self._send())

    async def _send(self) -> None:
        try:
            while self._line is not None:
                line, self._line = self._line, None
                with contextlib.suppress(Exception):  # a client that went away: the call goes on
                    await self._report(line)
        finally:
            self._sending = None


class LoopbackGuard:
    """ASGI middleware: loopback ``Host``, same-origin ``Origin``, the bearer token; it tells
    the connection gate when each request has been read and when its answer ended."""

    def __init__(
        self, app: Any, token: str, port: int, connections: ConnectionGate | None = None
    ) -> None:
        self.app = app
        self.connections = connections
        self._expected = f"Bearer {token}".encode()
        self.port = port
        self.allowed_hosts = frozenset(f"{host}:{port}" for host in LOOPBACK_HOSTS)
        self.allowed_origins = frozenset(f"http://{host}" for host in self.allowed_hosts)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager starts and stops
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key.lower(), value)
        connection = self.connections.find(scope.get("client")) if self.connections else None
        if connection is not None:
            receive, send = _watched(connection, headers, receive, send)
        refusal = self.refusal(headers)
        if refusal is not None:
            status, text = refusal
            extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
                }
            )
            await send({"type": "http.response.body", "body": text.encode()})
            return
        await self.app(scope, receive, send)

    def refusal(self, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        """``(status, reason)`` for a request that must not reach the server, else ``None``."""
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in self.allowed_hosts:
            return 421, "Refused: this server answers only loopback addresses with its port.\n"
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1").lower() not in self.allowed_origins:
            return 403, "Refused: requests from other origins are not allowed.\n"
        given = headers.get(b"authorization", b"")
        if not hmac.compare_digest(given, self._expected):
            return 401, "Refused: the bearer token is missing or wrong.\n"
        return None


def _watched(connection: Any, headers: dict[bytes, bytes], receive: Any, send: Any) -> Any:
    """``receive`` and ``send`` that tell ``connection`` when the request's body has arrived
    (at once for a request without one) and when the answer ended."""
    length = headers.get(b"content-length", b"0").strip()
    if b"transfer-encoding" not in headers and (not length.isdigit() or int(length) == 0):
        connection.reading_done()

    async def watched_receive() -> Any:
        message = await receive()
        if message.get("type") == "http.request" and not message.get("more_body", False):
            connection.reading_done()
        return message

    async def watched_send(message: Any) -> None:
        await send(message)
        if message.get("type") == "http.response.body" and not message.get("more_body", False):
            connection.answer_done()

    return watched_receive, watched_send


def _client_of(ctx: Any) -> str:
    """Which outside client makes a call: its MCP session (the ``mcp-session-id`` the server
    gave it), else the connection's session object."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return f"mcp-session:{session_id or id(ctx.session)}"


def loopback_sockets(port: int) -> list[socket.socket]:
    """Listening sockets on 127.0.0.1:``port`` (0: any free port) and, when possible, on ::1
    with the same port.

    The sockets name ``IPPROTO_TCP``: asyncio sets ``TCP_NODELAY`` only on accepted sockets
    whose protocol says TCP, and without it a reply written in two parts (headers, then body)
    waited for the client's delayed ACK — about 40 ms a request on a kept-alive connection."""
    v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        v4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        v4.bind(("127.0.0.1", port))
        v4.listen(64)
    except OSError:
        v4.close()
        raise
    v4.setblocking(False)
    sockets = [v4]
    chosen = v4.getsockname()[1]
    if socket.has_ipv6:
        v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            v6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            v6.bind(("::1", chosen))
            v6.listen(64)
            v6.setblocking(False)
            sockets.append(v6)
        except OSError:  # no IPv6 loopback here, or its port is taken: IPv4 alone
            v6.close()
    return sockets


class ToolServer:
    """The toolbox's enabled tools (or ``tools`` of them) as an MCP server over HTTP."""

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        token: str,
        tools: Iterable[str] | None = None,
        max_result_chars: int | None = None,
        approval_handler: ApprovalHandler | None = None,
        on_event: Callable[[object], None] | None = None,
        name: str = "jupyter-agent",
        read_timeout_s: float = READ_TIMEOUT_S,
        task_after: float = 5.0,
    ) -> None:
        self.toolbox = toolbox
        #: Long calls as MCP tasks for clients that speak them (``tasks.py``).
        self.tasks = ServeTasks(task_after)
        #: Who may connect, how many, how long a request may take (``serve_connections``).
        self.connections = ConnectionGate(read_timeout_s=read_timeout_s)
        self.token = token
        self.only: tuple[str, ...] | None = tuple(tools) if tools is not None else None
        self.max_result_chars = max_result_chars
        self.approval_handler = approval_handler
        self.on_event = on_event
        self.name = name
        self.port = 0
        self.addresses: list[str] = []
        #: Calls answered (any outcome), for the status line.
        self.calls = 0
        self._ids = itertools.count(1)
        self._one_question_at_a_time: asyncio.Lock | None = None
        #: Calls waiting for the user's approval now (the one asked, and those queued).
        self._waiting = 0
        self._uvicorn: Any = None
        self._task: asyncio.Task[None] | None = None

    # -- the tools ---------------------------------------------------------------------------

    def offered(self) -> list[str]:
        """The names offered now: enabled in the registry (and named by ``tools``)."""
        registry = self.toolbox.registry
        names = [n for n in registry.get_tool_names() if registry.is_tool_enabled(n)]
        if self.only is not None:
            names = [n for n in names if n in self.only]
        return names

    def list_tools(self) -> list[types.Tool]:
        from mcp import types

        registry = self.toolbox.registry
        listed = []
        for name in self.offered():
            tool = registry.get_tool(name)
            if tool is None:
                continue
            schema = tool.get_schema()
            destructive = capabilities_of(tool).destructive
            listed.append(
                types.Tool(
                    name=name,
                    description=str(schema.get("description", "")),
                    input_schema=dict(schema.get("input_schema") or {"type": "object"}),
                    annotations=types.ToolAnnotations(destructive_hint=destructive),
                )
            )
        return listed

    async def call(
        self,
        name: str,
        arguments: object,
        report: Callable[[str], Awaitable[None]] | None = None,
        client: str = "mcp-client",
    ) -> ToolResult:
        """One call of ``client``, as the session's agent would make it: gate, approval (the
        client's own), timeout, cap."""
        judged_for = asker.set(client)
        try:
            return await self._call(name, arguments, report)
        finally:
            asker.reset(judged_for)

    async def _call(
        self,
        name: str,
        arguments: object,
        report: Callable[[str], Awaitable[None]] | None,
    ) -> ToolResult:
        call_id = f"mcp_{next(self._ids)}"
        shown = dict(arguments) if isinstance(arguments, dict) else {}
        self._tell(ToolCallStarted(call_id, name, shown))
        refusal: Refusal | None = None
        result: ToolResult | None = None
        try:
            if name not in self.offered():
                result = ToolResult(
                    f"Error: {name} is not offered by this server (offered: "
                    f"{', '.join(self.offered()) or 'none'}).",
                    is_error=True,
                )
                refusal = "unavailable"
            else:
                token = _progress.set(report)  # an ``ask`` tells the caller it waits
                try:
                    result, refusal = await self._gate(call_id, name, arguments)
                finally:
                    _progress.reset(token)
            if result is None:
                assert isinstance(arguments, dict)  # the gate refuses anything else
                token = _progress.set(report)
                try:
                    # the tool's own progress (run_cell's elapsed time and last output line)
                    with reporting(ProgressRelay(report)) if report else contextlib.nullcontext():
                        result = await invoke(self.toolbox, name, arguments, self.max_result_chars)
                finally:
                    _progress.reset(token)
        finally:
            self.calls += 1
            if result is None:  # cancelled (the client went away, the server stops)
                self._tell(ToolCallFinished(call_id, name, "interrupted", True, 0.0))
        self._tell(
            ToolCallFinished(
                call_id,
                name,
                result.content,
                result.is_error,
                result.duration_s,
                result.images,
                refusal,
            )
        )
        return result

    async def _gate(
        self, call_id: str, name: str, arguments: object
    ) -> tuple[ToolResult | None, Refusal | None]:
        """``(None, None)`` when the call may run, else its refusal as a result."""
        gate = self.toolbox.gate
        verdict = gate.verdict(name, arguments)
        if isinstance(verdict, Ask):
            if self._waiting >= MAX_WAITING_PROMPTS:
                return ToolResult(
                    f"Error: {name} was not run: {self._waiting} calls from other agents already "
                    "wait for the user's approval in the notebook, the most that may wait at "
                    "once. Try again once the user has answered them.",
                    is_error=True,
                ), "no_approver"
            if self._one_question_at_a_time is None:
                self._one_question_at_a_time = asyncio.Lock()
            assert isinstance(arguments, dict)
            self._waiting += 1
            try:
                await report_progress(APPROVAL_NOTE)
                async with self._one_question_at_a_time:
                    verdict = await gate.decide(
                        self.approval_handler,
                        ApprovalRequest(call_id, name, dict(arguments), verdict.reason),
                    )
            finally:
                self._waiting -= 1
        if isinstance(verdict, Refuse):
            return ToolResult(verdict.reason, is_error=True), verdict.why
        return None, None

    def _tell(self, event: object) -> None:
        if self.on_event is not None:
            self.on_event(event)

    # -- MCP ---------------------------------------------------------------------------------

    def mcp_server(self) -> Any:
        """The SDK's low-level ``Server`` with our ``tools/list`` and ``tools/call``."""
        from mcp import types
        from mcp.server.lowlevel.server import Server

        async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.list_tools())

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            progress = itertools.count(1)

            async def report(message: str) -> None:
                await ctx.session.report_progress(next(progress), None, message)

            arguments, client = params.arguments or {}, _client_of(ctx)
            if speaks_tasks(ctx):  # a task handle for a long call (``tasks.py``)
                return cast(
                    "types.CallToolResult",
                    await self.tasks.call(
                        params.name,
                        lambda report: self.call(params.name, arguments, report, client),
                        to_call_tool_result,
                    ),
                )
            result = await self.call(params.name, arguments, report, client)
            return to_call_tool_result(result)

        server = Server(
            self.name,
            instructions=(
                "Tools of a live Jupyter kernel: its variables, its history, its files. "
                "Calls follow the notebook user's approval policies."
            ),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        self.tasks.install(server)
        return server

    def asgi_app(self, port: int) -> LoopbackGuard:
        from mcp.server.transport_security import TransportSecuritySettings

        hosts = [f"{host}:{port}" for host in LOOPBACK_HOSTS]
        starlette_app = self.mcp_server().streamable_http_app(
            streamable_http_path=MCP_PATH,
            # the SDK's own DNS-rebinding check as well, with the same lists as the guard
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=hosts,
                allowed_origins=[f"http://{host}" for host in hosts],
            ),
        )
        return LoopbackGuard(starlette_app, self.token, port, self.connections)

    # -- running -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self, port: int = 0) -> None:
        """Listen on loopback (``port``; 0: a free one) and serve, in a task of this loop."""
        import uvicorn

        sockets = loopback_sockets(port)
        self.port = sockets[0].getsockname()[1]
        self.addresses = [
            f"{'[::1]' if s.family == socket.AF_INET6 else '127.0.0.1'}:{self.port}"
            for s in sockets
        ]
        config = uvicorn.Config(
            self.asgi_app(self.port),
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
            # no proxy headers: a forwarded-for header must not make a request look local
            proxy_headers=False,
            # every connection passes the gate first (its owner, the caps, read deadlines)
            http=cast(Any, self.connections),
            # no WebSocket: an upgrade would hand the connection to another protocol, out of
            # the gate's sight (its slot never given back), and MCP does not use one
            ws="none",
            # asyncio accepts up to ``backlog`` connections at a time before the gate closes
            # the ones it refuses: a small backlog keeps that burst of descriptors small too
            backlog=self.connections.max_connections,
        )
        server = uvicorn.Server(config)
        self._uvicorn = server
        self._task = asyncio.create_task(self._serve(server, sockets), name="jupyter-agent serve")
        while not server.started:
            if self._task.done():
                await self._task  # its error, if it failed to start
                raise RuntimeError("the MCP server stopped while starting")
            await asyncio.sleep(0.01)

    @staticmethod
    async def _serve(server: Any, sockets: list[socket.socket]) -> None:
        try:
            await server.serve(sockets=sockets)
        finally:
            for sock in sockets:
                sock.close()

    async def stop(self) -> None:
        """Stop listening, end the sessions, close the sockets."""
        server, task = self._uvicorn, self._task
        if server is None or task is None:
            return
        self.tasks.cancel_all("the server stopped")
        server.should_exit = True
        try:
            async with asyncio.timeout(SHUTDOWN_GRACE_S + 4):
                await asyncio.shield(task)
        except (TimeoutError, Exception):
            server.force_exit = True
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def to_call_tool_result(result: ToolResult) -> types.CallToolResult:
    """A ``ToolResult`` as MCP content: its text, then its images — or, for a result whose
    images sit among its text (``ToolResult.parts``: notebook_history), each in its place."""
    from mcp import types

    content: list[Any] = [] if result.parts else [types.TextContent(text=result.content)]
    texts: list[str] = []
    for part in result.parts or result.images:
        if isinstance(part, str):
            texts.append(part)
            continue
        if "\n".join(texts).strip():
            content.append(types.TextContent(text="\n".join(texts)))
        texts = []
        content.append(
            types.ImageContent(
                data=base64.b64encode(part.data).decode("ascii"), mime_type=part.media_type
            )
        )
    if "\n".join(texts).strip():
        content.append(types.TextContent(text="\n".join(texts)))
    return types.CallToolResult(content=content, is_error=result.is_error)
