"""trio_mcp's HTTP/1.1 pool over a connection's whole life (``_transports/_h11pool.py``).

Early answers (a 413 before the body is written), keep-alive expiry on trio's clock, the
idle limit, why TLS failed, and responses nobody asked for. Every server is a scripted
trio listener on 127.0.0.1 (see tests/test_h11pool.py).
"""

from __future__ import annotations

import ssl
from functools import partial
from typing import Any

import h11
import httpx
import pytest
import trio
import trio.testing
import trustme

import trio_mcp
from trio_mcp import HTTPStatusError, ServerError, TransportError
from trio_mcp._transports._h11pool import H11Transport
from trio_mcp._transports._http_base import core_for
from trio_mcp._transports._http_client import HTTPOptions
from trio_mcp._transports._http_errors import answer_in_body
from trio_mcp._transports._http_sender import close_response

from .h11peer import read_request
from .test_h11pool import OK, PLAIN, Gated, burst, keep_alive, serving

TOO_LARGE = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"request body too large"}}'


async def read_head(stream: trio.SocketStream) -> h11.Request | None:
    """Read a request's head only (its body is left unread)."""
    conn = h11.Connection(h11.SERVER)
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            if not data:
                return None
            conn.receive_data(data)
        elif isinstance(event, h11.Request):
            return event
        else:
            return None


async def answer_413_early(stream: trio.SocketStream) -> None:
    """Refuse the request from its head: 413 and close, the body never read."""
    if await read_head(stream) is not None:
        await stream.send_all(
            b"HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(TOO_LARGE), TOO_LARGE)
        )
        # closing with the body unread resets the connection: the client's write breaks
        stream.socket.setsockopt(
            trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
        )


BIG = b"[" + b" " * (8 * 1024 * 1024) + b"]"  # far more than the socket buffers take


@pytest.mark.parametrize("streamed", [False, True])
async def test_an_answer_before_the_body_is_written_is_the_response(streamed: bool) -> None:
    async with serving(answer_413_early) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with httpx.AsyncClient(transport=pool, timeout=httpx.Timeout(10.0)) as client:

            async def chunks() -> object:
                for start in range(0, len(BIG), 65536):
                    yield BIG[start : start + 65536]

            content = chunks() if streamed else BIG
            response = await client.post(server.url, content=content)  # type: ignore[arg-type]
            assert response.status_code == 413
            assert response.content == TOO_LARGE


async def test_the_caller_gets_the_413_and_its_json_rpc_error() -> None:
    async with serving(answer_413_early) as server, trio.open_nursery() as nursery:
        core = core_for(HTTPOptions(server.url), nursery)
        assert core.uses_pool_directly
        with pytest.raises(HTTPStatusError) as caught:
            await core.open("POST", server.url, headers={}, content=BIG)
        assert caught.value.status_code == 413
        answer = answer_in_body(caught.value, "tools/call")
        assert isinstance(answer, ServerError) and answer.message == "request body too large"
        await core.aclose(None)


async def test_a_write_failure_without_an_answer_is_still_a_write_error() -> None:
    async def reset(stream: trio.SocketStream) -> None:
        if await read_head(stream) is not None:
            stream.socket.setsockopt(
                trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )

    async with serving(reset) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with httpx.AsyncClient(transport=pool, timeout=httpx.Timeout(10.0)) as client:
            with pytest.raises(httpx.WriteError):
                await client.post(server.url, content=BIG)


class Counted:
    """A keep-alive server that counts connections and how many the client closed."""

    def __init__(self) -> None:
        self.closed = 0

    async def __call__(self, stream: trio.SocketStream) -> None:
        await keep_alive(stream)
        self.closed += 1


async def test_idle_connections_expire_on_trios_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    counted = Counted()
    async with serving(counted) as server, H11Transport(ssl_context=PLAIN) as pool:
        assert pool.keepalive_expiry == 5.0 and pool.max_keepalive_connections == 20
        async with httpx.AsyncClient(transport=pool, timeout=None) as client:
            await client.post(server.url, content=b"{}")
            assert trio.current_time() == 0.0
            await trio.sleep(4.5)
            await client.post(server.url, content=b"{}")  # still alive: reused
            assert server.connections == 1
            await trio.sleep(5.0)  # idle since 4.5: expired at 9.5, exactly now
            assert trio.current_time() == 9.5
            await client.post(server.url, content=b"{}")
            assert server.connections == 2
            await trio.sleep(1.0)
            assert counted.closed == 1  # the expired one was closed, not left open
            assert sum(len(idle) for idle in pool._idle.values()) == 1


async def test_at_most_max_keepalive_connections_stay_idle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Past ``surplus_expiry`` (1 s) idle, the surplus is closed at the next request."""
    counted = Counted()
    release = trio.Event()

    async def slow(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            await release.wait()
            await stream.send_all(OK)
            conn = h11.Connection(h11.SERVER)
        counted.closed += 1

    async with (
        serving(slow) as server,
        H11Transport(ssl_context=PLAIN, max_keepalive_connections=2) as pool,
        httpx.AsyncClient(transport=pool, timeout=None) as client,
    ):
        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(lambda: client.post(server.url, content=b"{}"))
            await trio.testing.wait_all_tasks_blocked()
            assert server.connections == 5
            release.set()
        assert pool._idle_count == 5  # (a burst's connections stay for the next burst)
        await trio.sleep(1.0)
        await client.post(server.url, content=b"{}")
        await trio.testing.wait_all_tasks_blocked()
        assert sum(len(idle) for idle in pool._idle.values()) == 2
        assert counted.closed == 3 and server.connections == 5


def tls_server(cert: trustme.LeafCert) -> object:
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(server_context)  # pyright: ignore[reportUnknownMemberType]

    async def tls(stream: trio.SocketStream) -> None:
        wrapped = trio.SSLStream(stream, server_context, server_side=True)
        conn = h11.Connection(h11.SERVER)
        try:
            if await read_request(wrapped, conn) is not None:
                await wrapped.send_all(OK)
        except trio.BrokenResourceError:
            pass

    return tls


@pytest.mark.parametrize(
    ("names", "trusted", "reason"),
    [
        (["127.0.0.1"], False, "unable to get local issuer certificate"),
        (["mcp.example.org"], True, "IP address mismatch"),
    ],
)
async def test_a_tls_failure_says_why(names: list[str], trusted: bool, reason: str) -> None:
    ca = trustme.CA()
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if trusted:
        ca.configure_trust(client_context)  # pyright: ignore[reportUnknownMemberType]
    async with serving(tls_server(ca.issue_cert(*names))) as server:  # type: ignore[arg-type]
        url = server.url.replace("http:", "https:")
        async with H11Transport(ssl_context=client_context) as pool:
            async with httpx.AsyncClient(transport=pool) as client:
                with pytest.raises(httpx.ConnectError, match=reason) as caught:
                    await client.post(url, content=b"{}")
                assert "TLS certificate verification failed for 127.0.0.1" in str(caught.value)
        async with trio.open_nursery() as nursery:  # and through a transport's one boundary
            core = core_for(HTTPOptions(url, ssl_context=client_context), nursery)
            with pytest.raises(TransportError, match=reason):
                await core.open("POST", url, headers={}, content=b"{}")
            await core.aclose(None)


async def test_a_hostname_mismatch_names_the_host() -> None:
    ca = trustme.CA()
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client_context)  # pyright: ignore[reportUnknownMemberType]
    async with serving(tls_server(ca.issue_cert("mcp.example.org"))) as server:  # type: ignore[arg-type]
        url = f"https://localhost:{server.port}/mcp"
        async with H11Transport(ssl_context=client_context) as pool:
            async with httpx.AsyncClient(transport=pool) as client:
                with pytest.raises(httpx.ConnectError, match="Hostname mismatch") as caught:
                    await client.post(url, content=b"{}")
                assert "localhost" in str(caught.value)


UNASKED = b'HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{"unasked":1}'


async def test_a_response_sent_with_the_answer_unasked_is_never_the_next_answer() -> None:
    answers = 0

    async def chatty(stream: trio.SocketStream) -> None:
        nonlocal answers
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            answers += 1
            body = b'{"n":%d}' % answers
            reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            await stream.send_all(reply + (UNASKED if answers == 1 else b""))
            conn = h11.Connection(h11.SERVER)

    async with serving(chatty) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with httpx.AsyncClient(transport=pool, timeout=5.0) as client:
            assert (await client.post(server.url, content=b"{}")).json() == {"n": 1}
            assert (await client.post(server.url, content=b"{}")).json() == {"n": 2}
    assert server.connections == 2  # the first connection was closed, not reused


async def test_a_response_arriving_on_an_idle_connection_closes_it() -> None:
    sent = trio.Event()

    async def chatty(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        first = True
        while await read_request(stream, conn) is not None:
            await stream.send_all(OK)
            if first:
                await trio.sleep(0.01)
                await stream.send_all(UNASKED)  # later, while the connection is idle
                sent.set()
                first = False
            conn = h11.Connection(h11.SERVER)

    async with serving(chatty) as server, H11Transport(ssl_context=PLAIN) as pool:
        async with httpx.AsyncClient(transport=pool, timeout=5.0) as client:
            assert (await client.post(server.url, content=b"{}")).json() == {}
            await sent.wait()
            await trio.sleep(0.05)  # the bytes reach our socket
            assert (await client.post(server.url, content=b"{}")).json() == {}
    assert server.connections == 2


async def test_closing_a_response_of_a_closed_pool_closes_its_connection() -> None:
    async with serving(keep_alive) as server:
        pool = H11Transport(ssl_context=PLAIN)
        response = await pool.handle_async_request(httpx.Request("GET", server.url))
        await pool.aclose()
        await close_response(response)
        assert pool._idle == {} and pool._idle_count == 0


async def test_an_unasked_response_in_its_own_tls_record_is_never_the_next_answer() -> None:
    """TLS reads the next record into its own buffers: the socket no longer shows it."""
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)  # pyright: ignore[reportUnknownMemberType]
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client_context)  # pyright: ignore[reportUnknownMemberType]
    answers = 0

    async def chatty(stream: trio.SocketStream) -> None:
        nonlocal answers
        wrapped = trio.SSLStream(stream, server_context, server_side=True)
        conn = h11.Connection(h11.SERVER)
        try:
            while await read_request(wrapped, conn) is not None:
                answers += 1
                body = b'{"n":%d}' % answers
                cork = answers == 1 and hasattr(trio.socket, "TCP_CORK")
                if cork:  # both records leave in one segment, read by the client at once
                    stream.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_CORK, 1)
                await wrapped.send_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                if answers == 1:
                    await wrapped.send_all(UNASKED)  # a record of its own
                if cork:
                    stream.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_CORK, 0)
                conn = h11.Connection(h11.SERVER)
        except trio.BrokenResourceError:
            pass

    async with serving(chatty) as server, H11Transport(ssl_context=client_context) as pool:
        url = server.url.replace("http:", "https:")
        async with httpx.AsyncClient(transport=pool, timeout=5.0) as client:
            assert (await client.post(url, content=b"{}")).json() == {"n": 1}
            await trio.sleep(0.05)  # the unasked record arrives
            assert (await client.post(url, content=b"{}")).json() == {"n": 2}
    assert server.connections == 2


async def test_tls_connections_are_still_reused() -> None:
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)  # pyright: ignore[reportUnknownMemberType]
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client_context)  # pyright: ignore[reportUnknownMemberType]

    async def tls_keep_alive(stream: trio.SocketStream) -> None:
        await keep_alive(trio.SSLStream(stream, server_context, server_side=True))  # type: ignore[arg-type]

    async with serving(tls_keep_alive) as server, H11Transport(ssl_context=client_context) as pool:
        url = server.url.replace("http:", "https:")
        async with httpx.AsyncClient(transport=pool, timeout=5.0) as client:
            for _ in range(5):
                assert (await client.post(url, content=b"{}")).json() == {}
                await trio.sleep(0.01)  # (session tickets, if any, have arrived)
    assert server.connections == 1


async def test_a_call_too_large_for_the_server_fails_with_its_json_rpc_error() -> None:
    """Through a whole session: the server refuses the call from its head, before its body."""
    import json

    refused = (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body too large"}}'
    )

    async def modern(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request = await _next_request(stream, conn)
            if request is None:
                return
            if int(dict(request.headers).get(b"content-length", b"0")) > 1_000_000:
                await stream.send_all(
                    b"HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
                    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(refused), refused)
                )
                stream.socket.setsockopt(
                    trio.socket.SOL_SOCKET,
                    trio.socket.SO_LINGER,
                    b"\x01\x00\x00\x00\x00\x00\x00\x00",
                )
                return
            body = b""
            while not isinstance(event := await _event(stream, conn), h11.EndOfMessage):
                body += event.data
            message = json.loads(body)
            if message["method"] == "server/discover":
                result = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                          "capabilities": {"tools": {}}}  # fmt: skip
            else:
                result = {"content": [{"type": "text", "text": "small"}]}
            answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            head = h11.Response(
                status_code=200,
                headers=[
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(answer)),
                ],
            )
            await stream.send_all(conn.send(head) + conn.send(h11.Data(data=answer)))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            conn.start_next_cycle()

    async with serving(modern) as server:
        async with trio_mcp.open_mcp_session(server.url) as session:
            with trio.fail_after(10):
                assert (await session.call_tool("t", {})).content[0].text == "small"  # type: ignore[union-attr]
                with pytest.raises(ServerError, match="request body too large") as caught:
                    await session.call_tool("t", {"blob": "x" * 4_000_000})
    cause = caught.value.__cause__
    assert isinstance(cause, HTTPStatusError) and cause.status_code == 413


async def _event(stream: trio.SocketStream, conn: h11.Connection) -> Any:
    while (event := conn.next_event()) is h11.NEED_DATA:
        data = await stream.receive_some(65536)
        conn.receive_data(data)
        if not data:
            return h11.ConnectionClosed()
    return event


async def _next_request(stream: trio.SocketStream, conn: h11.Connection) -> h11.Request | None:
    event = await _event(stream, conn)
    return event if isinstance(event, h11.Request) else None


async def _cancelled_after(n: int, request: Any) -> None:
    """Run ``request()``, cancelled after ``n`` checkpoints of another task (or not at all)."""
    with trio.CancelScope() as scope:

        async def cancel_after() -> None:
            for _ in range(n):
                await trio.lowlevel.checkpoint()
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_after)
            try:
                await request()
            except httpx.HTTPError:
                pass


def _consistent(pool: H11Transport) -> None:
    assert pool._idle_count == sum(len(idle) for idle in pool._idle.values())
    assert pool._idle_count <= pool.max_keepalive_connections


async def test_cancellation_at_any_point_of_expiry_or_an_early_answer_frees_everything(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Race: a request cancelled at each await point, while expired idle connections are
    closed before it and while a 413 arrives mid-body: no slot leaks, the idle count stays
    true, the next request is answered."""

    async def small_or_refused(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request = await _next_request(stream, conn)
            if request is None:
                return
            if int(dict(request.headers).get(b"content-length", b"0")) > 1_000_000:
                await answer_413_early_after_head(stream)
                return
            while not isinstance(await _event(stream, conn), h11.EndOfMessage):
                pass
            head = h11.Response(status_code=200, headers=[(b"content-length", b"2")])
            await stream.send_all(conn.send(head) + conn.send(h11.Data(data=b"{}")))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            conn.start_next_cycle()

    async with (
        serving(small_or_refused) as server,
        H11Transport(ssl_context=PLAIN, max_connections=1, keepalive_expiry=1.0) as pool,
        httpx.AsyncClient(transport=pool, timeout=None) as client,
    ):
        for checkpoints in range(16):
            for _ in range(2):  # two idle connections, then both expire
                await client.post(server.url, content=b"{}")
            await trio.sleep(2.0)
            await _cancelled_after(checkpoints, lambda: client.post(server.url, content=b"{}"))
            _consistent(pool)
            await _cancelled_after(checkpoints, lambda: client.post(server.url, content=BIG))
            _consistent(pool)
            with trio.fail_after(5):  # the one slot is free again
                assert (await client.post(server.url, content=b"{}")).json() == {}
            _consistent(pool)


async def answer_413_early_after_head(stream: trio.SocketStream) -> None:
    await stream.send_all(
        b"HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    stream.socket.setsockopt(
        trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
    )


@pytest.mark.parametrize("checkpoints", range(10))
async def test_closing_the_pool_while_expired_connections_close_leaves_none_open(
    checkpoints: int,
) -> None:
    """Race: ``aclose`` at each point of a request's closing of expired idle connections."""
    counted = Counted()
    release = trio.Event()

    async def held(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while await read_request(stream, conn) is not None:
            await release.wait()
            await stream.send_all(OK)
            conn = h11.Connection(h11.SERVER)
        counted.closed += 1

    async with serving(held) as server:
        pool = H11Transport(ssl_context=PLAIN, keepalive_expiry=0.0)
        client = httpx.AsyncClient(transport=pool, timeout=5.0)
        async with trio.open_nursery() as nursery:
            for _ in range(4):  # four idle connections, expired at once
                nursery.start_soon(lambda: client.post(server.url, content=b"{}"))
            await trio.testing.wait_all_tasks_blocked()
            release.set()
        assert pool._idle_count == 4

        async def close_after() -> None:
            for _ in range(checkpoints):
                await trio.lowlevel.checkpoint()
            await pool.aclose()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(close_after)
            with trio.fail_after(5):
                await client.post(server.url, content=b"{}")
        await client.aclose()
        with trio.fail_after(5):
            while counted.closed < server.connections:  # noqa: ASYNC110
                await trio.sleep(0.01)
        assert pool._idle == {}


@pytest.mark.parametrize("checkpoints", range(12))
async def test_requests_cancelled_while_the_surplus_closes_leave_the_pool_true(
    checkpoints: int, autojump_clock: trio.testing.MockClock
) -> None:
    """Race: two requests at once, one cancelled after ``checkpoints`` checkpoints of
    another task, while four surplus idle connections close: the idle count stays true,
    every slot is freed, and every connection not idle is closed."""
    gated = Gated()
    async with (
        serving(gated) as server,
        H11Transport(ssl_context=PLAIN, max_keepalive_connections=1) as pool,
        httpx.AsyncClient(transport=pool, timeout=None) as client,
    ):
        await burst(client, server, gated, 5)
        assert pool._idle_count == 5
        await trio.sleep(1.0)  # four of them are surplus now
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(client.post, server.url, content=b"{}"))
            nursery.start_soon(
                _cancelled_after, checkpoints, lambda: client.post(server.url, content=b"{}")
            )
        _consistent_counts(pool)
        await trio.testing.wait_all_tasks_blocked()
        assert gated.closed == server.connections - pool._idle_count
        assert pool._slots.value == pool.max_connections
        with trio.fail_after(5):
            assert (await client.post(server.url, content=b"{}")).json() == {}
        _consistent_counts(pool)


def _consistent_counts(pool: H11Transport) -> None:
    assert pool._idle_count == sum(len(idle) for idle in pool._idle.values())
