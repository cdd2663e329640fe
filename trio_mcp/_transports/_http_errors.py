"""HTTP error mapping: the one boundary where foreign errors become trio_mcp's own.

Everything that can go wrong sending an HTTP request or reading its response (httpx's and,
once it is in use, httpx2's exceptions, h11's through them, ``OSError`` and TLS errors,
``ValueError``) is converted here, by `convert_httpx_error()`, into a
[`TransportError`][trio_mcp.TransportError] or [`ConnectionClosed`][trio_mcp.ConnectionClosed]; the
caller raises the result ``from`` the original. A failed HTTP status becomes an
[`HTTPStatusError`][trio_mcp.HTTPStatusError] (`status_error()`, with the server's
``Retry-After``), and a JSON-RPC error in an HTTP 4xx body the matching
[`ServerError`][trio_mcp.ServerError] (`answer_in_body()`). `not_delivered()` tells
which failures surely never reached the server (so any request may be retried), and
`session_lost()` which answers say the server no longer knows the legacy session.

Neither httpx nor httpx2 is imported here before a transport is opened: ``import
trio_mcp`` stays light, and httpx2 is looked up only once something imported it.
"""

from __future__ import annotations

import email.utils
import functools
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final, cast

from msgspec import UNSET

from .._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    TransportError,
)
from .._jsonrpc import decode_envelope, decode_json, server_error_from_wire
from .._redact import display_url

if TYPE_CHECKING:
    import httpx

__all__ = [
    "answer_in_body",
    "convert_httpx_error",
    "httpx_errors",
    "not_delivered",
    "parse_retry_after",
    "session_lost",
    "status_error",
]

_LOST_SESSION_WORDINGS: Final = (
    "no valid session id",
    "server not initialized",
    "session not found",
    "invalid or expired session",
    "unknown session",
)
"""What servers say, in an HTTP 400, about a session id they do not know (lower case): the
TypeScript SDK's example servers (server-everything among them) and fastmcp and the official Python
SDK before 1.10 ("Bad Request: No valid session ID provided"), the TypeScript SDK's transport after
a restart ("Bad Request: Server not initialized"), and the words of the servers that answer 404
("Session not found", "Not Found: Invalid or expired session ID") when a proxy or framework turns
them into a 400."""
_PLAIN_LOST_MAX: Final = 200
"""A plain-text 400 body longer than this is not a short "session unknown" message."""


def parse_retry_after(value: str | None) -> float | None:
    """Parse a ``Retry-After`` header (delay seconds or an HTTP date) into seconds.

    Args:
        value: The header value, or ``None`` when there was none.

    Returns:
        The delay in seconds (0 for a date in the past), or ``None`` if there is none.
    """
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def status_error(response: httpx.Response, body: bytes) -> HTTPStatusError:
    """Build the [`HTTPStatusError`][trio_mcp.HTTPStatusError] for a failed response.

    The error's ``retry_after`` is the server's ``Retry-After`` in seconds, or ``None``;
    [`RetryPolicy`][trio_mcp.RetryPolicy] honours it.

    Args:
        response: The failed response.
        body: Its (possibly truncated) body.
    """
    error = HTTPStatusError(
        response.status_code, body.decode("utf-8", "replace"), str(response.request.url)
    )
    error.retry_after = parse_retry_after(response.headers.get("retry-after"))
    return error


def answer_in_body(error: MCPError, method: str | None) -> MCPError:
    """The error a request fails with: the JSON-RPC error in an HTTP 4xx body, if there is one.

    An HTTP 4xx (but 401 and 403, which are about credentials) whose body is a JSON-RPC
    error response is the server's answer to the request: it becomes the matching
    [`ServerError`][trio_mcp.ServerError], with the [`HTTPStatusError`][trio_mcp.HTTPStatusError] as
    its ``__cause__``. Any other error is returned as it is.

    Args:
        error: Why the request failed.
        method: The request's method.
    """
    if not isinstance(error, HTTPStatusError):
        return error
    status = error.status_code
    if not 400 <= status < 500 or status in (401, 403):
        return error
    if not error.body.lstrip().startswith("{"):
        return error
    try:
        message = decode_envelope(error.body.encode())
    except ProtocolError:
        return error
    if message.error is UNSET:
        return error
    wire = message.error
    answer = server_error_from_wire(wire.code, wire.message, wire.data, method=method)
    answer.__cause__ = error
    return answer


def session_lost(error: MCPError) -> bool:
    """Whether a failed request says the server does not know the session id it carried.

    HTTP 404 is the spec's answer to an expired or unknown session. HTTP 400 counts only
    when its body says so in the words real servers use (see ``_LOST_SESSION_WORDINGS``):
    the JSON-RPC error message of a JSON body, or a short plain-text body. Any other 400
    (a malformed request, a bad header) is not a lost session. The caller checks that
    the request did carry a session id.

    Args:
        error: Why the request failed.
    """
    if not isinstance(error, HTTPStatusError):
        return False
    if error.status_code == 404:
        return True
    if error.status_code != 400:
        return False
    text = error.body.strip()
    if text.startswith("{"):
        try:
            decoded = decode_json(text.encode(), "an HTTP 400 body")
        except ProtocolError:
            return False
        inner: object = (
            cast("dict[str, Any]", decoded).get("error") if isinstance(decoded, dict) else None
        )
        message: object = (
            cast("dict[str, Any]", inner).get("message") if isinstance(inner, dict) else None
        )
        if not isinstance(message, str):
            return False
        text = message
    elif len(text) > _PLAIN_LOST_MAX:
        return False
    lowered = text.lower()
    return any(wording in lowered for wording in _LOST_SESSION_WORDINGS)


def _libraries() -> tuple[Any, ...]:
    """httpx, and httpx2 once anything imported it (an httpx2 object cannot exist before)."""
    import httpx  # (here, not at the top: importing trio_mcp does not import httpx)

    httpx2 = sys.modules.get("httpx2")
    return (httpx,) if httpx2 is None else (httpx, httpx2)


@functools.cache
def _errors_of(libraries: tuple[Any, ...]) -> tuple[type[Exception], ...]:
    errors: list[type[Exception]] = []
    for library in libraries:
        errors += [library.HTTPError, library.InvalidURL, library.StreamError]
    return (*errors, OSError, ValueError)


def _kinds(name: str, *more: str) -> tuple[type[Exception], ...]:
    """The exception classes of these names in httpx and (if loaded) httpx2."""
    return tuple(getattr(library, kind) for library in _libraries() for kind in (name, *more))


def httpx_errors() -> tuple[type[Exception], ...]:
    """The exceptions sending a request or reading a response may raise, to be converted.

    httpx's and, once it is in use, httpx2's: both map to the same trio_mcp exceptions.
    """
    return _errors_of(_libraries())


def convert_httpx_error(exc: Exception, url: str, doing: str) -> MCPError:
    """Turn an httpx or httpx2 (or ``OSError``, ``ValueError``) exception into the library's own.

    The caller raises the result ``from exc``.

    Args:
        exc: One of `httpx_errors()`.
        url: The URL of the request.
        doing: What was being done, e.g. ``"sending POST to"``.
    """
    url = display_url(url)
    if isinstance(exc, _kinds("TimeoutException")):
        return TransportError(f"timed out {doing} {url}: {type(exc).__name__}")
    if isinstance(exc, _kinds("ProxyError")):
        return TransportError(f"the proxy refused or failed the connection to {url}: {exc}")
    if isinstance(exc, _kinds("ConnectError", "UnsupportedProtocol", "InvalidURL")):
        return TransportError(f"could not connect to {url}: {exc}")
    if isinstance(exc, (*_kinds("LocalProtocolError"), ValueError)):
        return TransportError(f"could not build a valid HTTP request while {doing} {url}: {exc}")
    return ConnectionClosed(f"the connection to {url} broke while {doing} it: {exc!r}")


def not_delivered(exc: MCPError) -> bool:
    """Whether a failed attempt surely did not reach the server (so any request may retry)."""
    if isinstance(exc, HTTPStatusError):
        return exc.status_code in (429, 503)
    cause = exc.__cause__
    return isinstance(cause, _kinds("ConnectError", "ConnectTimeout", "PoolTimeout", "ProxyError"))
