"""In-process transport over trio memory channels (used by ``trio_mcp.testing``).

Each direction is a bounded memory channel of whole messages: ``send`` is a checkpoint and
waits while the peer has `MEMORY_BUFFER_SIZE` messages it has not read yet
(backpressure), just as a pipe or a socket would make a writer wait.
"""

from __future__ import annotations

import trio

from .._exceptions import ConnectionClosed
from ._base import MessageInfo, Transport

__all__ = ["MEMORY_BUFFER_SIZE", "MemoryServerStream", "MemoryTransport", "memory_transport_pair"]

MEMORY_BUFFER_SIZE = 256
"""How many unread messages each direction holds before ``send`` waits. Generous, so a scripted
server can send a burst of notifications without a reader keeping pace, yet bounded, so a peer that
stops reading stops the sender instead of growing memory."""


class MemoryTransport(Transport):
    """The client end of an in-process connection: whole messages over memory channels."""

    needs_info = False

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel
        self._closed = False

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Hand one message to the server end, waiting while its buffer is full.

        Args:
            data: The encoded message.
            info: Ignored.

        Raises:
            trio.ClosedResourceError: The transport was closed (also while waiting).
            ConnectionClosed: The server end was closed.
        """
        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        try:
            await self._send_channel.send(data)
        except trio.BrokenResourceError as exc:
            raise ConnectionClosed("the in-memory server went away") from exc

    def queue_nowait(self, data: bytes) -> bool:
        """Hand one message to the server end without waiting, if its buffer has room.

        Args:
            data: The encoded message.
        """
        if self._closed:
            return False
        try:
            self._send_channel.send_nowait(data)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    async def receive(self) -> bytes:
        """Receive the next message from the server end.

        Raises:
            trio.EndOfChannel: The server end was closed (after its pending messages).
            trio.ClosedResourceError: The transport was closed.
        """
        return await self._receive_channel.receive()

    async def aclose(self) -> None:
        """Close both directions. Idempotent."""
        self._closed = True
        self._send_channel.close()
        self._receive_channel.close()


class MemoryServerStream:
    """The server end of an in-process connection.

    ``receive`` returns the next message the client sent and raises
    `trio.EndOfChannel` once the client closed; ``send`` delivers one message to the
    client, waiting while the client has `MEMORY_BUFFER_SIZE` unread messages;
    ``aclose`` ends the stream (the client sees end of stream).
    """

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel

    async def send(self, data: bytes) -> None:
        """Deliver one message to the client, waiting while its buffer is full.

        Args:
            data: The encoded message.

        Raises:
            ConnectionClosed: The client closed its end.
            trio.ClosedResourceError: This stream was closed.
        """
        try:
            await self._send_channel.send(data)
        except trio.BrokenResourceError as exc:
            raise ConnectionClosed("the client went away") from exc

    async def receive(self) -> bytes:
        """Receive the next message from the client.

        Raises:
            trio.EndOfChannel: The client closed its end, or this stream was closed.
        """
        try:
            return await self._receive_channel.receive()
        except trio.ClosedResourceError as exc:
            raise trio.EndOfChannel from exc

    async def aclose(self) -> None:
        """End the stream: the client sees end of stream after pending messages."""
        self._send_channel.close()
        self._receive_channel.close()


def memory_transport_pair(
    buffer_size: int = MEMORY_BUFFER_SIZE,
) -> tuple[MemoryTransport, MemoryServerStream]:
    """Create a connected (client transport, server stream) pair.

    Args:
        buffer_size: How many unread messages each direction holds before ``send`` waits.

    Returns:
        The client end (a [`Transport`][trio_mcp.transports.Transport]) and the server end.
    """
    to_server_send, to_server_receive = trio.open_memory_channel[bytes](buffer_size)
    to_client_send, to_client_receive = trio.open_memory_channel[bytes](buffer_size)
    return (
        MemoryTransport(to_server_send, to_client_receive),
        MemoryServerStream(to_client_send, to_server_receive),
    )
