"""A lean HTTP/1.1 connection pool on trio sockets: the transport under trio_mcp's own clients.

`H11Transport` is an `httpx.AsyncBaseTransport`, so everything above it is
httpx's own API (``httpx.Auth`` flows, event hooks, cookies); only the connection layer
is replaced. URLs that a proxy of the environment takes do not come here: the client
mounts httpx's own proxy transports for them (``_http_client.make_client``). The pool exists
because httpcore's, on loopback, costs more than the MCP work above it:

* each request is written with one ``send_all`` (headers and body together, one syscall);
* idle connections are a stack (the most recently used first, so a burst reuses warm
  connections) and a request that finds none while `H11Transport.max_connections`
  are busy waits in a `trio.Semaphore`, first come, first served, at constant cost
  per request (httpcore's pool rescans every queued request on each state change);
* an idle connection the server closed is noticed before it is reused (its socket reads
  as ready), never written to;
* a body with no ``Content-Encoding`` may be read straight from the connection
  (`plain_body()`) instead of through httpx's chain of generators and decoders.

What it keeps of httpx's behaviour: at most ``max_keepalive_connections`` (20) idle
connections outlive a burst, each closed once idle for ``keepalive_expiry`` (5 s, on trio's
clock); the ones beyond that number (the oldest first) are closed once idle for
``surplus_expiry`` (1 s), not the instant they are given back, so that a burst of more
requests than that (1,000 concurrent calls on 100 connections) and the burst after it
reuse their connections instead of reconnecting most of them (httpx's pool hands a
connection given back to a waiting request before it applies the limit; here the waiting
requests run a moment later). Both are closed at the pool's next request or when it
closes, never by a task of their own; a response the
server sends before the request's body was written (a 413, say, then closing) is the
response, not a write error; a connection on which anything arrives that no request asked
for (bytes past the end of a response, or on an idle connection) is closed, never read as
the next request's answer; a TLS failure says why (the certificate's host name, an unknown
CA...).

Timeouts come from httpx's ``timeout`` extension (``connect``, ``write``, ``pool``, and
``read`` per receive); every failure is raised as the matching httpx exception
(``ConnectError``, ``ReadError``, ``RemoteProtocolError``, ``*Timeout``...), so callers
convert errors exactly as they do for httpx's default transport. A response body that is
closed before it was read to the end (a cancelled caller, a stream given up) closes its
connection: a connection is only reused between whole exchanges.

HTTP/2 is not offered: MCP servers in the wild speak HTTP/1.1, and trio_mcp's callers never
wait behind each other on one connection.
"""

from __future__ import annotations

import math
import os
import ssl
import sys
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Final, cast

import h11
import httpx
import trio

from .._statistics import PoolStatistics

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

__all__ = ["H11Transport", "plain_body"]

READ_SIZE: Final = 256 * 1024
"""The most bytes one ``receive_some`` asks for."""
UNYIELDED_READ: Final = 1024 * 1024
"""How many bytes a connection reads without a trip through the scheduler while they are already
there (then it yields once, so a fast stream never starves other tasks)."""
# Plain TCP sockets are read and written directly first (POSIX: os.read/os.write on the fd)
_DIRECT_IO: Final = os.name == "posix"
_DEFAULT_PORTS: Final = {b"http": 80, b"https": 443}

Origin = tuple[bytes, bytes, int]


def _stream_socket(stream: trio.abc.Stream) -> trio.socket.SocketType | None:
    if isinstance(stream, trio.SSLStream):
        inner: trio.abc.Stream = cast("trio.SSLStream[trio.abc.Stream]", stream).transport_stream
        stream = inner
    return stream.socket if isinstance(stream, trio.SocketStream) else None


class _Connection:
    """One HTTP/1.1 connection: a stream and its h11 state machine."""

    __slots__ = (
        "_counts",
        "_credit",
        "_fd",
        "expires",
        "h11",
        "origin",
        "stream",
        "surplus_expires",
    )

    def __init__(
        self, origin: Origin, stream: trio.abc.Stream, counts: list[int] | None = None
    ) -> None:
        self._counts = counts  # the pool's [opened, closed] (statistics)
        self.origin = origin
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)
        self.expires = 0.0
        """When this connection, idle in the pool, is no longer reused (trio's clock)."""
        self.surplus_expires = 0.0
        """When it is closed if more than ``max_keepalive_connections`` are idle by then."""
        # a plain TCP socket's fd: what is already there is read or written at once, with
        # no trip through the scheduler (trio's socket calls always take one); TLS streams
        # and other platforms use the stream
        self._fd: int | None = (
            stream.socket.fileno() if _DIRECT_IO and isinstance(stream, trio.SocketStream) else None
        )
        self._credit = UNYIELDED_READ

    def write_now(self, data: bytes) -> int:
        """Write what the socket takes at once, without waiting; how many bytes it took.

        Raises:
            OSError: The connection broke.
        """
        fd = self._fd
        if fd is None:
            return 0
        try:
            return os.write(fd, data)
        except BlockingIOError:
            return 0

    def _read_now(self) -> bytes | None:
        """What the socket has at once (``b""``: the server closed it), or None."""
        fd = self._fd
        if fd is None or self._credit <= 0:
            self._credit = UNYIELDED_READ  # (the caller reads through the stream: it yields)
            return None
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return None
        self._credit -= len(data) + 1
        return data

    def dropped(self) -> bool:
        """Whether the server closed this idle connection (or sent what it must not).

        Anything to read on an idle connection is either its end or bytes no request asked
        for: the socket's, and over TLS also what the TLS layer already took from the
        socket (records it read with the last response's, decrypted or not).
        """
        stream: object = self.stream
        sock = _stream_socket(self.stream)
        if sock is None or sock.is_readable():
            return True
        if isinstance(self.stream, trio.SSLStream):
            # (trio keeps these private; without them only the socket is looked at)
            ssl_object: Any = getattr(stream, "_ssl_object", None)
            incoming: Any = getattr(stream, "_incoming", None)
            if ssl_object is not None and ssl_object.pending():
                return True
            if incoming is not None and incoming.pending:
                return True
        return False

    def buffered_to_end(self) -> bool:
        """Whether the rest of the response is already buffered (read and dropped here)."""
        try:
            while True:
                event = self.h11.next_event()
                if isinstance(event, h11.EndOfMessage):
                    return True
                if not isinstance(event, h11.Data):
                    return False
        except h11.RemoteProtocolError:
            return False

    async def receive_event(self, timeout: float | None) -> Any:
        """The next h11 event, reading from the stream as needed."""
        conn = self.h11
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc)) from exc
            if event is not h11.NEED_DATA:
                return event
            try:
                data: bytes | bytearray | None = self._read_now()
                if data is None:
                    if timeout is None:  # (the usual case: no context manager to make)
                        data = await self.stream.receive_some(READ_SIZE)
                    else:
                        with trio.fail_after(timeout):
                            data = await self.stream.receive_some(READ_SIZE)
            except trio.TooSlowError as exc:
                raise httpx.ReadTimeout("timed out reading the response") from exc
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
            if not data and conn.their_state is h11.SEND_RESPONSE:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
            conn.receive_data(bytes(data) if isinstance(data, bytearray) else data)

    async def aclose(self) -> None:
        """Close the stream at once (cancel-safe: a cancelled close still closes)."""
        self._fd = None  # (its number may soon belong to another file)
        counts, self._counts = self._counts, None  # (closed once: counted once)
        if counts is not None:
            counts[1] += 1
        await trio.aclose_forcefully(self.stream)


async def _open_tcp_stream(host: str, port: int) -> trio.SocketStream:
    """``trio.open_tcp_stream``, whose happy-eyeballs nursery never leaks a group out."""
    try:
        return await trio.open_tcp_stream(host, port)
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        for leaf in leaves:
            if isinstance(leaf, trio.Cancelled):
                raise leaf from None
        raise OSError(f"could not connect to {host}:{port}: {leaves}") from group


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(cast("BaseExceptionGroup[BaseException]", exc))
        else:
            yield exc


def _connect_failure(exc: BaseException, host: str, port: int) -> str:
    """Why a connection failed, for a person: a TLS failure says what TLS refused."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, ssl.SSLCertVerificationError):
        why = cause.verify_message or cause.reason or str(cause)
        return f"TLS certificate verification failed for {host}:{port}: {why}"
    if isinstance(cause, ssl.SSLError):
        return f"TLS handshake with {host}:{port} failed: {cause.reason or cause}"
    if isinstance(exc, trio.BrokenResourceError):
        return f"the TLS handshake with {host}:{port} was cut off by the server"
    return str(exc) or type(exc).__name__


def _deadline(timeout: float | None) -> AbstractContextManager[Any]:
    return nullcontext() if timeout is None else trio.fail_after(timeout)


def plain_body(response: httpx.Response) -> AsyncIterator[bytes] | None:
    """The body of a response of this pool that needs no decoding, to read directly.

    ``response.aiter_bytes()`` passes every chunk through httpx's chain of generators and
    decoders (about 12 µs for a small answer); a body with no ``Content-Encoding`` from
    this pool is the same bytes read straight from the connection. Returns None for any
    other response (another transport's, or an encoded one): read it through httpx.
    Reading it to the end gives the connection back, as ``aiter_bytes`` would.
    """
    stream = response.stream
    if type(stream) is not _ResponseBody or stream.encoded:
        return None
    return stream


class _ResponseBody(httpx.AsyncByteStream):
    """A response's body: its chunks, then the connection goes back (or is closed).

    A plain async iterator, not a generator: one given up half-way leaves nothing behind
    for the garbage collector to finalize.
    """

    def __init__(
        self, pool: H11Transport, connection: _Connection, timeout: float | None, encoded: bool
    ) -> None:
        self._pool = pool
        self._connection: _Connection | None = connection
        self._timeout = timeout
        self.encoded = encoded
        """Whether the body has a ``Content-Encoding`` (then httpx decodes it)."""

    def __aiter__(self) -> _ResponseBody:
        return self

    async def __anext__(self) -> bytes:
        connection = self._connection
        if connection is None:
            raise StopAsyncIteration
        event = await connection.receive_event(self._timeout)
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            self._connection = None
            await self._pool.release(connection)
            raise StopAsyncIteration
        raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__} in a response body")

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:  # read to the end and given back already: nothing to do
            await trio.lowlevel.checkpoint_if_cancelled()
        elif connection.buffered_to_end():  # e.g. an empty 202 nobody read
            await self._pool.release(connection)
        else:  # not read to the end: the connection cannot be reused
            await self._pool.discard(connection)


class H11Transport(httpx.AsyncBaseTransport):
    """An `httpx.AsyncBaseTransport` with a lean HTTP/1.1 pool on trio sockets.

    Used by the clients trio_mcp creates (for the URLs no proxy takes); see the module
    docstring. A caller's own `httpx.AsyncClient` keeps its own transport.

    Args:
        ssl_context: The TLS context of ``https://`` connections.
        max_connections: The most connections in use at once; more requests wait, first
            come, first served.
        max_keepalive_connections: The most idle connections (over all origins) kept
            alive longer than ``surplus_expiry``.
        keepalive_expiry: Seconds an idle connection may wait for its next request (on
            trio's clock); an older one is closed, never reused.
        surplus_expiry: Seconds an idle connection beyond ``max_keepalive_connections``
            may wait for its next request (on trio's clock; at most ``keepalive_expiry``):
            the oldest idle connections are closed once idle that long while more than
            ``max_keepalive_connections`` are idle.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext,
        max_connections: int = 100,
        max_keepalive_connections: int = 20,
        keepalive_expiry: float = 5.0,
        surplus_expiry: float = 1.0,
    ) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        if max_keepalive_connections < 0 or keepalive_expiry < 0 or surplus_expiry < 0:
            raise ValueError(
                "max_keepalive_connections, keepalive_expiry and surplus_expiry must not be "
                "negative"
            )
        self._ssl_context = ssl_context
        self.max_connections = max_connections
        self.max_keepalive_connections = max_keepalive_connections
        self.keepalive_expiry = keepalive_expiry
        self.surplus_expiry = min(surplus_expiry, keepalive_expiry)
        # no idle connection needs closing before this time (trio's clock)
        self._sweep_at = math.inf
        self._slots = trio.Semaphore(max_connections)
        # idle connections of each origin, oldest first; how many over all origins
        self._idle: dict[Origin, list[_Connection]] = {}
        self._idle_count = 0
        self._closed = False
        self._counts = [0, 0]  # connections opened and closed since start (statistics)
        self.proxied = False
        """Whether the client routes the session's URL elsewhere (a proxy): set by its maker."""

    def statistics(self) -> PoolStatistics:
        """A snapshot of the pool: connections open, idle, opened and closed since start."""
        opened, closed = self._counts
        return PoolStatistics(opened - closed, self._idle_count, opened, closed, self.proxied)

    async def __aenter__(self) -> H11Transport:
        await trio.lowlevel.checkpoint()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request and return its response, whose body streams from the socket."""
        if self._closed:
            raise httpx.ConnectError("the HTTP transport is closed")
        url = request.url
        scheme = url.raw_scheme
        if scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}")
        origin: Origin = (scheme, url.raw_host, url.port or _DEFAULT_PORTS[scheme])
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        pool_timeout = timeouts.get("pool")
        await trio.lowlevel.checkpoint_if_cancelled()
        slots = self._slots
        if slots.value:  # a free slot (then nobody waits): taken with no scheduler trip
            slots.acquire_nowait()
        else:  # (not from an `except WouldBlock`: its traceback would live as long as the wait)
            try:
                with _deadline(pool_timeout):
                    await slots.acquire()
            except trio.TooSlowError as exc:
                raise httpx.PoolTimeout("timed out waiting for a connection") from exc
        connection: _Connection | None = None
        try:
            if self._closed:  # closed while this request waited for a slot
                raise httpx.ConnectError("the HTTP transport is closed")
            connection = await self._connection_for(origin, timeouts.get("connect"))
            read_timeout = timeouts.get("read")
            try:
                await self._send_request(connection, request, timeouts.get("write"))
            except httpx.WriteError as exc:
                # The server may have answered before reading the whole body (a 413, a
                # 401...) and closed: that answer is the response, not the write failure.
                event = await self._early_response(connection, read_timeout, exc)
            else:
                event = await self._response_head(connection, read_timeout)
        except BaseException:
            self._slots.release()  # first: the close below is a checkpoint
            if connection is not None:
                await connection.aclose()
            raise
        headers = event.headers.raw_items()
        encoded = any(name.lower() == b"content-encoding" for name, _ in headers)
        return httpx.Response(
            status_code=event.status_code,
            headers=headers,
            stream=_ResponseBody(self, connection, read_timeout, encoded),
            extensions={
                "http_version": b"HTTP/" + event.http_version,
                "reason_phrase": event.reason,
            },
        )

    @staticmethod
    async def _response_head(connection: _Connection, timeout: float | None) -> h11.Response:
        while True:
            event = await connection.receive_event(timeout)
            if isinstance(event, h11.Response):
                return event
            if not isinstance(event, h11.InformationalResponse):
                raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__}")

    async def _early_response(
        self, connection: _Connection, timeout: float | None, failure: httpx.WriteError
    ) -> h11.Response:
        """The response a server sent before the request was written whole, if any.

        The connection broke while writing, so reading ends soon (with the response the
        server had sent, or the end of the stream); without one, the write failure stands.
        """
        try:
            return await self._response_head(connection, timeout)
        except httpx.HTTPError:
            pass
        raise failure

    async def _connection_for(self, origin: Origin, timeout: float | None) -> _Connection:
        await self._close_expired()
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if not connection.dropped():
                return connection
            await connection.aclose()
        scheme, host, port = origin
        hostname = host.decode("ascii")
        try:
            with _deadline(timeout):
                stream: trio.abc.Stream = await _open_tcp_stream(hostname, port)
                if scheme == b"https":
                    tls = trio.SSLStream(
                        stream, self._ssl_context, server_hostname=hostname, https_compatible=True
                    )
                    try:
                        await tls.do_handshake()
                    except BaseException:
                        await trio.aclose_forcefully(stream)
                        raise
                    stream = tls
        except trio.TooSlowError as exc:
            raise httpx.ConnectTimeout(f"timed out connecting to {hostname}:{port}") from exc
        except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
            raise httpx.ConnectError(_connect_failure(exc, hostname, port)) from exc
        self._counts[0] += 1
        return _Connection(origin, stream, self._counts)

    async def _send_request(
        self, connection: _Connection, request: httpx.Request, timeout: float | None
    ) -> None:
        conn = connection.h11
        try:
            head = conn.send(
                h11.Request(
                    method=request.method, target=request.url.raw_path, headers=request.headers.raw
                )
            )
            try:
                body = request.content
            except httpx.RequestNotRead:  # a streamed body: written as it comes
                await self._write(connection, head, timeout)
                chunks = cast("AsyncIterable[bytes]", request.stream).__aiter__()
                try:
                    async for chunk in chunks:
                        await self._write(connection, conn.send(h11.Data(data=chunk)), timeout)
                finally:  # a body given up half-way (a write failed) leaves no generator open
                    aclose = getattr(chunks, "aclose", None)
                    if aclose is not None:
                        with trio.CancelScope(shield=True):
                            await aclose()
                await self._write(connection, conn.send(h11.EndOfMessage()), timeout)
                return
            if body:
                head += conn.send(h11.Data(data=body)) or b""
            await self._write(connection, head + (conn.send(h11.EndOfMessage()) or b""), timeout)
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc)) from exc

    @staticmethod
    async def _write(connection: _Connection, data: bytes | None, timeout: float | None) -> None:
        if not data:
            return
        try:
            written = connection.write_now(data)  # the usual case: all of it, no yield
            if written < len(data):
                with _deadline(timeout):
                    await connection.stream.send_all(memoryview(data)[written:])
        except trio.TooSlowError as exc:
            raise httpx.WriteTimeout("timed out writing the request") from exc
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__) from exc

    async def release(self, connection: _Connection) -> None:
        """Give a connection back after a whole exchange: kept alive, or closed.

        It is closed when the server sent anything past the end of the response (an answer
        nobody asked for is never taken as the next request's), or when it is not
        reusable. Kept, it may be closed later: when idle for ``keepalive_expiry``, or for
        ``surplus_expiry`` while more than ``max_keepalive_connections`` are idle (the
        oldest first; see ``_close_expired``).
        """
        self._slots.release()
        conn = connection.h11
        if (
            not self._closed
            and conn.our_state is h11.DONE
            and conn.their_state is h11.DONE
            and not conn.trailing_data[0]
        ):
            conn.start_next_cycle()
            now = trio.current_time()
            connection.expires = now + self.keepalive_expiry
            connection.surplus_expires = now + self.surplus_expiry
            self._idle.setdefault(connection.origin, []).append(connection)
            self._idle_count += 1
            if self._idle_count == self.max_keepalive_connections + 1:
                self._sweep_at = self._next_sweep()  # the oldest become surplus
            elif connection.expires < self._sweep_at:  # (the first idle one, say)
                self._sweep_at = connection.expires
            # (the exchange did its I/O: a cancellation point is enough, no yield)
            await trio.lowlevel.checkpoint_if_cancelled()
            return
        await connection.aclose()

    async def _close_expired(self) -> None:
        """Close the idle connections whose keep-alive expired (the oldest of each origin).

        Expired: idle for ``keepalive_expiry``, or for ``surplus_expiry`` while more than
        ``max_keepalive_connections`` are idle. Costs one comparison until the first idle
        connection can expire.
        """
        now = trio.current_time()
        if now < self._sweep_at:
            return
        for origin, idle in list(self._idle.items()):
            while (
                idle
                and (
                    idle[0].expires <= now
                    or (
                        idle[0].surplus_expires <= now
                        and self._idle_count > self.max_keepalive_connections
                    )
                )
                and self._idle.get(origin) is idle
            ):
                connection = idle.pop(0)
                self._idle_count -= 1
                await connection.aclose()
            if not idle and self._idle.get(origin) is idle:
                del self._idle[origin]
        self._sweep_at = self._next_sweep()

    def _next_sweep(self) -> float:
        """The first time an idle connection can expire (the oldest of an origin first)."""
        if self._idle_count > self.max_keepalive_connections:
            return min(idle[0].surplus_expires for idle in self._idle.values() if idle)
        return min((idle[0].expires for idle in self._idle.values() if idle), default=math.inf)

    async def discard(self, connection: _Connection) -> None:
        """Close a connection that cannot be reused and free its slot."""
        self._slots.release()
        await connection.aclose()

    async def aclose(self) -> None:
        """Close every idle connection; connections in use close when their body does."""
        self._closed = True
        idle, self._idle = self._idle, {}
        self._idle_count = 0
        for connections in idle.values():
            while connections:  # (popped: a task closing expired ones pops from them too)
                await connections.pop().aclose()
        await trio.lowlevel.checkpoint()
