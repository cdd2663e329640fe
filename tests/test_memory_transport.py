"""The in-memory transport: whole messages, checkpoints and bounded buffers both ways."""

from __future__ import annotations

import pytest
import trio
import trio.lowlevel
import trio.testing

from trio_mcp._exceptions import ConnectionClosed
from trio_mcp._transports._memory import (
    MEMORY_BUFFER_SIZE,
    MemoryServerStream,
    MemoryTransport,
    memory_transport_pair,
)


async def test_round_trip_and_end_of_stream() -> None:
    client, server = memory_transport_pair()
    assert client.era_key is None
    await client.send(b"ping")
    assert await server.receive() == b"ping"
    await server.send(b"pong")
    await server.aclose()
    assert await client.receive() == b"pong"  # pending messages first, then the end
    with pytest.raises(trio.EndOfChannel):
        await client.receive()
    with pytest.raises(ConnectionClosed, match="server went away"):
        await client.send(b"late")


async def test_send_is_a_checkpoint() -> None:
    client, server = memory_transport_pair()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.lowlevel.checkpoint()

    async def drain() -> None:
        while True:
            await server.receive()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        nursery.start_soon(drain)
        for _ in range(200_000):
            await client.send(b"{}")
        nursery.cancel_scope.cancel()
    assert ticks > 10_000  # the ticker ran all along, not only after the loop


@pytest.mark.parametrize("direction", ["to server", "to client"])
async def test_send_waits_while_the_peer_does_not_read(direction: str) -> None:
    client, server = memory_transport_pair()
    sent = 0

    async def flood() -> None:
        nonlocal sent
        for _ in range(10_000):
            if direction == "to server":
                await client.send(b"{}")
            else:
                await server.send(b"{}")
            sent += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(flood)
        await trio.testing.wait_all_tasks_blocked()
        assert sent == MEMORY_BUFFER_SIZE
        if direction == "to server":
            await server.receive()
        else:
            await client.receive()
        await trio.testing.wait_all_tasks_blocked()
        assert sent == MEMORY_BUFFER_SIZE + 1
        nursery.cancel_scope.cancel()


async def test_a_waiting_sender_is_woken_when_either_end_closes() -> None:
    client, server = memory_transport_pair(buffer_size=1)
    await client.send(b"fills the buffer")

    async def blocked_send(transport: MemoryTransport, expected: type[Exception]) -> None:
        with pytest.raises(expected):
            await transport.send(b"waits")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(blocked_send, client, ConnectionClosed)
        await trio.testing.wait_all_tasks_blocked()
        await server.aclose()

    client, server = memory_transport_pair(buffer_size=1)
    await client.send(b"fills the buffer")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(blocked_send, client, trio.ClosedResourceError)
        await trio.testing.wait_all_tasks_blocked()
        await client.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await client.send(b"after close")
    assert await server.receive() == b"fills the buffer"
    with pytest.raises(trio.EndOfChannel):  # then the server sees the end of the stream
        await server.receive()
    await client.aclose()  # idempotent


async def test_server_stream_after_the_client_left() -> None:
    client, server = memory_transport_pair()
    await client.aclose()
    with pytest.raises(ConnectionClosed, match="client went away"):
        await server.send(b"{}")
    with pytest.raises(trio.EndOfChannel):
        await server.receive()
    assert isinstance(server, MemoryServerStream)
