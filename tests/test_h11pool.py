"""trio_mcp's own HTTP/1.1 pool (``_transports/_h11pool.py``) against hand-scripted servers.

Every server here is a trio TCP listener on 127.0.0.1 whose handler writes exactly the bytes
a test needs, so keep-alive, early closes, garbage, slowness and TLS are all under control.
"""

from __future__ import annotations

import gzip
import os
import socket
import ssl
import zlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

import h11
import httpx
import pytest
import trio
import trio.testing
import trustme
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trio_mcp._transports._h11pool import UNYIELDED_READ, H11Transport, _Connection, plain_body
from trio_mcp._transports._http_base import core_for
from trio_mcp._transports._http_client import HTTPOptions
from trio_mcp._transports._http_sender import close_response

from .h11peer import read_request

Handler = Callable[[trio.SocketStream], Awaitable[None]]
PLAIN = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"


class Server:
    """A scripted listener: counts connections; ``handler`` serves each one."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.port = 0

    async def serve(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        try:
            await self.handler(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@asynccontextmanager
async def serving(handler: Handler) -> AsyncGenerator[Server]:
    server = Server(handler)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.serve, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()


async def keep_alive(stream: trio.SocketStream) -> None:
    """Answer every request on the connection with ``{}``."""
    conn = h11.Connection(h11.SERVER)
    while await read_request(stream, conn) is not None:
        await stream.send_all(OK)
        conn = h11.Connection(h11.SERVER)


def client_for(pool: H11Transport) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=pool, timeout=httpx.Timeout(5.0))


async def test_sequential_requests_share_one_connection() -> None:
    async with serving(keep_alive) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with client_for(pool) as client:
            for _ in range(5):
                response = await client.post(server.url, content=b"{}")
                assert response.status_code == 200 and response.json() == {}
    assert server.connections == 1


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def one_answer(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        if await read_request(stream, conn) is not None:
            await stream.send_all(OK)  # keep-alive promised, then closed

    async with serving(one_answer) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with client_for(pool) as client:
            await client.post(server.url, content=b"{}")
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(0.05)  # the FIN reaches our socket
            response = await client.post(server.url, content=b"{}")
            assert response.json() == {}
    assert server.connections == 2


async def test_connection_close_and_read_until_close_bodies() -> None:
    async def close_delimited(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        if await read_request(stream, conn) is not None:
            await stream.send_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 100_000)

    async with serving(close_delimited) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with client_for(pool) as client:
            for _ in range(2):
                response = await client.get(server.url)
                assert response.content == b"x" * 100_000
    assert server.connections == 2


async def test_chunked_responses_and_streamed_request_bodies() -> None:
    got: list[bytes] = []

    async def chunked(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
        got.append(body)
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
        )

    async def body() -> AsyncGenerator[bytes]:
        yield b"one,"
        yield b"two"

    async with serving(chunked) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with client_for(pool) as client:
            response = await client.post(server.url, content=body())
            assert response.content == b"abcdefg"
    assert got == [b"one,two"]


async def test_a_body_closed_early_closes_its_connection() -> None:
    async def big(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
            await stream.send_all(b"y" * 1_000_000)
            conn = h11.Connection(h11.SERVER)

    async with serving(big) as server, H11Transport(ssl_context=PLAIN, max_connections=1) as pool:
        for _ in range(3):
            response = await pool.handle_async_request(httpx.Request("GET", server.url))
            body = response.stream
            assert isinstance(body, httpx.AsyncByteStream)
            await body.__aiter__().__anext__()
            await response.aclose()  # given up half-way: the connection cannot be reused
    assert server.connections == 3


async def test_requests_beyond_the_limit_wait_first_come_first_served() -> None:
    release = trio.Event()
    order: list[int] = []

    async def slow(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            await release.wait()
            await stream.send_all(OK)
            conn = h11.Connection(h11.SERVER)

    async with serving(slow) as server, H11Transport(ssl_context=PLAIN, max_connections=1) as pool:
        async with client_for(pool) as client:

            async def call(n: int) -> None:
                await client.post(server.url, content=b"{}")
                order.append(n)

            async with trio.open_nursery() as nursery:
                for n in range(6):  # one connection: served strictly in turn
                    nursery.start_soon(call, n)
                    await trio.testing.wait_all_tasks_blocked()
                release.set()
    assert server.connections == 1
    assert order == [0, 1, 2, 3, 4, 5]


async def test_pool_timeout() -> None:
    async def never(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with serving(never) as server, H11Transport(ssl_context=PLAIN, max_connections=1) as pool:
        async with httpx.AsyncClient(transport=pool, timeout=httpx.Timeout(0.2)) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: _expect(client, server.url, httpx.ReadTimeout))
                await trio.testing.wait_all_tasks_blocked()
                with pytest.raises(httpx.PoolTimeout):
                    await client.post(server.url, content=b"{}")


async def _expect(client: httpx.AsyncClient, url: str, kind: type[Exception]) -> None:
    with pytest.raises(kind):
        await client.post(url, content=b"{}")


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (b"", httpx.RemoteProtocolError),  # closed without a response
        (b"garbage\r\n\r\n", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", httpx.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", httpx.RemoteProtocolError),
    ],
)
async def test_broken_answers_are_httpx_errors(reply: bytes, kind: type[Exception]) -> None:
    async def broken(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        if await read_request(stream, conn) is not None:
            await stream.send_all(reply)

    async with serving(broken) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with client_for(pool) as client:
            with pytest.raises(kind):
                await client.post(server.url, content=b"{}")


async def test_connect_errors_and_unsupported_schemes() -> None:
    async with H11Transport(ssl_context=PLAIN) as pool, client_for(pool) as client:
        with pytest.raises(httpx.ConnectError):
            await client.post("http://127.0.0.1:1/mcp", content=b"{}")
        with pytest.raises(httpx.UnsupportedProtocol):
            await pool.handle_async_request(httpx.Request("GET", "ftp://127.0.0.1/"))
    with pytest.raises(ValueError, match="max_connections"):
        H11Transport(ssl_context=PLAIN, max_connections=0)


async def test_tls_with_a_verified_certificate() -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(server_context)  # pyright: ignore[reportUnknownMemberType]
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    async def tls(stream: trio.SocketStream) -> None:
        wrapped = trio.SSLStream(stream, server_context, server_side=True)
        conn = h11.Connection(h11.SERVER)
        if await read_request(wrapped, conn) is not None:
            await wrapped.send_all(OK)
            await wrapped.aclose()

    async with serving(tls) as server:
        url = server.url.replace("http:", "https:")
        async with H11Transport(ssl_context=client_context) as pool, client_for(pool) as client:
            with pytest.raises(httpx.ConnectError):  # an unknown CA
                await client.post(url, content=b"{}")
        ca.configure_trust(client_context)  # pyright: ignore[reportUnknownMemberType]
        async with H11Transport(ssl_context=client_context) as pool, client_for(pool) as client:
            assert (await client.post(url, content=b"{}")).json() == {}


async def test_cancellation_at_any_point_frees_the_slot() -> None:
    """Cancel a request at each of its await points: the one slot is always given back."""
    async with (
        serving(keep_alive) as server,
        H11Transport(ssl_context=PLAIN, max_connections=1) as pool,
    ):
        async with client_for(pool) as client:
            for checkpoints in range(12):
                with trio.CancelScope() as scope:

                    async def cancel_after(n: int, scope: trio.CancelScope = scope) -> None:
                        for _ in range(n):
                            await trio.lowlevel.checkpoint()
                        scope.cancel()

                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(cancel_after, checkpoints)
                        await client.post(server.url, content=b"{}")
                with trio.fail_after(5):  # the slot is free again
                    assert (await client.post(server.url, content=b"{}")).json() == {}


async def test_closing_races_every_point_of_a_burst() -> None:
    """Close the pool after N checkpoints of a burst: every request ends (answered or with an
    httpx error), nothing waits forever, and no connection is opened after the close."""
    release = trio.Event()

    async def slowish(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            await release.wait()
            await stream.send_all(OK)
            conn = h11.Connection(h11.SERVER)

    async with serving(slowish) as server:
        for checkpoints in range(0, 24, 3):
            release = trio.Event()
            pool = H11Transport(ssl_context=PLAIN, max_connections=2)
            outcomes: list[str] = []
            opened_before = server.connections

            async def call(client: httpx.AsyncClient, outcomes: list[str] = outcomes) -> None:
                try:
                    await client.post(server.url, content=b"{}")
                    outcomes.append("answered")
                except httpx.HTTPError:
                    outcomes.append("failed")

            with trio.fail_after(10):
                async with httpx.AsyncClient(transport=pool, timeout=5) as client:
                    async with trio.open_nursery() as nursery:
                        for _ in range(6):
                            nursery.start_soon(call, client)
                        for _ in range(checkpoints):
                            await trio.lowlevel.checkpoint()
                        await pool.aclose()
                        release.set()
            assert len(outcomes) == 6
            # the requests that got a slot only after the close opened no connection
            assert server.connections - opened_before <= 2
            assert pool._slots.value == 2  # pyright: ignore[reportPrivateUsage]


@settings(  # examples: the profile's (tests/conftest.py; nox -s fuzz)
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(reply=st.binary(max_size=300))
def test_any_reply_bytes_end_in_a_response_or_an_httpx_error(reply: bytes) -> None:
    async def main() -> None:
        async def scripted(stream: trio.SocketStream) -> None:
            conn = h11.Connection(h11.SERVER)
            if await read_request(stream, conn) is not None:
                await stream.send_all(reply)

        async with serving(scripted) as server, H11Transport(ssl_context=PLAIN) as pool:
            async with httpx.AsyncClient(transport=pool, timeout=httpx.Timeout(2.0)) as client:
                try:
                    await client.post(server.url, content=b"{}")
                except httpx.HTTPError:
                    pass

    trio.run(main)


async def test_the_direct_path_keeps_cookies_and_default_headers() -> None:
    """Requests of a client trio_mcp made skip ``client.send`` but keep what it would add."""
    seen: list[dict[bytes, bytes]] = []

    async def affinity(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while (received := await read_request(stream, conn)) is not None:
            seen.append(dict(received[0].headers))
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\nSet-Cookie: affinity=a1; Path=/\r\nContent-Length: 0\r\n\r\n"
            )
            conn = h11.Connection(h11.SERVER)

    async with serving(affinity) as server, trio.open_nursery() as nursery:
        core = core_for(HTTPOptions(server.url), nursery)
        assert core.uses_pool_directly
        for _ in range(2):
            response = await core.open("POST", server.url, headers={"X-Test": "1"}, content=b"")
            await close_response(response)
        await core.aclose(None)
    assert b"cookie" not in seen[0] and seen[1][b"cookie"] == b"affinity=a1"
    assert all(h[b"x-test"] == b"1" and b"python-httpx" in h[b"user-agent"] for h in seen)
    assert server.connections == 1


@pytest.mark.parametrize(
    ("method", "content"),
    [("POST", b'{"jsonrpc":"2.0"}'), ("POST", b""), ("POST", None), ("GET", None), ("DELETE", b"")],
)
async def test_the_direct_path_sends_the_headers_client_send_would(
    method: str, content: bytes | None
) -> None:
    """Same names, values and body as ``client.build_request`` (Host, defaults, overrides)."""
    seen: list[tuple[list[tuple[bytes, bytes]], bytes]] = []

    async def record(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while (received := await read_request(stream, conn)) is not None:
            seen.append((list(received[0].headers), received[1]))
            await stream.send_all(b"HTTP/1.1 204 No Content\r\n\r\n")
            conn = h11.Connection(h11.SERVER)

    headers = {"Accept": "application/json, text/event-stream", "Mcp-Method": "tools/call"}
    async with serving(record) as server, trio.open_nursery() as nursery:
        core = core_for(HTTPOptions(server.url, headers={"X-Default": "d"}), nursery)
        assert core.uses_pool_directly
        expected = core.client.build_request(method, server.url, headers=headers, content=content)
        await close_response(await core.open(method, server.url, headers=headers, content=content))
        await core.aclose(None)
    [(sent, body)] = seen
    assert sorted(sent) == sorted((k.lower(), v) for k, v in expected.headers.raw)
    assert body == expected.read()
    assert sent[0][0] == b"host"  # first, as httpx sends it


@pytest.mark.parametrize("encoding", ["", "gzip", "deflate"])
@pytest.mark.parametrize("chunked", [False, True])
async def test_bodies_read_directly_or_through_httpx_give_the_same_bytes(
    encoding: str, chunked: bool
) -> None:
    """A plain body is read straight from the pool, an encoded one decoded by httpx."""
    answer = b'{"jsonrpc":"2.0","id":1,"result":{"text":"' + b"x" * 5000 + b'"}}'
    wire = answer
    if encoding == "gzip":
        wire = gzip.compress(answer)
    elif encoding == "deflate":
        wire = zlib.compress(answer)

    async def encoded(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            headers = [("Content-Type", "application/json")]
            headers += [("Content-Encoding", encoding)] if encoding else []
            headers += [("Transfer-Encoding", "chunked")] if chunked else []
            headers += [] if chunked else [("Content-Length", str(len(wire)))]
            data = conn.send(h11.Response(status_code=200, headers=headers)) or b""
            step = 1000 if chunked else len(wire)
            for start in range(0, len(wire), step):
                data += conn.send(h11.Data(data=wire[start : start + step])) or b""
            await stream.send_all(data + (conn.send(h11.EndOfMessage()) or b""))
            conn.start_next_cycle()

    async with serving(encoded) as server, trio.open_nursery() as nursery:
        core = core_for(HTTPOptions(server.url), nursery)
        for _ in range(3):
            response = await core.open("POST", server.url, headers={}, content=b"{}")
            assert (plain_body(response) is None) == bool(encoding)
            assert await core.read_body(response) == answer
            await close_response(response)
        await core.aclose(None)
    assert server.connections == 1  # every body read to its end: the connection is reused


async def test_a_plain_body_given_up_half_way_closes_its_connection() -> None:
    """A body cut at the size limit is not read on: its connection is not reused."""

    async def big(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            head = conn.send(
                h11.Response(status_code=200, headers=[("Transfer-Encoding", "chunked")])
            )
            await stream.send_all((head or b"") + (conn.send(h11.Data(data=b"y" * 4000)) or b""))
            try:
                for _ in range(3):
                    await stream.send_all(conn.send(h11.Data(data=b"y" * 4000)) or b"")
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the client closed the connection mid-body
            conn.start_next_cycle()

    async with serving(big) as server, trio.open_nursery() as nursery:
        core = core_for(HTTPOptions(server.url), nursery)
        for _ in range(2):
            response = await core.open("POST", server.url, headers={}, content=b"{}")
            assert plain_body(response) is not None
            assert await core.read_body(response, 5000, truncate=True) == b"y" * 5000
            await close_response(response)
        await core.aclose(None)
    assert server.connections == 2


def test_the_direct_path_is_not_taken_with_auth_or_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with trio.open_nursery() as nursery:
            assert not core_for(
                HTTPOptions("http://x/mcp", auth=httpx.BasicAuth("a", "b")), nursery
            ).uses_pool_directly
            monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
            assert not core_for(HTTPOptions("http://x/mcp"), nursery).uses_pool_directly
            own = httpx.AsyncClient()
            assert not core_for(HTTPOptions("http://x/mcp", client=own), nursery).uses_pool_directly
            await own.aclose()

    trio.run(main)


# -- reading and writing plain sockets directly ---------------------------------------------


@asynccontextmanager
async def direct_connection() -> AsyncGenerator[tuple[_Connection, socket.socket]]:
    mine, theirs = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(mine))
    connection = _Connection((b"http", b"127.0.0.1", 80), stream)
    try:
        yield connection, theirs
    finally:
        await connection.aclose()
        theirs.close()


@pytest.mark.skipif(os.name != "posix", reason="direct socket I/O is POSIX only")
async def test_what_is_already_there_is_read_without_a_yield_up_to_a_bound() -> None:
    async with direct_connection() as (connection, peer):
        assert connection._read_now() is None  # nothing there: the stream waits (and yields)
        connection._credit = 10_000
        peer.sendall(b"a" * 20_000)
        assert connection._read_now() == b"a" * 20_000
        peer.sendall(b"b" * 10)
        assert connection._read_now() is None  # over the bound: one read through the stream
        assert connection._credit == UNYIELDED_READ
        assert connection._read_now() == b"b" * 10
        peer.close()
        assert connection._read_now() == b""  # the peer closed


@pytest.mark.skipif(os.name != "posix", reason="direct socket I/O is POSIX only")
async def test_a_closed_connection_never_touches_its_old_fd() -> None:
    async with direct_connection() as (connection, _peer):
        await connection.aclose()
        assert connection.write_now(b"x") == 0
        assert connection._read_now() is None


async def test_a_body_the_socket_cannot_take_at_once_is_written_whole() -> None:
    size = 8 * 1024 * 1024
    received: list[int] = []

    async def slow_reader(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        total = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                await trio.sleep(0.001)  # let the client's socket buffer fill up
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Data):
                total += len(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        received.append(total)
        await stream.send_all(OK)

    with trio.fail_after(20):
        async with serving(slow_reader) as server, H11Transport(ssl_context=PLAIN) as pool:
            async with client_for(pool) as client:
                response = await client.post(server.url, content=b"x" * size)
                assert response.status_code == 200
    assert received == [size]


class Gated:
    """A keep-alive server whose answers wait for ``gate`` (so requests overlap).

    Counts the connections the client closed (the handler sees their end).
    """

    def __init__(self) -> None:
        self.gate = trio.Event()
        self.closed = 0

    async def __call__(self, stream: trio.SocketStream) -> None:
        try:
            conn = h11.Connection(h11.SERVER)
            while await read_request(stream, conn) is not None:
                await self.gate.wait()
                await stream.send_all(OK)
                conn = h11.Connection(h11.SERVER)
        finally:  # (the client closed it: cleanly, or resetting a request it gave up)
            self.closed += 1


async def burst(client: httpx.AsyncClient, server: Server, gated: Gated, n: int) -> None:
    """``n`` requests at once, answered once all of them are sent."""
    gated.gate = trio.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(partial(client.post, server.url, content=b"{}"))
        await trio.testing.wait_all_tasks_blocked()
        gated.gate.set()
    await trio.testing.wait_all_tasks_blocked()  # (the server saw any close)


async def test_a_burst_past_the_idle_limit_keeps_its_connections_for_the_next_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Connections beyond ``max_keepalive_connections`` close after ``surplus_expiry``
    idle, the oldest first, at the pool's next request: never at the end of a burst (the
    next burst reuses them all)."""
    gated = Gated()
    async with (
        serving(gated) as server,
        H11Transport(ssl_context=PLAIN, max_keepalive_connections=2) as pool,
        httpx.AsyncClient(transport=pool, timeout=None) as client,
    ):
        assert pool.surplus_expiry == 1.0 and pool.keepalive_expiry == 5.0
        await burst(client, server, gated, 5)
        assert server.connections == 5 and pool._idle_count == 5 and gated.closed == 0
        await trio.sleep(0.5)
        await burst(client, server, gated, 5)  # every connection reused
        assert server.connections == 5 and pool._idle_count == 5 and gated.closed == 0
        await trio.sleep(0.9)  # 1.4: idle for 0.9 s, under surplus_expiry: none closed
        await burst(client, server, gated, 1)
        assert server.connections == 5 and pool._idle_count == 5 and gated.closed == 0
        await trio.sleep(0.1)  # 1.5: the four idle since 0.5 are surplus: the 3 oldest close
        assert trio.current_time() == 1.5
        await burst(client, server, gated, 1)
        assert server.connections == 5 and pool._idle_count == 2 and gated.closed == 3
        await trio.sleep(4.0)  # 5.5: the last one idle since 0.5 expires (keepalive_expiry)
        await burst(client, server, gated, 1)
        assert server.connections == 5 and pool._idle_count == 1 and gated.closed == 4


async def test_connections_given_back_during_a_burst_serve_its_waiting_requests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Nine requests on three connections with one kept idle: the three are reused by the
    requests waiting for a slot, none closed and reopened."""
    gated = Gated()
    gated.gate.set()
    async with (
        serving(gated) as server,
        H11Transport(ssl_context=PLAIN, max_connections=3, max_keepalive_connections=1) as pool,
        httpx.AsyncClient(transport=pool, timeout=None) as client,
    ):
        for _ in range(3):
            async with trio.open_nursery() as nursery:
                for _ in range(9):
                    nursery.start_soon(partial(client.post, server.url, content=b"{}"))
        await trio.testing.wait_all_tasks_blocked()
        assert server.connections == 3 and gated.closed == 0 and pool._idle_count == 3
        assert trio.current_time() == 0.0
        await trio.sleep(1.0)
        await client.post(server.url, content=b"{}")
        await trio.testing.wait_all_tasks_blocked()
        assert gated.closed == 2 and pool._idle_count == 1


def test_the_surplus_expiry_is_at_most_the_keepalive_expiry() -> None:
    assert H11Transport(ssl_context=PLAIN, keepalive_expiry=0.5).surplus_expiry == 0.5
    with pytest.raises(ValueError, match="surplus_expiry"):
        H11Transport(ssl_context=PLAIN, surplus_expiry=-1.0)
