"""Redirects: trio_mcp never sends anything to an origin the caller did not name.

A redirect to another origin (scheme, host or port) fails with a
[`TransportError`][trio_mcp.TransportError] that names both origins; use the final URL instead.
Same-origin ``307``/``308`` redirects are followed with the same method, headers and body
(and same-origin ``301``/``302``/``303`` for a GET), at most `MAX_REDIRECTS` in a row.
This holds for a caller's own `httpx.AsyncClient` too: every request is sent with
``follow_redirects=False`` and the redirect is followed by the sender
(``_http_sender.py``), which asks `redirect_target()` where it may go.

`origin_of()` is what an origin is here; the session also caches a server's era under
it, and the HTTP+SSE endpoint must keep it.
"""

from __future__ import annotations

import logging
from typing import Final
from urllib.parse import urlsplit

from .._exceptions import TransportError
from .._redact import display_url

__all__ = ["MAX_REDIRECTS", "REDIRECT_STATUSES", "origin_of", "redirect_target"]

logger = logging.getLogger("trio_mcp.http")

MAX_REDIRECTS: Final = 5
"""How many same-origin redirects in a row one request follows."""

_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# Redirects that keep the method and body; the others turn any method but GET into a GET.
_KEEP_METHOD: Final = frozenset({307, 308})
REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
"""The redirect statuses (with a ``Location``, a response of one is a redirect)."""


def origin_of(url: str) -> str:
    """The origin of a URL: ``scheme://host:port`` with the default port filled in.

    It is the key the session caches a server's era under, and what redirects and the
    HTTP+SSE endpoint must keep.

    Args:
        url: An absolute URL.

    Raises:
        ValueError: The URL cannot be parsed (e.g. ``http://[::1``).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = _DEFAULT_PORTS.get(scheme, 0)
    return f"{scheme}://{host}:{port}"


def redirect_target(method: str, url: str, status: int, location: str) -> str:
    """Where a redirect may be followed to; raise if it must not be.

    Args:
        method: The redirected request's method.
        url: The redirected request's URL.
        status: The redirect's HTTP status.
        location: Its ``Location`` header.

    Raises:
        TransportError: The redirect goes to another origin, would turn the request into
            a GET, or its ``Location`` is malformed.
    """
    import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

    try:
        target = str(httpx.URL(url).join(location))
        from_origin, to_origin = origin_of(url), origin_of(target)
    except (httpx.InvalidURL, ValueError) as exc:
        raise TransportError(
            f"{display_url(url)} answered {method} with HTTP {status} and a malformed Location "
            f"{location!r}: {exc}"
        ) from exc
    if from_origin != to_origin:
        raise TransportError(
            f"{display_url(url)} redirected {method} (HTTP {status}) to "
            f"{display_url(target)}, on another origin "
            f"({from_origin} -> {to_origin}); trio_mcp does not follow cross-origin "
            "redirects, so that headers, session ids and credentials never leave the "
            f"origin you named. Use the final URL ({display_url(target)}) instead."
        )
    if status not in _KEEP_METHOD and method != "GET":
        raise TransportError(
            f"{display_url(url)} redirected {method} with HTTP {status}, which would turn it "
            f"into a GET; trio_mcp follows only 307 and 308 redirects of a {method}. "
            f"Use the final URL ({display_url(target)}) instead."
        )
    logger.debug("following the HTTP %d redirect of %s %s to %s", status, method, url, target)
    return target
