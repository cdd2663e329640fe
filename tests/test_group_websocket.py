"""A WebSocket member over a real loopback socket, under real time: routine redeploys (the
server goes away, refuses connections for a while, comes back on its port) never use the
restart budget up; the member is RESTARTING while it is down and RUNNING once it is back."""

from __future__ import annotations

import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import trio
from trio_websocket import WebSocketConnection, WebSocketRequest, serve_websocket

from trio_mcp import Backoff, open_server_group
from trio_mcp.groups import RestartPolicy, ServerState
from trio_mcp.testing import MockServer, ToolContext
from trio_mcp.transports import WebSocketParameters

#: A small budget: the old rule (every start counted, never given back) used it up in the
#: first redeploy.
POLICY = RestartPolicy(
    backoff=Backoff(initial=0.1, multiplier=2.0, maximum=0.4, jitter=0),
    max_restarts=1,
    failure_threshold=2,
    healthy_after=0.5,
)


class _WebSocketStream:
    """The server end of one WebSocket connection, as MockServer serves it."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self._ws = ws

    async def send(self, data: bytes) -> None:
        await self._ws.send_message(data.decode())

    async def receive(self) -> bytes:
        try:
            message = await self._ws.get_message()
        except Exception as exc:  # the connection closed: end of stream
            raise trio.EndOfChannel from exc
        return message.encode() if isinstance(message, str) else message

    async def aclose(self) -> None:
        with trio.move_on_after(0.1):  # a process that goes away does not wait to close
            await self._ws.aclose()


@asynccontextmanager
async def deployed(mock: MockServer, port: int) -> AsyncGenerator[None, None]:
    """Serve ``mock`` over WebSocket on ``port`` until the block ends (a deploy)."""

    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept(subprotocol="mcp")
        await mock.serve(_WebSocketStream(ws))

    async with trio.open_nursery() as nursery:
        await nursery.start(serve_websocket, handler, "127.0.0.1", port, None)
        yield
        nursery.cancel_scope.cancel()  # the process goes away: connections drop


async def test_redeploys_never_make_a_websocket_member_failed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mock = MockServer(name="ws", eras="legacy")

    @mock.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        del ctx
        return text

    url = f"ws://127.0.0.1:{port}/mcp"
    with trio.fail_after(60):
        async with trio.open_nursery() as outside:
            up = trio.Event()
            stop = trio.Event()

            async def server_life() -> None:
                for _ in range(4):
                    async with deployed(mock, port):
                        up.set()
                        with trio.move_on_after(1.0):  # healthy for a while
                            await stop.wait()
                    await trio.sleep(0.4)  # down: connections are refused
                async with deployed(mock, port):
                    up.set()
                    await stop.wait()

            outside.start_soon(server_life)
            await up.wait()
            async with open_server_group({"ws": WebSocketParameters(url)}, restart=POLICY) as group:
                assert group.status("ws").state is ServerState.RUNNING
                seen = group.status("ws").seq
                for _ in range(4):
                    down = await group.wait_for("ws", ServerState.RESTARTING, since=seen)
                    back = await group.wait_for("ws", ServerState.RUNNING, since=down.seq)
                    seen = back.seq
                    assert (await group.call_tool("echo", {"text": "hi"})).content
                final = group.status("ws")
                assert final.state is ServerState.RUNNING
                assert final.restarts >= 4  # one per redeploy, more when a start found it down
                assert final.recent_restarts <= 1
                assert all(s.state is not ServerState.FAILED for s in group.history("ws"))
            stop.set()
