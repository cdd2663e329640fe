"""MCP over WebSocket (non-standard), with trio-websocket.

The MCP specification defines no WebSocket binding; this follows the convention some
servers use: the client asks for the ``mcp`` subprotocol, and every WebSocket text frame
carries exactly one JSON-RPC message, in both directions. Binary frames from the server
are accepted too: their bytes are passed on as they are, for the session to decode.

A connection that breaks (no close frame, or code 1001, 1011, 1012, 1013, 1014) is re-opened
on the ``reconnect`` schedule and a legacy session's ``initialize`` replayed on it (see
``_websocket_reconnect.py``, the base class of the transport, and ``_reconnect.py``).
Otherwise, or without ``reconnect``, a close with code 1000 (normal) or 1001 (going away) is
a clean end of stream (`trio.EndOfChannel`); any other close is
[`ConnectionClosed`][trio_mcp.ConnectionClosed]. trio-websocket is imported only when a
transport is opened.

Callers never write to the socket themselves: ``send`` hands the message to a bounded queue
(waiting while it is full) and one writer task sends each message whole. A caller cancelled
while its message is being written therefore never leaves half a frame on the wire (trio
makes no promise about how much of a cancelled ``send_all`` went out).
"""

from __future__ import annotations

import functools
import logging
import ssl
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, TypeAlias, cast
from urllib.parse import urlsplit

import trio

from .._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    TransportError,
    fresh_copy,
)
from .._redact import display_url, redacted_repr
from .._resilience import Backoff
from ._base import MessageInfo
from ._http import DEFAULT_MAX_MESSAGE_SIZE, origin_of
from ._jsonpeek import response_id, routed
from ._reconnect import (
    DEFAULT_RECONNECT_BACKOFF,
    Outstanding,
    reconnecting_error,
)
from ._websocket_reconnect import WebSocketReconnection, reconnects_after

if TYPE_CHECKING:
    import trio_websocket

    from .._jsonrpc import Envelope

__all__ = ["WebSocketParameters", "WebSocketTransport"]

logger = logging.getLogger("trio_mcp.websocket")

RequestId: TypeAlias = "int | str"

SUBPROTOCOL = "mcp"
"""The subprotocol the client asks for."""
_CLEAN_CLOSE_CODES = (1000, 1001)

_WRITE_QUEUE_SIZE = 64
"""How many messages may wait for the writer task before ``send`` waits (backpressure). The queue
only has to absorb what arrives while one message is written; a server that stops reading holds back
at most this many messages (plus the socket buffers)."""


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
            fails the session with [`ConnectionClosed`][trio_mcp.ConnectionClosed].
        timeout: Seconds for the opening and the closing handshakes.
        ssl_context: The TLS settings for ``wss://`` URLs (default: the system's CAs,
            loaded once per process).
        reconnect: When the connection breaks (the server restarted or crashed, or closed
            with code 1001, 1011, 1012, 1013 or 1014), re-open it on this schedule until it
            works or the transport closes, and start a new server session by replaying
            ``initialize`` (see docs/transports.md).
            ``None``: never reconnect, a broken connection ends the session. The default
            tries 0.25 s after the break, then 0.5 s later, then every second.
    """

    url: str
    _: KW_ONLY
    headers: Mapping[str, str] | None = None
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    timeout: float = 30.0
    ssl_context: ssl.SSLContext | None = None
    reconnect: Backoff | None = DEFAULT_RECONNECT_BACKOFF

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
    the server rejects the handshake) the failure is handed back to the connection instead
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
    `_Connection.close_stream()`. This guard turns both endings into a prompt,
    typed error. It relies on one fact about trio-websocket (checked for 0.12): the only
    thing ``wrap_client_stream`` does with its nursery is ``start_soon`` the reader; were
    that to change, every connection in the tests would fail.
    """

    def __init__(self, nursery: trio.Nursery, connection: _Connection) -> None:
        self._nursery = nursery
        self._connection = connection

    def start_soon(self, async_fn: Callable[[], Awaitable[object]], *args: object) -> None:
        self._nursery.start_soon(self._guard, async_fn, name="trio_mcp WebSocket reader")

    async def _guard(self, async_fn: Callable[[], Awaitable[object]]) -> None:
        try:
            await async_fn()
        except Exception as exc:
            self._connection.reader_failed(exc)
        finally:
            self._connection.handshake.cancel()  # a handshake still waiting never ends


class _Connection:
    """One WebSocket connection: its socket, its write queue and its writer task's end.

    A reconnection makes a new one; what was queued for the old one dies with it.
    """

    __slots__ = (
        "handshake",
        "out_receive",
        "out_send",
        "reader_error",
        "stream",
        "write_failure",
        "writer_cancelled",
        "writer_done",
        "ws",
    )

    def __init__(self) -> None:
        self.stream: trio.SocketStream | trio.SSLStream[trio.SocketStream] | None = None
        self.ws: trio_websocket.WebSocketConnection | None = None
        self.handshake = trio.CancelScope()
        self.reader_error: Exception | None = None
        self.out_send, self.out_receive = trio.open_memory_channel[str](_WRITE_QUEUE_SIZE)
        self.writer_done = trio.Event()
        self.write_failure: Exception | None = None
        self.writer_cancelled = False  # the writer's nursery was cancelled under it

    def reader_failed(self, exc: Exception) -> None:
        if self.ws is None:
            self.reader_error = exc
        else:  # pragma: no cover - trio-websocket handles errors after the handshake
            logger.warning("the WebSocket reader failed: %r", exc)

    async def close_stream(self) -> None:
        # Closing our own stream also covers trio-websocket leaving it open when the
        # server started the closing handshake, or rejected the opening one.
        self.out_send.close()
        if self.stream is not None:
            with trio.CancelScope(shield=True), suppress(trio.BrokenResourceError, OSError):
                await self.stream.aclose()


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


class WebSocketTransport(WebSocketReconnection[WebSocketParameters, _Connection]):
    """A connection to an MCP server over WebSocket. Open it with
    [`WebSocketParameters.open_transport()`][trio_mcp.transports.WebSocketParameters.open_transport].

    When the connection breaks (see
    [`WebSocketParameters`][trio_mcp.transports.WebSocketParameters]' ``reconnect``), it reconnects
    by itself: requests waiting for an answer fail at once with
    [`ConnectionClosed`][trio_mcp.ConnectionClosed], messages sent meanwhile fail fast with one, and
    once it is back a legacy session's ``initialize`` and ``notifications/initialized`` are replayed
    (the answer is consumed here) before anything else is sent; then
    [`renewed()`][trio_mcp.transports.Transport.renewed] (legacy) or
    [`notification_gap()`][trio_mcp.transports.Transport.notification_gap] (modern, stateless) tells
    the session.
    """

    # (the session's MessageInfo names each request, for failing it when the link breaks)
    needs_info = True

    def __init__(self, params: WebSocketParameters) -> None:
        self._params = params
        self._conn = _Connection()
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._error: MCPError | None = None
        self._give_up_error: ConnectionClosed | None = None  # reconnecting ended for good
        self._origin = origin_of(params.url)
        self._reconnecting = False
        self._reconnected = trio.Event()  # set when the current reconnection ends
        self._reconnect_scope: trio.CancelScope | None = None
        self._initialize: tuple[str, RequestId] | None = None  # the session's, to replay
        self._initialized = False
        self._outstanding = Outstanding()
        self._early: deque[str | bytes] = deque()  # received while replaying initialize

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
        ws = self._conn.ws
        return ws.subprotocol if ws is not None else None

    async def connect(self, nursery: trio.Nursery) -> None:
        """Open the connection; its reader and writer tasks run in ``nursery`` until
        `aclose()`.

        Args:
            nursery: Where the reader and writer tasks (and reconnections) run.

        Raises:
            HTTPStatusError: The server refused the handshake.
            TransportError: The connection could not be opened.
        """
        self._nursery = nursery
        conn = await self._open(nursery)
        self._start_writer(conn)

    async def _open(self, nursery: trio.Nursery) -> _Connection:
        """A new connection, handshake done (its writer not started yet)."""
        import trio_websocket

        params = self._params
        host, port, resource, host_header, secure = _target(params.url)
        conn = self._conn = _Connection()
        try:
            with trio.fail_after(params.timeout):
                if secure:
                    context = params.ssl_context or _default_ssl_context()
                    conn.stream = await trio.open_ssl_over_tcp_stream(
                        host, port, ssl_context=context, https_compatible=True
                    )
                else:
                    conn.stream = await trio.open_tcp_stream(host, port)
        except (OSError, trio.TooSlowError) as exc:
            message = f"could not open a WebSocket to {display_url(params.url)}: {exc!r}"
            raise TransportError(message) from exc
        headers = [(k.encode(), v.encode()) for k, v in (params.headers or {}).items()]
        ws: trio_websocket.WebSocketConnection | None = None
        try:
            with trio.fail_after(params.timeout), conn.handshake:
                ws = await trio_websocket.wrap_client_stream(
                    cast("trio.Nursery", _ReaderSpawner(nursery, conn)),
                    conn.stream,
                    host_header,
                    resource,
                    subprotocols=[SUBPROTOCOL],
                    extra_headers=headers,
                    max_message_size=params.max_message_size,
                )
        except trio.TooSlowError as exc:
            await conn.close_stream()
            message = f"the WebSocket handshake with {display_url(params.url)} timed out"
            raise TransportError(message) from exc
        except BaseException:
            await conn.close_stream()
            raise
        if ws is None:
            await conn.close_stream()
            raise self._handshake_error(conn)
        conn.ws = ws
        if ws.subprotocol != SUBPROTOCOL:
            logger.debug("%s accepted without the mcp subprotocol", display_url(params.url))
        return conn

    def _start_writer(self, conn: _Connection) -> None:
        assert self._nursery is not None and conn.ws is not None
        self._nursery.start_soon(self._write_loop, conn, name="trio_mcp WebSocket writer")

    def _handshake_error(self, conn: _Connection) -> MCPError:
        import trio_websocket

        exc = conn.reader_error
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

    # -- sending -------------------------------------------------------------------------

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Hand one message to the writer task, which sends it whole as a text frame.

        Waits while the writer's queue is full. Once this returned, the message is sent
        whole even if the caller is cancelled (unless the connection breaks first).

        Args:
            data: The encoded message (UTF-8 JSON).
            info: What the message is (a request's id is remembered until its answer).

        Raises:
            trio.ClosedResourceError: The transport was closed.
            ConnectionClosed: The connection is closed, or is being re-established
                (nothing was sent; the transport's ``link`` is RECONNECTING), or the writer
                task ended because the nursery the transport was opened with was cancelled.
            ProtocolError: ``data`` is not UTF-8, so it cannot travel in a text frame.
        """
        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        if self._reconnecting:
            await trio.lowlevel.checkpoint()
            raise reconnecting_error(self._params.url)
        if self._error is not None:
            await trio.lowlevel.checkpoint()
            raise fresh_copy(self._error)
        conn = self._conn
        ws = conn.ws
        assert ws is not None
        if conn.writer_done.is_set() or ws.closed is not None:
            raise self._send_error(conn)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError("a message to send over WebSocket is not UTF-8 text") from exc
        request_id = info.request_id if info is not None and info.method is not None else None
        if request_id is not None:
            if info is not None and info.method == "initialize":
                self._initialize = (text, request_id)
            self._outstanding.add(request_id)
        elif info is not None and info.method == "notifications/initialized":
            self._initialized = True
        try:
            await conn.out_send.send(text)
        except trio.BrokenResourceError:  # the writer ended while we waited
            self._outstanding.discard(request_id)
            raise self._send_error(conn) from None
        except trio.ClosedResourceError:  # closed (or the connection broke) while we waited
            self._outstanding.discard(request_id)
            if self._closed:
                raise trio.ClosedResourceError("the transport is closed") from None
            raise self._send_error(conn) from None
        except BaseException:
            self._outstanding.discard(request_id)
            raise

    async def _write_loop(self, conn: _Connection) -> None:
        import trio_websocket

        ws = conn.ws
        assert ws is not None
        try:
            async for text in conn.out_receive:
                await ws.send_message(text)
        except trio_websocket.ConnectionClosed as exc:
            conn.write_failure = exc
            if reconnects_after(exc.reason):
                self._broken(conn, self._closed_error_from(exc.reason, exc))
        except trio.Cancelled:
            conn.writer_cancelled = not self._closed
            raise
        except Exception as exc:  # pragma: no cover - never raise into the user's nursery
            conn.write_failure = exc
            logger.exception("the WebSocket writer for %s failed", display_url(self._params.url))
        finally:
            conn.out_receive.close()  # senders waiting for room get BrokenResourceError
            conn.writer_done.set()

    def _send_error(self, conn: _Connection) -> ConnectionClosed:
        """A new error for a ``send`` that can no longer succeed."""
        import trio_websocket

        failure = conn.write_failure
        if conn.writer_cancelled:
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
        closed = conn.ws.closed if conn.ws is not None else None
        return self._closed_error_from(closed, None)

    # -- receiving -----------------------------------------------------------------------

    async def receive(self) -> bytes:
        """Receive the next message (a text frame's UTF-8 bytes, a binary frame as is).

        Waits across reconnections.

        Raises:
            trio.EndOfChannel: The server closed with code 1000 (or 1001 without
                ``reconnect``).
            ConnectionClosed: The connection closed otherwise (including code 1009 for a
                message over ``max_message_size``), or a reconnection was refused.
            trio.ClosedResourceError: The transport was closed.
        """
        message = await self._next()
        data = message.encode("utf-8") if isinstance(message, str) else message
        self._outstanding.discard(response_id(data))
        return data

    async def receive_message(self) -> bytes | Envelope:
        """The next message, decoded once here to see which request it answers.

        See `receive()`.
        """
        message = await self._next()
        data = message.encode("utf-8") if isinstance(message, str) else message
        envelope, answers = routed(data)
        self._outstanding.discard(answers)
        return data if envelope is None else envelope

    async def _next(self) -> str | bytes:
        import trio_websocket

        while True:
            if self._closed:
                raise trio.ClosedResourceError("the transport is closed")
            if self._early:
                return self._early.popleft()
            if self._reconnecting:
                await self._reconnected.wait()
                continue
            if self._give_up_error is not None:
                raise fresh_copy(self._give_up_error)
            conn = self._conn
            assert conn.ws is not None
            try:
                return await conn.ws.get_message()
            except trio_websocket.ConnectionClosed as exc:
                if self._closed:
                    raise trio.ClosedResourceError("the transport is closed") from exc
                if self._reconnecting or conn is not self._conn:
                    continue  # (the writer saw the break first: a reconnection is on)
                error = self._closed_error_from(exc.reason, exc)
                if (
                    self._params.reconnect is not None
                    and reconnects_after(exc.reason)
                    and not conn.writer_cancelled
                ):
                    self._broken(conn, error)
                    continue
                self._error = error
                reason = exc.reason
                if reason is not None and reason.code in _CLEAN_CLOSE_CODES:
                    raise trio.EndOfChannel from exc
                raise error  # noqa: B904 (the cause is set inside)

    def closed_error(self) -> MCPError:
        """Why the connection ended."""
        if self._error is not None:
            return self._error
        if self._conn.writer_cancelled:
            return self._send_error(self._conn)
        return ConnectionClosed(f"the WebSocket to {display_url(self._params.url)} closed")

    # -- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Send what is queued, close with code 1000 and wait (bounded) for the closing
        handshake. Idempotent; still closes when cancelled (a reconnection too).

        If the queued messages cannot be sent within ``timeout`` (a server that stopped
        reading), the connection is dropped without the closing handshake.
        """
        if self._closed:
            return
        self._closed = True
        self.link.closed()
        self._reconnected.set()
        if self._reconnect_scope is not None:
            self._reconnect_scope.cancel()  # (it closes the connection it was making)
        conn = self._conn
        conn.out_send.close()  # the writer sends what is queued, then ends
        ws = conn.ws
        if ws is not None and not self._reconnecting:
            with trio.move_on_after(self._params.timeout, shield=True) as flushing:
                await conn.writer_done.wait()
            # The closing handshake needs the reader, gone with a cancelled nursery.
            if not flushing.cancelled_caught and not conn.writer_cancelled:
                with trio.move_on_after(self._params.timeout, shield=True):
                    with suppress(Exception):
                        await ws.aclose()
        await conn.close_stream()  # a writer still stuck in send_all fails and ends
