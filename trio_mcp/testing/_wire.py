"""The wire vocabulary of the testing kit's mock server: names, errors, small helpers.

One job: what every part of the engine shares and nothing else: the ``_meta`` keys and
log levels of the protocol, the request id and era types, the
[`ServerStream`][trio_mcp.testing.ServerStream] a connection is served over, the exceptions a
handler raises ([`ServerCrash`][trio_mcp.testing.ServerCrash]) or gets
([`ClientRequestError`][trio_mcp.testing.ClientRequestError]), the internal `RpcError` that answers
a request with a JSON-RPC error, and helpers to look into decoded JSON.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal, Protocol, cast

from ._registry import JSONDict

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LEVEL_RANK",
    "LOG_LEVEL",
    "LOG_LEVELS",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "ClientRequestError",
    "Era",
    "RequestId",
    "RpcError",
    "ServerCrash",
    "ServerStream",
    "as_dict",
    "as_list",
    "exception_leaves",
    "maybe_await",
]

RequestId = int | str
Era = Literal["legacy", "modern"]

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}


class ServerStream(Protocol):
    """The server end of a connection: whole JSON-RPC messages as bytes.

    `MemoryServerStream` is one; so is the stdio stream
    behind [`MockServer.serve_stdio()`][trio_mcp.testing.MockServer.serve_stdio].
    """

    async def send(self, data: bytes) -> None:
        """Deliver one whole message to the client.

        Args:
            data: The encoded JSON-RPC message, without framing.
        """
        ...

    async def receive(self) -> bytes:
        """Return the next whole message; raise `trio.EndOfChannel` at end of stream."""
        ...

    async def aclose(self) -> None:
        """End the stream; the client sees end of stream."""
        ...


class ServerCrash(Exception):
    """Raise inside a tool (or any handler) to make the server die abruptly.

    The connection's stream is closed at once and every in-flight request is abandoned
    without a response: the client sees end of stream, as if the server process had died.
    Under ``python -m trio_mcp.testing`` the process then exits with status 1.

    Attributes:
        exit_code: The exit code an in-memory client is told (``None``: unknown).
        stderr: The stderr tail an in-memory client is told.
    """

    def __init__(self, *args: object, exit_code: int | None = None, stderr: str = "") -> None:
        """Create the crash.

        Args:
            *args: The exception's message.
            exit_code: The exit code the client's [`ConnectionClosed`][trio_mcp.ConnectionClosed]
                shows.
            stderr: The stderr tail it shows.
        """
        super().__init__(*args)
        self.exit_code = exit_code
        self.stderr = stderr


class ClientRequestError(Exception):
    """The client answered a server-to-client request (legacy era) with a JSON-RPC error.

    Raised by [`ToolContext.sample()`][trio_mcp.testing.ToolContext.sample],
    [`ToolContext.elicit()`][trio_mcp.testing.ToolContext.elicit],
    [`ToolContext.list_roots()`][trio_mcp.testing.ToolContext.list_roots] and
    [`MockServer.request_client()`][trio_mcp.testing.MockServer.request_client].

    Attributes:
        code: The JSON-RPC error code the client sent.
        message: The client's error message.
        data: The optional ``data`` member of the error.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(f"client error {code}: {message}")


class RpcError(Exception):
    """Raised inside the engine to answer the current request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(message)


def as_dict(value: Any) -> JSONDict | None:
    """``value`` if it is a JSON object, else None."""
    return cast(JSONDict, value) if isinstance(value, dict) else None


def as_list(value: Any) -> list[Any] | None:
    """``value`` if it is a JSON array, else None."""
    if not isinstance(value, list):
        return None
    return value  # pyright: ignore[reportUnknownVariableType]  # list[Any] to mypy


def exception_leaves(exc: BaseException) -> list[BaseException]:
    """The leaf exceptions of a (possibly nested) exception group."""
    children: Any = getattr(exc, "exceptions", None)
    if isinstance(children, tuple):
        out: list[BaseException] = []
        for child in cast(tuple[BaseException, ...], children):
            out.extend(exception_leaves(child))
        return out
    return [exc]


async def maybe_await(value: Any) -> Any:
    """What a handler returned, awaited if it is awaitable (handlers may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value
