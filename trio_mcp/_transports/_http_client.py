"""The HTTP client a transport sends through: the options, TLS, proxies, our pool, httpx2.

`HTTPOptions` are the options every HTTP transport takes; `make_client()` turns
them into the client its requests go through:

* Clients trio_mcp creates share one SSL context per process (made on the first
  ``https://`` use), so opening a transport does not load the CA bundle again; a client
  for an ``http://`` URL gets a context with no CA certificates at all (any TLS connection
  it tried would fail verification); ``ssl_context=`` replaces both
  (`ssl_context_for()`).
* Their connection layer is trio_mcp's own lean HTTP/1.1 pool
  (`H11Transport`, under httpx's API): at most
  `POOL_CONNECTIONS` connections in use, more requests waiting their turn first
  come, first served, up to 20 idle ones kept alive for 5 s (more for 1 s after a burst).
* The proxies of the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
  ``NO_PROXY``, read by httpx's own rules) are honoured: the URLs a proxy takes go through
  httpx's proxy transports, mounted on the client; the others through the pool.
* A caller's own client (``httpx.AsyncClient`` or ``httpx2.AsyncClient``) is used as it is
  configured: its timeouts, limits, hooks, transports, proxies and HTTP/2 (the sender
  only lifts the read time limit of response streams). An ``httpx2.Auth`` with no client
  gets an ``httpx2.AsyncClient`` of ours; `is_httpx2()` tells the libraries apart
  without importing httpx2, and `auth_for()` adapts an auth flow of one library to a
  client of the other.

httpx is imported only when a client is made, so ``import trio_mcp`` stays light.
"""

from __future__ import annotations

import functools
import ssl
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast
from urllib.parse import urlsplit

from .._exceptions import TransportError
from .._resilience import CircuitBreaker, RetryPolicy

if TYPE_CHECKING:
    import httpx

    from ._h11pool import H11Transport

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "KEEPALIVE_EXPIRY",
    "POOL_CONNECTIONS",
    "POOL_KEEPALIVE",
    "HTTPOptions",
    "auth_for",
    "is_httpx2",
    "make_client",
    "ssl_context_for",
]

DEFAULT_MAX_MESSAGE_SIZE: Final = 64 * 1024 * 1024
"""The default maximum size of one incoming message (64 MiB)."""

POOL_CONNECTIONS: Final = 100
"""The connection pool of a client trio_mcp creates: at most this many connections in use, and at
most this many requests waiting for their response headers at once (the rest wait their turn in
trio); idle ones are kept as httpx keeps them (20, for 5 s)."""
POOL_KEEPALIVE: Final = 20
"""How many idle connections the pool keeps alive, and for how long (httpx's defaults)."""
KEEPALIVE_EXPIRY: Final = 5.0


@dataclass(frozen=True, eq=False)
class HTTPOptions:
    """The options every HTTP transport takes (see the parameters classes built on it).

    Args:
        url: The URL of the server's endpoint.
        headers: Extra headers sent with every HTTP request (e.g. an API key).
        auth: Any `httpx.Auth` (or ``httpx2.Auth``).
        client: An `httpx.AsyncClient` (or ``httpx2.AsyncClient``) to use, as it is
            configured; the caller owns (and closes) it.
        timeout: Seconds to connect, to write a request, and to get a pooled connection
            (a client of ours; your own ``client`` keeps its own timeouts).
        max_message_size: The largest message accepted from the server, in bytes.
        retry: Retries of failed connection attempts.
        breaker: A circuit breaker every HTTP request goes through.
        ssl_context: The TLS settings of ``https://`` connections (default: the system's
            CA certificates, verified); with your own ``client``, configure it there.
    """

    url: str
    _: KW_ONLY
    headers: Mapping[str, str] | None = None
    auth: httpx.Auth | None = None
    client: httpx.AsyncClient | None = None
    timeout: float = 30.0
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    retry: RetryPolicy | None = None
    breaker: CircuitBreaker | None = field(default=None, repr=False)
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)


@functools.cache
def _verified_context() -> ssl.SSLContext:
    import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

    return httpx.create_ssl_context()


@functools.cache
def _context_without_cas() -> ssl.SSLContext:
    # Verification stays on, with nothing to verify against: TLS through it always fails.
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def ssl_context_for(url: str) -> ssl.SSLContext:
    """The SSL context for a client trio_mcp creates for ``url``, shared process-wide.

    An ``https://`` URL gets httpx's default verified context, created on first use; any
    other URL gets a context without CA certificates (loading none; a TLS connection
    through it would fail verification, never succeed unverified).

    Args:
        url: The URL the client is for.
    """
    if urlsplit(url).scheme.lower() == "https":
        return _verified_context()
    return _context_without_cas()


def make_client(options: HTTPOptions) -> tuple[httpx.AsyncClient, bool, H11Transport | None]:
    """The user's client (not ours to close), or a new one (ours) on trio_mcp's own pool.

    A client of ours honours the proxies of the environment as httpx does (``HTTP_PROXY``,
    ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, read by httpx's own rules): the proxied
    URL patterns are mounted on httpx's proxy transports, every other URL goes to
    trio_mcp's pool. With an ``httpx2.Auth`` and no client, the client is an
    ``httpx2.AsyncClient`` (its own transport, its own reading of the environment).

    Args:
        options: The transport's parameters.

    Returns:
        The client; whether the transport owns (closes) it; and the pool requests may go
        to directly, skipping the client's per-request machinery (only for a client of
        ours, with no auth flow, whose URL no proxy takes: the client would add nothing
        but cookies, which the direct path handles too).

    Raises:
        TransportError: A proxy needs an extra that is not installed (``socks5://``).
        ValueError: Both ``client`` and ``ssl_context`` were given.
    """
    if options.client is not None:
        if options.ssl_context is not None:
            raise ValueError(
                "give either client= or ssl_context=, not both: configure TLS on your client "
                "(httpx.AsyncClient(verify=context))"
            )
        return options.client, False, None
    context = options.ssl_context or ssl_context_for(options.url)
    if is_httpx2(options.auth):
        httpx2 = _httpx2()
        try:
            client2 = httpx2.AsyncClient(
                timeout=httpx2.Timeout(options.timeout, read=None),
                follow_redirects=False,
                verify=context,
            )
        except ImportError as exc:  # e.g. a socks5:// proxy without socksio
            raise TransportError(f"the HTTP client cannot be made: {exc}") from exc
        return cast("httpx.AsyncClient", client2), True, None
    import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

    from ._h11pool import H11Transport  # (it imports httpx and h11: here, for the same reason)

    timeout = httpx.Timeout(options.timeout, read=None)
    mounts = _environment_mounts(options.ssl_context)
    if mounts is None:  # an httpx that reads the environment otherwise: it does it all
        try:
            client = httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=context)
        except ImportError as exc:
            raise TransportError(f"{_SOCKS_MISSING}: {exc}") from exc
        return client, True, None
    pool = H11Transport(
        ssl_context=context,
        max_connections=POOL_CONNECTIONS,
        max_keepalive_connections=POOL_KEEPALIVE,
        keepalive_expiry=KEEPALIVE_EXPIRY,
    )
    try:
        client = httpx.AsyncClient(
            timeout=timeout, follow_redirects=False, verify=context, transport=pool, mounts=mounts
        )
    except (httpx.InvalidURL, ValueError) as exc:  # e.g. NO_PROXY=.::1 (httpx refuses it too)
        raise TransportError(
            f"the proxy settings of the environment (NO_PROXY...) are not usable: {exc}"
        ) from exc
    reached = _transport_for(client, options.url)
    pool.proxied = reached is not None and reached is not pool
    direct = options.auth is None and reached is pool
    return client, True, pool if direct else None


_SOCKS_MISSING: Final = "a SOCKS proxy needs pip install 'trio-mcp[socks]'"


def _environment_mounts(
    ssl_context: ssl.SSLContext | None,
) -> dict[str, httpx.AsyncBaseTransport | None] | None:
    """httpx's proxy transports for the proxies of the environment, as httpx mounts them.

    ``None`` marks a ``NO_PROXY`` pattern: its URLs go to the client's own transport.
    Returns None when this httpx does not say how it reads the environment (then a client
    without trio_mcp's pool lets httpx apply it, rather than ignoring a proxy).
    """
    import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

    try:
        from httpx._utils import get_environment_proxies
    except ImportError:  # (httpx 0.27 and 0.28 have it)
        import urllib.request  # (only on this rare path)

        return None if urllib.request.getproxies() else {}
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {}
    for pattern, proxy in get_environment_proxies().items():
        if proxy is None:
            mounts[pattern] = None
            continue
        try:
            mounts[pattern] = httpx.AsyncHTTPTransport(
                verify=ssl_context or _verified_context(), proxy=httpx.Proxy(proxy)
            )
        except ImportError as exc:  # socks5:// without socksio
            raise TransportError(
                f"the proxy {_without_credentials(proxy)} of the environment: {_SOCKS_MISSING}"
            ) from exc
        except (ValueError, httpx.InvalidURL) as exc:  # an unknown scheme, a malformed URL
            raise TransportError(
                f"the proxy {_without_credentials(proxy)} of the environment is not a usable "
                "http://, https:// or socks5:// proxy URL"
            ) from exc
    return mounts


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _transport_for(client: httpx.AsyncClient, url: str) -> object:
    """The transport ``client`` sends ``url``'s requests through."""
    import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

    choose: Callable[[httpx.URL], object] | None = getattr(client, "_transport_for_url", None)
    if choose is None:  # (an httpx without it: take no shortcut)
        return None
    return choose(httpx.URL(url))


def auth_for(client: object, auth: Any) -> Any:
    """``auth`` as ``client``'s library takes it: adapted when it is of the other library.

    An auth flow of the other library (``trio_mcp.OAuth``, an httpx flow, with an
    ``httpx2.AsyncClient``; an ``httpx2.Auth`` with an httpx client) is driven through a
    thin `Auth` of the client's library: it sets headers on the request it is given
    and re-sends it, reading the responses, through either library's objects alike. (A flow
    that sends requests it builds itself needs a client of its own library.)
    """
    if auth is None or is_httpx2(client) == is_httpx2(auth):
        return auth
    return _adapter_class("httpx2" if is_httpx2(client) else "httpx")(auth)


@functools.cache
def _adapter_class(library: str) -> Any:
    """The adapter `Auth` class of ``library`` (``"httpx"`` or ``"httpx2"``)."""
    if library == "httpx":
        import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

        base: Any = httpx.Auth
    else:
        base = _httpx2().Auth

    class _CrossLibraryAuth(base):  # type: ignore[misc]
        """A foreign auth flow, driven through this library's client."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner
            self.requires_request_body = inner.requires_request_body
            self.requires_response_body = inner.requires_response_body

        async def async_auth_flow(self, request: Any) -> AsyncGenerator[Any, Any]:
            flow = self._inner.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    return _CrossLibraryAuth


def _httpx2() -> Any:
    """The httpx2 module, once an httpx2 object was seen (so it is imported already).

    Looked up, not imported by name: trio_mcp type-checks and runs without httpx2 (the
    ``httpx2`` extra; Python 3.11+).
    """
    return sys.modules["httpx2"]


def is_httpx2(thing: object) -> bool:
    """Whether ``thing`` is an httpx2 object (told without importing httpx2)."""
    return type(thing).__module__.partition(".")[0] == "httpx2" or any(
        cls.__module__.partition(".")[0] == "httpx2" for cls in type(thing).__mro__
    )
