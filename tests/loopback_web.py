"""A loopback HTTP(S) server with the pages the web_fetch tests ask for (HTML, JSON, gzip, bombs,
redirects, a slow drip), recording each request's path and Host header; nothing reaches the
internet. Shared by the web_fetch tests and the egress attack of the hostile suite.
"""

from __future__ import annotations

import gzip
import json
import socket
import ssl
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HTML_PAGE = b"""<!doctype html>
<html><head><title>Quarterly report</title>
<style>body { color: red; } .secret-style {}</style>
<script>var trackingCode = "SCRIPT-CONTENT";</script>
</head>
<body>
<noscript>NOSCRIPT-CONTENT</noscript>
<h1>Sales grew</h1>
<p>Revenue was <b>up 12%</b> in <a href="/q3">Q3</a>.</p>
<ul><li>North</li><li>South</li></ul>
<script type="module">import("SCRIPT-MODULE")</script>
</body></html>"""

JSON_DOCUMENT = {"name": "jupyter-agent", "tags": ["a", "b"], "nested": {"ok": True}}


class Recorder:
    """What a loopback server saw."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []  # (path, Host header)
        self.lock = threading.Lock()


def make_handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def send_body(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(body)

        def redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            with recorder.lock:
                recorder.requests.append((self.path, self.headers.get("Host")))
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            route = url.path
            if route == "/json":
                self.send_body(200, json.dumps(JSON_DOCUMENT).encode(), "application/json")
            elif route == "/gzip-json":
                body = gzip.compress(json.dumps(JSON_DOCUMENT).encode())
                self.send_body(200, body, "application/json", Content_Encoding="gzip")
            elif route in ("/deflate-json", "/raw-deflate-json"):
                wbits = zlib.MAX_WBITS if route == "/deflate-json" else -zlib.MAX_WBITS
                packer = zlib.compressobj(wbits=wbits)
                body = packer.compress(json.dumps(JSON_DOCUMENT).encode()) + packer.flush()
                self.send_body(200, body, "application/json", Content_Encoding="deflate")
            elif route == "/html":
                self.send_body(200, HTML_PAGE, "text/html; charset=utf-8")
            elif route == "/text":
                self.send_body(200, "plain text, naïve café\n".encode(), "text/plain")
            elif route == "/latin1":
                self.send_body(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")
            elif route == "/binary":
                self.send_body(200, b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png")
            elif route == "/untyped-binary":
                self.send_body(200, bytes(range(256)) * 4, "")
            elif route == "/missing":
                self.send_body(404, b"no such page here", "text/plain")
            elif route == "/huge":
                self.stream_forever(b"x" * 65536, "text/plain")
            elif route == "/huge-gzip":
                # A small compressed body that inflates to far more than the cap.
                body = gzip.compress(b"z" * (64 * 1024 * 1024))
                self.send_body(200, body, "text/plain", Content_Encoding="gzip")
            elif route == "/drip":
                self.drip()
            elif route == "/loop-a":
                self.redirect("/loop-b")
            elif route == "/loop-b":
                self.redirect("/loop-a")
            elif route.startswith("/chain/"):
                self.redirect(f"/chain/{int(route.rsplit('/', 1)[1]) + 1}")
            elif route == "/hops":
                remaining = int(query["n"][0])
                self.redirect(f"/hops?n={remaining - 1}" if remaining else "/json")
            elif route == "/to":
                self.redirect(query["url"][0])
            else:
                self.send_body(500, b"unknown route", "text/plain")

        def stream_forever(self, chunk: bytes, content_type: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.end_headers()  # no length: the body ends when the connection does
            self.close_connection = True
            try:
                for _ in range(4096):  # at most 256 MiB
                    self.wfile.write(chunk)
            except OSError:
                pass

        def drip(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.close_connection = True
            try:
                for _ in range(600):
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass

    return Handler


class IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class LoopbackServer:
    def __init__(self, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> None:
        self.recorder = Recorder()
        server_class = IPv6Server if ":" in host else ThreadingHTTPServer
        self.httpd = server_class((host, 0), make_handler(self.recorder))
        self.host = host
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def url(self, path: str, scheme: str = "http") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}{path}"

    @property
    def requests(self) -> list[tuple[str, str | None]]:
        with self.recorder.lock:
            return list(self.recorder.requests)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
