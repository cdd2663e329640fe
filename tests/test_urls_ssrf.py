"""check_url against SSRF spellings: one normalised host, global addresses only (issue 26)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp.urls import URLPolicy, check_url

LOOPBACK_NAMES = [
    "https://localhost./",
    "https://foo.localhost./",
    "https://localhost%2e/",
    "https://localhost%2E/",
    "https://localhost\u3002/",
    "https://localhost\uff0e/",
    "https://localhost\uff61/",
    "https://foo\u3002localhost\uff0e/",
    "https://LOCALHOST../",
]


@pytest.mark.parametrize("url", LOOPBACK_NAMES)
def test_localhost_spellings_are_blocked(url: str) -> None:
    check = check_url(url)
    assert not check.ok, url
    assert "localhost" in (check.error or "") or "not valid" in (check.error or "")


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.com./",
        "https://EVIL.com./",
        "https://evil.com%2e/",
        "https://www.evil.com\u3002/",
        "https://evil\uff0ecom/",
    ],
)
def test_trailing_and_odd_dots_do_not_defeat_the_deny_list(url: str) -> None:
    for entry in ("evil.com", "evil.com.", "EVIL.COM", "evil\u3002com"):
        check = check_url(url, URLPolicy(deny_domains=[entry]))
        assert "deny list" in (check.error or ""), (url, entry, check)
    assert check_url(url, URLPolicy(allow_domains=["evil.com."])).ok


NON_GLOBAL = [
    ("https://100.64.0.1/", "100.64.0.1"),  # carrier-grade NAT, tailnets
    ("https://100.100.100.100/", "100.100.100.100"),
    ("https://192.0.0.8/", "192.0.0.8"),
    ("https://192.0.2.1/", "192.0.2.1"),  # documentation
    ("https://198.18.0.1/", "198.18.0.1"),  # benchmarking
    ("https://240.0.0.1/", "240.0.0.1"),
    ("https://224.0.0.251/", "224.0.0.251"),
    ("https://[2002:7f00:1::]/", "127.0.0.1"),  # 6to4
    ("https://[2002:a00:1::1]/", "10.0.0.1"),
    ("https://[::127.0.0.1]/", "127.0.0.1"),  # IPv4-compatible
    ("https://[::a9fe:a9fe]/", "169.254.169.254"),
    ("https://[64:ff9b::127.0.0.1]/", "127.0.0.1"),  # NAT64
    ("https://[64:ff9b::10.0.0.1]/", "10.0.0.1"),
    ("https://[::ffff:0:127.0.0.1]/", "127.0.0.1"),  # SIIT
    ("https://[2001:0:808:808:0:0:80ff:fffe]/", "127.0.0.1"),  # Teredo client
    ("https://[ff0e::1]/", "ff0e::1"),
    ("https://[2001:db8::1]/", "2001:db8::1"),
    ("https://2130706433/", "127.0.0.1"),
    ("https://0177.0.0.1/", "127.0.0.1"),
    ("https://0x7f.1/", "127.0.0.1"),
    ("https://127.1/", "127.0.0.1"),
    ("https://0X7F.0X0.0X0.0X1/", "127.0.0.1"),
    ("https://10.1/", "10.0.0.1"),
    ("https://%31%32%37.0.0.1/", "127.0.0.1"),
    ("https://127\u30020\uff0e0\uff611/", "127.0.0.1"),
]


@pytest.mark.parametrize(("url", "shown"), NON_GLOBAL)
def test_non_global_addresses_are_blocked(url: str, shown: str) -> None:
    check = check_url(url)
    assert not check.ok, check
    assert shown in (check.error or ""), check
    assert check_url(url, URLPolicy(allow_private=True)).ok


def test_global_addresses_and_embeddings_pass() -> None:
    assert check_url("https://8.8.8.8/").ok
    assert check_url("https://[2606:4700:4700::1111]/").ok
    assert check_url("https://[64:ff9b::8.8.8.8]/").ok  # NAT64 of a global address
    assert not check_url("https://[2002:808:808::1]/").ok  # 6to4 is deprecated: blocked
    assert check_url("https://134744072/").ok  # 8.8.8.8 in decimal


PRIVATE_NAMES = [
    "https://intranet/",
    "https://intranet./",
    "https://printer.local/",
    "https://db.internal/",
    "https://nas.home.arpa/",
    "https://box.localdomain/",
    "https://router.lan/",
    "https://site.test/",
    "https://x.invalid/",
    "https://www.example/",
    "https://printer.local./",
    "https://printer\u3002local/",
]


@pytest.mark.parametrize("url", PRIVATE_NAMES)
def test_private_and_special_use_names_are_blocked_by_default(url: str) -> None:
    check = check_url(url)
    assert not check.ok, check
    assert check_url(url, URLPolicy(allow_private_names=True)).ok
    assert not check_url("https://localhost/", URLPolicy(allow_private_names=True)).ok


def test_ordinary_names_still_pass() -> None:
    for url in ("https://example.com/", "https://local.example.com/", "https://testing.io/"):
        assert check_url(url).ok, url


@pytest.mark.parametrize(
    "entry",
    ["*.evil.example", "*", "evil..com", "https://evil.com/", "evil.com/path", "", " ", "-x.com"],
)
def test_malformed_domain_entries_raise_naming_the_entry(entry: str) -> None:
    with pytest.raises(ValueError) as info:
        URLPolicy(deny_domains=[entry])
    assert repr(entry) in str(info.value)
    with pytest.raises(ValueError):
        URLPolicy(allow_domains=[entry])


def test_domain_entries_cover_subdomains_and_ip_entries_are_exact() -> None:
    policy = URLPolicy(deny_domains=["evil.com", "8.8.8.8"])
    assert not check_url("https://a.b.evil.com/", policy).ok
    assert check_url("https://notevil.com/", policy).ok
    assert not check_url("https://134744072/", policy).ok  # 8.8.8.8 as a number
    assert check_url("https://8.8.4.4/", policy).ok


# -- property: no spelling of a non-global address passes -----------------------------------

_NETWORKS_V4 = [
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    )
]  # fmt: skip
_NETWORKS_V6 = [
    ipaddress.IPv6Network(n)
    for n in ("::1/128", "::/128", "fc00::/7", "fe80::/10", "2001:db8::/32", "ff00::/8", "100::/64")
]
_DOTS = [".", "\u3002", "\uff0e", "\uff61", "%2e", "%2E"]


@st.composite
def _v4(draw: st.DrawFn) -> ipaddress.IPv4Address:
    net = draw(st.sampled_from(_NETWORKS_V4))
    offset = draw(st.integers(0, net.num_addresses - 1))
    return net[offset]


def _number(draw: st.DrawFn, value: int) -> str:
    style = draw(st.sampled_from(["dec", "oct", "hex", "HEX"]))
    if style == "oct":
        return "0" + format(value, "o")
    if style == "hex":
        return "0x" + format(value, "x")
    if style == "HEX":
        return "0X" + format(value, "X")
    return str(value)


@st.composite
def _v4_spelling(draw: st.DrawFn) -> str:
    value = int(draw(_v4()))
    octets = [(value >> shift) & 0xFF for shift in (24, 16, 8, 0)]
    shape = draw(st.integers(1, 4))  # how many parts: 1 = one number, 4 = dotted
    parts = octets[: shape - 1]
    rest = value & ((1 << (8 * (5 - shape))) - 1)
    numbers = [_number(draw, p) for p in parts] + [_number(draw, rest)]
    host = ""
    for index, number in enumerate(numbers):
        if index:
            host += draw(st.sampled_from(_DOTS))
        host += number
    if draw(st.booleans()):
        host += draw(st.sampled_from(_DOTS[:4]))  # trailing root dot
    if draw(st.booleans()):  # percent-encode some characters
        chars = [f"%{ord(c):02X}" if c.isascii() and draw(st.booleans()) else c for c in host]
        host = "".join(chars)
    return host


@st.composite
def _v6_spelling(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        net = draw(st.sampled_from(_NETWORKS_V6))
        address = net[draw(st.integers(0, min(net.num_addresses, 2**64) - 1))]
    else:
        v4 = int(draw(_v4()))
        kind = draw(st.sampled_from(["mapped", "compat", "siit", "nat64", "6to4", "teredo"]))
        base = {
            "mapped": 0xFFFF << 32,
            "compat": 0,
            "siit": 0xFFFF0000 << 32,
            "nat64": 0x64FF9B << 96,
        }
        if kind in base:
            value = base[kind] | v4
            if kind == "compat" and value <= 1:
                value = 2
        elif kind == "6to4":
            value = (0x2002 << 112) | (v4 << 80) | draw(st.integers(0, 2**80 - 1))
        else:  # Teredo: 2001:0:server:flags:port:~client, the server a global address
            server = int(ipaddress.IPv4Address("8.8.8.8"))
            value = (0x20010000 << 96) | (server << 64) | (v4 ^ 0xFFFFFFFF)
        address = ipaddress.IPv6Address(value)
        if kind in ("mapped", "compat", "siit", "nat64") and draw(st.booleans()):
            text = address.exploded.rsplit(":", 2)[0] + ":" + str(ipaddress.IPv4Address(v4))
            return "[" + (text.upper() if draw(st.booleans()) else text) + "]"
    text = draw(st.sampled_from([address.compressed, address.exploded]))
    return "[" + (text.upper() if draw(st.booleans()) else text) + "]"


@settings(deadline=None)  # examples: the profile's (tests/conftest.py)
@given(
    host=st.one_of(_v4_spelling(), _v6_spelling()),
    port=st.sampled_from(["", ":443", ":8080"]),
    scheme=st.sampled_from(["https", "HTTPS", "http"]),
)
def test_no_spelling_of_a_non_global_address_passes(host: str, port: str, scheme: str) -> None:
    url = f"{scheme}://{host}{port}/path"
    check = check_url(url, URLPolicy(allow_http=True))
    assert not check.ok, (url, check)


@settings(deadline=None)  # examples: the profile's (tests/conftest.py)
@given(
    name=st.sampled_from(["localhost", "a.localhost", "printer.local", "x.internal", "intranet"]),
    dot=st.sampled_from(_DOTS),
    trailing=st.sampled_from(["", ".", "\u3002", "%2e"]),
    upper=st.booleans(),
)
def test_no_spelling_of_a_local_name_passes(
    name: str, dot: str, trailing: str, upper: bool
) -> None:
    host = name.replace(".", dot) + trailing
    check = check_url(f"https://{host.upper() if upper else host}/")
    assert not check.ok, (host, check)
