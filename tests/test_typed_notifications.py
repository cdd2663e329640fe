"""Typed notification callbacks, the live catalogue and the keep-alive ping (MockClock)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.testing import MockServer, ToolContext

from .rawpeer import connect, hang


async def test_typed_callbacks_legacy() -> None:
    logs: list[trio_mcp.types.LoggingMessageNotificationParams] = []
    progress: list[trio_mcp.types.ProgressNotificationParams] = []
    changed: list[str] = []
    updated: list[str] = []
    async with connect() as (session, peer):
        remove_log = session.on_log(logs.append)
        session.on_progress(progress.append)
        session.on_list_changed(changed.append, "tools", "prompts")

        async def on_updated(params: trio_mcp.types.ResourceUpdatedNotificationParams) -> None:
            updated.append(params.uri)

        session.on_resource_updated(on_updated)
        with pytest.raises(ValueError, match="unknown list kind"):
            session.on_list_changed(changed.append, "bogus")  # type: ignore[arg-type]
        async with session.notifications() as channel:
            for method, params in [
                ("notifications/message", {"level": "info", "data": "hi", "logger": "x"}),
                ("notifications/message", {"level": 5}),  # malformed: dropped
                ("notifications/progress", {"progressToken": "t", "progress": 1, "total": 2}),
                ("notifications/tools/list_changed", {}),
                ("notifications/prompts/list_changed", {}),
                ("notifications/resources/list_changed", {}),  # not asked for
                ("notifications/resources/updated", {"uri": "file:///a"}),
            ]:
                await peer.send({"jsonrpc": "2.0", "method": method, "params": params})
            for _ in range(7):
                await channel.receive()
            await trio.testing.wait_all_tasks_blocked()
        assert [(m.level, m.data, m.logger) for m in logs] == [("info", "hi", "x")]
        assert [(p.progress_token, p.progress, p.total) for p in progress] == [("t", 1, 2)]
        assert changed == ["tools", "prompts"]
        assert updated == ["file:///a"]
        remove_log()
        await peer.send({"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "data": "again"}})  # fmt: skip
        async with session.notifications("notifications/message") as channel:
            await peer.send({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": "more"}})  # fmt: skip
            await channel.receive()
        assert len(logs) == 1


def catalogue_server(eras: str) -> MockServer:
    server = MockServer(eras=eras)  # type: ignore[arg-type]

    @server.tool
    async def one(ctx: ToolContext) -> str:
        return "1"

    server.add_prompt("greet", lambda ctx: "hello")  # type: ignore[arg-type]
    return server


@pytest.mark.parametrize("eras", ["legacy", "modern"])
async def test_catalogue_refreshes_debounced(
    eras: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = catalogue_server(eras)
    async with trio_mcp.open_mcp_session(server) as session:
        async with session.catalogue(tools=True, prompts=True, debounce=0.5) as catalogue:
            assert [tool.name for tool in catalogue.tools] == ["one"]
            assert [prompt.name for prompt in catalogue.prompts] == ["greet"]
            assert catalogue.version == 1

            def count(method: str) -> int:
                return len([m for m in server.received if m.get("method") == method])

            tools_before, prompts_before = count("tools/list"), count("prompts/list")

            @server.tool
            async def two(ctx: ToolContext) -> str:
                return "2"

            start = trio.current_time()
            for _ in range(3):  # a burst: one refresh
                await server.notify_tools_changed()
            await catalogue.wait_updated()
            assert trio.current_time() - start == pytest.approx(0.5)
            assert [tool.name for tool in catalogue.tools] == ["one", "two"]
            assert catalogue.version == 2
            assert count("tools/list") == tools_before + 1
            assert count("prompts/list") == prompts_before  # only what changed is listed
            server.remove_tool("one")
            await server.notify_tools_changed()
            await catalogue.wait_updated()
            assert [tool.name for tool in catalogue.tools] == ["two"]
        with pytest.raises(TypeError):
            trio_mcp.Catalogue()
        with pytest.raises(ValueError):
            async with session.catalogue(debounce=-1):
                pass


async def test_keep_alive_threshold(autojump_clock: trio.testing.MockClock) -> None:
    answered = 0

    async def ping(peer: Any, message: dict[str, Any]) -> Any:
        nonlocal answered
        answered += 1
        if answered <= 2:
            return {}
        return await hang(peer, message)

    async with connect(ping=ping) as (session, peer):
        start = trio.current_time()
        with pytest.raises(trio_mcp.ConnectionClosed, match="3 keep-alive pings") as info:
            await session.keep_alive(10, max_failures=3, timeout=2)
        assert isinstance(info.value.__cause__, trio.TooSlowError)
        # two answered pings (10 s apart), then three failures of 10 + 2 s each
        assert trio.current_time() - start == 2 * 10 + 3 * 12
        while len(peer.cancelled) < 3:  # each timed-out ping was cancelled
            await peer.got_message.wait()
        assert trio.current_time() - start == 2 * 10 + 3 * 12
        with pytest.raises(ValueError):
            await session.keep_alive(0)


async def test_keep_alive_counts_refused_pings_then_raises_connection_closed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # a remote server that is down refuses the connection: each refused ping is one
    # failure, as a timed-out one is; only max_failures in a row end the keep-alive
    mock = MockServer(name="down", eras="legacy")
    async with trio.open_nursery() as nursery, mock.open_http(nursery) as http:
        params = trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        async with trio_mcp.open_mcp_session(params) as session:
            await mock.crash()
            start = trio.current_time()
            with pytest.raises(trio_mcp.ConnectionClosed, match="3 keep-alive pings") as info:
                await session.keep_alive(10, max_failures=3)
            assert trio.current_time() - start == 30.0
            assert isinstance(info.value.__cause__, trio_mcp.TransportError)
            # one refused ping between answered ones does not end it
            http.restart()
            with trio.move_on_after(35):
                async with trio.open_nursery() as inner:
                    inner.start_soon(session.keep_alive, 10)
                    await trio.sleep(12)
                    await mock.crash()  # the ping at 20 s is refused
                    await trio.sleep(5)
                    http.restart()  # the one at 30 s is answered
            assert session.failure is None
        nursery.cancel_scope.cancel()


async def test_keep_alive_resets_after_success(autojump_clock: trio.testing.MockClock) -> None:
    pattern = iter([False, True, False, False, True, False, False, False])

    async def ping(peer: Any, message: dict[str, Any]) -> Any:
        if next(pattern):
            return {}
        return await hang(peer, message)

    async with connect(ping=ping) as (session, peer):
        with pytest.raises(trio_mcp.ConnectionClosed):
            await session.keep_alive(1, max_failures=3)  # timeout defaults to interval
        assert trio.current_time() == pytest.approx(8 * 1 + 6 * 1)  # six pings timed out
