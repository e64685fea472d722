"""One MCP server's session, owned by one long-lived task on the agent's event loop.

The SDK's transports and its ``Client`` are anyio context managers whose cancel scopes must be
left by the task that entered them. So a connection does not enter them in whatever task happens
to add the server: it starts an *owner task* that opens the transport and the client, lists the
tools, reports ready, and then waits for ``stop``; closing sets that event and awaits the owner,
which leaves the contexts itself (the SDK then ends the server process, its whole group). Tool
calls from other tasks only send requests over the session's streams, which any task may do.

The client negotiates the protocol revision (``mode="auto"``): the 2026-07-28 protocol when the
server speaks it, else the ``initialize`` handshake of the revisions before it.

A server that dies mid-call is marked down; the next call restarts it (once per call) before it
runs. Every failure is an ``MCPServerError`` or ``ToolFailure`` whose message names the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import MCPServerError
from ..tools.base import ToolFailure
from ..tools.guard.netguard import FetchTarget, IPAddress, NetworkPolicy, parse_target
from ..tools.one_line import one_line
from ..tools.progress import ProgressCallback
from . import process
from .client_features import ClientHooks, session_callbacks
from .config import MCPServerConfig
from .schema import MAX_SCHEMA_BYTES_PER_SERVER, MAX_TOOLS_PER_SERVER, schema_bytes

if TYPE_CHECKING:
    from mcp import Client, ClientSession
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.types import CallToolResult, ReadResourceResult, Tool

T = TypeVar("T")

#: Seconds a server may take to start and answer ``initialize`` and ``tools/list``: the entry's
#: call timeout, but at least ``STARTUP_FLOOR_S`` (a Python server needs a second or two just to
#: import, more on a busy machine: a short call timeout must not fail the start) and at most
#: ``STARTUP_TIMEOUT_S``.
STARTUP_TIMEOUT_S = 60.0
STARTUP_FLOOR_S = 5.0
#: Seconds ``close`` waits for the owner task (the SDK kills a stuck server within ~4 s).
CLOSE_TIMEOUT_S = 15.0


async def _no_output_check(name: str, result: CallToolResult) -> None:
    """In place of ``ClientSession.validate_tool_result`` (see ``ServerConnection._own``)."""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    message = one_line(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class ServerConnection:
    """The live session with one server, and what it said about itself."""

    def __init__(
        self,
        config: MCPServerConfig,
        *,
        startup_timeout: float | None = None,
        hooks: ClientHooks | None = None,
        roots: Sequence[Path] = (),
    ) -> None:
        self.config = config
        self.hooks = hooks if hooks is not None else ClientHooks()
        #: The folders offered as MCP roots (absolute): none unless the entry named some.
        self.roots = tuple(roots)
        #: Called after the server said its tools changed and they were listed again.
        self.on_tools_changed: Callable[[], None] | None = None
        self._refreshing: asyncio.Task[None] | None = None
        #: The URL is the user's choice: any address, but only the one checked (``pinned.py``).
        self.network = NetworkPolicy(True)
        self._pinned: tuple[FetchTarget, IPAddress] | None = None
        #: Seconds the start may take (``start_timeout``), when the agent bounds it.
        self.startup_timeout = startup_timeout
        self.tools: list[Tool] = []
        self.instructions: str = ""
        self.server_name: str = ""
        self.stderr: process.StderrTail | None = None
        self.pid: int | None = None
        self.restarts = 0
        #: "starting", "running", "down: …", "stopped".
        self.status = "stopped"
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        #: The loop the session lives on; calls from another loop are handed over to it.
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def start_timeout(self) -> float:
        """Seconds to start and list the tools: the entry's timeout with a floor, the agent's cap.

        A Python server needs a second or two just to import, so a short per-call ``timeout`` in
        the entry does not shorten the start below ``STARTUP_FLOOR_S``; the agent's
        ``tool_timeout`` (``startup_timeout``) bounds it like every call.
        """
        startup = min(STARTUP_TIMEOUT_S, max(STARTUP_FLOOR_S, self.config.timeout))
        if self.startup_timeout is not None:
            startup = min(startup, self.startup_timeout)
        return startup

    @property
    def running(self) -> bool:
        return self._client is not None and self.status == "running"

    # -- life ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server and list its tools; ``MCPServerError`` (one line) if it cannot."""
        if self.config.url is not None:
            await self._check_url(self.config.url)
        else:
            import mcp  # noqa: F401  (a clear ImportError before anything is spawned)
        self._loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = self._loop.create_future()
        self._stop = asyncio.Event()
        self.status = "starting"
        self._owner = asyncio.create_task(self._own(ready, self._stop), name=f"mcp {self.name}")
        try:
            await ready
        except BaseException as exc:
            await self._join_owner()
            self.status = f"down: failed to start ({_describe(exc)})"
            if isinstance(exc, MCPServerError | asyncio.CancelledError | KeyboardInterrupt):
                raise
            raise MCPServerError(self._start_failure(exc)) from None

    async def close(self) -> None:
        """Stop the server (from the owner task, as the SDK needs); safe to call twice."""
        if self._stop is not None:
            self._stop.set()
        await self._join_owner()
        self.status = "stopped"

    async def restart(self) -> None:
        await self.close()
        self.restarts += 1
        await self.start()

    async def _join_owner(self) -> None:
        owner, self._owner = self._owner, None
        if owner is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(owner), CLOSE_TIMEOUT_S)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except BaseException:
            pass  # the owner's failure was reported through ``ready``
        finally:
            self._forget_process()

    def _forget_process(self) -> None:
        self._client = None
        if self.pid is not None:
            # the SDK has stopped the group by now; this is for the exit that skipped it
            process.untrack(self.pid)
            self.pid = None
        if self.stderr is not None:
            self.stderr.close()

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from mcp import Client

        try:
            async with AsyncExitStack() as stack:
                # mode="auto": the SDK asks a server for the 2026-07-28 protocol first
                # (server/discover) and falls back to the initialize handshake of the earlier
                # revisions, so both kinds of server connect. Its response cache is off: tools
                # are listed at start and on list_changed only.
                client = Client(
                    self._transport(),
                    mode="auto",
                    message_handler=self._on_message,
                    cache=None,
                    **session_callbacks(self.name, self.hooks, self.roots),
                )
                async with asyncio.timeout(self.start_timeout):
                    await stack.enter_async_context(client)
                    session = client.session
                    # The SDK would check each result's structuredContent against the tool's
                    # outputSchema with stock jsonschema, on the loop: a server's pattern there
                    # is matched by `re` with no time limit. The result reaches the model as
                    # data either way (results.py), so that check is left out.
                    session.validate_tool_result = _no_output_check  # type: ignore[method-assign]
                    tools = await self._list_tools(session)
                self.instructions = client.instructions or ""
                self.server_name = client.server_info.name if client.server_info else ""
                self.tools = tools
                self._client = client
                self.status = "running"
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                self.status = f"down: {_describe(exc)}"
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        if self.config.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            from .pinned import pinned_client

            assert self._pinned is not None, "start() checks the URL first"
            async with self._auth() as auth:
                client = pinned_client(*self._pinned, self.config.headers, auth)
                async with client, streamable_http_client(self.config.url, http_client=client) as s:
                    yield s
            return
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from ..tools.guard.processes import safe_environment

        command = process.guarded(self.config.command)
        params = StdioServerParameters(
            command=command[0],
            args=list(command[1:]),
            env=safe_environment() | dict(self.config.env),
        )
        self.stderr = stderr = process.StderrTail()
        stderr.start()
        known = process.child_pids()
        try:
            async with stdio_client(params, errlog=stderr.writer) as streams:  # type: ignore[arg-type]
                stderr.close_writer()  # the server holds it now: EOF when it exits
                self.pid = process.find_server_pid(command, known)
                if self.pid is not None:
                    process.track(self.pid)
                yield streams
        except OSError as exc:
            raise MCPServerError(self._start_failure(exc)) from None

    @asynccontextmanager
    async def _auth(self) -> AsyncIterator[Any]:
        """OAuth for an HTTP server (``oauth.py``), unless the entry sends its own credentials."""
        url = self.config.url
        given = {key.lower() for key in self.config.headers}
        if url is None or "authorization" in given:
            yield None
            return
        from .oauth import oauth_auth

        async with oauth_auth(self.name, url, self.config.oauth, self.hooks) as auth:
            yield auth

    async def _on_message(self, message: object) -> None:
        """Server notifications: a changed tool list is listed again (``list_changed``)."""
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification) and self._refreshing is None:
            self._refreshing = asyncio.create_task(self._refresh_tools())

    async def _refresh_tools(self) -> None:
        try:
            client = self._client
            if client is None:
                return
            async with asyncio.timeout(self.start_timeout):
                self.tools = await self._list_tools(client.session)
            if self.on_tools_changed is not None:
                self.on_tools_changed()
        except Exception as exc:  # the old tools stay; the next call shows what is wrong
            self.status = f"running (its changed tool list could not be read: {_describe(exc)})"
        finally:
            self._refreshing = None

    async def _list_tools(self, session: ClientSession) -> list[Tool]:
        """Every page of ``tools/list``; ``MCPServerError`` past the caps (``schema.py``)."""
        from mcp.types import PaginatedRequestParams

        tools: list[Tool] = []
        size = 0
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            if len(tools) > MAX_TOOLS_PER_SERVER:
                raise MCPServerError(
                    f"MCP server {self.name!r} offers more than {MAX_TOOLS_PER_SERVER} tools, "
                    "the most one server may add (every request to the model carries them all)"
                )
            size += sum(
                schema_bytes(tool.name, tool.description or "", tool.input_schema)
                for tool in page.tools
            )
            if size > MAX_SCHEMA_BYTES_PER_SERVER:
                raise MCPServerError(
                    f"MCP server {self.name!r} describes its tools in more than "
                    f"{MAX_SCHEMA_BYTES_PER_SERVER // 1024} KB of schemas, the most one server "
                    "may add (every request to the model carries them all)"
                )
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _check_url(self, url: str) -> None:
        try:
            target = parse_target(url)  # URLRefusedError (a ToolFailure) with the reason
            self._pinned = (target, await self.network.pin(target))
        except ToolFailure as exc:
            raise MCPServerError(f"MCP server {self.name!r} ({url}) refused: {exc}") from None

    def _start_failure(self, exc: BaseException) -> str:
        tail = self.stderr.tail() if self.stderr is not None else ""
        said = f"; stderr: {tail}" if tail else ""
        what = _describe(exc)
        if isinstance(exc, TimeoutError):
            what = (
                f"TimeoutError: it did not answer initialize and tools/list within "
                f"{self.start_timeout:g} s (the start is bounded by tool_timeout)"
            )
        return f"MCP server {self.name!r} failed to start ({self.config.target}): {what}{said}"

    # -- calls --------------------------------------------------------------------------------

    async def _on_own_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the session's loop (a cell's own loop may call a notebook's tool)."""
        loop = self._loop
        if loop is None or loop is asyncio.get_running_loop() or loop.is_closed():
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call ``tool``; a down server is restarted first. Failures raise ``ToolFailure``.

        ``progress``: where the server's progress notifications for this call go (the client
        then asks for them with a progress token); called on the session's loop."""
        return await self._on_own_loop(self._call_tool(tool, arguments, timeout, progress))

    async def _call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        client = await self._live_client()
        on_progress: ProgressFnT | None = None
        if progress is not None:
            report = progress

            async def forward(progress: float, total: float | None, message: str | None) -> None:
                report(progress, total, message)

            on_progress = forward

        try:
            async with asyncio.timeout(timeout if math.isfinite(timeout) else None):
                # the Client's call: a 2026-07-28 server's input requests (input_required) are
                # answered through the session's elicitation and sampling hooks, then retried
                return await client.call_tool(tool, arguments, progress_callback=on_progress)
        except TimeoutError:
            raise ToolFailure(
                f"MCP server {self.name!r} did not answer {tool} within {timeout:g} s "
                "(the call was abandoned)"
            ) from None
        except Exception as exc:
            raise self._call_failure(tool, exc) from None

    async def read_resource(self, uri: str, timeout: float) -> ReadResourceResult:
        return await self._on_own_loop(self._read_resource(uri, timeout))

    async def _read_resource(self, uri: str, timeout: float) -> ReadResourceResult:
        client = await self._live_client()
        try:
            async with asyncio.timeout(timeout if math.isfinite(timeout) else None):
                return await client.session.read_resource(uri)
        except TimeoutError:
            raise ToolFailure(
                f"MCP server {self.name!r} did not return the resource {uri} within {timeout:g} s"
            ) from None
        except Exception as exc:
            raise self._call_failure(f"resource {uri}", exc) from None

    async def _live_client(self) -> Client:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one restart, however many calls find the server down
            if not self.running:
                try:
                    await self.restart()
                except MCPServerError as exc:
                    raise ToolFailure(f"{exc} (it had stopped; one restart was tried)") from None
            assert self._client is not None
            return self._client

    def _call_failure(self, what: str, exc: Exception) -> ToolFailure:
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED

        broken = not isinstance(exc, MCPError) or exc.code == CONNECTION_CLOSED
        if not broken and not self._process_gone():
            return ToolFailure(f"MCP server {self.name!r} refused {what}: {one_line(exc)}")
        # the connection broke: the server died or closed its end
        self.status = f"down: the connection broke during {what} ({_describe(exc)})"
        self._client = None
        tail = self.stderr.tail() if self.stderr is not None else ""
        said = f" Its last stderr: {tail}" if tail else ""
        return ToolFailure(
            f"MCP server {self.name!r} stopped during {what} ({_describe(exc)}); it will be "
            f"restarted on the next call.{said}"
        )

    def _process_gone(self) -> bool:
        if self.pid is None:
            return False
        try:
            with open(f"/proc/{self.pid}/stat") as stat:
                text = stat.read()
            return text[text.rindex(")") + 2] in "ZX"
        except (OSError, ValueError, IndexError):
            return True
