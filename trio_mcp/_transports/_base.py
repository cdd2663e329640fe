"""The one transport contract every trio_mcp transport implements.

A transport turns a target into a bidirectional channel of whole JSON-RPC messages
(UTF-8 JSON bytes, one message per item). It fits both shapes MCP uses:

* a byte pipe (stdio, WebSocket, memory): every message flows on one channel;
* per-request HTTP streams (Streamable HTTP): each ``send`` of a request opens its own
  response stream whose messages the transport feeds into the same ``receive`` side.

Rules every transport follows (checked by ``tests/test_transport_contract.py``):

* ``send`` never blocks the caller for longer than it takes to hand the bytes over; it
  raises :class:`trio.ClosedResourceError` after ``aclose`` and
  :class:`~trio_mcp.ConnectionClosed` once the peer is gone.
* ``receive`` returns the next whole message, or a :class:`RequestFailed` when a
  transport-level failure (an HTTP error, a stream that ended early) belongs to one request.
  It raises :class:`trio.EndOfChannel` when the peer ended the stream cleanly and
  :class:`~trio_mcp.ConnectionClosed` (or another :class:`~trio_mcp.TransportError`) when
  the connection broke. End of stream and broken peer are distinct.
* ``cancel_request`` lets a transport cancel a request natively (closing its HTTP response
  stream); it returns False when the session must send ``notifications/cancelled``.
* ``aclose`` is idempotent and closes even when cancelled.
* Any background task a transport needs runs in the nursery it was opened with.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import trio

    from .._exceptions import MCPError

__all__ = ["MessageInfo", "RequestFailed", "Transport", "TransportFactory"]

RequestId = int | str


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


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """A transport-level failure that belongs to exactly one outgoing request.

    Returned by :meth:`Transport.receive` instead of a message; the session fails that
    request (and only that request) with ``error``.
    """

    request_id: RequestId
    error: MCPError


class Transport(abc.ABC):
    """A connection carrying whole JSON-RPC messages to and from one MCP server."""

    #: The protocol version the session speaks, set by the session once it is known.
    #: HTTP transports send it as the ``MCP-Protocol-Version`` header.
    protocol_version: str | None = None

    #: Whether the transport wants modern per-request HTTP headers (Mcp-Method, ...).
    modern: bool = False

    #: Whether ``send`` uses its ``info`` argument; a byte pipe sets False and gets None.
    needs_info: bool = True

    @abc.abstractmethod
    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Send one whole JSON-RPC message.

        Args:
            data: The encoded message, without any framing.
            info: What the message is, for transports that route or label it.
        """

    @abc.abstractmethod
    async def receive(self) -> bytes | RequestFailed:
        """Receive the next whole JSON-RPC message, or a per-request failure.

        Raises:
            trio.EndOfChannel: The peer ended the stream cleanly.
            ConnectionClosed: The connection broke or the server died.
        """

    def try_send_now(self, data: bytes) -> bool:
        """Optionally take one message synchronously, without a task switch.

        The session calls this for a lone in-flight request (where coalescing has nothing
        to gain); a transport that cannot do better than :meth:`send` returns False and the
        session calls :meth:`send`. Returning True means the message is sent or queued.

        Args:
            data: The encoded message, without framing.
        """
        del data
        return False

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
