"""MCP over WebSocket (non-standard), with trio-websocket.

The MCP specification defines no WebSocket binding; this follows the convention some
servers use: the client asks for the ``mcp`` subprotocol, and every WebSocket text frame
carries exactly one JSON-RPC message, in both directions. Binary frames from the server
are accepted too: their bytes are passed on as they are, for the session to decode.

A close with code 1000 (normal) or 1001 (going away) is a clean end of stream
(:class:`trio.EndOfChannel`); any other close is :class:`~trio_mcp.ConnectionClosed`.
trio-websocket is imported only when a transport is opened.

Callers never write to the socket themselves: ``send`` hands the message to a bounded queue
(waiting while it is full) and one writer task sends each message whole. A caller cancelled
while its message is being written therefore never leaves half a frame on the wire (trio
makes no promise about how much of a cancelled ``send_all`` went out).
"""

from __future__ import annotations

import functools
import logging
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

import trio

from .._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    MessageTooLargeError,
    ProtocolError,
    TransportError,
)
from .._redact import display_url, redacted_repr
from ._base import MessageInfo, Transport
from ._http import DEFAULT_MAX_MESSAGE_SIZE, origin_of

if TYPE_CHECKING:
    import trio_websocket

__all__ = ["WebSocketParameters", "WebSocketTransport"]

logger = logging.getLogger("trio_mcp.websocket")

#: The subprotocol the client asks for.
SUBPROTOCOL = "mcp"
_CLEAN_CLOSE_CODES = (1000, 1001)
_MESSAGE_TOO_BIG = 1009

#: How many messages may wait for the writer task before ``send`` waits (backpressure).
#: The queue only has to absorb what arrives while one message is written; a server that
#: stops reading holds back at most this many messages (plus the socket buffers).
_WRITE_QUEUE_SIZE = 64


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    """The system's TLS settings, loaded once (loading the CA store blocks for a while)."""
    return ssl.create_default_context()


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
        ssl_context: The TLS settings for ``wss://`` URLs (default: the system's CAs,
            loaded once per process).
    """

    url: str
    _: KW_ONLY
    headers: Mapping[str, str] | None = None
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    timeout: float = 30.0
    ssl_context: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        return redacted_repr(self, ("headers",))  # header values are often credentials

    def open_transport(
        self, nursery: trio.Nursery
    ) -> AbstractAsyncContextManager[WebSocketTransport]:
        """Connect (opening handshake included).

        Args:
            nursery: Where the connection's reader task runs.

        Returns:
            An async context manager yielding the transport; leaving it closes the
            connection with code 1000.

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


class _ReaderSpawner:
    """Stands in for the nursery trio-websocket starts its reader task in.

    The reader runs in the transport's nursery, but guarded: if it fails (as it does when
    the server rejects the handshake) the failure is handed back to the transport instead
    of crashing the user's nursery, and its end is reported so the handshake never waits
    for an answer that cannot come.

    Why not a real nursery owned by a task of the transport: trio-websocket ends a failed
    opening handshake through this reader task, in two ways. It raises ``ConnectionRejected``
    when the server refuses; a real nursery hands that back inside an ``ExceptionGroup``,
    possibly next to a ``Cancelled``, and splitting those needs ``BaseExceptionGroup``, which
    Python 3.10 (still supported) has only from the ``exceptiongroup`` backport, not a
    dependency of trio_mcp. And it returns quietly when
    the server hangs up mid-handshake, so ``wrap_client_stream`` would wait for the timeout
    on an event nobody sets. ``trio_websocket.open_websocket`` has the same quiet wait and,
    in 0.12, leaks the socket of a rejected handshake, which here is closed by
    :meth:`WebSocketTransport._close_stream`. This guard turns both endings into a prompt,
    typed error. It relies on one fact about trio-websocket (checked for 0.12): the only
    thing ``wrap_client_stream`` does with its nursery is ``start_soon`` the reader; were
    that to change, every connection in the tests would fail.
    """

    def __init__(self, nursery: trio.Nursery, transport: WebSocketTransport) -> None:
        self._nursery = nursery
        self._transport = transport

    def start_soon(self, async_fn: Callable[[], Awaitable[object]], *args: object) -> None:
        self._nursery.start_soon(self._guard, async_fn, name="trio_mcp WebSocket reader")

    async def _guard(self, async_fn: Callable[[], Awaitable[object]]) -> None:
        try:
            await async_fn()
        except Exception as exc:
            self._transport._reader_failed(exc)  # pyright: ignore[reportPrivateUsage]
        finally:
            self._transport._reader_ended()  # pyright: ignore[reportPrivateUsage]


def _target(url: str) -> tuple[str, int, str, str, bool]:
    """``(host, port, resource, Host header, use TLS)`` of a ``ws://`` / ``wss://`` URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ValueError(f"a WebSocket URL starts with ws:// or wss://, not {display_url(url)!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"the WebSocket URL {display_url(url)!r} has no host")
    secure = parts.scheme == "wss"
    port = parts.port or (443 if secure else 80)
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == (443 if secure else 80) else f"{shown}:{port}"
    return host, port, resource, host_header, secure


class WebSocketTransport(Transport):
    """A connection to an MCP server over WebSocket. Open it with
    :meth:`WebSocketParameters.open_transport`.
    """

    needs_info = False

    def __init__(self, params: WebSocketParameters) -> None:
        self._params = params
        self._stream: trio.SocketStream | trio.SSLStream[trio.SocketStream] | None = None
        self._ws: trio_websocket.WebSocketConnection | None = None
        self._handshake = trio.CancelScope()
        self._reader_error: Exception | None = None
        self._out_send, self._out_receive = trio.open_memory_channel[str](_WRITE_QUEUE_SIZE)
        self._writer_done = trio.Event()
        self._write_failure: Exception | None = None
        self._writer_cancelled = False  # the writer's nursery was cancelled under it
        self._closed = False
        self._error: MCPError | None = None
        self._origin = origin_of(params.url)

    @property
    def origin(self) -> str:
        """``scheme://host:port`` of the server."""
        return self._origin

    @property
    def era_key(self) -> str:
        """The server's origin, ``ws://host:port`` or ``wss://host:port``."""
        return self._origin

    @property
    def subprotocol(self) -> str | None:
        """The subprotocol the server chose (``"mcp"``, or ``None`` if it chose none)."""
        return self._ws.subprotocol if self._ws is not None else None

    async def connect(self, nursery: trio.Nursery) -> None:
        """Open the connection; its reader and writer tasks run in ``nursery`` until
        :meth:`aclose`.

        Args:
            nursery: Where the reader and writer tasks run.

        Raises:
            HTTPStatusError: The server refused the handshake.
            TransportError: The connection could not be opened.
        """
        import trio_websocket

        params = self._params
        host, port, resource, host_header, secure = _target(params.url)
        try:
            with trio.fail_after(params.timeout):
                if secure:
                    context = params.ssl_context or _default_ssl_context()
                    self._stream = await trio.open_ssl_over_tcp_stream(
                        host, port, ssl_context=context, https_compatible=True
                    )
                else:
                    self._stream = await trio.open_tcp_stream(host, port)
        except (OSError, trio.TooSlowError) as exc:
            message = f"could not open a WebSocket to {display_url(params.url)}: {exc!r}"
            raise TransportError(message) from exc
        headers = [(k.encode(), v.encode()) for k, v in (params.headers or {}).items()]
        ws: trio_websocket.WebSocketConnection | None = None
        try:
            with trio.fail_after(params.timeout), self._handshake:
                ws = await trio_websocket.wrap_client_stream(
                    cast("trio.Nursery", _ReaderSpawner(nursery, self)),
                    self._stream,
                    host_header,
                    resource,
                    subprotocols=[SUBPROTOCOL],
                    extra_headers=headers,
                    max_message_size=params.max_message_size,
                )
        except trio.TooSlowError as exc:
            await self._close_stream()
            message = f"the WebSocket handshake with {display_url(params.url)} timed out"
            raise TransportError(message) from exc
        if ws is None:
            await self._close_stream()
            raise self._handshake_error()
        self._ws = ws
        nursery.start_soon(self._write_loop, ws, name="trio_mcp WebSocket writer")
        if ws.subprotocol != SUBPROTOCOL:
            logger.debug("%s accepted without the mcp subprotocol", display_url(params.url))

    def _handshake_error(self) -> MCPError:
        import trio_websocket

        exc = self._reader_error
        url = self._params.url
        if isinstance(exc, trio_websocket.ConnectionRejected):
            body = (exc.body or b"")[:65536].decode("utf-8", "replace")
            error: MCPError = HTTPStatusError(exc.status_code, body, url)
        elif exc is None:
            error = TransportError(
                f"{display_url(url)} closed the connection during the WebSocket handshake"
            )
        else:
            error = TransportError(
                f"the WebSocket handshake with {display_url(url)} failed: {exc!r}"
            )
        error.__cause__ = exc
        return error

    def _reader_failed(self, exc: Exception) -> None:
        if self._ws is None:
            self._reader_error = exc
        else:  # pragma: no cover - trio-websocket handles errors after the handshake
            logger.warning(
                "the WebSocket reader for %s failed: %r", display_url(self._params.url), exc
            )

    def _reader_ended(self) -> None:
        self._handshake.cancel()  # if still waiting for the handshake, it will never end

    async def _close_stream(self) -> None:
        # Closing our own stream also covers trio-websocket leaving it open when the
        # server started the closing handshake, or rejected the opening one.
        if self._stream is not None:
            with trio.CancelScope(shield=True), suppress(trio.BrokenResourceError, OSError):
                await self._stream.aclose()

    # -- sending -------------------------------------------------------------------------

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Hand one message to the writer task, which sends it whole as a text frame.

        Waits while the writer's queue is full. Once this returned, the message is sent
        whole even if the caller is cancelled.

        Args:
            data: The encoded message (UTF-8 JSON).
            info: Ignored.

        Raises:
            trio.ClosedResourceError: The transport was closed.
            ConnectionClosed: The connection is closed, or the writer task ended because
                the nursery the transport was opened with was cancelled.
            ProtocolError: ``data`` is not UTF-8, so it cannot travel in a text frame.
        """
        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        ws = self._ws
        assert ws is not None
        if self._writer_done.is_set() or ws.closed is not None:
            raise self._send_error()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError("a message to send over WebSocket is not UTF-8 text") from exc
        try:
            await self._out_send.send(text)
        except trio.BrokenResourceError:  # the writer ended while we waited
            raise self._send_error() from None
        except trio.ClosedResourceError:  # closed while we waited
            raise trio.ClosedResourceError("the transport is closed") from None

    async def _write_loop(self, ws: trio_websocket.WebSocketConnection) -> None:
        import trio_websocket

        try:
            async for text in self._out_receive:
                await ws.send_message(text)
        except trio_websocket.ConnectionClosed as exc:
            self._write_failure = exc
        except trio.Cancelled:
            self._writer_cancelled = not self._closed
            raise
        except Exception as exc:  # pragma: no cover - never raise into the user's nursery
            self._write_failure = exc
            logger.exception("the WebSocket writer for %s failed", self._params.url)
        finally:
            self._out_receive.close()  # senders waiting for room get BrokenResourceError
            self._writer_done.set()

    def _send_error(self) -> ConnectionClosed:
        """A new error for a ``send`` that can no longer succeed."""
        import trio_websocket

        failure = self._write_failure
        if self._writer_cancelled:
            return ConnectionClosed(
                f"the WebSocket transport to {display_url(self._params.url)} stopped: the "
                "nursery it was opened with was cancelled, so nothing more can be sent"
            )
        if isinstance(failure, trio_websocket.ConnectionClosed):
            return self._closed_error_from(failure.reason, failure)
        if failure is not None:  # pragma: no cover - see _write_loop
            error = ConnectionClosed(
                f"sending to the WebSocket {display_url(self._params.url)} failed"
            )
            error.__cause__ = failure
            return error
        assert self._ws is not None
        return self._closed_error_from(self._ws.closed, None)

    # -- receiving -----------------------------------------------------------------------

    async def receive(self) -> bytes:
        """Receive the next message (a text frame's UTF-8 bytes, a binary frame as is).

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
            error = self._closed_error_from(exc.reason, exc)
            self._error = error
            reason = exc.reason
            if reason is not None and reason.code in _CLEAN_CLOSE_CODES:
                raise trio.EndOfChannel from exc
            raise error  # noqa: B904 (the cause is set inside)
        return message.encode("utf-8") if isinstance(message, str) else message

    def _closed_error_from(
        self, reason: trio_websocket.CloseReason | None, cause: BaseException | None
    ) -> ConnectionClosed:
        """The error for a connection closed for ``reason``, with ``__cause__`` set."""
        url = self._params.url
        if reason is None:
            closed = ConnectionClosed(f"the WebSocket to {display_url(url)} closed")
        elif reason.code == _MESSAGE_TOO_BIG:
            limit = self._params.max_message_size
            closed = ConnectionClosed(
                f"the WebSocket to {display_url(url)} closed (code 1009): a message was "
                f"larger than max_message_size={limit} bytes"
            )
            too_large = MessageTooLargeError(limit + 1, limit)
            too_large.__cause__ = cause
            closed.__cause__ = too_large
            return closed
        else:
            detail = f": {reason.reason}" if reason.reason else ""
            closed = ConnectionClosed(
                f"the WebSocket to {display_url(url)} closed with code {reason.code} "
                f"({reason.name}){detail}"
            )
        closed.__cause__ = cause
        return closed

    def closed_error(self) -> MCPError:
        """Why the connection ended."""
        if self._error is not None:
            return self._error
        if self._writer_cancelled:
            return self._send_error()
        return ConnectionClosed(f"the WebSocket to {display_url(self._params.url)} closed")

    # -- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Send what is queued, close with code 1000 and wait (bounded) for the closing
        handshake. Idempotent; still closes when cancelled.

        If the queued messages cannot be sent within ``timeout`` (a server that stopped
        reading), the connection is dropped without the closing handshake.
        """
        if self._closed:
            return
        self._closed = True
        self._out_send.close()  # the writer sends what is queued, then ends
        ws = self._ws
        if ws is not None:
            with trio.move_on_after(self._params.timeout, shield=True) as flushing:
                await self._writer_done.wait()
            # The closing handshake needs the reader, gone with a cancelled nursery.
            if not flushing.cancelled_caught and not self._writer_cancelled:
                with trio.move_on_after(self._params.timeout, shield=True):
                    with suppress(Exception):
                        await ws.aclose()
        await self._close_stream()  # a writer still stuck in send_all fails and ends
