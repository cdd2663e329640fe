"""MockServer over Streamable HTTP in-process (httpx.MockTransport), with faults."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.testing import MockServer, ToolContext

ERAS = ["legacy", "modern"]


def make_server(era: str) -> MockServer:
    server = MockServer(eras=era)  # type: ignore[arg-type]

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        await ctx.progress(1, 1)
        return text

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_http_round_trip(era: str) -> None:
    server = make_server(era)
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            result = await session.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]
    methods = [m for m, _ in http.requests]
    assert "POST" in methods
    if era == "legacy":
        assert any("mcp-session-id" in h for _, h in http.requests)
        assert "DELETE" in methods


@pytest.mark.parametrize("era", ERAS)
async def test_http_json_responses(era: str) -> None:
    server = make_server(era)
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        http.json_responses = True
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            result = await session.call_tool("echo", {"text": "json"})
            assert result.content[0].text == "json"  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_http_delay_exact_virtual_time(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_server(era)
    server.faults.delay("tools/call", 30)
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            start = trio.current_time()
            await session.call_tool("echo", {"text": "late"})
            assert trio.current_time() - start == 30


@pytest.mark.parametrize("era", ERAS)
async def test_http_drop_then_error(era: str, autojump_clock: trio.testing.MockClock) -> None:
    server = make_server(era)
    server.faults.drop("tools/call")
    server.faults.error("tools/call", -32000, "boom")
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            start = trio.current_time()
            with pytest.raises(trio.TooSlowError):
                await session.call_tool("echo", {"text": "x"}, timeout=5)
            assert trio.current_time() - start == 5
            with pytest.raises(trio_mcp.ServerError) as info:
                await session.call_tool("echo", {"text": "x"})
            assert info.value.code == -32000


async def test_http_expire_session_reinitializes() -> None:
    server = make_server("legacy")
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            await session.call_tool("echo", {"text": "one"})
            server.faults.expire_session()
            result = await session.call_tool("echo", {"text": "two"})
            assert result.content[0].text == "two"  # type: ignore[union-attr]
    initializes = [m for m in server.received if m.get("method") == "initialize"]
    assert len(initializes) == 2
    assert server.faults.session_expired is False


@pytest.mark.parametrize("era", ERAS)
async def test_http_crash_takes_the_server_down(era: str) -> None:
    server = make_server(era)
    server.faults.crash("tools/call")
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            with pytest.raises(trio_mcp.TransportError):
                await session.call_tool("echo", {"text": "x"})
            assert http.down
            with pytest.raises(trio_mcp.TransportError):
                await session.call_tool("echo", {"text": "x"})
            http.restart()
            assert not http.down


@pytest.mark.parametrize("era", ERAS)
async def test_http_garbage_and_truncated(era: str, autojump_clock: trio.testing.MockClock) -> None:
    server = make_server(era)
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            for inject in (server.faults.garbage, server.faults.truncate):
                inject("tools/call")
                with pytest.raises((trio_mcp.MCPError, trio.TooSlowError)):
                    await session.call_tool("echo", {"text": "x"}, timeout=5)
            result = await session.call_tool("echo", {"text": "ok"})
            assert result.content[0].text == "ok"  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_http_stall_until_release(era: str, autojump_clock: trio.testing.MockClock) -> None:
    server = make_server(era)
    server.faults.stall("tools/call")
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:

            async def release_later() -> None:
                await trio.sleep(7)
                server.faults.release()

            nursery.start_soon(release_later)
            start = trio.current_time()
            await session.call_tool("echo", {"text": "x"})
            assert trio.current_time() - start == 7


async def test_http_get_stream_405_is_fine() -> None:
    server = make_server("legacy")
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        http.get_stream = False
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            await session.call_tool("echo", {"text": "x"})
    assert any(m == "GET" for m, _ in http.requests)


async def test_http_a_restart_right_after_a_crash_stays_up() -> None:
    """The crashed "process" ends its sessions after restart() returned: the new one stays
    up (a crashed session's late end used to take it down again)."""
    server = make_server("legacy")
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        ) as session:
            await session.call_tool("echo", {"text": "x"})
            await server.crash()
            http.restart()  # before the crashed session's server loop has ended
            await trio.testing.wait_all_tasks_blocked()
            assert not http.down
            result = await session.call_tool("echo", {"text": "again"})
            assert result.content[0].text == "again"  # type: ignore[union-attr]
