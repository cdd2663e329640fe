"""The deprecated HTTP+SSE transport (2024-11-05), against a scripted in-process server."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from trio_mcp._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    MessageTooLargeError,
    ProtocolError,
    TransportError,
)
from trio_mcp._transports._base import MessageInfo, TransportFactory
from trio_mcp._transports._sse import SSEParameters, SSETransport

URL = "http://old.test/sse"
Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


def event(data: Any, name: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()


def result(request_id: int, value: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value if value is not None else {}}


def request(request_id: int, method: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method}).encode()


class OldServer:
    """A 2024-11-05 server: GET opens the event stream, POSTs go to the endpoint it names."""

    def __init__(self, endpoint: str = "/messages/?session_id=abc") -> None:
        self.endpoint = endpoint
        self.events, self._events = trio.open_memory_channel[bytes | BaseException](100)
        self.posts: list[httpx.Request] = []
        self.gets: list[httpx.Request] = []
        self.post_status = 202
        self.stream_closed = trio.Event()

    def push(self, chunk: bytes | BaseException) -> None:
        self.events.send_nowait(chunk)

    async def __call__(self, req: httpx.Request) -> httpx.Response:
        if req.method == "GET":
            self.gets.append(req)

            async def stream() -> AsyncIterator[bytes]:
                try:
                    yield b": hello\n\n"
                    yield event(self.endpoint, name="endpoint")
                    async for chunk in self._events:
                        if isinstance(chunk, BaseException):
                            raise chunk
                        yield chunk
                finally:
                    self.stream_closed.set()

            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=stream()
            )
        self.posts.append(req)
        if self.post_status >= 400:
            return httpx.Response(self.post_status, text="rejected")
        message = json.loads(req.content)
        if "id" in message and "method" in message:
            self.push(event(result(message["id"], {"echo": message["method"]}), name="message"))
        return httpx.Response(self.post_status, text="Accepted")


@dataclass(frozen=True)
class Failure:
    request_id: int | str
    error: MCPError


class FailureLog:
    """The session's side of ``Transport.attach``: records every per-request failure."""

    def __init__(self) -> None:
        self.all: list[Failure] = []
        self._send, self.receive = trio.open_memory_channel[Failure](1000)

    def __call__(self, request_id: int | str, error: MCPError) -> None:
        self.all.append(Failure(request_id, error))
        self._send.send_nowait(Failure(request_id, error))


@asynccontextmanager
async def open_sse(
    handler: Handler, **options: Any
) -> AsyncGenerator[tuple[SSETransport, FailureLog], None]:
    with trio.fail_after(120):
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            async with trio.open_nursery() as nursery:
                params = SSEParameters(URL, client=client, **options)
                async with params.open_transport(nursery) as transport:
                    transport.attach(log := FailureLog())
                    yield transport, log


async def open_fails(handler: Handler, **options: Any) -> MCPError:
    """Open a transport that must fail; return the error open_transport raised."""
    with trio.fail_after(120):
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            async with trio.open_nursery() as nursery:
                with pytest.raises(MCPError) as info:
                    async with SSEParameters(URL, client=client, **options).open_transport(nursery):
                        pass  # pragma: no cover
    return info.value


def test_parameters() -> None:
    assert isinstance(SSEParameters(URL), TransportFactory)


async def test_round_trip() -> None:
    server = OldServer()
    async with open_sse(server, headers={"Authorization": "Bearer t"}) as (transport, failures):
        assert transport.endpoint == "http://old.test/messages/?session_id=abc"
        assert transport.origin == "http://old.test:80"
        await transport.send(request(1, "initialize"), MessageInfo("initialize", 1))
        assert json.loads(await transport.receive()) == result(1, {"echo": "initialize"})
        await transport.send(
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            MessageInfo("notifications/initialized"),
        )
        server.push(b'data: {"jsonrpc":"2.0","method":"notifications/message"}\n\n')
        assert json.loads(await transport.receive())["method"] == "notifications/message"
        assert transport.cancel_request(1) is False
    (get,) = server.gets
    assert get.headers["accept"] == "text/event-stream"
    assert get.headers["authorization"] == "Bearer t"
    assert [str(p.url) for p in server.posts] == [transport.endpoint] * 2
    assert all(p.headers["authorization"] == "Bearer t" for p in server.posts)
    assert all(p.headers["content-type"] == "application/json" for p in server.posts)
    assert server.stream_closed.is_set()  # closing the transport closed the stream


async def test_absolute_endpoint_on_the_same_origin() -> None:
    server = OldServer(endpoint="http://old.test:80/post")
    async with open_sse(server) as (transport, failures):
        assert transport.endpoint == "http://old.test:80/post"


async def test_endpoint_on_another_origin_is_refused() -> None:
    error = await open_fails(OldServer(endpoint="https://evil.test/steal"))
    assert type(error) is TransportError
    assert "another origin" in str(error)


async def test_malformed_endpoint_is_a_protocol_error() -> None:
    # M2: urljoin/origin_of raised a bare ValueError here
    error = await open_fails(OldServer(endpoint="http://[::1"))
    assert type(error) is ProtocolError
    assert "malformed endpoint 'http://[::1'" in str(error)


async def test_malformed_url_is_a_transport_error() -> None:
    async with trio.open_nursery() as nursery:
        with pytest.raises(TransportError, match="invalid MCP server URL"):
            async with SSEParameters("http://[::1/sse").open_transport(nursery):
                pass  # pragma: no cover


async def test_declared_api() -> None:
    server = OldServer()
    async with open_sse(server) as (transport, _):
        assert transport.era_key == transport.origin == "http://old.test:80"
        assert transport.can_probe is False  # never probe an explicit HTTP+SSE target
        assert transport.wants_param_headers is False
        assert await transport.fallback() is False
        transport.negotiated(modern=True, protocol_version="2024-11-05")
        assert (transport.modern, transport.protocol_version) == (False, "2024-11-05")
        with trio.testing.assert_checkpoints():
            await transport.send(request(1, "ping"), MessageInfo("ping", 1))
        assert json.loads(await transport.receive()) == result(1, {"echo": "ping"})


async def test_get_refused() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text="no sse here")

    error = await open_fails(handler)
    assert isinstance(error, HTTPStatusError)
    assert error.status_code == 404
    assert error.body == "no sse here"


async def test_no_endpoint_event_in_time(autojump_clock: trio.abc.Clock) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        async def stream() -> AsyncIterator[bytes]:
            yield b": waiting\n\n"
            await trio.sleep_forever()

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    start = trio.current_time()
    error = await open_fails(handler, timeout=3.0)
    assert "no endpoint event within 3.0s" in str(error)
    assert trio.current_time() - start == 3.0


async def test_stream_ending_before_the_endpoint() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"")

    error = await open_fails(handler)
    assert "ended before the endpoint event" in str(error)


async def test_clean_end_of_stream() -> None:
    server = OldServer()
    async with open_sse(server, reconnect=None) as (transport, failures):
        server.push(event(result(5)))
        server.events.close()
        assert json.loads(await transport.receive()) == result(5)
        with pytest.raises(trio.EndOfChannel):
            await transport.receive()
        assert isinstance(transport.closed_error(), ConnectionClosed)
        with pytest.raises(ConnectionClosed):
            await transport.send(request(2, "ping"), MessageInfo("ping", 2))


async def test_broken_stream() -> None:
    server = OldServer()
    async with open_sse(server, reconnect=None) as (transport, failures):
        server.push(httpx.ReadError("connection reset"))
        with pytest.raises(ConnectionClosed, match="broke"):
            await transport.receive()
        assert "broke" in str(transport.closed_error())


async def test_rejected_post_fails_the_request() -> None:
    server = OldServer()
    async with open_sse(server) as (transport, failures):
        server.post_status = 400
        await transport.send(request(3, "tools/list"), MessageInfo("tools/list", 3))
        failure = await failures.receive.receive()
        assert failure.request_id == 3
        assert isinstance(failure.error, HTTPStatusError)
        assert failure.error.status_code == 400
        with pytest.raises(HTTPStatusError):
            await transport.send(
                b'{"jsonrpc":"2.0","method":"notifications/x"}', MessageInfo("notifications/x")
            )


async def test_oversized_response_fails_its_request() -> None:
    server = OldServer()
    async with open_sse(server, max_message_size=100) as (transport, failures):
        server.push(event(result(8, {"blob": "x" * 500})))
        server.push(event({"jsonrpc": "2.0", "method": "n", "params": {"blob": "y" * 500}}))
        server.push(event(result(9)))
        failure = await failures.receive.receive()
        assert failure.request_id == 8
        assert isinstance(failure.error, MessageTooLargeError)
        # the oversized notification is dropped (and logged); the stream goes on
        assert json.loads(await transport.receive()) == result(9)


async def test_failure_after_a_delivered_response_is_dropped() -> None:
    server = OldServer()
    async with open_sse(server, max_message_size=100) as (transport, failures):
        server.push(event(result(8)))
        server.push(event(result(8, {"blob": "x" * 500})))  # a (bogus) oversized copy
        server.push(event(result(9)))
        assert json.loads(await transport.receive()) == result(8)
        assert json.loads(await transport.receive()) == result(9)
        assert failures.all == []


async def test_every_receive_after_a_break_raises_a_new_exception() -> None:
    server = OldServer()
    async with open_sse(server, reconnect=None) as (transport, _):
        server.push(httpx.ReadError("connection reset"))
        with pytest.raises(ConnectionClosed) as first:
            await transport.receive()
        with pytest.raises(ConnectionClosed) as second:
            await transport.receive()
    assert first.value is not second.value
    assert str(first.value) == str(second.value)


async def test_aclose_is_idempotent() -> None:
    server = OldServer()
    async with open_sse(server) as (transport, failures):
        await transport.aclose()
        await transport.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await transport.send(request(1, "ping"), MessageInfo("ping", 1))
        assert server.stream_closed.is_set()
