"""OAuth for HTTP MCP servers, on the ``mcp`` SDK's own client (``OAuthClientProvider``).

The SDK does the protocol — protected-resource and authorization-server metadata, dynamic client
registration or a client-ID metadata document, PKCE, scopes from ``WWW-Authenticate``, refresh —
as an ``httpx`` auth flow that starts when the server answers 401. Three things are ours:

- **the token store**: one file per server URL in the user's config folder
  (``~/.config/jupyter-agent/mcp-oauth/``, or ``$JUPYTER_AGENT_CONFIG_DIR``), mode 0600 in a 0700
  folder — never in the workspace, where the agent's file tools could read it;
  ``forget_tokens(url)`` is ``%agent mcp logout``;
- **the redirect**: a loopback listener on ``127.0.0.1`` (RFC 8252: any port) that receives the
  authorization code, so the flow needs no server of ours anywhere;
- **the link**: ``ClientHooks.open_authorization`` shows the "Authorize" link to the user (the
  notebook puts it in the calling cell); with nobody to show it to, connecting fails with one line
  saying authorization is needed.

A server entry may carry ``"oauth": {...}``: a pre-registered ``client_id`` (and
``client_secret``), a ``scope``, a ``client_metadata_url``, or ``"grant": "client_credentials"``
for machine-to-machine servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ..errors import MCPServerError
from ..tools.guard.private import private_folder
from .client_features import ClientHooks

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

#: Seconds the flow waits for the user to authorize in the browser.
AUTHORIZATION_TIMEOUT_S = 300.0
#: The keys an entry's ``"oauth"`` may hold.
OAUTH_KEYS = frozenset(
    {
        "client_id",
        "client_secret",
        "scope",
        "client_metadata_url",
        "grant",
        "private_key_pem",
        "signing_algorithm",
    }
)


def tokens_dir() -> Path:
    """Where tokens live: the user's config folder, never the workspace."""
    base = os.environ.get("JUPYTER_AGENT_CONFIG_DIR")
    if base:
        return Path(base) / "mcp-oauth"
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "jupyter-agent" / "mcp-oauth"


def token_file(url: str) -> Path:
    return tokens_dir() / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".json")


def forget_tokens(url: str) -> bool:
    """Delete what is stored for ``url``; whether there was anything."""
    try:
        token_file(url).unlink()
    except FileNotFoundError:
        return False
    return True


class TokenFile:
    """The SDK's ``TokenStorage`` in one 0600 JSON file per server URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = token_file(url)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("url") == self.url else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = self._read() | {"url": self.url, key: value}
        folder = self.path.parent
        # the agent's own folders (``jupyter-agent/mcp-oauth``) made 0700, also when found looser
        private_folder(folder, own=1 if os.environ.get("JUPYTER_AGENT_CONFIG_DIR") else 2)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".tokens-")  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        stored = self._read().get("tokens")
        return OAuthToken.model_validate(stored) if stored else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        stored = self._read().get("client")
        return OAuthClientInformationFull.model_validate(stored) if stored else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


@dataclass(frozen=True)
class RedirectAnswer:
    """What the authorization server's redirect carried: the code, ``state``, and the RFC 9207
    ``iss`` (the SDK checks it against the issuer it discovered: a mix-up attack's answer from
    another server is refused, and a server that promises ``iss`` must send it)."""

    code: str
    state: str | None
    iss: str | None


class LoopbackRedirect:
    """Receives the authorization server's redirect on ``127.0.0.1`` (one code at a time)."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[RedirectAnswer] | None = None
        self.port = 0

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    def expect(self) -> None:
        self._result = asyncio.get_running_loop().create_future()

    async def wait(self, timeout: float = AUTHORIZATION_TIMEOUT_S) -> RedirectAnswer:
        if self._result is None:
            self.expect()
        assert self._result is not None
        async with asyncio.timeout(timeout):
            return await self._result

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(10):
                request_line = await reader.readline()
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
            parts = request_line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("/")
            query = parse_qs(target.query)
            code = query.get("code", [""])[0]
            error = query.get("error", [""])[0]
            state = query.get("state", [None])[0]
            iss = query.get("iss", [None])[0]
            if target.path == "/callback" and self._result is not None and not self._result.done():
                if code:
                    self._result.set_result(RedirectAnswer(code, state, iss))
                elif error:
                    self._result.set_exception(
                        MCPServerError(f"the authorization server answered: {error}")
                    )
            ok = target.path == "/callback" and bool(code)
            body = (
                b"Authorized: you can close this tab and go back to the notebook.\n"
                if ok
                else b"This address only receives an OAuth redirect.\n"
            )
            status = b"200 OK" if ok else b"400 Bad Request"
            writer.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain; charset=utf-8\r\n"
                b"Content-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (TimeoutError, OSError, ValueError):
            pass
        finally:
            writer.close()


def check_oauth_entry(name: str, entry: object) -> dict[str, str]:
    """An entry's ``"oauth"`` value, checked; ``ValueError`` naming what is wrong."""
    if entry is None:
        return {}
    if not isinstance(entry, Mapping):
        raise ValueError(f"MCP server {name!r}: 'oauth' must be an object")
    unknown = set(entry) - OAUTH_KEYS
    if unknown:
        raise ValueError(
            f"MCP server {name!r}: unknown 'oauth' keys {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(OAUTH_KEYS))}"
        )
    grant = entry.get("grant", "authorization_code")
    if grant not in ("authorization_code", "client_credentials"):
        raise ValueError(
            f"MCP server {name!r}: 'oauth.grant' is authorization_code or client_credentials"
        )
    return {str(k): str(v) for k, v in entry.items()}


@asynccontextmanager
async def oauth_auth(
    server: str, url: str, settings: Mapping[str, str], hooks: ClientHooks
) -> AsyncIterator[httpx2.Auth]:
    """The SDK's auth flow for ``url``, answering through ``hooks``, for one connection."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
        OAuthClientMetadata,
    )
    from pydantic import AnyUrl

    storage = TokenFile(url)
    if settings.get("grant") == "client_credentials":
        yield await _client_credentials(url, settings, storage)
        return
    redirect = LoopbackRedirect()
    await redirect.start()
    try:
        if settings.get("client_id"):
            secret = settings.get("client_secret")
            await storage.set_client_info(
                OAuthClientInformationFull(
                    client_id=settings["client_id"],
                    client_secret=secret,
                    redirect_uris=[AnyUrl(redirect.uri)],
                    token_endpoint_auth_method="client_secret_basic" if secret else "none",
                )
            )

        async def show_link(authorization_url: str) -> None:
            if hooks.open_authorization is None:
                raise MCPServerError(
                    f"MCP server {server!r} needs authorization (OAuth) and no one can open the "
                    "link here: add it from a notebook cell, where an Authorize link is shown"
                )
            scheme = urlsplit(authorization_url).scheme
            if scheme not in ("https", "http"):
                raise MCPServerError(
                    f"MCP server {server!r}: refused an authorization link that is not http(s)"
                )
            redirect.expect()
            await hooks.open_authorization(authorization_url)

        async def receive_code() -> AuthorizationCodeResult:
            answer = await redirect.wait()
            return AuthorizationCodeResult(code=answer.code, state=answer.state, iss=answer.iss)

        yield OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="jupyter-agent",
                redirect_uris=[AnyUrl(redirect.uri)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                scope=settings.get("scope") or None,
            ),
            storage=storage,
            redirect_handler=show_link,
            callback_handler=receive_code,
            client_metadata_url=settings.get("client_metadata_url") or None,
        )
    finally:
        await redirect.close()


async def _client_credentials(
    url: str, settings: Mapping[str, str], storage: TokenFile
) -> httpx2.Auth:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    client_id = settings.get("client_id", "")
    if settings.get("private_key_pem"):
        jwt = SignedJWTParameters(
            issuer=client_id,
            subject=client_id,
            signing_key=settings["private_key_pem"],
            signing_algorithm=settings.get("signing_algorithm") or "RS256",
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=client_id,
            assertion_provider=jwt.create_assertion_provider(),
            scope=settings.get("scope") or None,
        )
    return ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret=settings.get("client_secret", ""),
        scope=settings.get("scope") or None,
    )
