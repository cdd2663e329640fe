"""statistics(): frozen snapshots of a session, an HTTP pool and a group (issue 37)."""

from __future__ import annotations

import dataclasses
import logging
from functools import partial

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import ConnectionClosed, open_server_group
from trio_mcp._jsonrpc import encode_request
from trio_mcp._transports._h11pool import H11Transport
from trio_mcp._transports._http_client import HTTPOptions, make_client
from trio_mcp.groups import GroupStatistics, ServerState
from trio_mcp.testing import MockServer, ToolContext
from trio_mcp.transports import PoolStatistics

from .test_h11pool import PLAIN, client_for, keep_alive, serving


def make_server() -> MockServer:
    server = MockServer(eras="legacy")

    @server.tool(description="Echo")
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    @server.tool(description="Log n lines")
    async def chatty(ctx: ToolContext, n: int) -> str:
        for i in range(n):
            await ctx.log("info", f"line {i}")
        return "said"

    return server


async def test_requests_bytes_and_era(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, make_server()) as session:
            before = session.statistics()
            assert before.era == "legacy" and before.protocol_version is not None
            assert before.pending_requests == 0
            assert before.requests_sent == before.requests_answered >= 1  # the handshake
            assert before.link_state == "up" and before.reconnects == 0
            assert before.last_error is None and before.dropped == {}
            assert before.http_pool is None  # an in-memory transport has no pool
            await session.ping()
            after = session.statistics()
            assert after.requests_sent == before.requests_sent + 1
            assert after.requests_answered == before.requests_answered + 1
            ping = encode_request(before.requests_sent + 1, "ping", None)
            assert after.bytes_sent == before.bytes_sent + len(ping)
            assert after.bytes_received > before.bytes_received
            with pytest.raises(dataclasses.FrozenInstanceError):
                after.requests_sent = 0  # type: ignore[misc]


async def test_pending_requests_show_while_they_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()

    @server.tool(description="Slow")
    async def slow(ctx: ToolContext) -> str:
        await trio.sleep(10)
        return "done"

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server) as session:
            sent = session.statistics().requests_sent
            async with trio.open_nursery() as calls:
                for _ in range(3):
                    calls.start_soon(session.call_tool, "slow", {})
                await trio.sleep(5)
                during = session.statistics()
                assert (during.pending_requests, during.requests_sent) == (3, sent + 3)
            assert session.statistics().pending_requests == 0
            assert trio.current_time() == 10.0


async def test_drops_are_counted_by_why(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, make_server()) as session:
            with caplog.at_level(logging.ERROR, logger="trio_mcp"):
                async with session.notifications("notifications/message", buffer=1):
                    await session.call_tool("chatty", {"n": 4})  # 1 kept, 3 dropped
            stats = session.statistics()
            assert stats.dropped == {"subscriber_full": 3}
            assert stats.dropped_total == 3


async def test_reconnects_and_the_last_error_come_from_the_link(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, make_server()) as session:
            link = session.transport.link
            await trio.sleep(7)
            link.failed(ConnectionClosed("the stream broke"))
            down = session.statistics()
            assert down.link_state == "reconnecting"
            assert str(down.last_error) == "the stream broke" and down.last_error_at == 7.0
            await trio.sleep(1)
            link.restored()
            up = session.statistics()
            assert (up.link_state, up.reconnects, up.last_error_at) == ("up", 1, 7.0)


async def test_a_broken_session_reports_why() -> None:
    server = make_server()
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server) as session:
            await session.transport.aclose()
            with pytest.raises(ConnectionClosed):
                await session.ping()
            assert isinstance(session.statistics().last_error, ConnectionClosed)


# -- the HTTP pool ------------------------------------------------------------------------


async def test_pool_counts_connections_opened_idle_and_closed() -> None:
    async with serving(keep_alive) as server:
        pool = H11Transport(ssl_context=PLAIN)
        assert pool.statistics() == PoolStatistics(0, 0, 0, 0, proxied=False)
        async with client_for(pool) as client:
            for _ in range(3):
                await client.post(server.url, content=b"{}")
            assert pool.statistics() == PoolStatistics(1, 1, 1, 0, proxied=False)
            async with trio.open_nursery() as burst:  # two at once: a second connection
                for _ in range(2):
                    burst.start_soon(partial(client.post, server.url, content=b"{}"))
            assert pool.statistics() == PoolStatistics(2, 2, 2, 0, proxied=False)
        await pool.aclose()
        assert pool.statistics() == PoolStatistics(0, 0, 2, 2, proxied=False)


def test_the_pool_knows_when_a_proxy_takes_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        client, _, direct = make_client(HTTPOptions("http://x/mcp"))
        assert isinstance(client._transport, H11Transport)  # pyright: ignore[reportPrivateUsage]
        assert direct is not None and not direct.statistics().proxied
        await client.aclose()
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        client, _, direct = make_client(HTTPOptions("http://x/mcp"))
        pool = client._transport  # pyright: ignore[reportPrivateUsage]
        assert direct is None and isinstance(pool, H11Transport) and pool.statistics().proxied
        await client.aclose()

    trio.run(main)


async def test_an_http_session_shows_its_pool() -> None:
    server = make_server()
    async with trio.open_nursery() as nursery:
        async with server.open_http(nursery) as http:
            # A client of the caller's: no pool of trio_mcp's to show.
            async with trio_mcp.open_mcp_session(
                nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
            ) as session:
                stats = session.statistics()
                assert stats.http_pool is None
                assert stats.bytes_received > 0 and stats.requests_answered >= 1


# -- a group ---------------------------------------------------------------------------


async def test_group_statistics_show_each_member(autojump_clock: trio.testing.MockClock) -> None:
    async with open_server_group({"a": make_server(), "b": make_server()}) as group:
        await group.call_tool("a_echo", {"text": "hi"})
        stats = group.statistics()
        assert isinstance(stats, GroupStatistics)
        assert {name: s.state for name, s in stats.servers.items()} == {
            "a": ServerState.RUNNING,
            "b": ServerState.RUNNING,
        }
        assert stats.restarts == 0
        assert set(stats.sessions) == {"a", "b"}
        assert stats.sessions["a"].requests_sent > stats.sessions["b"].requests_sent
