"""The HTTP client of a streamable-HTTP MCP server, pinned to the address that was checked.

The server's URL is the user's choice, so it may be on loopback or a private network (local MCP
servers live there) without opening ``web_fetch`` to those networks. What the URL names must
still be what the client talks to: the host is resolved once, when the server is added (or
restarted), and every request of the session goes to that address (``PinnedTransport``), with
the original ``Host`` header and TLS server name — as ``web_fetch`` pins each hop
(``tools/netguard.py``). A DNS answer that changes later ("DNS rebinding") cannot move the
session elsewhere, and a request for any other origin is refused rather than resolved.

The SDK builds its HTTP clients on ``httpx2`` (``mcp.shared._httpx_utils``); the transport
here wraps that client's own transport class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2

from ..tools.netguard import DEFAULT_PORTS, FetchTarget, IPAddress


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends every request for ``target``'s origin to ``address``; refuses other origins."""

    def __init__(self, target: FetchTarget, address: IPAddress) -> None:
        self.target = target
        self.address = address
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        port = url.port or DEFAULT_PORTS.get(url.scheme, 0)
        target = self.target
        if (url.scheme, url.host.lower().rstrip("."), port) != (
            target.scheme,
            target.host.rstrip("."),
            target.port,
        ):
            raise httpx2.ConnectError(
                f"refused: the MCP session is pinned to {target.host_header}, not {url.host}",
                request=request,
            )
        request.url = url.copy_with(host=str(self.address))
        request.headers["Host"] = target.host_header
        if target.scheme == "https" and target.literal_ip is None:
            request.extensions = {**request.extensions, "sni_hostname": target.host.rstrip(".")}
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def pinned_client(
    target: FetchTarget, address: IPAddress, headers: Mapping[str, str]
) -> httpx2.AsyncClient:
    """The SDK's client settings (timeouts, headers) over a ``PinnedTransport``."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    options: dict[str, Any] = {
        "timeout": httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        "transport": PinnedTransport(target, address),
        "trust_env": False,
    }
    if headers:
        options["headers"] = dict(headers)
    return httpx2.AsyncClient(**options)
