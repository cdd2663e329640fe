"""The exceptions trio_mcp raises.

The tree is small on purpose::

    MCPError                          base of everything trio_mcp raises itself
    ├── ServerError                   the server answered with a JSON-RPC error
    │   ├── ResourceNotFoundError     resource not found (-32002 legacy; -32602 on resources/read)
    │   ├── UnsupportedProtocolVersionError   -32022, no mutually supported version
    │   ├── HeaderMismatchError       -32020, HTTP headers disagree with the body
    │   └── MissingClientCapabilityError      -32021, the request needs a capability we lack
    ├── ProtocolError                 an undecodable or invalid message, failed negotiation
    │   └── MessageTooLargeError      a message over the configured size limit
    ├── TransportError                the connection failed below JSON-RPC
    │   ├── ConnectionClosed          the server went away (exit code, stderr tail)
    │   └── HTTPStatusError           an HTTP request failed (status code, body)
    ├── InputRequestError             a multi-round-trip input could not be provided
    ├── CircuitOpenError              the circuit breaker is open (``trio_mcp.CircuitBreaker``)
    └── ToolError                     raised by ``CallToolResult.raise_for_error()``

Besides these a caller sees only trio's own: :class:`trio.TooSlowError` (from ``timeout=``
or the caller's ``trio.fail_after``), :class:`trio.ClosedResourceError` (the session was
closed by its owner, also for calls that were pending at that moment) and
:class:`trio.Cancelled`. An argument the caller got wrong (a value that cannot be encoded
as JSON, an unknown option) raises :class:`TypeError` or :class:`ValueError` at once,
before anything is sent.

No exception from the session's own tasks ever reaches a caller as an ``ExceptionGroup``,
and every caller gets an exception object of its own (chained to the shared cause), so
tracebacks never mix across tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from ._resilience import CircuitState

_E = TypeVar("_E", bound=BaseException)

__all__ = [
    "CircuitOpenError",
    "ConnectionClosed",
    "HTTPStatusError",
    "HeaderMismatchError",
    "InputRequestError",
    "MCPError",
    "MessageTooLargeError",
    "MissingClientCapabilityError",
    "ProtocolError",
    "ResourceNotFoundError",
    "ServerError",
    "ToolError",
    "TransportError",
    "UnsupportedProtocolVersionError",
]


class MCPError(Exception):
    """Base class of every exception trio_mcp raises itself."""


class ServerError(MCPError):
    """The server answered a request with a JSON-RPC error.

    Attributes:
        code: The JSON-RPC error code.
        message: The server's error message.
        data: The optional ``data`` member of the error, decoded JSON (or ``None``).
        method: The method of the request that failed, when known.
    """

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None):
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f" to {method}" if method else ""
        super().__init__(f"server error {code}{where}: {message}")


class ResourceNotFoundError(ServerError):
    """The resource asked for does not exist (``-32002`` legacy, ``-32602`` modern)."""


class UnsupportedProtocolVersionError(ServerError):
    """The server supports none of the protocol versions this client offered (``-32022``).

    Attributes:
        supported: The versions the server said it supports.
        requested: The version the client requested.
    """

    @property
    def supported(self) -> list[str]:
        """The versions the server listed in the error data."""
        data: object = self.data
        if isinstance(data, dict):
            versions: object = cast("dict[str, object]", data).get("supported")
            if isinstance(versions, list):
                return [str(v) for v in cast("list[object]", versions)]
        return []

    @property
    def requested(self) -> str | None:
        """The version the client requested, as echoed by the server."""
        data: object = self.data
        if isinstance(data, dict):
            requested = cast("dict[str, object]", data).get("requested")
            return str(requested) if requested is not None else None
        return None


class HeaderMismatchError(ServerError):
    """The server found HTTP headers that disagree with the JSON-RPC body (``-32020``)."""


class MissingClientCapabilityError(ServerError):
    """The request needs a client capability this session did not declare (``-32021``)."""


class ProtocolError(MCPError):
    """A message could not be decoded or broke the protocol, or negotiation failed."""


class MessageTooLargeError(ProtocolError):
    """A message was larger than the configured maximum message size.

    Attributes:
        size: How many bytes had been seen when the limit was hit.
        limit: The configured limit in bytes.
    """

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(
            f"message too large: {size} bytes exceeds the limit of {limit} bytes "
            "(raise max_message_size to accept larger messages)"
        )


class TransportError(MCPError):
    """The connection to the server failed below the JSON-RPC layer."""


class ConnectionClosed(TransportError):
    """The server went away: its stream ended, it crashed, or the connection broke.

    Attributes:
        exit_code: The exit code of a stdio server process, when known.
        stderr_tail: The last lines the stdio server wrote to stderr (may be empty).
    """

    def __init__(
        self,
        message: str = "the MCP server closed the connection",
        *,
        exit_code: int | None = None,
        stderr_tail: str = "",
    ):
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        text = message
        if exit_code is not None:
            text += f" (exit code {exit_code})"
        if stderr_tail:
            text += f"; last stderr output:\n{stderr_tail}"
        super().__init__(text)


class HTTPStatusError(TransportError):
    """An HTTP request to the server failed with a non-success status.

    Attributes:
        status_code: The HTTP status code.
        body: The response body as text (truncated to 64 KiB).
        url: The URL that was requested.
        retry_after: Seconds from a ``Retry-After`` header, if the server sent one.
    """

    def __init__(
        self, status_code: int, body: str, url: str = "", retry_after: float | None = None
    ):
        self.status_code = status_code
        self.body = body
        self.url = url
        self.retry_after = retry_after
        shown = body if len(body) <= 500 else body[:500] + "..."
        super().__init__(f"HTTP {status_code} from {url or 'server'}: {shown}")


class InputRequestError(MCPError):
    """A multi-round-trip request needed input this client could not provide.

    Raised when an input request has no handler, its handler failed or declined, or the
    server kept asking for input past the configured round limit.
    """


class CircuitOpenError(MCPError):
    """A :class:`~trio_mcp.CircuitBreaker` refused a call without making it.

    Attributes:
        retry_at: The earliest trio time (:func:`trio.current_time`) at which the breaker
            may admit a call again. For a half-open breaker whose trial calls are all in
            flight it is the current time: retry once they finish.
        state: The breaker's state when it refused the call.
    """

    def __init__(self, message: str, *, retry_at: float, state: CircuitState):
        self.retry_at = retry_at
        self.state = state
        super().__init__(message)


class ToolError(MCPError):
    """A tool call returned ``isError: true``; raised by ``CallToolResult.raise_for_error()``.

    Attributes:
        result: The :class:`~trio_mcp.CallToolResult` that carried the error.
    """

    def __init__(self, message: str, result: Any = None):
        self.result = result
        super().__init__(message)


_ERROR_CLASSES: dict[int, type[ServerError]] = {
    -32002: ResourceNotFoundError,
    -32020: HeaderMismatchError,
    -32021: MissingClientCapabilityError,
    -32022: UnsupportedProtocolVersionError,
}


def server_error_from_wire(
    code: int, message: str, data: Any = None, *, method: str | None = None, modern: bool = False
) -> ServerError:
    """Build the most specific :class:`ServerError` for a JSON-RPC error."""
    del modern  # -32602 on resources/read means "not found" in practice in both eras
    if code == -32602 and method == "resources/read":
        return ResourceNotFoundError(code, message, data, method=method)
    cls = _ERROR_CLASSES.get(code, ServerError)
    return cls(code, message, data, method=method)


def fresh_copy(error: _E) -> _E:
    """A new exception object equal to ``error``, for raising in one more caller.

    Raising one object in many tasks mixes their tracebacks and grows the object's
    traceback without bound; each caller gets its own copy, chained to the same cause.
    """
    cls = type(error)
    copy = cls.__new__(cls)
    copy.__dict__.update(error.__dict__)
    copy.args = error.args
    copy.__cause__ = error.__cause__
    copy.__suppress_context__ = True
    return copy
