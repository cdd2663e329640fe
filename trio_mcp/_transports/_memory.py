"""In-process transport over trio memory channels (used by ``trio_mcp.testing``)."""

from __future__ import annotations

import math

import trio

from .._exceptions import ConnectionClosed
from ._base import MessageInfo, RequestFailed, Transport

__all__ = ["MemoryServerStream", "MemoryTransport", "memory_transport_pair"]


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
        """Hand one message to the server end."""
        if self._closed:
            raise trio.ClosedResourceError("the transport is closed")
        try:
            self._send_channel.send_nowait(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("the in-memory server went away") from exc

    async def receive(self) -> bytes | RequestFailed:
        """Receive the next message from the server end."""
        try:
            return await self._receive_channel.receive()
        except trio.EndOfChannel:
            raise
        except trio.BrokenResourceError as exc:  # pragma: no cover - memory channels don't break
            raise ConnectionClosed("the in-memory server went away") from exc

    async def aclose(self) -> None:
        """Close both directions. Idempotent."""
        self._closed = True
        self._send_channel.close()
        self._receive_channel.close()


class MemoryServerStream:
    """The server end of an in-process connection.

    ``receive`` returns the next message the client sent and raises
    :class:`trio.EndOfChannel` once the client closed; ``send`` delivers one message to the
    client; ``aclose`` ends the stream (the client sees end of stream).
    """

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send_channel = send_channel
        self._receive_channel = receive_channel

    async def send(self, data: bytes) -> None:
        """Deliver one message to the client."""
        try:
            self._send_channel.send_nowait(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("the client went away") from exc

    async def receive(self) -> bytes:
        """Receive the next message from the client."""
        try:
            return await self._receive_channel.receive()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise trio.EndOfChannel from exc

    async def aclose(self) -> None:
        """End the stream: the client sees end of stream after pending messages."""
        self._send_channel.close()
        self._receive_channel.close()


def memory_transport_pair() -> tuple[MemoryTransport, MemoryServerStream]:
    """Create a connected (client transport, server stream) pair with unbounded buffers."""
    to_server_send, to_server_receive = trio.open_memory_channel[bytes](math.inf)
    to_client_send, to_client_receive = trio.open_memory_channel[bytes](math.inf)
    return (
        MemoryTransport(to_server_send, to_client_receive),
        MemoryServerStream(to_client_send, to_server_receive),
    )
