"""The address policy of ``web_fetch``: which URLs may be fetched, and at which IP address.

A model that reads untrusted text can be told to fetch ``http://169.254.169.254/`` (cloud
credentials), ``http://localhost:8888/`` (the user's own Jupyter server) or a router's admin page.
This module stops that *before any connection is made*:

1. ``parse_target`` reads the URL with the parser the HTTP client uses (``httpx.URL``), checks that
   ``urllib.parse`` reads the same host and port (so the two libraries cannot be played off against
   each other), and refuses non-HTTP schemes, user-info (``http://a@b/``), backslashes, whitespace
   and control characters. Numeric hosts are canonicalised with ``inet_aton`` semantics, so
   ``2130706433``, ``0x7f000001``, ``127.1`` and ``0177.0.0.1`` are all seen as ``127.0.0.1``.
2. ``NetworkPolicy.pin`` resolves the host (``getaddrinfo`` in a thread) and refuses it if *any* of
   its addresses is not publicly routable (``non_public_reason``), unless the user allowed private
   networks or listed this host. It returns the checked address; the caller connects to exactly
   that address (sending the original ``Host`` header and TLS server name), so a DNS answer that
   changes between the check and the connection ("DNS rebinding") cannot redirect the request.

Every redirect hop goes through both steps again.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from ...errors import URLRefusedError

if TYPE_CHECKING:
    import httpx  # imported where a URL is parsed: not before web_fetch's first call

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``False`` (public addresses only), ``True`` (any address) or hosts allowed besides public ones.
PrivateNetworkSetting: TypeAlias = bool | Iterable[str]

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL_LENGTH = 8192


# -- which addresses are public ----------------------------------------------------------------

_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")
_IPV4_SPECIAL = ipaddress.IPv4Network("192.0.0.0/24")
_BENCHMARKING = ipaddress.IPv4Network("198.18.0.0/15")
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
_DISCARD_ONLY = ipaddress.IPv6Network("100::/64")


def non_public_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address, or ``None`` if it is one.

    Deliberately stricter than ``ipaddress``'s ``is_global`` alone: multicast, CGNAT and the
    IPv6 forms that embed an IPv4 address (mapped, compatible, 6to4, NAT64) are judged by what
    they carry.
    """
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return "an IPv6 address with a zone index"
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = non_public_reason(embedded)
            return None if reason is None else f"{reason} (embedded in the IPv6 address)"
        if address.teredo is not None:
            return "a Teredo tunnel address"
        if address in _NAT64_LOCAL:
            return "a local-use NAT64 address"
        if address in _UNIQUE_LOCAL:
            return "a private (unique local) address"
        if address.is_site_local:
            return "a site-local address"
        if address in _DISCARD_ONLY:
            return "a discard-only address"
    else:
        if address in _THIS_NETWORK:
            return "an unspecified ('this network') address"
        if address in _CGNAT:
            return "a carrier-grade NAT (shared) address"
        if address in _IPV4_SPECIAL or address in _BENCHMARKING:
            return "a special-purpose address"
        if address == ipaddress.IPv4Address("255.255.255.255"):
            return "the broadcast address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (such as the cloud metadata service)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private-network address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "an address that is not publicly routable"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # "::a.b.c.d", deprecated
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _unmapped(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


# -- reading hosts and URLs -----------------------------------------------------------------------

_NUMERIC_LOOKING = re.compile(r"[0-9a-fx.]+")
_DIGITS_AND_DOTS = re.compile(r"[0-9.]+")
_HOSTNAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?")
_FORBIDDEN_CHARACTERS = re.compile(r"[\x00-\x20\x7f\\]")


def canonical_ip(host: str) -> IPAddress | None:
    """The address a numeric host means, the way resolvers read it; ``None`` for a name.

    ``127.1``, ``2130706433``, ``0x7f000001`` and ``0177.0.0.1`` all mean ``127.0.0.1``
    (``inet_aton`` rules). Raises ``URLRefusedError`` for a host made of digits and dots that is no
    valid address, since libraries disagree about such hosts.
    """
    text = host.lower().strip("[]")
    if "%" in text:
        if ":" in text:
            raise URLRefusedError(f"Host {host!r}: IPv6 zone indexes are not allowed")
        return None  # not an address; the host-name check refuses it
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if _NUMERIC_LOOKING.fullmatch(text.rstrip(".")):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text.rstrip(".")))
        except OSError:
            if _DIGITS_AND_DOTS.fullmatch(text):
                raise URLRefusedError(
                    f"Host {host!r} looks numeric but is not a valid IP address"
                ) from None
    return None


@dataclass(frozen=True, slots=True)
class FetchTarget:
    """A URL that passed the syntax checks, with what the connection needs."""

    url: httpx.URL
    scheme: str
    #: ASCII host (IDNA-encoded, lower case, no brackets) as sent in ``Host`` and SNI.
    host: str
    port: int
    #: The address the host *is*, when it is an IP literal or a numeric form of one.
    literal_ip: IPAddress | None

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    def url_for_address(self, address: IPAddress) -> httpx.URL:
        """The same URL, with the host replaced by the pinned address."""
        return self.url.copy_with(host=str(address))


def check_url_characters(url: str) -> None:
    """Refuse backslashes, whitespace and control characters, which parsers treat differently."""
    bad = _FORBIDDEN_CHARACTERS.search(url)
    if bad is not None:
        what = "a backslash" if bad.group() == "\\" else "whitespace or a control character"
        raise URLRefusedError(
            f"The URL contains {what}, which URL parsers read differently; "
            "percent-encode it or remove it"
        )


def parse_target(url: str) -> FetchTarget:
    """Check ``url`` syntactically; raises ``URLRefusedError`` with a reason the model can use."""
    if not isinstance(url, str) or not url.strip():
        raise URLRefusedError("The URL is empty")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise URLRefusedError(f"The URL is longer than {MAX_URL_LENGTH} characters")
    check_url_characters(url)
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in DEFAULT_PORTS:
        shown = f"{scheme}: URLs" if scheme else "relative URLs"
        raise URLRefusedError(f"Only http:// and https:// URLs can be fetched, not {shown}")
    import httpx

    try:
        parsed = httpx.URL(url)
        split = urllib.parse.urlsplit(url)
        split_port = split.port
    except (httpx.InvalidURL, ValueError) as exc:
        raise URLRefusedError(f"The URL is not valid: {exc}") from None
    if parsed.userinfo or "@" in split.netloc:
        raise URLRefusedError(
            "URLs with a user name or password (user@host) are not allowed; "
            "remove the part before '@'"
        )
    try:
        host = parsed.raw_host.decode("ascii").lower()
    except UnicodeDecodeError:
        raise URLRefusedError("The URL's host is not valid") from None
    if not host:
        raise URLRefusedError("The URL has no host")
    literal_ip = canonical_ip(host)
    if literal_ip is None and not _HOSTNAME.fullmatch(host):
        raise URLRefusedError(f"The URL's host {host!r} is not a valid host name")
    port = parsed.port or DEFAULT_PORTS[scheme]
    # The client's parser and the standard library's must agree on where the request goes.
    split_host = (split.hostname or "").lower()
    same_host = split_host == host or (
        _idna_or_none(split_host) == host
        or (literal_ip is not None and _safe_canonical(split_host) == literal_ip)
    )
    if not same_host or (split_port or DEFAULT_PORTS[scheme]) != port:
        raise URLRefusedError("The URL is ambiguous: URL parsers disagree about its host or port")
    return FetchTarget(parsed, scheme, host, port, literal_ip)


def _idna_or_none(host: str) -> str | None:
    import httpx

    try:
        return httpx.URL(f"http://{host}/").raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError):
        return None


def _safe_canonical(host: str) -> IPAddress | None:
    try:
        return canonical_ip(host)
    except URLRefusedError:
        return None


# -- the policy ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllowedHost:
    """One entry of an allow-list: a host name or address, optionally with a port."""

    host: str
    port: int | None
    address: IPAddress | None

    @classmethod
    def parse(cls, entry: str) -> AllowedHost:
        text = entry.strip().lower()
        if not text:
            raise ValueError("An empty entry in allow_private_network")
        host, port = text, None
        if text.startswith("["):
            close = text.find("]")
            if close < 0:
                raise ValueError(f"Bad allow_private_network entry {entry!r}")
            host, rest = text[1:close], text[close + 1 :]
            if rest:
                if not rest.startswith(":"):
                    raise ValueError(f"Bad allow_private_network entry {entry!r}")
                port = _parse_port(rest[1:], entry)
        elif text.count(":") == 1:
            host, port_text = text.split(":")
            port = _parse_port(port_text, entry)
        host = host.rstrip(".")
        try:
            address = canonical_ip(host)
        except URLRefusedError as exc:
            raise ValueError(f"Bad allow_private_network entry {entry!r}: {exc}") from None
        if address is None:
            host = _idna_or_none(host) or host
        return cls(str(address) if address is not None else host, port, address)

    def matches(self, target: FetchTarget, address: IPAddress) -> bool:
        if self.port is not None and self.port != target.port:
            return False
        if self.address is not None:
            return _unmapped(self.address) == _unmapped(address)
        return self.host == target.host.rstrip(".")


def _parse_port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"Bad port in allow_private_network entry {entry!r}")
    return int(text)


class NetworkPolicy:
    """Decides which addresses ``web_fetch`` may connect to."""

    def __init__(self, allow_private_network: PrivateNetworkSetting = False) -> None:
        if isinstance(allow_private_network, bool):
            self.allow_all = allow_private_network
            self.allowed: tuple[AllowedHost, ...] = ()
        elif isinstance(allow_private_network, str):
            raise TypeError(
                "allow_private_network must be True, False or a list of hosts, not a string"
            )
        else:
            self.allow_all = False
            self.allowed = tuple(AllowedHost.parse(entry) for entry in allow_private_network)

    def __repr__(self) -> str:
        setting: object = self.allow_all if not self.allowed else [str(a) for a in self.allowed]
        return f"NetworkPolicy(allow_private_network={setting!r})"

    def refusal(self, target: FetchTarget, address: IPAddress) -> str | None:
        """Why connecting to ``address`` for ``target`` is refused, or ``None`` if it is allowed."""
        if self.allow_all:
            return None
        reason = non_public_reason(address)
        if reason is None:
            return None
        if any(entry.matches(target, address) for entry in self.allowed):
            return None
        return reason

    def check_address(self, target: FetchTarget, address: IPAddress) -> None:
        reason = self.refusal(target, address)
        if reason is not None:
            shown = target.host if str(address) == target.host else f"{target.host} ({address})"
            raise URLRefusedError(
                f"Refused to fetch {target.host_header}: {shown} is {reason}. Only public "
                "internet addresses may be fetched unless the user allows private networks "
                "(allow_private_network)."
            )

    async def pin(self, target: FetchTarget) -> IPAddress:
        """Resolve ``target``'s host, check every address, return the one to connect to."""
        if target.literal_ip is not None:
            addresses = [target.literal_ip]
        else:
            addresses = await resolve(target.host, target.port)
        for address in addresses:
            self.check_address(target, address)
        return addresses[0]


async def resolve(host: str, port: int) -> list[IPAddress]:
    """All addresses ``host`` resolves to for TCP, in the resolver's order (no duplicates)."""
    try:
        infos = await asyncio.to_thread(
            socket.getaddrinfo, host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except socket.gaierror as exc:
        raise URLRefusedError(f"Could not resolve host {host!r}: {exc.strerror}") from None
    addresses: list[IPAddress] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = ipaddress.ip_address(str(sockaddr[0]))
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise URLRefusedError(f"Host {host!r} has no IPv4 or IPv6 address")
    return addresses
