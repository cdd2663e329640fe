"""Checking URLs before a user is asked to open them (URL-mode elicitation).

[`check_url()`][trio_mcp.urls.check_url] parses with a real WHATWG URL parser (`ada-url
<https://pypi.org/project/ada-url/>`_, the ``urls`` extra, imported on first use), so a URL
is judged exactly as a browser will read it: ``https://0x7f.1/``, ``https://2130706433/``
and ``https://017700000001/`` are all ``127.0.0.1``. It never resolves or fetches
anything. [`url_elicitation_handler()`][trio_mcp.urls.url_elicitation_handler] builds an elicitation
handler on it: a URL that fails the check never reaches the application's consent callback unless
the application says so, and trio_mcp never opens a URL itself.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast
from urllib.parse import unquote_to_bytes

from . import types as t
from ._exceptions import UnsafeURLError

__all__ = [
    "URLCheck",
    "URLConsent",
    "URLPolicy",
    "check_url",
    "url_elicitation_handler",
]

logger = logging.getLogger("trio_mcp")

# Characters of other scripts that render like Latin letters (the usual homograph set).
_LATIN_LOOKALIKES = frozenset(
    "аеорсухіјѕԁԛԝӏһԍкmптвнʏ"  # Cyrillic (and a few others that pass for Latin)
    "αεοριυνκτχγβηζ"  # Greek
    "օսոհցզ"  # Armenian
)


def _domains(values: Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise TypeError("give domains as a list of strings, not one string")
    return frozenset(_domain_entry(value) for value in values)


def _domain_entry(value: object) -> str:
    """One allow or deny list entry, normalised like a host (or ValueError naming it)."""
    if not isinstance(value, str):
        raise TypeError(f"a domain must be a str, not {type(value).__name__}")
    if "*" in value:
        raise ValueError(
            f"{value!r}: no wildcards in a domain list; write the bare domain "
            "(it covers the domain and all its subdomains)"
        )
    if any(c in value for c in "/:@?#[] \t\r\n") and not _is_ip(value.strip().strip("[]")):
        raise ValueError(f"{value!r} is not a domain name (give a host, not a URL)")
    try:
        return _normalise_host(value.strip())
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid domain name: {exc}") from None


# Dots a URL parser (UTS 46) reads as "." in a host.
_DOTS: Final = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
_LABEL: Final = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_IPV4_PART: Final = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


def _ipv4_number(part: str) -> int | None:
    if not _IPV4_PART.fullmatch(part):
        return None
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part[0] == "0":
        return int(part, 8)
    return int(part)


def _whatwg_ipv4(host: str) -> str | None:
    """The dotted form of a host in any IPv4 notation a browser accepts, else None.

    Decimal (``2130706433``), octal (``0177.0.0.1``), hex (``0x7f.1``) and short forms
    (``127.1``) are all IPv4 (WHATWG URL, "IPv4 parser"); a host whose last label is a
    number is never a domain.
    """
    parts = host.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not parts or not parts[-1] or not (parts[-1].isdigit() or parts[-1][:2].lower() == "0x"):
        return None
    if len(parts) > 4:
        raise ValueError("a numeric host with more than four parts")
    numbers = [_ipv4_number(part) for part in parts]
    if any(number is None for number in numbers):
        raise ValueError("a host ending in a number is not a valid IPv4 address")
    values = cast("list[int]", numbers)
    if any(value > 255 for value in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise ValueError("an IPv4 address part out of range")
    address = values[-1]
    for index, value in enumerate(values[:-1]):
        address += value << (8 * (3 - index))
    return str(ipaddress.IPv4Address(address))


def _normalise_host(host: str) -> str:
    """The one form every host check uses: lower-case ASCII, no trailing dot, IPs canonical.

    Percent-escapes are decoded, full-width and ideographic dots become ``.``, names go
    through IDNA, a trailing root dot is dropped, every IPv4 notation becomes dotted
    decimal and IPv6 is compressed (in brackets).

    Raises:
        ValueError: The host is not a valid host name or address.
    """
    try:
        host = unquote_to_bytes(host).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("percent-escapes that are not UTF-8") from None
    host = unicodedata.normalize("NFKC", host.translate(_DOTS)).translate(_DOTS).strip()
    if host.startswith("[") and host.endswith("]"):
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            raise ValueError("not a valid IPv6 address") from None
    if ":" in host:
        try:
            return f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            raise ValueError("not a valid host") from None
    host = host.lower()
    while host.endswith("."):
        host = host[:-1]
    if not host:
        raise ValueError("an empty host")
    labels: list[str] = []
    for label in host.split("."):
        if not label:
            raise ValueError("an empty label")
        if not label.isascii():
            try:
                label = label.encode("idna").decode("ascii")
            except UnicodeError as exc:
                raise ValueError(f"not a valid internationalized name: {exc}") from None
        labels.append(label)
    host = ".".join(labels)
    dotted = _whatwg_ipv4(host)
    if dotted is not None:
        return dotted
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError("not a valid host name")
    return host


@dataclass(frozen=True, slots=True)
class URLPolicy:
    """What [`check_url()`][trio_mcp.urls.check_url] accepts. The defaults are strict.

    Attributes:
        allow_http: Accept ``http://`` as well as ``https://`` (never any other scheme).
        allow_private: Accept every non-global address (loopback, private, link-local,
            carrier-grade NAT, unspecified, multicast, reserved, documentation, and IPv6
            forms embedding such an IPv4 address) and ``localhost`` names.
        allow_private_names: Accept single-label hosts (``intranet``) and names under the
            special-use and private-use suffixes (``.local``, ``.internal``,
            ``.home.arpa``, ``.localdomain``, ``.lan``, ``.home``, ``.corp``, ``.test``,
            ``.invalid``, ``.example``): names that only a local resolver answers.
        allow_credentials: Accept a user name or password in the URL.
        max_length: The longest URL accepted, in characters (input and normalized form).
        max_subdomain_depth: How many labels a host name may have beyond its last two
            (``a.b.example.com`` has depth 2). This is no public-suffix lookup.
        allow_domains: When given, only these hosts pass. An entry is a bare domain
            (``example.com``), which covers itself and all its subdomains, or an IP
            address, which covers itself; entries are normalised like hosts (case, IDNA,
            trailing dot, IPv4 notation).
        deny_domains: These hosts never pass (same syntax as ``allow_domains``).

    Raises:
        ValueError: A limit is not positive, or an entry of a domain list is not a bare
            domain or IP address (wildcards such as ``*.example.com`` are refused: write
            ``example.com``); the message names the entry.
        TypeError: A domain list is one string instead of a list.
    """

    allow_http: bool = False
    allow_private: bool = False
    allow_credentials: bool = False
    max_length: int = 2048
    max_subdomain_depth: int = 5
    allow_domains: Iterable[str] | None = None
    deny_domains: Iterable[str] = ()
    allow_private_names: bool = False
    _allow: frozenset[str] | None = field(init=False, repr=False, compare=False)
    _deny: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_length < 1 or self.max_subdomain_depth < 0:
            raise ValueError("URLPolicy: max_length must be positive, max_subdomain_depth >= 0")
        object.__setattr__(self, "_allow", _domains(self.allow_domains))
        object.__setattr__(self, "_deny", _domains(self.deny_domains) or frozenset())


_DEFAULT_POLICY = URLPolicy()


@dataclass(frozen=True, slots=True)
class URLCheck:
    """The verdict of [`check_url()`][trio_mcp.urls.check_url].

    Attributes:
        url: The URL as given.
        normalized: The URL as a browser reads it (WHATWG serialization), or None when it
            does not parse.
        display_domain: The host to show the user for consent: the Unicode form of an
            internationalized name, or its ASCII (punycode) form when it mixes scripts or
            looks like another name; an IP address as such.
        warnings: Reasons for caution that do not block (mixed scripts, confusables, ...).
        error: Why the URL is blocked, or None.
    """

    url: str
    normalized: str | None
    display_domain: str | None
    warnings: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the URL passed (it may still carry warnings)."""
        return self.error is None

    def raise_for_error(self) -> URLCheck:
        """Raise if the URL is blocked; otherwise return this check.

        Raises:
            UnsafeURLError: [`error`][trio_mcp.testing.Faults.error] is set; the exception carries
                this check.
        """
        if self.error is not None:
            raise UnsafeURLError(f"unsafe URL {self.url[:200]!r}: {self.error}", self)
        return self


def _ada() -> Any:
    try:
        import ada_url  # pyright: ignore[reportMissingTypeStubs]
    except ImportError as exc:
        raise ModuleNotFoundError(
            "checking URLs needs ada-url: pip install 'trio-mcp[urls]'"
        ) from exc
    return ada_url


def _script(char: str) -> str | None:
    """The script of a letter (its Unicode name's first word), None for digits and '-'."""
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def _idn_warnings(unicode_host: str) -> list[str]:
    warnings: list[str] = []
    for label in unicode_host.split("."):
        scripts = {s for s in map(_script, label) if s is not None}
        if len(scripts) > 1:
            warnings.append(f"the label {label!r} mixes scripts ({', '.join(sorted(scripts))})")
        elif (
            scripts
            and scripts != {"LATIN"}
            and all(c in _LATIN_LOOKALIKES or not c.isalpha() for c in label)
        ):
            warnings.append(f"the label {label!r} looks like Latin letters but is not")
    return warnings


def _in(host: str, domains: frozenset[str]) -> bool:
    return any(host == domain or host.endswith("." + domain) for domain in domains)


# Suffixes only a local resolver answers (RFC 6761, 6762, 8375; ICANN's 2024 reservation
# of .internal; and the private TLDs routers and corporate networks use in practice).
_PRIVATE_SUFFIXES: Final = frozenset({
    "local",  # RFC 6762: multicast DNS
    "internal",  # ICANN, 2024: reserved for private use
    "home.arpa",  # RFC 8375: home networks
    "localdomain",  # de facto: the local host or LAN
    "lan",
    "home",
    "corp",
    "intranet",  # de facto private TLDs (ICANN SSAC 113 name collisions)
    "test",
    "invalid",
    "example",  # RFC 6761: never delegated in the global DNS
})  # fmt: skip


# Not globally reachable (IANA special-purpose registries) although older Pythons'
# ``is_global`` says so: the same verdict on every Python version.
_NOT_GLOBAL: Final = tuple(
    ipaddress.ip_network(network)
    for network in (
        "192.0.0.0/24",  # IETF protocol assignments
        "64:ff9b:1::/48",  # local-use NAT64 (RFC 8215)
        "2002::/16",  # 6to4 (RFC 7526 deprecates it; judged by what it embeds, too)
        "3fff::/20",  # documentation (RFC 9637)
        "5f00::/16",  # SRv6 SIDs (RFC 9602)
        "fec0::/10",  # site-local (deprecated)
    )
)


def _is_global(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if not address.is_global or address.is_multicast:
        return False
    return not any(address in network for network in _NOT_GLOBAL)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries, by any of the known embeddings."""
    found: list[ipaddress.IPv4Address] = []
    value = int(address)
    low = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:  # ::ffff:a.b.c.d
        found.append(address.ipv4_mapped)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d (IPv4-compatible; not :: or ::1)
        found.append(low)
    if value >> 32 == 0xFFFF0000:  # ::ffff:0:a.b.c.d (SIIT, RFC 2765)
        found.append(low)
    if value >> 32 == 0x0064FF9B << 64:  # 64:ff9b::a.b.c.d (NAT64, RFC 6052)
        found.append(low)
    if value >> 80 == 0x0064FF9B0001:  # 64:ff9b:1::/48 (local-use NAT64, RFC 8215)
        found.append(low)
    if address.sixtofour is not None:  # 2002:aabb:ccdd::/48 (6to4)
        found.append(address.sixtofour)
    if address.teredo is not None:  # 2001:0::/32 (server, client)
        found.extend(address.teredo)
    return found


def _address_error(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address is not allowed: it, or an IPv4 address it embeds, is not global."""
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    if isinstance(address, ipaddress.IPv6Address):
        candidates.extend(_embedded_ipv4(address))  # the embedded address names the danger
    candidates.append(address)
    for candidate in candidates:
        if _is_global(candidate):
            continue
        kinds = [
            ("loopback", candidate.is_loopback),
            ("unspecified", candidate.is_unspecified),
            ("link-local", candidate.is_link_local),
            ("multicast", candidate.is_multicast),
            ("private", candidate.is_private),
            ("reserved", candidate.is_reserved),
        ]
        kind = next((kind for kind, flagged in kinds if flagged), "non-global")
        if candidate is address:
            return f"{kind} address {address}"
        return f"{kind} address {candidate} (embedded in {address})"
    return None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _is_ip(host: str) -> bool:
    return _ip(host) is not None


def check_url(url: str, policy: URLPolicy | None = None) -> URLCheck:
    """Check a URL before anyone is asked to open it. Nothing is resolved or fetched.

    The host is normalised once (WHATWG parsing, percent-decoding, IDNA, full-width and
    ideographic dots, the trailing root dot, every IPv4 notation) and every rule judges
    that form. An address passes only if it is global (``ipaddress``'s ``is_global``, plus
    the IANA special-purpose blocks older Pythons miss) and not multicast, and so is every
    IPv4 address it embeds (IPv4-mapped and -compatible, NAT64, 6to4, Teredo). Names are
    not resolved: a public name that resolves to a private address (DNS rebinding,
    ``127.0.0.1.nip.io``) passes; see the docs for what to do instead.

    Args:
        url: The URL, as the server sent it.
        policy: What to accept (default: ``URLPolicy()``, https only, public hosts only).

    Returns:
        The verdict: `URLCheck.error` says why a URL is blocked (it cannot be parsed,
        wrong scheme, credentials, a non-global address, a local or single-label name, too
        long or too deep, denied or not allowed); call
            [`URLCheck.raise_for_error()`][trio_mcp.urls.URLCheck.raise_for_error]
        to raise [`UnsafeURLError`][trio_mcp.urls.UnsafeURLError].

    Raises:
        TypeError: ``url`` is not a string.
        ModuleNotFoundError: ``ada-url`` is not installed (the ``urls`` extra).
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"check_url() needs a str, not {type(url).__name__}")
    policy = policy or _DEFAULT_POLICY
    ada = _ada()
    if len(url) > policy.max_length:
        return URLCheck(url, None, None, error=f"longer than {policy.max_length} characters")
    try:
        parsed = ada.URL(url)
    except ValueError:
        return URLCheck(url, None, None, error="not a valid URL")
    normalized = cast(str, parsed.href)
    raw_host = cast(str, parsed.hostname)
    warnings: list[str] = []
    display: str | None = raw_host.lower() or None

    def blocked(reason: str) -> URLCheck:
        return URLCheck(url, normalized, display, tuple(warnings), reason)

    scheme = cast(str, parsed.protocol).rstrip(":")
    if scheme != "https" and not (scheme == "http" and policy.allow_http):
        allowed = "https or http" if policy.allow_http else "https"
        return blocked(f"the scheme {scheme!r} is not allowed (only {allowed})")
    if len(normalized) > policy.max_length:
        return blocked(f"longer than {policy.max_length} characters once normalized")
    if (parsed.username or parsed.password) and not policy.allow_credentials:
        return blocked("the URL embeds a user name or password")
    if not raw_host:
        return blocked("the URL has no host")
    try:
        host = _normalise_host(raw_host)
    except ValueError as exc:
        return blocked(f"the host is not valid: {exc}")
    display = host
    address = _ip(host)
    if address is None:
        if "xn--" in host:
            try:
                unicode_host = cast(str, ada.idna_to_unicode(host))
            except ValueError:
                unicode_host = host
            idn = _idn_warnings(unicode_host)
            warnings.extend(idn)
            display = host if idn else unicode_host
        labels = host.split(".")
        depth = max(0, len(labels) - 2)
        if depth > policy.max_subdomain_depth:
            return blocked(
                f"the host has {depth} subdomain levels (at most {policy.max_subdomain_depth})"
            )
        if not policy.allow_private and _in(host, frozenset({"localhost"})):
            return blocked("localhost is a loopback name")
        if not policy.allow_private_names:
            if len(labels) == 1:
                return blocked(
                    f"{host!r} is a single-label (local network) name"
                    " (URLPolicy(allow_private_names=True) accepts it)"
                )
            if _in(host, _PRIVATE_SUFFIXES):
                suffix = next(s for s in _PRIVATE_SUFFIXES if _in(host, frozenset({s})))
                return blocked(
                    f"names under .{suffix} are special-use or local names"
                    " (URLPolicy(allow_private_names=True) accepts them)"
                )
    elif not policy.allow_private:
        reason = _address_error(address)
        if reason is not None:
            return blocked(reason)
    if _in(host, policy._deny):  # pyright: ignore[reportPrivateUsage]
        return blocked(f"{host} is on the deny list")
    allow = policy._allow  # pyright: ignore[reportPrivateUsage]
    if allow is not None and not _in(host, allow):
        return blocked(f"{host} is not on the allow list")
    return URLCheck(url, normalized, display, tuple(warnings))


URLConsent = Callable[
    [t.ElicitRequestURLParams, URLCheck, Any],
    Awaitable["bool | Literal['accept', 'decline', 'cancel']"],
]
"""The application's consent callback: show ``params.message`` and ``check.display_domain`` to the
user and, if they agree, open ``check.normalized`` (the library never opens a URL). Return
``True``/``"accept"`` when the user agreed, ``False``/``"decline"`` when not, ``"cancel"`` when they
dismissed the prompt."""


def url_elicitation_handler(
    consent: URLConsent,
    *,
    policy: URLPolicy | None = None,
    form: Callable[[t.ElicitRequestFormParams, Any], Awaitable[Any]] | None = None,
    consent_to_unsafe: bool = False,
) -> Callable[[Any, Any], Awaitable[dict[str, Any]]]:
    """An elicitation handler that checks every URL before asking for consent.

    Use it with ``open_mcp_session(elicitation=..., elicitation_modes=("form", "url"))``.
    Each URL-mode request is checked with [`check_url()`][trio_mcp.urls.check_url]; a URL that fails
    is declined without calling ``consent`` (and logged), unless ``consent_to_unsafe`` is true, in
    which case ``consent`` sees the failing check and decides.

    Args:
        consent: Awaited with ``(params, check, ctx)``; see `URLConsent`.
        policy: The [`URLPolicy`][trio_mcp.urls.URLPolicy] (default: strict).
        form: The handler for form-mode requests; without one they are declined.
        consent_to_unsafe: Pass URLs that fail the check to ``consent`` too.

    Returns:
        The handler, for the ``elicitation=`` option.
    """

    async def handle(params: Any, ctx: Any) -> dict[str, Any]:
        if isinstance(params, t.ElicitRequestFormParams):
            if form is None:
                return {"action": "decline"}
            answer: Any = await form(params, ctx)
            return cast("dict[str, Any]", answer)
        url_params = cast(t.ElicitRequestURLParams, params)
        check = check_url(url_params.url, policy)
        if not check.ok and not consent_to_unsafe:
            logger.warning(
                "declined URL elicitation from %s: %s",
                getattr(ctx, "server_name", None) or "the server",
                check.error,
            )
            return {"action": "decline"}
        verdict = await consent(url_params, check, ctx)
        if verdict is True or verdict == "accept":
            return {"action": "accept"}
        if verdict == "cancel":
            return {"action": "cancel"}
        return {"action": "decline"}

    return handle
