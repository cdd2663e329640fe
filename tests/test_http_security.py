"""HTTP redirects: nothing the caller sends ever leaves the origin the caller named."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import h11
import httpx
import pytest
import trio
import trio.testing

from trio_mcp._exceptions import MCPError, TransportError
from trio_mcp._transports._base import MessageInfo
from trio_mcp._transports._http import StreamableHTTPParameters, StreamableHTTPTransport
from trio_mcp._transports._sse import SSEParameters

from .h11peer import read_request

URL = "http://mcp.test/mcp"
EVIL = "https://evil.test/mcp"
Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


def request(request_id: int, method: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method}).encode()


def result(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {}}


class Failures:
    def __init__(self) -> None:
        self.send, self.receive = trio.open_memory_channel[tuple[Any, MCPError]](100)

    def __call__(self, request_id: Any, error: MCPError) -> None:
        self.send.send_nowait((request_id, error))


@asynccontextmanager
async def open_http(
    handler: Handler,
) -> AsyncGenerator[tuple[StreamableHTTPTransport, Failures, list[httpx.Request]], None]:
    seen: list[httpx.Request] = []

    async def record(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return await handler(req)

    # The caller's own client follows redirects by default; trio_mcp must not.
    transport = httpx.MockTransport(record)
    with trio.fail_after(60):
        async with httpx.AsyncClient(transport=transport, follow_redirects=True) as client:
            async with trio.open_nursery() as nursery:
                params = StreamableHTTPParameters(URL, client=client, headers={"X-Token": "t"})
                async with params.open_transport(nursery) as mcp:
                    failures = Failures()
                    mcp.attach(failures)
                    yield mcp, failures, seen


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_cross_origin_redirect_is_refused(status: int) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        if req.url.host == "evil.test":  # pragma: no cover
            return httpx.Response(200, json=result(1))
        return httpx.Response(status, headers={"location": EVIL})

    async with open_http(handler) as (transport, failures, seen):
        await transport.send(request(1, "tools/list"), MessageInfo("tools/list", 1))
        request_id, error = await failures.receive.receive()
    assert request_id == 1
    assert type(error) is TransportError
    text = str(error)
    assert "http://mcp.test:80" in text
    assert "https://evil.test:443" in text
    assert "does not follow cross-origin redirects" in text
    assert f"Use the final URL ({EVIL})" in text
    assert [str(r.url) for r in seen] == [URL]  # nothing went to evil.test


async def test_relative_redirect_to_another_port_is_refused() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"location": "//mcp.test:8080/mcp"})

    async with open_http(handler) as (transport, failures, seen):
        await transport.send(request(1, "tools/list"), MessageInfo("tools/list", 1))
        _, error = await failures.receive.receive()
    assert "http://mcp.test:8080" in str(error)
    assert len(seen) == 1


@pytest.mark.parametrize("status", [307, 308])
async def test_same_origin_307_308_is_followed_with_method_headers_and_body(status: int) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/mcp":
            return httpx.Response(status, headers={"location": "/mcp/"})
        return httpx.Response(200, json=result(json.loads(req.content)["id"]))

    async with open_http(handler) as (transport, _, seen):
        await transport.send(request(4, "tools/list"), MessageInfo("tools/list", 4))
        assert json.loads(await transport.receive()) == result(4)
    first, second = seen
    assert str(second.url) == "http://mcp.test/mcp/"
    assert second.method == "POST"
    assert second.content == first.content == request(4, "tools/list")
    assert second.headers["x-token"] == "t"
    assert second.headers["content-type"] == "application/json"


@pytest.mark.parametrize("status", [301, 302, 303])
async def test_same_origin_redirect_that_changes_the_method_is_refused(status: int) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"location": "/elsewhere"})

    async with open_http(handler) as (transport, failures, seen):
        await transport.send(request(1, "tools/list"), MessageInfo("tools/list", 1))
        _, error = await failures.receive.receive()
    assert type(error) is TransportError
    assert "follows only 307 and 308 redirects of a POST" in str(error)
    assert len(seen) == 1


async def test_redirect_loop_is_bounded() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"location": f"/hop{len(seen)}"})

    async with open_http(handler) as (transport, failures, seen):
        await transport.send(request(1, "tools/list"), MessageInfo("tools/list", 1))
        _, error = await failures.receive.receive()
    assert "more than 5 times" in str(error)
    assert len(seen) == 6


async def test_malformed_location_is_a_transport_error() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"location": "http://[::1/mcp"})

    async with open_http(handler) as (transport, failures, _):
        await transport.send(request(1, "tools/list"), MessageInfo("tools/list", 1))
        _, error = await failures.receive.receive()
    assert isinstance(error, TransportError)  # httpx itself rejects it before we see it
    assert "location" in str(error).lower()
    assert isinstance(error.__cause__, httpx.HTTPError)


async def test_legacy_session_id_never_leaves_the_origin() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        message = json.loads(req.content)
        if message.get("method") == "initialize":
            return httpx.Response(200, json=result(message["id"]), headers={"mcp-session-id": "S"})
        return httpx.Response(307, headers={"location": EVIL})

    async with open_http(handler) as (transport, failures, seen):
        await transport.send(request(1, "initialize"), MessageInfo("initialize", 1))
        assert json.loads(await transport.receive()) == result(1)
        with pytest.raises(TransportError, match="cross-origin"):
            await transport.send(
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                MessageInfo("notifications/initialized"),
            )
    assert all(r.url.host == "mcp.test" for r in seen)


async def test_sse_stream_follows_a_same_origin_redirect() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/sse":
            return httpx.Response(301, headers={"location": "/sse/"})

        async def stream() -> AsyncIterator[bytes]:
            yield b"event: endpoint\ndata: messages?s=1\n\n"
            await trio.sleep_forever()

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    mock = httpx.MockTransport(handler)
    with trio.fail_after(60):
        async with httpx.AsyncClient(transport=mock) as client, trio.open_nursery() as nursery:
            params = SSEParameters("http://old.test/sse", client=client)
            async with params.open_transport(nursery) as transport:
                # relative to where the stream really is
                assert transport.endpoint == "http://old.test/sse/messages?s=1"


async def test_sse_stream_redirected_to_another_origin_is_refused() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"location": "http://elsewhere.test/sse"})

    mock = httpx.MockTransport(handler)
    with trio.fail_after(60):
        async with httpx.AsyncClient(transport=mock) as client, trio.open_nursery() as nursery:
            with pytest.raises(TransportError, match="cross-origin"):
                async with SSEParameters("http://old.test/sse", client=client).open_transport(
                    nursery
                ):
                    pass  # pragma: no cover


# -- trio_mcp's own client, on real sockets ----------------------------------------------------


async def serve_once(
    stream: trio.SocketStream, answer: Callable[[h11.Request, bytes], h11.Response]
) -> None:
    conn = h11.Connection(h11.SERVER)
    with contextlib.suppress(trio.BrokenResourceError, h11.RemoteProtocolError):
        received = await read_request(stream, conn)
        if received is None:
            return
        head, content = received
        reply = answer(head, content)
        await stream.send_all(conn.send(reply))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        await stream.aclose()


@asynccontextmanager
async def listener(
    answer: Callable[[h11.Request, bytes], h11.Response],
) -> AsyncGenerator[int, None]:
    async with trio.open_nursery() as nursery:
        handler = functools.partial(serve_once, answer=answer)
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
        )
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


async def test_own_client_does_not_follow_a_cross_origin_redirect() -> None:
    reached: list[tuple[bytes, bytes]] = []

    def other(head: h11.Request, content: bytes) -> h11.Response:  # pragma: no cover
        reached.append((head.target, content))
        return h11.Response(status_code=202, headers=[("content-length", "0")])

    with trio.fail_after(30):
        async with listener(other) as other_port:

            def first(head: h11.Request, content: bytes) -> h11.Response:
                location = f"http://127.0.0.1:{other_port}/mcp"
                return h11.Response(
                    status_code=307, headers=[("location", location), ("content-length", "0")]
                )

            async with listener(first) as port, trio.open_nursery() as nursery:
                params = StreamableHTTPParameters(
                    f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "Bearer secret"}
                )
                async with params.open_transport(nursery) as transport:
                    failures = Failures()
                    transport.attach(failures)
                    await transport.send(request(1, "tools/list"), MessageInfo("tools/list", 1))
                    _, error = await failures.receive.receive()
    assert "does not follow cross-origin redirects" in str(error)
    assert reached == []
