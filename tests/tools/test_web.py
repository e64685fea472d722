"""web_fetch against loopback HTTP servers the tests start; nothing reaches the internet."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback_web import JSON_DOCUMENT, LoopbackServer

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.guard.netguard import PrivateNetworkSetting
from jupyter_agent.tools.registry import ToolRegistry
from jupyter_agent.tools.web import MAX_REDIRECTS, WebFetchTool


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    running = LoopbackServer()
    yield running
    running.close()


@pytest.fixture
def other_server() -> Iterator[LoopbackServer]:
    running = LoopbackServer()
    yield running
    running.close()


#: Stops a hung test, never measures one.
SAFETY_S = 60.0


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every address a socket of this process connects to during the test (asyncio's connect
    calls ``socket.connect`` too): a refusal made before any connection leaves no trace here."""
    seen: list[object] = []
    real = socket.socket.connect

    def connect(self: socket.socket, address: object) -> None:
        seen.append(address)
        real(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


def fetch_registry(
    tmp_path: Path, allow: PrivateNetworkSetting = True, **options: float
) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(WebFetchTool(ToolContext(tmp_path), allow, **options))  # type: ignore[arg-type]
    return registry


# -- content ------------------------------------------------------------------------------------


async def test_json_is_returned_as_json(tmp_path: Path, server: LoopbackServer) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url("/json")})
    assert not result.is_error, result.content
    assert json.loads(result.content) == JSON_DOCUMENT
    assert '\n  "name": "jupyter-agent"' in result.content  # pretty-printed


@pytest.mark.parametrize("path", ["/gzip-json", "/deflate-json", "/raw-deflate-json"])
async def test_compressed_body_is_inflated(
    tmp_path: Path, server: LoopbackServer, path: str
) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url(path)})
    assert json.loads(result.content) == JSON_DOCUMENT


async def test_html_is_made_readable(tmp_path: Path, server: LoopbackServer) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url("/html")})
    assert not result.is_error, result.content
    text = result.content
    assert "# Sales grew" in text
    assert "**up 12%**" in text
    assert "[Q3](/q3)" in text
    assert "North" in text
    for hidden in ("SCRIPT-CONTENT", "SCRIPT-MODULE", "NOSCRIPT-CONTENT", "color: red", "<"):
        assert hidden not in text


async def test_plain_text_and_charsets(tmp_path: Path, server: LoopbackServer) -> None:
    registry = fetch_registry(tmp_path)
    assert (await registry.execute("web_fetch", {"url": server.url("/text")})).startswith(
        "plain text, naïve café"
    )
    assert await registry.execute("web_fetch", {"url": server.url("/latin1")}) == "café"


@pytest.mark.parametrize(("path", "named"), [("/binary", "image/png"), ("/untyped-binary", "")])
async def test_binary_is_refused(
    tmp_path: Path, server: LoopbackServer, path: str, named: str
) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url(path)})
    assert result.is_error
    assert "binary content" in result.content
    assert named in result.content


async def test_404_is_an_error_with_status(tmp_path: Path, server: LoopbackServer) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url("/missing")})
    assert result.is_error
    assert "HTTP 404 Not Found" in result.content
    assert "no such page here" in result.content


async def test_max_length_cuts_and_says_so(tmp_path: Path, server: LoopbackServer) -> None:
    result = await fetch_registry(tmp_path).call(
        "web_fetch", {"url": server.url("/text"), "max_length": 5}
    )
    assert result.content.startswith("plain\n\n[… 18 of 23 characters cut …]")


# -- limits -------------------------------------------------------------------------------------


async def test_huge_body_is_capped_while_streaming(tmp_path: Path, server: LoopbackServer) -> None:
    registry = fetch_registry(tmp_path, max_body_bytes=1_000_000)
    call = registry.call("web_fetch", {"url": server.url("/huge"), "max_length": 500_000})
    result = await asyncio.wait_for(call, SAFETY_S)
    assert not result.is_error, result.content[:200]
    assert result.content.startswith("x" * 1000)
    assert "larger than 1,000,000 bytes" in result.content
    assert len(result.content) < 500_000 + 300


async def test_compressed_bomb_is_capped(tmp_path: Path, server: LoopbackServer) -> None:
    registry = fetch_registry(tmp_path, max_body_bytes=100_000)
    result = await registry.call("web_fetch", {"url": server.url("/huge-gzip")})
    assert "larger than 100,000 bytes" in result.content
    assert result.content.count("z") <= 100_000


async def test_slow_drip_is_cut_at_the_deadline(tmp_path: Path, server: LoopbackServer) -> None:
    registry = fetch_registry(tmp_path, timeout_s=1.5)
    started = time.monotonic()
    # the drip lasts a minute: only the deadline ends the call sooner
    result = await asyncio.wait_for(registry.call("web_fetch", {"url": server.url("/drip")}), 30)
    elapsed = time.monotonic() - started
    assert result.is_error
    assert "Timed out after 1.5 s" in result.content
    assert elapsed > 1.4  # not before the deadline (a lower bound: load cannot break it)


def test_default_deadline_is_thirty_seconds(tmp_path: Path) -> None:
    assert WebFetchTool(ToolContext(tmp_path)).timeout_s == 30.0


# -- redirects ----------------------------------------------------------------------------------


async def test_redirects_are_followed(tmp_path: Path, server: LoopbackServer) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url("/hops?n=3")})
    assert not result.is_error, result.content
    assert f"[Redirected to {server.url('/json')}.]" in result.content


async def test_redirect_loop_is_refused(tmp_path: Path, server: LoopbackServer) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url("/loop-a")})
    assert result.is_error
    assert "Redirect loop" in result.content
    assert [path for path, _ in server.requests] == ["/loop-a", "/loop-b"]


async def test_too_many_redirects(tmp_path: Path, server: LoopbackServer) -> None:
    result = await fetch_registry(tmp_path).call("web_fetch", {"url": server.url("/chain/0")})
    assert result.is_error
    assert "Too many redirects" in result.content
    assert len(server.requests) == MAX_REDIRECTS + 1


# -- address policy with a real server -------------------------------------------------------


async def test_allow_list_admits_only_the_listed_port(
    tmp_path: Path, server: LoopbackServer, other_server: LoopbackServer
) -> None:
    registry = fetch_registry(tmp_path, [f"127.0.0.1:{server.port}"])
    allowed = await registry.call("web_fetch", {"url": server.url("/json")})
    assert json.loads(allowed.content) == JSON_DOCUMENT
    refused = await registry.call("web_fetch", {"url": other_server.url("/json")})
    assert refused.is_error
    assert "loopback" in refused.content
    assert other_server.requests == []


async def test_redirect_from_allowed_host_to_private_is_refused(
    tmp_path: Path,
    server: LoopbackServer,
    other_server: LoopbackServer,
    connects: list[object],
) -> None:
    registry = fetch_registry(tmp_path, [f"127.0.0.1:{server.port}"])
    for target in (other_server.url("/json"), "http://169.254.169.254/latest/meta-data/"):
        result = await registry.call("web_fetch", {"url": server.url(f"/to?url={target}")})
        # refused before connecting: only the allowed server was ever connected to
        assert {address[1] for address in connects} == {server.port}, connects  # type: ignore[index]
        assert result.is_error
        assert "redirected to" in result.content
        assert "Refused" in result.content
    assert other_server.requests == []


async def test_host_header_is_the_original_host(tmp_path: Path, server: LoopbackServer) -> None:
    await fetch_registry(tmp_path).call("web_fetch", {"url": server.url("/json")})
    assert server.requests == [("/json", f"127.0.0.1:{server.port}")]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_https_connects_to_the_pinned_address_with_the_original_name(
    tmp_path: Path,
) -> None:
    # A certificate valid for the name "localhost" only (no IP address in it): verification
    # succeeds only if TLS is told the original host name while the socket goes to 127.0.0.1.
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    openssl = [
        *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
        *("-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"),
        *("-keyout", str(key), "-out", str(cert)),
    ]
    subprocess.run(openssl, check=True, capture_output=True)
    names_seen: list[str | None] = []
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    server_context.sni_callback = lambda _sock, name, _ctx: names_seen.append(name)  # type: ignore[assignment,misc]
    # Listen where "localhost" resolves first (/etc/hosts), since that is the address pinned.
    first_address = str(socket.getaddrinfo("localhost", 0, type=socket.SOCK_STREAM)[0][4][0])
    server = LoopbackServer(tls=server_context, host=first_address)
    try:
        client_context = ssl.create_default_context(cafile=str(cert))
        registry = ToolRegistry()
        registry.register(WebFetchTool(ToolContext(tmp_path), True, ssl_context=client_context))
        result = await registry.call("web_fetch", {"url": f"https://localhost:{server.port}/json"})
        assert not result.is_error, result.content
        assert json.loads(result.content) == JSON_DOCUMENT
        assert names_seen == ["localhost"]
        assert server.requests == [("/json", f"localhost:{server.port}")]
        # By address, the same certificate does not match: verification is really on.
        by_address = await registry.call("web_fetch", {"url": server.url("/json", "https")})
        assert by_address.is_error
        assert "certificate" in by_address.content.lower()
    finally:
        server.close()


def hostile_urls(port: int) -> list[tuple[str, str]]:
    """(url, a word the refusal must contain); port points at a live server that must stay idle."""
    return [
        (f"http://localhost:{port}/", "loopback"),
        (f"http://127.0.0.1:{port}/", "loopback"),
        (f"http://127.1:{port}/", "loopback"),
        (f"http://2130706433:{port}/", "loopback"),
        (f"http://0x7f000001:{port}/", "loopback"),
        (f"http://0x7f.0.0.1:{port}/", "loopback"),
        (f"http://0177.0.0.1:{port}/", "not valid"),
        (f"http://[::1]:{port}/", "loopback"),
        (f"http://[::ffff:127.0.0.1]:{port}/", "loopback"),
        (f"http://[::ffff:7f00:1]:{port}/", "loopback"),
        (f"http://[64:ff9b::7f00:1]:{port}/", "loopback"),
        ("http://[fd00::1]/", "unique local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://10.0.0.1/", "private"),
        ("http://172.16.0.1/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://100.64.0.1/", "carrier-grade NAT"),
        (f"http://0.0.0.0:{port}/", "unspecified"),
        (f"http://0:{port}/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("file:///etc/passwd", "Only http"),
        (f"ftp://127.0.0.1:{port}/", "Only http"),
        ("gopher://127.0.0.1:70/", "Only http"),
        ("http://user@evil.com/", "user name"),
        (f"http://evil.com@127.0.0.1:{port}/", "user name"),
        (f"http://127.0.0.1:{port}\\@example.com/", "backslash"),
        (f"http://127.0.0.1:{port}/\\..\\", "backslash"),
        (f"http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x", "whitespace"),
        ("http://%31%32%37.0.0.1/", "not a valid host name"),
        ("//127.0.0.1/", "relative"),
    ]


HOSTILE_CASES = hostile_urls(1)  # ids only; the real port is substituted per test


@pytest.mark.parametrize("index", range(len(HOSTILE_CASES)), ids=[u for u, _ in HOSTILE_CASES])
async def test_hostile_urls_are_refused_without_a_request(
    tmp_path: Path, server: LoopbackServer, index: int, connects: list[object]
) -> None:
    url, reason = hostile_urls(server.port)[index]
    registry = fetch_registry(tmp_path, False)
    result = await registry.call("web_fetch", {"url": url})
    assert connects == []  # refused before any connection (a private address could hang it)
    assert result.is_error
    assert reason in result.content
    assert server.requests == []


async def test_default_registry_tool_refuses_loopback(
    tmp_path: Path, server: LoopbackServer
) -> None:
    result = await fetch_registry(tmp_path, False).call("web_fetch", {"url": server.url("/json")})
    assert result.is_error
    assert "allow_private_network" in result.content
    assert server.requests == []
