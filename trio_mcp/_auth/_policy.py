"""The endpoint policy: where the OAuth client may send a request, a secret or a user.

One function, `check_endpoint()`, decides it for every URL that discovery yields (the
protected-resource metadata URL of a challenge, the issuer, and the authorization, token,
registration, device authorization and revocation endpoints): ``https``, or ``http`` on a
loopback host (``127.0.0.0/8``, ``::1``, ``localhost``: local development, as the MCP spec
allows). Anything else is an [`AuthDiscoveryError`][trio_mcp.auth.AuthDiscoveryError] before a byte
is sent, so a hostile server never makes this client post a secret, a PKCE verifier or a refresh
token over plain HTTP, nor open a ``file:`` or ``javascript:`` URL in a browser.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from .._exceptions import AuthDiscoveryError

__all__ = ["check_endpoint", "is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a URL's host, without brackets) is this machine's loopback."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint(url: str, what: str) -> str:
    """Return ``url`` if the policy allows it, else raise.

    Args:
        url: A URL found by discovery (peer input).
        what: What it is, for the message (``"the token endpoint"``).

    Raises:
        AuthDiscoveryError: ``url`` is not ``https`` with a host, nor ``http`` on a
            loopback host.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - a malformed port raises ValueError here
    except ValueError:
        host, parts = "", None
    scheme = parts.scheme.lower() if parts is not None else ""
    if host and (scheme == "https" or (scheme == "http" and is_loopback_host(host))):
        return url
    shown = url if len(url) <= 200 else url[:200] + "..."
    raise AuthDiscoveryError(
        f"{what} {shown!r} is not an https URL (plain http is allowed only on a loopback "
        "host, for local development); refusing to use it: the authorization server's "
        "operator must serve it over HTTPS"
    )
