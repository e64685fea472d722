"""``tests/fake_anthropic.py``'s fake Messages API served on a loopback port.

A real kernel is another process, so it can't share an ``httpx`` transport with the test; it
reaches this server through ``ANTHROPIC_BASE_URL`` instead, with a fake key. The response body is
streamed to the client piece by piece as the fake produces it (so a slow reply is slow on the
wire too), and the connection is closed at the end of each response — unless ``serve(...,
keep_alive=True)``: then it speaks HTTP/1.1 keep-alive (chunked bodies) like the real API, so a
client's pooled connections are reused across requests.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
from fake_anthropic import FakeAnthropic


class _Handler(BaseHTTPRequestHandler):
    server: _FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        request = httpx2.Request(
            "POST",
            f"http://{self.headers.get('host', 'localhost')}{self.path}",
            headers=dict(self.headers.items()),
            content=body,
        )
        asyncio.run(self._answer(request))

    async def _answer(self, request: httpx2.Request) -> None:
        response = await self.server.fake.handle(request)
        chunked = self.server.keep_alive
        self.send_response(response.status_code)
        for name, value in response.headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        if chunked:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("connection", "close")
        self.end_headers()
        try:
            async for chunk in _body(response):
                if chunked:
                    chunk = b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunk else b""
                self.wfile.write(chunk)
                self.wfile.flush()
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (an interrupted request)
        finally:
            await response.aclose()


async def _body(response: httpx2.Response) -> AsyncIterator[bytes]:
    """The body as it is produced; a response built from bytes (an error reply) at once."""
    try:
        content = response.content  # raises for a streamed body that was not read yet
    except httpx2.ResponseNotRead:
        async for chunk in response.aiter_raw():
            yield chunk
    else:
        yield content


class _KeepAliveHandler(_Handler):
    protocol_version = "HTTP/1.1"


class _FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeAnthropic, keep_alive: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _KeepAliveHandler if keep_alive else _Handler)
        self.fake = fake
        self.keep_alive = keep_alive
        #: Client connections accepted so far (keep-alive reuses them).
        self.connections = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1
        super().process_request(request, client_address)


@contextmanager
def serve(fake: FakeAnthropic, *, keep_alive: bool = False) -> Iterator[str]:
    """Serve ``fake`` on 127.0.0.1; yields the base URL."""
    server = _FakeServer(fake, keep_alive)
    thread = threading.Thread(target=server.serve_forever, name="fake-anthropic", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
