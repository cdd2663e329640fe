"""The one transport contract, checked for every transport through real sessions.

memory (MockServer), stdio (``python -m trio_mcp.testing``), WebSocket (MockServer behind
trio-websocket on loopback), Streamable HTTP modern and legacy and HTTP+SSE (the official
SDK's server on loopback). Each must: carry whole messages both ways, many in flight;
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
from trio_mcp.testing import MockServer, ToolContext

from .interop_peers import open_sdk_http, skip_unless_sdk

Target = Any
Opener = Callable[[], AbstractAsyncContextManager[tuple[Target, Callable[[], Any]]]]


def mock_server() -> MockServer:
    server = MockServer()

    @server.tool(description="Echo")
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    return server


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
async def memory() -> AsyncGenerator[tuple[Target, Callable[[], Any]], None]:
    server = mock_server()
    yield server, server.crash


@asynccontextmanager
async def stdio() -> AsyncGenerator[tuple[Target, Callable[[], Any]], None]:
    params = trio_mcp.StdioParameters([sys.executable, "-m", "trio_mcp.testing"])
    holder: dict[str, Any] = {}

    async def kill() -> None:
        import os
        import signal

        os.kill(holder["session"].transport.pid, signal.SIGKILL)

    yield (params, holder), kill


@asynccontextmanager
async def websocket() -> AsyncGenerator[tuple[Target, Callable[[], Any]], None]:
    server = mock_server()
    streams: list[_WebSocketStream] = []

    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        stream = _WebSocketStream(ws)
        streams.append(stream)
        await server.serve(stream)

    async def kill() -> None:
        for stream in streams:
            await stream.ws.aclose(code=1011)

    async with trio.open_nursery() as nursery:
        ws_server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        yield f"ws://127.0.0.1:{ws_server.port}/mcp", kill
        nursery.cancel_scope.cancel()


def http(mode: str, transport: str = "http") -> Opener:
    @asynccontextmanager
    async def opener() -> AsyncGenerator[tuple[Target, Callable[[], Any]], None]:
        skip_unless_sdk()
        era_cache.clear()
        async with open_sdk_http(transport, mode=mode) as peer:  # type: ignore[arg-type]
            from .interop_peers import terminate_process

            async def kill() -> None:
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


@asynccontextmanager
async def session_for(
    target: Target, nursery: trio.Nursery
) -> AsyncGenerator[trio_mcp.ClientSession, None]:
    holder = None
    if isinstance(target, tuple):
        target, holder = target
    async with trio_mcp.open_mcp_session(nursery, target) as session:
        if holder is not None:
            holder["session"] = session
        yield session


def echo_tool_name(session: trio_mcp.ClientSession) -> tuple[str, str]:
    return "echo", "text"


@pytest.fixture(params=sorted(TRANSPORTS))
def opener(request: pytest.FixtureRequest) -> Opener:
    if request.param.startswith("http"):
        skip_unless_sdk()
        request.applymarker(pytest.mark.interop)
    return TRANSPORTS[request.param]


async def test_whole_messages_both_ways_many_in_flight(opener: Opener) -> None:
    async with opener() as (target, _kill):
        async with trio.open_nursery() as nursery:
            async with session_for(target, nursery) as session:
                results: dict[int, str] = {}

                async def one(i: int) -> None:
                    text = f"message {i} " + "x" * (i * 37 % 5000)
                    results[i] = (await session.call_tool("echo", {"text": text})).text

                async with trio.open_nursery() as calls:
                    for i in range(50):
                        calls.start_soon(one, i)
                assert results == {i: f"message {i} " + "x" * (i * 37 % 5000) for i in range(50)}


async def test_server_gone_fails_the_request_never_hangs(opener: Opener) -> None:
    async with opener() as (target, kill):
        async with trio.open_nursery() as nursery:
            async with session_for(target, nursery) as session:
                assert (await session.call_tool("echo", {"text": "up"})).text == "up"
                await kill()

                async def until_failure() -> None:
                    for _ in range(3):  # the first may still be answered by a dying peer
                        await session.call_tool("echo", {"text": "down"})

                with trio.fail_after(30), pytest.raises(trio_mcp.TransportError):
                    await until_failure()


async def test_close_is_idempotent_and_cancel_safe(opener: Opener) -> None:
    async with opener() as (target, _kill):
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as scope:
                async with session_for(target, nursery) as session:
                    await session.call_tool("echo", {"text": "x"})
                    scope.cancel()  # the block exits by cancellation: close still completes
                    await trio.sleep_forever()
            assert session.closed
            await session.aclose()
            await session.transport.aclose()
            with pytest.raises(trio.ClosedResourceError):
                await session.call_tool("echo", {"text": "x"})
            with pytest.raises(trio.ClosedResourceError):
                await session.transport.send(b"{}", None)
