"""The one transport contract every trio_mcp transport implements.

A transport turns a target into a bidirectional channel of whole JSON-RPC messages
(UTF-8 JSON bytes, one message per item). It fits both shapes MCP uses:

* a byte pipe (stdio, WebSocket, memory): every message flows on one channel;
* per-request HTTP streams (Streamable HTTP): each ``send`` of a request opens its own
  response stream whose messages the transport feeds into the same ``receive`` side.

Rules every transport follows (checked by ``tests/test_transport_contract.py``):

* ``send`` is a checkpoint. It waits while the transport's bounded write queue is full
  (backpressure) and returns once the message is handed over; a message handed over is
  written whole even if the caller is cancelled afterwards (no partial frames). It raises
  `trio.ClosedResourceError` after ``aclose`` and [`ConnectionClosed`][trio_mcp.ConnectionClosed]
  (or another [`TransportError`][trio_mcp.TransportError]) once the peer is gone.
* ``receive`` returns the next whole message. It raises `trio.EndOfChannel` when the
  peer ended the stream cleanly and [`ConnectionClosed`][trio_mcp.ConnectionClosed] (or another
  [`TransportError`][trio_mcp.TransportError]) when the connection broke. End of stream and broken
  peer are distinct. Nothing else escapes: foreign errors are converted at the transport.
* A failure that belongs to exactly one request (an HTTP error status, a response stream
  that ended early) is reported through the callback given to
  [`Transport.attach()`][trio_mcp.transports.Transport.attach], never through ``receive``; a
  JSON-RPC error response found in an HTTP error body is such a failure, reported as the matching
  [`ServerError`][trio_mcp.ServerError].
* ``cancel_request`` lets a transport cancel a request natively (closing its HTTP response
  stream); it returns False when the session must send ``notifications/cancelled``.
* ``aclose`` is idempotent and closes even when cancelled.
* Any background task a transport needs runs in the nursery it was opened with, never
  raises into it, and ends when the transport closes.

The session tells the transport what it negotiated with
[`Transport.negotiated()`][trio_mcp.transports.Transport.negotiated], and reads the declared
attributes below; nothing else is read or written from outside.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ._link import Link

if TYPE_CHECKING:
    import trio

    from .._exceptions import MCPError
    from .._jsonrpc import Envelope
    from .._statistics import PoolStatistics

__all__ = ["MessageInfo", "RequestFailure", "Transport", "TransportFactory"]

RequestId = int | str

RequestFailure = Callable[[RequestId, "MCPError"], None]
"""The callback a transport calls when one request failed below JSON-RPC."""


@dataclass(frozen=True, slots=True)
class MessageInfo:
    """What the session knows about an outgoing message, for transports that need it.

    Attributes:
        method: The JSON-RPC method (``None`` for a response).
        request_id: The id of a request (``None`` for notifications and responses).
        name: The value for the ``Mcp-Name`` header: tool name, prompt name or resource URI.
        headers: Extra HTTP headers for this message (``Mcp-Param-*``).
        idempotent: Whether the request may be re-issued under a new id if its stream breaks.
    """

    method: str | None
    request_id: RequestId | None = None
    name: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    idempotent: bool = False


def _drop_failure(request_id: RequestId, error: MCPError) -> None:
    del request_id, error


def _ignore_gap(renewed: bool) -> None:
    del renewed


class Transport(abc.ABC):
    """A connection carrying whole JSON-RPC messages to and from one MCP server."""

    protocol_version: str | None = None
    """The protocol version the session speaks (set through
    [`negotiated()`][trio_mcp.transports.Transport.negotiated]). HTTP transports send it as the
    ``MCP-Protocol-Version`` header."""

    modern: bool = False
    """Whether the session speaks the modern (2026-07-28) era (set through
    [`negotiated()`][trio_mcp.transports.Transport.negotiated]); HTTP transports then send
    per-request headers."""

    needs_info: bool = True
    """Whether ``send`` uses its ``info`` argument; a byte pipe sets False and gets None."""

    can_probe: bool = True
    """Whether ``protocol="auto"`` may probe this transport with ``server/discover``. False for
    transports that only legacy servers speak (HTTP+SSE)."""

    _fail_request: RequestFailure = staticmethod(_drop_failure)
    _link: Link | None = None
    _on_gap: Callable[[bool], None] = staticmethod(_ignore_gap)

    @property
    def link(self) -> Link:
        """The health of this transport's link to its server (made on first use).

        A transport records here a broken connection or a session the server forgot, and
        its recovery; the session's statistics and a group's member status read it.
        """
        link = self._link
        if link is None:
            link = self._link = Link()
        return link

    @property
    def routed_bytes(self) -> int:
        """Bytes of the messages this transport handed over already decoded (for statistics).

        A transport that routes decoded messages (see
        [`receive_message()`][trio_mcp.transports.Transport.receive_message]) counts their bytes
        here, since the session never sees them; the default is 0.
        """
        return 0

    def pool_statistics(self) -> PoolStatistics | None:
        """A snapshot of the HTTP connection pool under this transport, if it has one."""
        return None

    @property
    def era_key(self) -> str | None:
        """The key the session remembers this server's era under (origin or command)."""
        return None

    @property
    def wants_param_headers(self) -> bool:
        """Whether tool calls should carry ``Mcp-Param-*`` headers (modern HTTP)."""
        return False

    def attach(self, fail_request: RequestFailure) -> None:
        """Register the callback for per-request failures. The session calls it once.

        Args:
            fail_request: Called with a request id and the error that ends that request.
        """
        self._fail_request = fail_request

    def attach_gap(self, on_gap: Callable[[bool], None]) -> None:
        """Register the session's callback for gaps in what the server told it.

        The transport calls it (through
        [`notification_gap()`][trio_mcp.transports.Transport.notification_gap] and
        [`renewed()`][trio_mcp.transports.Transport.renewed]) after a re-opened notification stream
        or a new server session; the session then treats every cached list as stale and, after a new
        server session, sets up again what the application had set up (subscriptions, the log
        level). The callback is synchronous and must not block: it schedules that work.

        Args:
            on_gap: Called with True after a new server session, False after a gap alone.
        """
        self._on_gap = on_gap

    def notification_gap(self) -> None:
        """Notifications may have been missed (a stream re-opened, a reconnect)."""
        self._on_gap(False)

    def renewed(self) -> None:
        """The transport started a new server session; the link is up again."""
        self.link.restored()
        self._on_gap(True)

    def attach_reader(self, dispatch: Callable[[bytes | Envelope], None]) -> None:
        """Let the transport hand messages straight to the session's reader logic.

        The session calls it once, with the function its reader task calls on each message
        (synchronous and total: it never raises). A transport whose messages arrive in
        tasks of its own (Streamable HTTP: one per request) may call it from those tasks
        instead of queueing for [`receive()`][trio_mcp.transports.Transport.receive], but only while
        the reader waits on an empty queue, so messages keep their order; one task switch fewer per
        message. The default ignores it; a wrapper that does not pass it on sees every message in
        [`receive()`][trio_mcp.transports.Transport.receive].

        Args:
            dispatch: The session's message router.
        """
        del dispatch

    def negotiated(self, *, modern: bool, protocol_version: str | None) -> None:
        """Learn the era and protocol version the session speaks from now on.

        Args:
            modern: True for the stateless 2026-07-28 era, False for the handshake era.
            protocol_version: The revision in use, or None while negotiating.
        """
        self.modern = modern
        self.protocol_version = protocol_version

    async def fallback(self) -> bool:
        """Switch to an older transport flavour after a legacy ``initialize`` failed.

        Returns:
            True if the transport switched (the session retries ``initialize``).
        """
        return False

    @abc.abstractmethod
    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Send one whole JSON-RPC message.

        Args:
            data: The encoded message, without any framing.
            info: What the message is, for transports that route or label it.
        """

    @abc.abstractmethod
    async def receive(self) -> bytes:
        """Receive the next whole JSON-RPC message.

        Raises:
            trio.EndOfChannel: The peer ended the stream cleanly.
            ConnectionClosed: The connection broke or the server died.
        """

    async def receive_message(self) -> bytes | Envelope:
        """Receive the next message, decoded if the transport already decoded it.

        A transport that must decode messages to route them (Streamable HTTP: which request
        does this answer?) hands the session the `Envelope` it
        got from `decode_envelope()`, so no message is decoded twice;
        the others return [`receive()`][trio_mcp.transports.Transport.receive]'s bytes, which the
        session decodes. The session reads through this method; wrappers that only override
        [`receive()`][trio_mcp.transports.Transport.receive] keep working.

        Raises:
            trio.EndOfChannel: The peer ended the stream cleanly.
            ConnectionClosed: The connection broke or the server died.
        """
        return await self.receive()

    def try_send_now(self, data: bytes) -> bool:
        """Optionally take one message synchronously, without a task switch.

        The session calls this for a lone in-flight request (where coalescing has nothing
        to gain); a transport that cannot do better than
        [`send()`][trio_mcp.transports.Transport.send] returns False and the session calls
        [`send()`][trio_mcp.transports.Transport.send]. Returning True means the message is sent or
        queued.

        Args:
            data: The encoded message, without framing.
        """
        del data
        return False

    def queue_nowait(self, data: bytes) -> bool:
        """Optionally hand one message over without waiting, if the write queue has room.

        The session uses it for requests, whose wait for the answer is the checkpoint;
        [`send()`][trio_mcp.transports.Transport.send] itself always is one. A message taken is
        written whole, like one given to [`send()`][trio_mcp.transports.Transport.send]. Returns
        False when the queue is full, the transport is closed or broken, or it has no queue; the
        session then awaits [`send()`][trio_mcp.transports.Transport.send] (which raises the right
        error).

        Args:
            data: The encoded message, without framing.
        """
        del data
        return False

    def queue_request_nowait(self, data: bytes, info: MessageInfo | None) -> bool:
        """Like [`queue_nowait()`][trio_mcp.transports.Transport.queue_nowait], for a request, with
        its [`MessageInfo`][trio_mcp.transports.MessageInfo].

        The session calls this one; by default it is
        [`queue_nowait()`][trio_mcp.transports.Transport.queue_nowait]. A transport that routes by
        ``info`` overrides it (Streamable HTTP starts the request's POST).

        Args:
            data: The encoded request, without framing.
            info: What it is (None when the transport's ``needs_info`` is False).
        """
        return self.queue_nowait(data)

    def cancel_request(self, request_id: RequestId) -> bool:
        """Cancel a request at the transport level, if the transport can.

        Args:
            request_id: The id of the request to cancel.

        Returns:
            True if the transport signalled the cancellation itself (no
            ``notifications/cancelled`` needed), False otherwise.
        """
        del request_id
        return False

    def closed_error(self) -> MCPError:
        """Describe why the connection ended, for failing pending requests."""
        from .._exceptions import ConnectionClosed

        return ConnectionClosed()

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Close the connection. Idempotent; still closes when cancelled."""


@runtime_checkable
class TransportFactory(Protocol):
    """Anything that can open a transport: parameters objects and the testing server."""

    def open_transport(self, nursery: trio.Nursery) -> AbstractAsyncContextManager[Transport]:
        """Open a transport whose background tasks run in ``nursery``.

        Args:
            nursery: The nursery that owns the transport's tasks.
        """
        ...
