"""The WebSocket transport against trio-websocket servers on 127.0.0.1 (port 0)."""

from __future__ import annotations

import functools
import json
import socket
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from trio_websocket import WebSocketConnection, WebSocketRequest, serve_websocket
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

from trio_mcp._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    MessageTooLargeError,
    ProtocolError,
    TransportError,
)
from trio_mcp._transports._base import MessageInfo, TransportFactory
from trio_mcp._transports._websocket import (
    _WRITE_QUEUE_SIZE,
    WebSocketParameters,
    WebSocketTransport,
    _default_ssl_context,
)

Handler = Callable[[WebSocketConnection], Awaitable[None]]


class Server:
    def __init__(self, serve: Handler) -> None:
        self.serve = serve
        self.requests: list[WebSocketRequest] = []
        self.received: list[str | bytes] = []
        self.close_code: int | None = None
        self.done = trio.Event()

    async def handler(self, request: WebSocketRequest) -> None:
        self.requests.append(request)
        ws = await request.accept(
            subprotocol="mcp" if "mcp" in request.proposed_subprotocols else None
        )
        try:
            await self.serve(ws)
        finally:
            if ws.closed is not None:
                self.close_code = ws.closed.code
            self.done.set()


@asynccontextmanager
async def serving(server: Server) -> AsyncGenerator[str, None]:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            ws_server = await nursery.start(serve_websocket, server.handler, "127.0.0.1", 0, None)
            yield f"ws://127.0.0.1:{ws_server.port}/mcp"
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def connected(url: str, **options: Any) -> AsyncGenerator[WebSocketTransport, None]:
    async with trio.open_nursery() as nursery:
        async with WebSocketParameters(url, **options).open_transport(nursery) as transport:
            yield transport


def echo_server(received: list[str | bytes]) -> Handler:
    async def serve(ws: WebSocketConnection) -> None:
        while True:
            try:
                text = await ws.get_message()
            except Exception:
                return
            received.append(text)
            message = json.loads(text)
            if "id" in message:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"m": message["method"]}}
                await ws.send_message(json.dumps(reply))

    return serve


def test_parameters() -> None:
    assert isinstance(WebSocketParameters("ws://x/mcp"), TransportFactory)


async def test_round_trip() -> None:
    received: list[str | bytes] = []
    server = Server(echo_server(received))
    async with serving(server) as url:
        async with connected(url, headers={"Authorization": "Bearer t"}) as transport:
            assert transport.subprotocol == "mcp"
            assert transport.origin.startswith("ws://127.0.0.1:")
            await transport.send(
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                MessageInfo("notifications/initialized"),
            )
            await transport.send(
                b'{"jsonrpc":"2.0","id":1,"method":"ping"}', MessageInfo("ping", 1)
            )
            reply = await transport.receive()
            assert isinstance(reply, bytes)
            assert json.loads(reply) == {"jsonrpc": "2.0", "id": 1, "result": {"m": "ping"}}
            assert transport.cancel_request(1) is False
        await server.done.wait()
    (request,) = server.requests
    assert request.proposed_subprotocols == ("mcp",)
    assert dict(request.headers)[b"authorization"] == b"Bearer t"
    assert request.path == "/mcp"
    # one message per text frame
    assert all(isinstance(frame, str) for frame in received)
    assert [json.loads(frame)["method"] for frame in received] == [
        "notifications/initialized",
        "ping",
    ]
    assert server.close_code == 1000


async def test_binary_frames_are_accepted() -> None:
    async def serve(ws: WebSocketConnection) -> None:
        await ws.send_message(b'{"jsonrpc":"2.0","method":"x"}')
        await trio.sleep_forever()

    async with serving(Server(serve)) as url, connected(url) as transport:
        assert await transport.receive() == b'{"jsonrpc":"2.0","method":"x"}'


@pytest.mark.parametrize("code", [1000, 1001])
async def test_clean_close_is_end_of_stream(code: int) -> None:
    async def serve(ws: WebSocketConnection) -> None:
        await ws.send_message('{"jsonrpc":"2.0","method":"bye"}')
        await ws.aclose(code)

    async with serving(Server(serve)) as url, connected(url, reconnect=None) as transport:
        assert json.loads(await transport.receive())["method"] == "bye"
        with pytest.raises(trio.EndOfChannel):
            await transport.receive()
        with pytest.raises(ConnectionClosed):
            await transport.send(b"{}", MessageInfo("x"))


async def test_abnormal_close_is_connection_closed() -> None:
    async def serve(ws: WebSocketConnection) -> None:
        await ws.aclose(1011, "internal error")

    async with serving(Server(serve)) as url, connected(url, reconnect=None) as transport:
        with pytest.raises(ConnectionClosed, match="1011") as info:
            await transport.receive()
        assert "internal error" in str(info.value)
        assert transport.closed_error() is info.value


async def test_message_too_large() -> None:
    async def serve(ws: WebSocketConnection) -> None:
        await ws.send_message(json.dumps({"jsonrpc": "2.0", "method": "x", "params": "y" * 500}))
        await trio.sleep_forever()

    async with serving(Server(serve)) as url, connected(url, max_message_size=100) as transport:
        with pytest.raises(ConnectionClosed, match="max_message_size=100") as info:
            await transport.receive()
        assert isinstance(info.value.__cause__, MessageTooLargeError)


async def open_fails(url: str) -> MCPError:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            with pytest.raises(MCPError) as info:
                async with WebSocketParameters(url, timeout=5).open_transport(nursery):
                    pass  # pragma: no cover
    return info.value


async def test_rejected_handshake() -> None:
    async def handler(request: WebSocketRequest) -> None:
        await request.reject(401, body=b"who are you")

    async with trio.open_nursery() as nursery:
        ws_server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        error = await open_fails(f"ws://127.0.0.1:{ws_server.port}/mcp")
        nursery.cancel_scope.cancel()
    assert isinstance(error, HTTPStatusError)
    assert error.status_code == 401
    assert error.body == "who are you"


async def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = await open_fails(f"ws://127.0.0.1:{port}/mcp")
    assert type(error) is TransportError
    assert "could not open a WebSocket" in str(error)


async def test_aclose_is_idempotent_and_cancel_safe() -> None:
    received: list[str | bytes] = []
    server = Server(echo_server(received))
    async with serving(server) as url, connected(url) as transport:
        with trio.CancelScope() as scope:
            scope.cancel()
            await transport.aclose()
        await transport.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await transport.send(b"{}", MessageInfo("x"))
        with pytest.raises(trio.ClosedResourceError):
            await transport.receive()
        await server.done.wait()
    assert server.close_code == 1000


async def raw_server_url(
    nursery: trio.Nursery, handler: Callable[[trio.SocketStream], Awaitable[None]]
) -> str:
    listeners = await nursery.start(functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1"))
    return f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"


async def test_handshake_timeout(autojump_clock: trio.abc.Clock) -> None:
    async def silent(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        url = await raw_server_url(nursery, silent)
        start = trio.current_time()
        error = await open_fails(url)
        assert trio.current_time() - start == 5
        nursery.cancel_scope.cancel()
    assert "timed out" in str(error)


async def test_server_hanging_up_during_the_handshake() -> None:
    async def hang_up(stream: trio.SocketStream) -> None:
        await stream.receive_some()
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        url = await raw_server_url(nursery, hang_up)
        start = trio.current_time()
        error = await open_fails(url)
        assert trio.current_time() - start < 5  # at once, not after the timeout
        nursery.cancel_scope.cancel()
    assert type(error) is TransportError
    assert "closed the connection during the WebSocket handshake" in str(error)


# -- one writer task: whole frames, backpressure, a cancelled nursery -----------------------


class RawServer:
    """A bare wsproto server on loopback that stops reading after ``pause_after`` bytes of
    messages until ``resume`` is set, records every message, and answers the second one."""

    def __init__(self, pause_after: int) -> None:
        self.pause_after = pause_after
        self.paused = trio.Event()
        self.resume = trio.Event()
        self.messages: list[str] = []
        self.close_code: int | None = None
        self.done = trio.Event()

    async def handler(self, stream: trio.SocketStream) -> None:
        connection = WSConnection(ConnectionType.SERVER)
        counted = 0
        parts: list[str] = []
        try:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                if connection.state is ConnectionState.OPEN:
                    counted += len(data)
                connection.receive_data(data)
                for event in connection.events():
                    if isinstance(event, Request):
                        await stream.send_all(connection.send(AcceptConnection(subprotocol="mcp")))
                    elif isinstance(event, TextMessage):
                        parts.append(event.data)
                        if event.message_finished:
                            self.messages.append("".join(parts))
                            parts.clear()
                            if len(self.messages) == 2:
                                reply = TextMessage('{"jsonrpc":"2.0","id":2,"result":{}}')
                                await stream.send_all(connection.send(reply))
                    elif isinstance(event, CloseConnection):
                        self.close_code = event.code
                        if connection.state is ConnectionState.REMOTE_CLOSING:
                            await stream.send_all(connection.send(event.response()))
                        return
                if counted >= self.pause_after and not self.paused.is_set():
                    self.paused.set()
                    await self.resume.wait()
        finally:
            self.done.set()
            await stream.aclose()


async def test_a_caller_cancelled_mid_send_leaves_no_partial_frame() -> None:
    big = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"blob":"' + "x" * (16 << 20)
    big += '"}}'
    small = '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    server = RawServer(pause_after=1 << 20)
    async with trio.open_nursery() as nursery:
        url = await raw_server_url(nursery, server.handler)
        async with WebSocketParameters(url, timeout=5).open_transport(nursery) as transport:
            scope = trio.CancelScope()

            async def request() -> None:
                with scope:
                    await transport.send(big.encode())
                    await trio.sleep_forever()  # awaiting the answer, like a request does

            async with trio.open_nursery() as callers:
                callers.start_soon(request)
                await server.paused.wait()  # 1 MiB of the frame is out; the rest is not
                scope.cancel()
            server.resume.set()
            with trio.fail_after(10):
                await transport.send(small.encode())
                reply = await transport.receive()  # the connection is still usable
            assert json.loads(reply) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        with trio.fail_after(10):
            await server.done.wait()
        nursery.cancel_scope.cancel()
    assert server.messages == [big, small]  # both whole, in order; no 1007
    assert server.close_code == 1000


async def test_send_waits_while_the_server_does_not_read() -> None:
    sent = 0
    server = RawServer(pause_after=1)

    async def flood(transport: WebSocketTransport) -> None:
        nonlocal sent
        for _ in range(10_000):
            await transport.send(b'"' + b"x" * 65536 + b'"')
            sent += 1

    async with trio.open_nursery() as nursery:
        url = await raw_server_url(nursery, server.handler)
        params = WebSocketParameters(url, timeout=0.5)
        async with params.open_transport(nursery) as transport:
            async with trio.open_nursery() as callers:
                callers.start_soon(flood, transport)
                await trio.testing.wait_all_tasks_blocked()
                assert (
                    transport._conn.out_send.statistics().current_buffer_used <= _WRITE_QUEUE_SIZE
                )
                assert sent < 10_000
                callers.cancel_scope.cancel()
        nursery.cancel_scope.cancel()  # the server is still paused


async def test_send_fails_once_the_transports_nursery_is_cancelled() -> None:
    async def host_nursery(*, task_status: trio.TaskStatus[trio.Nursery]) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started(nursery)
            await trio.sleep_forever()

    received: list[str | bytes] = []
    server = Server(echo_server(received))
    async with serving(server) as url, trio.open_nursery() as outer:
        service: trio.Nursery = await outer.start(host_nursery)
        params = WebSocketParameters(url, timeout=5)
        async with params.open_transport(service) as transport:
            service.cancel_scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(ConnectionClosed, match="nursery it was opened with was cancelled"):
                await transport.send(b'{"jsonrpc":"2.0","method":"x"}')
            with trio.fail_after(5), pytest.raises(ConnectionClosed):
                await transport.receive()  # no hang either


async def test_binary_frame_that_is_not_utf8_is_passed_on_as_bytes() -> None:
    async def serve(ws: WebSocketConnection) -> None:
        await ws.send_message(b"\xff\xfe not text")
        await trio.sleep_forever()

    async with serving(Server(serve)) as url, connected(url) as transport:
        assert await transport.receive() == b"\xff\xfe not text"  # the session judges it


async def test_sending_bytes_that_are_not_utf8_is_a_protocol_error() -> None:
    received: list[str | bytes] = []
    async with serving(Server(echo_server(received))) as url, connected(url) as transport:
        with pytest.raises(ProtocolError, match="not UTF-8") as info:
            await transport.send(b'{"x":"\xff"}')
        assert isinstance(info.value.__cause__, UnicodeDecodeError)
        await transport.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')  # still usable
        assert json.loads(await transport.receive())["id"] == 1


async def test_era_key_is_the_origin() -> None:
    received: list[str | bytes] = []
    async with serving(Server(echo_server(received))) as url, connected(url) as transport:
        port = url.split(":")[2].split("/")[0]
        assert transport.era_key == transport.origin == f"ws://127.0.0.1:{port}"


async def test_wss_connects_share_one_default_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[ssl.SSLContext] = []
    used: list[ssl.SSLContext] = []
    create = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = create(*args, **kwargs)
        created.append(context)
        return context

    async def refuse(host: str, port: int, **kwargs: Any) -> trio.SSLStream[trio.SocketStream]:
        used.append(kwargs["ssl_context"])
        raise OSError("connection refused")

    monkeypatch.setattr(ssl, "create_default_context", counting)
    monkeypatch.setattr(trio, "open_ssl_over_tcp_stream", refuse)
    _default_ssl_context.cache_clear()
    try:
        for _ in range(3):
            error = await open_fails("wss://mcp.example/ws")
            assert type(error) is TransportError
    finally:
        _default_ssl_context.cache_clear()
    assert len(created) == 1
    assert used == [created[0]] * 3
