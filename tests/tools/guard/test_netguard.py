"""The web_fetch address policy, decided without any network access (no DNS for public names)."""

from __future__ import annotations

import ipaddress

import pytest

from jupyter_agent.tools.guard.netguard import (
    AllowedHost,
    NetworkPolicy,
    URLRefusedError,
    canonical_ip,
    non_public_reason,
    parse_target,
)

PUBLIC = [
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700::1",
    "2001:4860:4860::8888",
    "64:ff9b::808:808",  # NAT64 form of 8.8.8.8
    "::ffff:93.184.216.34",  # IPv4-mapped public address
]

NOT_PUBLIC = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.31.255.255", "private"),
    ("192.168.0.1", "private"),
    ("169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.255", "carrier-grade NAT"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this network"),
    ("::", "unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("240.0.0.1", ""),  # reserved (class E); the exact wording varies by Python version
    ("255.255.255.255", "broadcast"),
    ("192.0.0.8", "special-purpose"),
    ("198.18.0.1", "special-purpose"),
    ("192.0.2.1", ""),  # documentation range
    ("fd00::1", "unique local"),
    ("fc00::1", "unique local"),
    ("fec0::1", "site-local"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::127.0.0.1", "loopback"),  # IPv4-compatible (deprecated)
    ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
    ("2002:a00:1::", "private"),  # 6to4 of 10.0.0.1
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
    ("64:ff9b:1::1", "NAT64"),
    ("2001::1", "Teredo"),
    ("2001:db8::1", ""),  # documentation range
    ("100::1", "discard"),
]


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_are_allowed(text: str) -> None:
    address = ipaddress.ip_address(text)
    assert non_public_reason(address) is None
    target = parse_target(f"http://{'[' + text + ']' if ':' in text else text}/")
    assert NetworkPolicy().refusal(target, address) is None


@pytest.mark.parametrize(("text", "word"), NOT_PUBLIC)
def test_non_public_addresses_are_refused(text: str, word: str) -> None:
    reason = non_public_reason(ipaddress.ip_address(text))
    assert reason is not None
    assert word in reason


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0x7F.0.0.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("0", "0.0.0.0"),
        ("[::1]", "::1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("example.com", None),
        ("cafe", None),
        ("deadbeef.example", None),
    ],
)
def test_numeric_hosts_are_canonicalised(host: str, address: str | None) -> None:
    expected = ipaddress.ip_address(address) if address is not None else None
    assert canonical_ip(host) == expected


@pytest.mark.parametrize("host", ["1.2.3.4.5", "999.1.1.1", "1..1"])
def test_malformed_numeric_hosts_are_refused(host: str) -> None:
    with pytest.raises(URLRefusedError, match="numeric"):
        canonical_ip(host)


@pytest.mark.parametrize(
    ("url", "word"),
    [
        ("file:///etc/passwd", "Only http"),
        ("ftp://example.com/", "Only http"),
        ("javascript:alert(1)", "Only http"),
        ("example.com/path", "Only http"),
        ("http://user@example.com/", "user name"),
        ("http://user:pass@example.com/", "user name"),
        ("http://a@b@example.com/", "user name"),
        ("http://example.com\\@evil.com/", "backslash"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com/\nHost: evil", "whitespace"),
        ("http://example.com\x00.evil/", "control"),
        ("http:///path", "no host"),
        ("http://ex%61mple.com/", "not a valid host name"),
        ("http://exa_mple!.com/", "not a valid host name"),
        ("http://[::1%25eth0]/", "zone"),
        ("http://example.com:99999/", "not valid"),
        ("", "empty"),
    ],
)
def test_malformed_urls_are_refused(url: str, word: str) -> None:
    with pytest.raises(URLRefusedError) as excinfo:
        parse_target(url)
    assert word in str(excinfo.value)


def test_parse_target_normalises_and_pins() -> None:
    target = parse_target("HTTPS://Example.COM:8443/a/b?q=1#frag")
    assert (target.scheme, target.host, target.port) == ("https", "example.com", 8443)
    assert target.literal_ip is None
    assert target.host_header == "example.com:8443"
    pinned = target.url_for_address(ipaddress.ip_address("93.184.216.34"))
    assert str(pinned) == "https://93.184.216.34:8443/a/b?q=1#frag"
    six = parse_target("http://example.com/").url_for_address(ipaddress.ip_address("2606:4700::1"))
    assert str(six) == "http://[2606:4700::1]/"
    assert parse_target("http://[2606:4700::1]/").host_header == "[2606:4700::1]"
    assert parse_target("http://münchen.de/").host == "xn--mnchen-3ya.de"
    assert parse_target("http://2130706433/").literal_ip == ipaddress.ip_address("127.0.0.1")


async def test_pin_of_a_public_literal_needs_no_dns() -> None:
    policy = NetworkPolicy()
    assert await policy.pin(parse_target("http://93.184.216.34/")) == ipaddress.ip_address(
        "93.184.216.34"
    )
    with pytest.raises(URLRefusedError, match="link-local"):
        await policy.pin(parse_target("http://169.254.169.254/"))


def test_allow_all() -> None:
    policy = NetworkPolicy(True)
    target = parse_target("http://10.0.0.1/")
    assert policy.refusal(target, ipaddress.ip_address("10.0.0.1")) is None


@pytest.mark.parametrize(
    ("entry", "host", "port"),
    [
        ("127.0.0.1", "127.0.0.1", None),
        ("localhost:8000", "localhost", 8000),
        ("LocalHost.", "localhost", None),
        ("[::1]:8080", "::1", 8080),
        ("::1", "::1", None),
        ("127.1:9000", "127.0.0.1", 9000),
    ],
)
def test_allow_list_entries(entry: str, host: str, port: int | None) -> None:
    allowed = AllowedHost.parse(entry)
    assert (allowed.host, allowed.port) == (host, port)


@pytest.mark.parametrize("entry", ["", "host:port", "host:0", "[::1", "[::1]x", "1.2.3.4.5"])
def test_bad_allow_list_entries(entry: str) -> None:
    with pytest.raises(ValueError):
        AllowedHost.parse(entry)


def test_allow_list_matches_host_port_and_address() -> None:
    policy = NetworkPolicy(["127.0.0.1:8000", "devbox.local", "[fd00::5]:443"])
    loopback = ipaddress.ip_address("127.0.0.1")
    assert policy.refusal(parse_target("http://127.0.0.1:8000/"), loopback) is None
    # The same address under another name (e.g. localhost) is the same service.
    assert policy.refusal(parse_target("http://localhost:8000/"), loopback) is None
    assert policy.refusal(parse_target("http://[::ffff:127.0.0.1]:8000/"), loopback) is None
    assert policy.refusal(parse_target("http://127.0.0.1:8001/"), loopback) is not None
    assert policy.refusal(parse_target("http://127.0.0.1/"), loopback) is not None
    # A listed name may resolve to any address, on any port.
    private = ipaddress.ip_address("192.168.1.20")
    assert policy.refusal(parse_target("http://devbox.local:3000/"), private) is None
    assert policy.refusal(parse_target("http://other.local/"), private) is not None
    unique_local = ipaddress.ip_address("fd00::5")
    assert policy.refusal(parse_target("https://[fd00::5]/"), unique_local) is None
    assert policy.refusal(parse_target("http://[fd00::5]/"), unique_local) is not None
    # Public addresses stay allowed with an allow-list.
    public = ipaddress.ip_address("93.184.216.34")
    assert policy.refusal(parse_target("http://93.184.216.34/"), public) is None


def test_a_bare_string_is_not_an_allow_list() -> None:
    with pytest.raises(TypeError):
        NetworkPolicy("127.0.0.1")  # type: ignore[arg-type]
