"""MCP over WebSocket (non-standard), with trio-websocket.

The MCP specification defines no WebSocket binding; this follows the convention some
servers use: the client asks for the ``mcp`` subprotocol, and every WebSocket text frame
carries exactly one JSON-RPC message, in both directions. Binary frames from the server
are accepted as UTF-8 JSON too.

A close with code 1000 (normal) or 1001 (going away) is a clean end of stream
(:class:`trio.EndOfChannel`); any other close is :class:`~trio_mcp.ConnectionClosed`.
trio-websocket is imported only when a transport is opened.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING

import trio

from .._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    MessageTooLargeError,
    TransportError,
)
from ._base import MessageInfo, RequestFailed, Transport
from ._http import DEFAULT_MAX_MESSAGE_SIZE, origin_of

if TYPE_CHECKING:
    import trio_websocket

__all__ = ["WebSocketParameters", "WebSocketTransport"]

logger = logging.getLogger("trio_mcp.websocket")

#: The subprotocol the client asks for.
SUBPROTOCOL = "mcp"
_CLEAN_CLOSE_CODES = (1000, 1001)
_MESSAGE_TOO_BIG = 1009


@dataclass(frozen=True)
class WebSocketParameters:
    """How to reach an MCP server over WebSocket (a non-standard, but common, binding).

    One JSON-RPC message travels per text frame; the ``mcp`` subprotocol is requested.

    Args:
        url: A ``ws://`` or ``wss://`` URL.
        headers: Extra headers for the opening handshake (e.g. an API key).
        max_message_size: The largest message accepted from the server, in bytes. A
            larger one makes trio-websocket close the connection (code 1009), which
            fails the session with :class:`~trio_mcp.ConnectionClosed`.
        timeout: Seconds for the opening and the closing handshakes.
    """

    url: str
    _: KW_ONLY
    headers: Mapping[str, str] | None = None
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    timeout: float = 30.0

    def open_transport(
        self, nursery: trio.Nursery
    ) -> AbstractAsyncContextManager[WebSocketTransport]:
        """Connect; the connection's reader runs in a task in ``nursery``.

        Raises:
            HTTPStatusError: The server refused the WebSocket handshake.
            TransportError: The connection could not be opened.
        """
        return _open_websocket(self, nursery)


@asynccontextmanager
async def _open_websocket(
    params: WebSocketParameters, nursery: trio.Nursery
) -> AsyncGenerator[WebSocketTransport, None]:
    transport = WebSocketTransport(params)
    await transport.connect(nursery)
    try:
        yield transport
    finally:
        await transport.aclose()


async def _close_socket(ws: trio_websocket.WebSocketConnection, timeout: float) -> None:
    """Close the TCP stream under a WebSocket.

    trio-websocket (0.12) leaves a client's stream open when the server started the close
    handshake (the client waits for the server's TCP close, then never closes its own
    socket), which leaks the socket. Closing a closed stream again does nothing.
    """
    stream: trio.abc.AsyncResource | None = getattr(ws, "_stream", None)
    if stream is None:  # pragma: no cover - trio-websocket changed its internals
        return
    with trio.move_on_after(timeout, shield=True):
        try:
            await stream.aclose()
        except (trio.BrokenResourceError, OSError):  # pragma: no cover
            pass


class WebSocketTransport(Transport):
    """A connection to an MCP server over WebSocket. Open it with
    :meth:`WebSocketParameters.open_transport`.
    """

    def __init__(self, params: WebSocketParameters) -> None:
        self._params = params
        self._ws: trio_websocket.WebSocketConnection | None = None
        self._closing = trio.Event()
        self._done = trio.Event()
        self._closed = False
        self._error: MCPError | None = None
        self._origin = origin_of(params.url)

    @property
    def origin(self) -> str:
        """``scheme://host:port`` of the server."""
        return self._origin

    @property
    def subprotocol(self) -> str | None:
        """The subprotocol the server chose (``"mcp"``, or ``None`` if it chose none)."""
        return self._ws.subprotocol if self._ws is not None else None

    async def connect(self, nursery: trio.Nursery) -> None:
        """Open the connection; it is held by a task in ``nursery`` until :meth:`aclose`.

        Raises:
            HTTPStatusError: The server refused the handshake.
            TransportError: The connection could not be opened.
        """
        await nursery.start(self._hold)

    async def _hold(self, task_status: trio.TaskStatus[None]) -> None:
        import trio_websocket

        params = self._params
        headers = [(k.encode(), v.encode()) for k, v in (params.headers or {}).items()]
        started = False
        opened: trio_websocket.WebSocketConnection | None = None
        try:
            async with trio_websocket.open_websocket_url(
                params.url,
                subprotocols=[SUBPROTOCOL],
                extra_headers=headers,
                max_message_size=params.max_message_size,
                connect_timeout=params.timeout,
                disconnect_timeout=params.timeout,
            ) as ws:
                self._ws = opened = ws
                if ws.subprotocol != SUBPROTOCOL:
                    logger.debug("%s accepted without the mcp subprotocol", params.url)
                started = True
                task_status.started()
                await self._closing.wait()
        except trio_websocket.ConnectionRejected as exc:
            if started:  # pragma: no cover - rejection only happens during the handshake
                raise
            body = (exc.body or b"")[:65536].decode("utf-8", "replace")
            raise HTTPStatusError(exc.status_code, body, params.url) from exc
        except (trio_websocket.HandshakeError, OSError) as exc:
            if not started:
                message = f"could not open a WebSocket to {params.url}: {exc!r}"
                raise TransportError(message) from exc
            logger.debug("closing the WebSocket to %s failed: %r", params.url, exc)
        except Exception as exc:  # never let a failure after start reach the user's nursery
            if not started:
                message = f"could not open a WebSocket to {params.url}: {exc!r}"
                raise TransportError(message) from exc
            logger.exception("the WebSocket connection to %s failed", params.url)
        finally:
            if opened is not None:
                await _close_socket(opened, params.timeout)
            self._done.set()

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Send one message as a text frame.

        Raises:
            trio.ClosedResourceError: The transport was closed.
            ConnectionClosed: The connection is closed.
        """
        import trio_websocket

        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        assert self._ws is not None
        try:
            await self._ws.send_message(data.decode("utf-8"))
        except trio_websocket.ConnectionClosed as exc:
            raise self._closed_error_from(exc)  # noqa: B904 (the cause is set inside)

    async def receive(self) -> bytes | RequestFailed:
        """Receive the next message.

        Raises:
            trio.EndOfChannel: The server closed with code 1000 or 1001.
            ConnectionClosed: The connection closed otherwise (including code 1009 for a
                message over ``max_message_size``).
            trio.ClosedResourceError: The transport was closed.
        """
        import trio_websocket

        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        assert self._ws is not None
        try:
            message = await self._ws.get_message()
        except trio_websocket.ConnectionClosed as exc:
            if self._closed:
                raise trio.ClosedResourceError("the transport is closed") from exc
            error = self._closed_error_from(exc)
            self._error = error
            reason = exc.reason
            if reason is not None and reason.code in _CLEAN_CLOSE_CODES:
                raise trio.EndOfChannel from exc
            raise error  # noqa: B904 (the cause is set inside)
        return message.encode("utf-8") if isinstance(message, str) else message

    def _closed_error_from(self, exc: trio_websocket.ConnectionClosed) -> ConnectionClosed:
        """The error for a closed connection, with ``__cause__`` set."""
        reason = exc.reason
        if reason is None:
            closed = ConnectionClosed(f"the WebSocket to {self._params.url} closed")
        elif reason.code == _MESSAGE_TOO_BIG:
            limit = self._params.max_message_size
            closed = ConnectionClosed(
                f"the WebSocket to {self._params.url} closed (code 1009): a message was "
                f"larger than max_message_size={limit} bytes"
            )
            too_large = MessageTooLargeError(limit + 1, limit)
            too_large.__cause__ = exc
            closed.__cause__ = too_large
            return closed
        else:
            detail = f": {reason.reason}" if reason.reason else ""
            closed = ConnectionClosed(
                f"the WebSocket to {self._params.url} closed with code {reason.code} "
                f"({reason.name}){detail}"
            )
        closed.__cause__ = exc
        return closed

    def closed_error(self) -> MCPError:
        """Why the connection ended."""
        return self._error or ConnectionClosed(f"the WebSocket to {self._params.url} closed")

    async def aclose(self) -> None:
        """Close with code 1000, waiting (bounded) for the closing handshake. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        if self._ws is None:
            return  # never connected
        with trio.CancelScope(shield=True):
            await self._done.wait()  # the holder's own close is bounded by the timeout
