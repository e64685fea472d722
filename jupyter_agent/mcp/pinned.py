"""The HTTP client of a streamable-HTTP MCP server, pinned to the address that was checked.

The server's URL is the user's choice, so it may be on loopback or a private network (local MCP
servers live there) without opening ``web_fetch`` to those networks. What the URL names must
still be what the client talks to: the host is resolved once, when the server is added (or
restarted), and every request of the session goes to that address (``PinnedTransport``), with
the original ``Host`` header and TLS server name — as ``web_fetch`` pins each hop
(``tools/guard/netguard.py``). A DNS answer that changes later ("DNS rebinding") cannot move the
session elsewhere. A request for another origin is the OAuth flow talking to the server's
authorization server (``oauth.py``): on the server's own host (by name, or by the address it
resolves to) it goes to the same pinned address; elsewhere it must be a public address (checked
and pinned like a ``web_fetch`` hop), so a server's metadata cannot point the kernel at your
private network.

The SDK builds its HTTP clients on ``httpx2`` (``mcp.shared._httpx_utils``); the transport
here wraps that client's own transport class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2

from ..tools.base import ToolFailure
from ..tools.guard.netguard import (
    DEFAULT_PORTS,
    FetchTarget,
    IPAddress,
    NetworkPolicy,
    parse_target,
)


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends every request for ``target``'s host to ``address``; another host must be public."""

    def __init__(self, target: FetchTarget, address: IPAddress) -> None:
        self.target = target
        self.address = address
        self._public = NetworkPolicy(False)
        self._any = NetworkPolicy(True)
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        port = url.port or DEFAULT_PORTS.get(url.scheme, 0)
        target = self.target
        if (url.scheme, url.host.lower().rstrip("."), port) == (
            target.scheme,
            target.host.rstrip("."),
            target.port,
        ):
            to, address = target, self.address
        else:
            to, address = await self._elsewhere(request)
        request.url = url.copy_with(host=str(address))
        request.headers["Host"] = to.host_header
        if to.scheme == "https" and to.literal_ip is None:
            request.extensions = {**request.extensions, "sni_hostname": to.host.rstrip(".")}
        return await self._inner.handle_async_request(request)

    async def _elsewhere(self, request: httpx2.Request) -> tuple[FetchTarget, IPAddress]:
        """Another origin (an OAuth authorization server): the server's own host (by name or by
        address: ``localhost`` and ``127.0.0.1``), or a public address."""
        try:
            other = parse_target(str(request.url))
            if other.host.rstrip(".") == self.target.host.rstrip("."):
                return other, self.address
            address = await self._any.pin(other)
            if address == self.address:
                return other, address
            return other, await self._public.pin(other)
        except ToolFailure as exc:
            raise httpx2.ConnectError(
                f"refused: {request.url.host} is not the MCP server's host and {exc}",
                request=request,
            ) from None

    async def aclose(self) -> None:
        await self._inner.aclose()


def pinned_client(
    target: FetchTarget,
    address: IPAddress,
    headers: Mapping[str, str],
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The SDK's client settings (timeouts, headers, OAuth) over a ``PinnedTransport``."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    options: dict[str, Any] = {
        "timeout": httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        "transport": PinnedTransport(target, address),
        "trust_env": False,
    }
    if headers:
        options["headers"] = dict(headers)
    if auth is not None:
        options["auth"] = auth
    return httpx2.AsyncClient(**options)
