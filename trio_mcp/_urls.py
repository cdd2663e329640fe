"""Checking URLs before a user is asked to open them (URL-mode elicitation).

:func:`check_url` parses with a real WHATWG URL parser (`ada-url
<https://pypi.org/project/ada-url/>`_, the ``urls`` extra, imported on first use), so a URL
is judged exactly as a browser will read it: ``https://0x7f.1/``, ``https://2130706433/``
and ``https://017700000001/`` are all ``127.0.0.1``. It never resolves or fetches
anything. :func:`url_elicitation_handler` builds an elicitation handler on it: a URL that
fails the check never reaches the application's consent callback unless the application
says so, and trio_mcp never opens a URL itself.
"""

from __future__ import annotations

import ipaddress
import logging
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from . import _types as t
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
    return frozenset(_ascii_domain(value) for value in values)


def _ascii_domain(value: str) -> str:
    value = value.strip().lower().rstrip(".")
    if not value:
        raise ValueError("an empty domain in an allow or deny list")
    try:
        return value.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"{value!r} is not a valid domain name: {exc}") from exc


@dataclass(frozen=True, slots=True)
class URLPolicy:
    """What :func:`check_url` accepts. The defaults are strict.

    Attributes:
        allow_http: Accept ``http://`` as well as ``https://`` (never any other scheme).
        allow_private: Accept loopback, private, link-local, unspecified, multicast and
            reserved addresses, and ``localhost`` names.
        allow_credentials: Accept a user name or password in the URL.
        max_length: The longest URL accepted, in characters (input and normalized form).
        max_subdomain_depth: How many labels a host name may have beyond its last two
            (``a.b.example.com`` has depth 2). This is no public-suffix lookup.
        allow_domains: When given, only these domains and their subdomains pass.
        deny_domains: These domains and their subdomains never pass.

    Raises:
        ValueError: A limit is not positive, or a domain in a list is not a domain.
    """

    allow_http: bool = False
    allow_private: bool = False
    allow_credentials: bool = False
    max_length: int = 2048
    max_subdomain_depth: int = 5
    allow_domains: Iterable[str] | None = None
    deny_domains: Iterable[str] = ()
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
    """The verdict of :func:`check_url`.

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
            UnsafeURLError: :attr:`error` is set; the exception carries this check.
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


def _address_error(host: str) -> str | None:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    kinds = [
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ]
    for kind, flagged in kinds:
        if flagged:
            return f"{kind} address {address}"
    return None


def check_url(url: str, policy: URLPolicy | None = None) -> URLCheck:
    """Check a URL before anyone is asked to open it. Nothing is resolved or fetched.

    Args:
        url: The URL, as the server sent it.
        policy: What to accept (default: ``URLPolicy()``, https only, public hosts only).

    Returns:
        The verdict: :attr:`URLCheck.error` says why a URL is blocked (it cannot be parsed,
        wrong scheme, credentials, a private address, too long or too deep, denied or not
        allowed); call :meth:`URLCheck.raise_for_error` to raise :class:`UnsafeURLError`.

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
    host = cast(str, parsed.hostname).lower()
    display: str | None = host or None
    warnings: list[str] = []

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
    if not host:
        return blocked("the URL has no host")
    address = _address_error(host)
    is_ip = address is not None or _is_ip(host)
    if not is_ip:
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
        if not policy.allow_private and (host == "localhost" or host.endswith(".localhost")):
            return blocked("localhost is a loopback name")
    elif address is not None and not policy.allow_private:
        return blocked(address)
    if _in(host, policy._deny):  # pyright: ignore[reportPrivateUsage]
        return blocked(f"{host} is on the deny list")
    allow = policy._allow  # pyright: ignore[reportPrivateUsage]
    if allow is not None and not _in(host, allow):
        return blocked(f"{host} is not on the allow list")
    return URLCheck(url, normalized, display, tuple(warnings))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


#: The application's consent callback: show ``params.message`` and ``check.display_domain``
#: to the user and, if they agree, open ``check.normalized`` (the library never opens a
#: URL). Return ``True``/``"accept"`` when the user agreed, ``False``/``"decline"`` when not,
#: ``"cancel"`` when they dismissed the prompt.
URLConsent = Callable[
    [t.ElicitRequestURLParams, URLCheck, Any],
    Awaitable["bool | Literal['accept', 'decline', 'cancel']"],
]


def url_elicitation_handler(
    consent: URLConsent,
    *,
    policy: URLPolicy | None = None,
    form: Callable[[t.ElicitRequestFormParams, Any], Awaitable[Any]] | None = None,
    consent_to_unsafe: bool = False,
) -> Callable[[Any, Any], Awaitable[dict[str, Any]]]:
    """An elicitation handler that checks every URL before asking for consent.

    Use it with ``open_mcp_session(elicitation=..., elicitation_modes=("form", "url"))``.
    Each URL-mode request is checked with :func:`check_url`; a URL that fails is declined
    without calling ``consent`` (and logged), unless ``consent_to_unsafe`` is true, in which
    case ``consent`` sees the failing check and decides.

    Args:
        consent: Awaited with ``(params, check, ctx)``; see :data:`URLConsent`.
        policy: The :class:`URLPolicy` (default: strict).
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
