"""The one transport contract, checked for every transport through real sessions.

memory (MockServer), stdio (``python -m trio_mcp.testing``), WebSocket (MockServer behind
trio-websocket on loopback), Streamable HTTP modern and legacy and HTTP+SSE (the official
SDK's server on loopback), all through the public checker
``trio_mcp.testing.check_transport``. Each must: carry whole messages both ways, many in flight;
fail a request whose server is gone with a TransportError (never hang); close idempotently,
also when cancelled; refuse use after close with trio.ClosedResourceError.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
import trio
from trio_websocket import WebSocketConnection, WebSocketRequest, serve_websocket

import trio_mcp
from trio_mcp._eras import era_cache
from trio_mcp.testing import CHECKS, MockServer, TransportContractError, check_transport
from trio_mcp.testing._checker import Check, Kill

from .interop_peers import open_sdk_http, skip_unless_sdk

Target = Any
Opener = Callable[[MockServer], AbstractAsyncContextManager[tuple[Target, Kill]]]


class _WebSocketStream:
    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws

    async def send(self, data: bytes) -> None:
        await self.ws.send_message(data.decode())

    async def receive(self) -> bytes:
        from trio_websocket import ConnectionClosed

        try:
            message = await self.ws.get_message()
        except ConnectionClosed:
            raise trio.EndOfChannel from None
        return message.encode() if isinstance(message, str) else message

    async def aclose(self) -> None:
        await self.ws.aclose()


@asynccontextmanager
async def memory(server: MockServer) -> AsyncGenerator[tuple[Target, Kill], None]:
    async def kill(session: trio_mcp.ClientSession) -> None:
        await server.crash()

    yield server, kill


@asynccontextmanager
async def stdio(server: MockServer) -> AsyncGenerator[tuple[Target, Kill], None]:
    params = trio_mcp.StdioParameters([sys.executable, "-m", "trio_mcp.testing"])

    async def kill(session: trio_mcp.ClientSession) -> None:
        import os
        import signal

        os.kill(session.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]

    yield params, kill


@asynccontextmanager
async def websocket(server: MockServer) -> AsyncGenerator[tuple[Target, Kill], None]:
    streams: list[_WebSocketStream] = []

    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        stream = _WebSocketStream(ws)
        streams.append(stream)
        await server.serve(stream)

    async def kill(session: trio_mcp.ClientSession) -> None:
        for stream in streams:
            await stream.ws.aclose(code=1011)

    async with trio.open_nursery() as nursery:
        ws_server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        yield f"ws://127.0.0.1:{ws_server.port}/mcp", kill
        nursery.cancel_scope.cancel()


def http(mode: str, transport: str = "http") -> Opener:
    @asynccontextmanager
    async def opener(server: MockServer) -> AsyncGenerator[tuple[Target, Kill], None]:
        skip_unless_sdk()
        era_cache.clear()
        async with open_sdk_http(transport, mode=mode) as peer:  # type: ignore[arg-type]
            from .interop_peers import terminate_process

            async def kill(session: trio_mcp.ClientSession) -> None:
                await terminate_process(peer.process, grace=0.1)

            target = trio_mcp.SSEParameters(peer.url) if transport == "sse" else peer.url
            yield target, kill

    return opener


TRANSPORTS: dict[str, Opener] = {
    "memory": memory,
    "stdio": stdio,
    "websocket": websocket,
    "http-modern": http("modern"),
    "http-legacy": http("legacy"),
    "http+sse": http("legacy", "sse"),
}


@pytest.fixture(params=sorted(TRANSPORTS))
def opener(request: pytest.FixtureRequest) -> Opener:
    if request.param.startswith("http"):
        skip_unless_sdk()
        request.applymarker(pytest.mark.interop)
    return TRANSPORTS[request.param]


@pytest.mark.parametrize("check", CHECKS)
async def test_transport_contract(opener: Opener, check: Check) -> None:
    """The public checker, run over every trio_mcp transport, one check at a time."""
    await check_transport(opener, checks=[check])


class _Hangs(trio_mcp.transports.Transport):
    """A broken transport: receive never ends, even after the server is gone."""

    needs_info = False

    def __init__(self, inner: trio_mcp.transports.Transport) -> None:
        self.inner = inner
        self.killed = False

    async def send(self, data: bytes, info: Any = None) -> None:
        await self.inner.send(data, info)

    async def receive(self) -> bytes:
        if self.killed:
            await trio.sleep_forever()
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_checker_catches_a_transport_that_hangs(autojump_clock: Any) -> None:
    @asynccontextmanager
    async def broken(server: MockServer) -> AsyncGenerator[tuple[Target, Kill], None]:
        holder: list[_Hangs] = []

        class Factory:
            @asynccontextmanager
            async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[_Hangs, None]:
                async with server.open_transport(nursery) as inner:
                    holder.append(_Hangs(inner))
                    yield holder[-1]

        async def kill(session: trio_mcp.ClientSession) -> None:
            holder[-1].killed = True
            server.faults.drop(None, times=None)

        yield Factory(), kill

    with pytest.raises(TransportContractError, match="'server_gone' did not finish within 5"):
        await check_transport(broken, checks=["server_gone"], timeout=5)


async def test_checker_rejects_unknown_checks() -> None:
    with pytest.raises(ValueError, match="unknown check 'speed'"):
        await check_transport(memory, checks=["speed"])  # type: ignore[list-item]
