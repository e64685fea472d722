"""``web_fetch``: HTTP(S) GET of a URL a model chose, returned as text it can read.

The URL may come from a prompt injection, so the fetch is bounded in every direction:

* where it goes: every hop (the first URL and each redirect, at most five) passes
  ``netguard.parse_target`` and ``NetworkPolicy.pin``; the connection is made to the address that
  was checked, with the original ``Host`` header and TLS server name, so DNS cannot change the
  answer in between. Environment proxies are ignored (they would move the connection elsewhere);
* how long it takes: one deadline (30 s by default) covers connecting, every redirect, the
  whole body and its conversion, so a server that trickles a byte a second is cut off too;
* how much it reads: the body is streamed and reading stops at a byte cap (compressed bodies are
  inflated incrementally, with the cap on the inflated size);
* what comes back: JSON pretty-printed, HTML turned into Markdown (scripts, styles and the like
  dropped first), other text as is; binary content is refused, naming its content type. A
  non-2xx status is an error result with the status;
* what converting costs: HTML (cut at ``max_html_bytes``, 2 MiB by default; converted by
  html-to-markdown, with nesting past its depth limit flattened first) and JSON are converted in
  a child process under the same deadline, killed when it passes, so a page crafted to make the
  parser slow can neither freeze the event loop nor outlive the call, and a parser crash ends the
  child, not the kernel (see ``web_convert``).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import sys
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from .._version import __version__
from ..errors import URLRefusedError
from . import web_convert
from .base import BuiltinTool, ToolFailure
from .cut_mark import cut_mark
from .guard.egress import EgressHosts, normal_host
from .guard.netguard import (
    FetchTarget,
    NetworkPolicy,
    PrivateNetworkSetting,
    check_url_characters,
    parse_target,
)
from .guard.sandbox import end_reader, probe_off_the_loop, reader_sandbox, start_reader

if TYPE_CHECKING:
    import httpx

    from .context import ToolContext

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_LENGTH = 50_000
MAX_MAX_LENGTH = 500_000
#: Reading stops after this many (decoded) body bytes.
DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: How much of an error response's body is shown with its status.
ERROR_BODY_CHARS = 1_000
USER_AGENT = f"jupyter-agent/{__version__} (web_fetch)"

ContentKind = Literal["json", "html", "text", "binary", "unknown"]

_TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-sh",
        "application/x-httpd-php",
        "application/toml",
        "application/yaml",
        "application/x-yaml",
        "application/sql",
        "application/graphql",
        "application/csv",
        "application/x-ndjson",
        "application/jsonl",
        "application/x-www-form-urlencoded",
        "application/rss+xml",
        "application/atom+xml",
    }
)


def classify_content_type(content_type: str | None) -> ContentKind:
    """What kind of body a ``Content-Type`` announces."""
    if not content_type:
        return "unknown"
    media = content_type.split(";", 1)[0].strip().lower()
    if media in ("application/json", "text/json") or media.endswith("+json"):
        return "json"
    if media in ("text/html", "application/xhtml+xml"):
        return "html"
    if media.startswith("text/") or media in _TEXT_APPLICATION_TYPES or media.endswith("+xml"):
        return "text"
    return "binary"


def _looks_binary(body: bytes) -> bool:
    sample = body[:8192]
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 4  # a character cut at the sample's end is fine
    return False


class _LazyDeflate:
    """A deflate decoder that picks zlib-wrapped or raw deflate from the first two bytes."""

    def __init__(self) -> None:
        self._inflater: Any = None
        self._pending = b""

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if self._inflater is None:
            self._pending += data
            if len(self._pending) < 2:
                return b""
            first, second = self._pending[0], self._pending[1]
            wrapped = first & 0x0F == 8 and (first << 8 | second) % 31 == 0
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
            data, self._pending = self._pending, b""
        result: bytes = self._inflater.decompress(data, max_length)
        return result


@dataclass
class _Fetched:
    url: str
    content_type: str | None
    charset: str | None
    body: bytes
    body_truncated: bool
    redirects: list[str] = field(default_factory=list)


class WebFetchTool(BuiltinTool):
    """``web_fetch``: GET a public http(s) URL and return it as readable text."""

    name = "web_fetch"
    description = (
        "Fetch a URL with HTTP GET and return its content as text: JSON is returned "
        "pretty-printed, HTML is converted to Markdown, other text is returned as is; binary "
        "content (images, PDFs, archives) is refused. Only http:// and https:// URLs on the public "
        "internet can be fetched (unless the user allowed private networks). Redirects are "
        f"followed (at most {MAX_REDIRECTS}). The whole fetch must finish within "
        f"{DEFAULT_TIMEOUT_S:g} seconds. A non-2xx HTTP status is reported as an error."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
                "minLength": 1,
                "description": "The http:// or https:// URL to fetch.",
            },
            "max_length": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_MAX_LENGTH,
                "description": (
                    "The most characters of content to return (default "
                    f"{DEFAULT_MAX_LENGTH}); longer content is cut, and the cut is marked."
                ),
            },
        },
        "required": ["url"],
        "additionalProperties": False,
    }

    def __init__(
        self,
        context: ToolContext,
        allow_private_network: PrivateNetworkSetting = False,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_html_bytes: int = web_convert.MAX_HTML_BYTES,
        ssl_context: ssl.SSLContext | None = None,
        egress: EgressHosts | None = None,
    ) -> None:
        """``timeout_s`` is the deadline of one whole fetch, conversion included;
        ``max_body_bytes`` caps the body; ``max_html_bytes`` caps the HTML converted to Markdown;
        ``ssl_context`` replaces the default certificate verification (e.g. a company CA);
        ``egress``: the hosts reachable without asking (``egress.py``; the session's)."""
        super().__init__(context)
        self.policy = NetworkPolicy(allow_private_network)
        self.egress = egress if egress is not None else EgressHosts()
        self.timeout_s = timeout_s
        self.max_body_bytes = max_body_bytes
        self.max_html_bytes = max_html_bytes
        self.ssl_context = ssl_context

    # -- asking before a new host (egress.py) -----------------------------------------------

    def approval_key(self, args: dict[str, object]) -> str | None:
        """The host a call would reach first: what "allow for this session" covers."""
        url = args.get("url")
        try:
            return normal_host(parse_target(url).host) if isinstance(url, str) else None
        except URLRefusedError:
            return None

    def needs_approval(self, args: dict[str, object]) -> str | None:
        """Why the user must say yes first: a host not allowed yet (no DNS lookup here)."""
        host = self.approval_key(args)
        if host is None or self.egress.allows(host) or self.egress.beyond_limit(host):
            return None  # a URL that cannot be fetched is refused by the call itself
        return (
            f"web_fetch would send a request to {host}, a host not allowed yet in this session "
            f"(the URL and its query reach that host). To allow it without asking: "
            f"%config AgentMagics.web_allow = [{host!r}]"
        )

    def remember_approval(self, args: dict[str, object]) -> None:
        host = self.approval_key(args)
        if host is not None:
            self.egress.allow_for_session(host)

    async def execute(self, args: dict[str, object]) -> str:
        import httpx  # here, not at import: ~25 ms off a kernel's first %%agent cell

        url = args["url"]
        if not isinstance(url, str):
            raise ToolFailure("url must be a string")
        max_length = args.get("max_length", DEFAULT_MAX_LENGTH)
        if not isinstance(max_length, int) or not 1 <= max_length <= MAX_MAX_LENGTH:
            raise ToolFailure(f"max_length must be an integer from 1 to {MAX_MAX_LENGTH}")
        converting = False
        try:
            async with asyncio.timeout(self.timeout_s):
                fetched = await self._fetch(url)
                converting = True
                text, notes = await self._to_text(fetched)
        except (TimeoutError, httpx.TimeoutException):
            if converting:
                raise ToolFailure(
                    f"Timed out after {self.timeout_s:g} s: {url} was fetched, but turning its "
                    f"{len(fetched.body):,} bytes into text did not finish within the limit "
                    "(the limit covers fetching and converting)"
                ) from None
            raise ToolFailure(
                f"Timed out after {self.timeout_s:g} s fetching {url} (the limit covers "
                "connecting, redirects and reading the whole body)"
            ) from None
        return self._present(fetched, text, notes, max_length)

    # -- network ---------------------------------------------------------------------------

    async def _fetch(self, url: str) -> _Fetched:
        import httpx

        target = parse_target(url)
        first_host = normal_host(target.host)
        visited = {str(target.url)}
        redirects: list[str] = []
        came_from: FetchTarget | None = None
        while True:
            host = normal_host(target.host)
            beyond = self.egress.beyond_limit(host)
            if beyond is not None:
                raise URLRefusedError(f"Refused: {beyond}")
            if came_from is not None and host != first_host and not self.egress.allows(host):
                raise URLRefusedError(
                    f"{came_from.url} redirected to {target.url}: Refused: {host} is a host not "
                    "allowed in this session; fetch that URL with web_fetch itself, and the user "
                    "is asked"
                )
            try:
                address = await self.policy.pin(target)
            except URLRefusedError as exc:
                if came_from is None:
                    raise
                raise URLRefusedError(
                    f"{came_from.url} redirected to {target.url}: {exc}"
                ) from None
            headers = {
                "Host": target.host_header,
                "User-Agent": USER_AGENT,
                "Accept": "text/html, application/json, text/*;q=0.9, */*;q=0.5",
                "Accept-Encoding": "gzip, deflate",
            }
            extensions: dict[str, Any] = {}
            if target.scheme == "https" and target.literal_ip is None:
                extensions["sni_hostname"] = target.host.rstrip(".")
            # A fresh client per hop: no connection is reused across hosts, no proxy from the
            # environment (trust_env=False), no automatic redirects.
            async with httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                timeout=self.timeout_s,
                verify=self.ssl_context if self.ssl_context is not None else True,
            ) as client:
                request = client.build_request(
                    "GET", target.url_for_address(address), headers=headers, extensions=extensions
                )
                try:
                    response = await client.send(request, stream=True)
                except httpx.TimeoutException:
                    raise
                except httpx.HTTPError as exc:
                    raise ToolFailure(
                        f"Could not fetch {target.url}: {type(exc).__name__}: {exc}"
                    ) from None
                try:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_STATUSES and location:
                        came_from = target
                        target = self._next_hop(target, location, visited, redirects)
                        continue
                    return await self._read(target, response, redirects)
                finally:
                    await response.aclose()

    def _next_hop(
        self, target: FetchTarget, location: str, visited: set[str], redirects: list[str]
    ) -> FetchTarget:
        import httpx

        if len(redirects) >= MAX_REDIRECTS:
            raise ToolFailure(
                f"Too many redirects: {target.url} redirected more than {MAX_REDIRECTS} times"
            )
        try:
            check_url_characters(location)
            try:
                next_url = target.url.join(location)
            except httpx.InvalidURL as exc:
                raise URLRefusedError(f"The URL is not valid: {exc}") from None
            next_target = parse_target(str(next_url))
        except URLRefusedError as exc:
            raise URLRefusedError(f"{target.url} redirected to {location!r}: {exc}") from None
        key = str(next_target.url)
        if key in visited:
            raise ToolFailure(f"Redirect loop: {target.url} redirected back to {key}")
        visited.add(key)
        redirects.append(key)
        return next_target

    async def _read(
        self, target: FetchTarget, response: httpx.Response, redirects: list[str]
    ) -> _Fetched:
        content_type = response.headers.get("content-type")
        kind = classify_content_type(content_type)
        if not 200 <= response.status_code < 300:
            detail = ""
            if kind != "binary":
                body, _ = await self._read_body(response, ERROR_BODY_CHARS * 4)
                snippet = web_convert.decode(body, response.charset_encoding).strip()[
                    :ERROR_BODY_CHARS
                ]
                if snippet:
                    detail = f"\nResponse body (start):\n{snippet}"
            raise ToolFailure(
                f"HTTP {response.status_code} {response.reason_phrase} from {target.url}{detail}"
            )
        if kind == "binary":
            raise ToolFailure(
                f"{target.url} returned binary content (Content-Type: {content_type}); "
                "web_fetch only returns text, HTML and JSON"
            )
        body, truncated = await self._read_body(response, self.max_body_bytes)
        return _Fetched(
            str(target.url), content_type, response.charset_encoding, body, truncated, redirects
        )

    @staticmethod
    async def _read_body(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
        """At most ``cap`` bytes of the (inflated) body, read as a stream; and if it was cut."""
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        inflater: Any = None
        if encoding in ("gzip", "x-gzip"):
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            # Officially zlib-wrapped; some servers send raw deflate. Decided on the first bytes.
            inflater = _LazyDeflate()
        elif encoding not in ("", "identity"):
            raise ToolFailure(f"Unsupported Content-Encoding {encoding!r}")
        buffer = bytearray()
        async for chunk in response.aiter_raw():
            if inflater is not None:
                try:
                    chunk = inflater.decompress(chunk, cap + 1 - len(buffer))
                except zlib.error as exc:
                    raise ToolFailure(f"Could not decompress the response: {exc}") from None
            buffer += chunk
            if len(buffer) > cap:
                del buffer[cap:]
                return bytes(buffer), True
        return bytes(buffer), False

    # -- presentation ----------------------------------------------------------------------

    async def _to_text(self, fetched: _Fetched) -> tuple[str, list[str]]:
        """The body as text, and notes on what was cut; HTML and JSON are converted in a child
        process (see ``web_convert``) that is killed if the deadline passes."""
        kind = classify_content_type(fetched.content_type)
        if kind == "unknown":
            if _looks_binary(fetched.body):
                raise ToolFailure(
                    f"{fetched.url} returned binary content (no Content-Type); "
                    "web_fetch only returns text, HTML and JSON"
                )
            kind = "text"
        notes: list[str] = []
        if kind == "html":
            html, cut = web_convert.cut_html(fetched.body, self.max_html_bytes)
            if cut:
                notes.append(
                    f"The page's HTML is larger than {self.max_html_bytes:,} bytes; only "
                    f"the first {len(html):,} bytes were converted."
                )
            header = {"kind": "html", "charset": fetched.charset}
            text = await convert_in_child(header, html, fetched.url)
        elif kind == "json" and not fetched.body_truncated:
            header = {"kind": "json", "charset": fetched.charset}
            text = await convert_in_child(header, fetched.body, fetched.url)
        else:
            text = web_convert.decode(fetched.body, fetched.charset)
        return text, notes

    def _present(self, fetched: _Fetched, text: str, notes: list[str], max_length: int) -> str:
        notes = list(notes)
        if fetched.redirects:
            notes.insert(0, f"Redirected to {fetched.url}.")
        if fetched.body_truncated:
            notes.append(
                f"The response is larger than {self.max_body_bytes:,} bytes; only the first "
                f"{self.max_body_bytes:,} bytes were read."
            )
        if len(text) > max_length:
            notes.append("Pass a larger max_length to see more.")
            text = f"{text[:max_length]}\n\n{cut_mark(len(text) - max_length, len(text))}"
        if not text.strip():
            text = "(empty response)"
        if notes:
            text += "\n\n[" + " ".join(notes) + "]"
        return text


# -- the conversion child --------------------------------------------------------------------------

#: The converter runs as a script (``python -I``: no user site, no PYTHON* variables, no
#: current directory on the path), so it imports nothing of the package and starts fast.
CONVERTER_SCRIPT = web_convert.__file__


async def start_converter() -> asyncio.subprocess.Process:
    """Start one conversion child: the only place it is started.

    It parses a page whoever the model was sent to wrote, so it runs in the reader sandbox
    (bubblewrap, where it works): no network, no workspace, nothing of the filesystem but what
    Python and its libraries need. Its environment is empty: it needs nothing of the user's, and
    must not see their keys.
    """
    # python -I finds its library (html_to_markdown) under these prefixes only
    visible = [sys.prefix, sys.base_prefix, os.path.dirname(CONVERTER_SCRIPT)]
    await probe_off_the_loop()
    return await start_reader(
        reader_sandbox([sys.executable, "-I", CONVERTER_SCRIPT], None, extra=visible),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={},
    )


async def convert_in_child(header: dict[str, Any], body: bytes, url: str) -> str:
    """``body`` converted by a child process; it is killed if this is cancelled (the deadline)."""
    process = await start_converter()
    try:
        stdout, stderr = await process.communicate(json.dumps(header).encode() + b"\n" + body)
    finally:
        if process.returncode is None:
            await end_reader(process)
    if process.returncode != 0:
        if process.returncode is not None and process.returncode < 0:
            reason = f"the converter process was ended by signal {-process.returncode}"
        else:
            reason = stderr.decode("utf-8", errors="replace").strip()[-500:] or "no reason given"
        raise ToolFailure(f"Could not turn the page from {url} into text: {reason}")
    return stdout.decode("utf-8", errors="replace")
