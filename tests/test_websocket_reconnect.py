"""WebSocket sessions survive a server restart: the transport reconnects and re-initializes.

A real trio-websocket server, in process, over in-memory streams (``trio.open_tcp_stream``
is replaced for the test), so that virtual time runs everything: every delay is exact.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
import trio_websocket

import trio_mcp
from trio_mcp import Backoff, ConnectionClosed
from trio_mcp._transports._base import MessageInfo
from trio_mcp._transports._link import LinkState
from trio_mcp._transports._websocket import WebSocketParameters

URL = "ws://mcp.test/mcp"
#: Deterministic: 1 s after the break, then 2 s, then every 4 s.
SCHEDULE = Backoff(initial=1.0, multiplier=2.0, maximum=4.0, jitter=0)
INIT_RESULT: dict[str, Any] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "ws", "version": "1"},
}


class WSServer:
    """A trio-websocket MCP server whose process can die and come back.

    Attributes:
        down: Connections are refused while True.
        refuse_initialize: Answer ``initialize`` with a JSON-RPC error.
        hold: Methods never answered.
        log: ``(trio time, connection, method)`` of every message received.
        connects: When each connection was accepted.
    """

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self.down = False
        self.refuse_initialize = False
        self.reject: int | None = None  # refuse the handshake with this HTTP status
        self.hold: set[str] = set()
        self.log: list[tuple[float, str, str | None]] = []
        self.connects: list[float] = []
        self._live: dict[str, tuple[trio.StapledStream[Any, Any], trio.CancelScope, Any]] = {}
        self._count = 0

    async def connect(self, host: str, port: int, **kwargs: Any) -> trio.abc.Stream:
        await trio.lowlevel.checkpoint()
        if self.down:
            raise OSError(111, "Connection refused")
        client, server = trio.testing.memory_stream_pair()
        self._count += 1
        self.connects.append(trio.current_time())
        self._nursery.start_soon(self._serve, server, f"w{self._count}")
        return client

    def stop(self) -> None:
        """The process dies: every connection drops without a close frame."""
        self.down = True
        for stream, scope, _ in self._live.values():
            stream.send_stream.close()
            stream.receive_stream.close()
            scope.cancel()
        self._live.clear()

    def start(self) -> None:
        self.down = False

    async def close_all(self, code: int) -> None:
        """Close every connection with ``code`` (a graceful shutdown or restart)."""
        for _, _, ws in list(self._live.values()):
            self._nursery.start_soon(ws.aclose, code)
        await trio.lowlevel.checkpoint()

    async def _serve(self, stream: trio.StapledStream[Any, Any], name: str) -> None:
        async with trio.open_nursery() as nursery:
            try:
                request = await trio_websocket.wrap_server_stream(nursery, stream)
                if self.reject is not None:
                    await request.reject(self.reject, body=b"go away")
                    return
                ws = await request.accept(subprotocol="mcp")
                self._live[name] = (stream, nursery.cancel_scope, ws)
                while True:
                    text = await ws.get_message()
                    await self._answer(ws, name, json.loads(text))
            except trio_websocket.ConnectionClosed:
                pass
            finally:
                self._live.pop(name, None)
                nursery.cancel_scope.cancel()

    async def _answer(
        self, ws: trio_websocket.WebSocketConnection, name: str, message: dict[str, Any]
    ) -> None:
        method = message.get("method")
        self.log.append((trio.current_time(), name, method))
        if "id" not in message or method is None or method in self.hold:
            return
        if method == "initialize" and self.refuse_initialize:
            error = {"code": -32600, "message": "no more sessions"}
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "error": error}
        else:
            value: Any = {}
            if method == "initialize":
                value = INIT_RESULT
            elif method == "tools/call":
                text = f"{name}:{message['params']['arguments']['text']}"
                value = {"content": [{"type": "text", "text": text}]}
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": value}
        await ws.send_message(json.dumps(answer))


@pytest.fixture
async def server(nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch) -> WSServer:
    ws_server = WSServer(nursery)
    monkeypatch.setattr(trio, "open_tcp_stream", ws_server.connect)
    return ws_server


@asynccontextmanager
async def open_session(server: WSServer, **options: Any) -> AsyncGenerator[Any, None]:
    options.setdefault("reconnect", SCHEDULE)
    async with trio.open_nursery() as nursery:
        params = WebSocketParameters(URL, timeout=5.0, **options)
        async with trio_mcp.open_mcp_session(nursery, params, protocol="legacy") as session:
            yield session


async def echo(session: trio_mcp.ClientSession, text: str) -> str:
    return (await session.call_tool("echo", {"text": text})).text


async def wait_for_state(link: Any, state: LinkState) -> None:
    seen = link.version
    while link.state is not state:
        seen = await link.wait_changed(seen)


async def test_restart_reconnects_after_the_backoff_and_reinitializes(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    async with open_session(server) as session:
        link = session.transport.link
        assert await echo(session, "a") == "w1:a"
        broke = trio.current_time()
        server.stop()
        await wait_for_state(link, LinkState.RECONNECTING)
        assert trio.current_time() == broke
        await trio.sleep(2.5)  # attempts at +1 (refused) and +3 (back)
        server.start()
        await wait_for_state(link, LinkState.UP)
        assert trio.current_time() == broke + 3
        assert server.connects == [0, broke + 3]
        assert await echo(session, "b") == "w2:b"
        assert [(t, m) for t, c, m in server.log if c == "w2"] == [
            (broke + 3, "initialize"),
            (broke + 3, "notifications/initialized"),
            (broke + 3, "tools/call"),
        ]
        assert link.reconnects == 1
        assert isinstance(link.last_failure.error, ConnectionClosed)


@pytest.mark.parametrize("code", [1001, 1011, 1012, 1013])
async def test_a_restart_announced_with_a_close_code_reconnects(
    autojump_clock: trio.testing.MockClock, server: WSServer, code: int
) -> None:
    async with open_session(server) as session:
        closed = trio.current_time()
        await server.close_all(code)
        await wait_for_state(session.transport.link, LinkState.RECONNECTING)
        await wait_for_state(session.transport.link, LinkState.UP)
        assert trio.current_time() == closed + 1
        assert await echo(session, "b") == "w2:b"


async def test_pending_call_fails_at_once_and_a_call_meanwhile_fails_fast(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    server.hold.add("tools/call")
    async with open_session(server) as session:
        failed_at: list[float] = []

        async def call() -> None:
            with pytest.raises(ConnectionClosed, match="before the answer to request"):
                await echo(session, "lost")
            failed_at.append(trio.current_time())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await trio.sleep(1)
            broke = trio.current_time()
            server.stop()
        assert failed_at == [broke]
        with trio.fail_after(0.5):  # never past the caller's deadline
            with pytest.raises(ConnectionClosed, match="being re-established"):
                await echo(session, "during")
        assert trio.current_time() == broke
        server.hold.clear()
        server.start()
        await wait_for_state(session.transport.link, LinkState.UP)
        assert await echo(session, "again") == "w2:again"


async def test_refused_reinitialization_ends_the_session_cleanly(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    async with open_session(server) as session:
        server.stop()
        server.refuse_initialize = True
        server.start()
        broke = trio.current_time()
        await wait_for_state(session.transport.link, LinkState.CLOSED)
        assert trio.current_time() == broke + 1
        with pytest.raises(ConnectionClosed, match="refused to start a new session"):
            await echo(session, "x")
        assert "no more sessions" in str(session.failure)
        connects = len(server.connects)
        await trio.sleep(60)
        assert len(server.connects) == connects  # not a loop


async def test_without_reconnect_a_break_ends_the_session(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    async with open_session(server, reconnect=None) as session:
        server.stop()
        server.start()
        with pytest.raises(ConnectionClosed):
            await echo(session, "x")
        assert isinstance(session.failure, ConnectionClosed)
        assert server.connects == [0]


async def test_a_normal_close_is_not_reconnected(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    async with open_session(server) as session:
        await server.close_all(1000)
        with pytest.raises(ConnectionClosed):
            await echo(session, "x")
        await trio.sleep(10)
        assert server.connects == [0]


async def test_modern_era_reconnects_without_initialize_and_reports_a_gap(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    gaps: list[bool] = []
    async with trio.open_nursery() as nursery:
        params = WebSocketParameters(URL, reconnect=SCHEDULE)
        async with params.open_transport(nursery) as transport:
            transport.attach_gap(gaps.append)
            transport.negotiated(modern=True, protocol_version="2026-07-28")
            server.stop()
            server.start()
            answered = trio.Event()

            async def read() -> None:
                assert json.loads(await transport.receive())["id"] == 7
                answered.set()

            nursery.start_soon(read)
            await wait_for_state(transport.link, LinkState.RECONNECTING)
            await wait_for_state(transport.link, LinkState.UP)
            assert gaps == [False]
            await transport.send(
                b'{"jsonrpc":"2.0","id":7,"method":"ping"}', MessageInfo("ping", 7)
            )
            await answered.wait()
    assert [m for _, _, m in server.log] == ["ping"]  # nothing replayed


async def test_close_during_the_reconnection_is_clean(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    async with open_session(server) as session:
        server.stop()
        await wait_for_state(session.transport.link, LinkState.RECONNECTING)
        await trio.sleep(1.5)
    assert session.transport.link.state is LinkState.CLOSED
    assert trio.current_time() < 2


@pytest.mark.parametrize("steps", range(40))
async def test_close_racing_a_reconnection(
    autojump_clock: trio.testing.MockClock, server: WSServer, steps: int
) -> None:
    """Close after ``steps`` scheduler rounds into the reconnection: at every await point."""
    async with open_session(server) as session:
        server.stop()
        server.start()
        await trio.sleep(1)  # the first attempt starts now
        for _ in range(steps):
            await trio.lowlevel.checkpoint()
    assert session.transport.link.state is LinkState.CLOSED


async def test_a_refused_handshake_ends_the_session_cleanly(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    async with open_session(server) as session:
        server.stop()
        server.reject = 403
        server.start()
        broke = trio.current_time()
        await wait_for_state(session.transport.link, LinkState.CLOSED)
        assert trio.current_time() == broke + 1
        with pytest.raises(ConnectionClosed, match=r"refused the WebSocket \(HTTP 403\)"):
            await echo(session, "x")


async def test_reconnection_stopped_by_its_nursery_ends_receive(
    autojump_clock: trio.testing.MockClock, server: WSServer
) -> None:
    async def host_nursery(*, task_status: trio.TaskStatus[trio.Nursery]) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started(nursery)
            await trio.sleep_forever()

    async with trio.open_nursery() as outer:
        service: trio.Nursery = await outer.start(host_nursery)
        params = WebSocketParameters(URL, reconnect=SCHEDULE)
        async with params.open_transport(service) as transport:
            errors: list[BaseException] = []
            ended = trio.Event()

            async def read() -> None:
                try:
                    await transport.receive()
                except ConnectionClosed as exc:
                    errors.append(exc)
                ended.set()

            outer.start_soon(read)
            server.stop()
            await wait_for_state(transport.link, LinkState.RECONNECTING)
            service.cancel_scope.cancel()
            with trio.fail_after(1):  # no hang
                await ended.wait()
            assert "stopped while reconnecting" in str(errors[0])
            assert transport.link.state is LinkState.CLOSED
        outer.cancel_scope.cancel()
