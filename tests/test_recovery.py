"""Session recovery over Streamable HTTP when the server restarts (issue 33), on virtual time.

A :class:`MockServer` served over HTTP is stopped and restarted with its sessions forgotten;
the client renews its legacy session (after ``404`` or the TypeScript SDK's ``400``), sets
up again what the application set up, re-lists what may have changed, and re-opens its
GET stream once the server is back.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp._recovery import MAX_PASSES, Recovery
from trio_mcp._transports._link import LinkState
from trio_mcp.testing import MockHTTPServer, MockServer, ToolContext

TS_SDK_BODY = {
    "jsonrpc": "2.0",
    "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
    "id": None,
}


def make_server() -> MockServer:
    server = MockServer(eras="legacy")

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    server.add_resource("mem://note", text="one")
    return server


@asynccontextmanager
async def opened(
    server: MockServer, nursery: trio.Nursery
) -> AsyncIterator[tuple[MockHTTPServer, trio_mcp.ClientSession]]:
    async with server.open_http(nursery) as http:
        params = trio_mcp.StreamableHTTPParameters(http.url, client=http.client)
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            yield http, session


def state_of(session: trio_mcp.ClientSession) -> LinkState:
    return session.transport.link.state


def methods(server: MockServer) -> list[str]:
    return [m["method"] for m in server.received if "method" in m]


@pytest.mark.parametrize("status", [404, 400])
async def test_restart_renews_the_session_and_replays(
    status: int, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, opened(server, nursery) as (http, session):
        first = session.transport.session_id  # type: ignore[attr-defined]
        http.stop()
        with pytest.raises(trio_mcp.TransportError):
            await session.call_tool("echo", {"text": "down"})
        http.restart(unknown_session=status)  # type: ignore[arg-type]
        start = trio.current_time()
        result = await session.call_tool("echo", {"text": "back"})
        assert result.content[0].text == "back"  # type: ignore[union-attr]
        assert trio.current_time() == start  # no waiting: renewed and replayed at once
        assert session.transport.session_id != first  # type: ignore[attr-defined]
        link = session.transport.link
        assert link.state is LinkState.UP
        assert link.reconnects >= 1
        assert link.last_failure is not None
        nursery.cancel_scope.cancel()
    assert methods(server).count("initialize") == 2


async def test_a_400_for_another_reason_is_not_a_lost_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    import httpx

    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        seen: list[str] = []

        async def handler(request: httpx.Request) -> httpx.Response:
            body = await request.aread()
            if b'"tools/call"' in body:
                seen.append("tools/call")
                return httpx.Response(400, json={"error": "Bad Request: invalid params"})
            return await http.handle(request)

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        params = trio_mcp.StreamableHTTPParameters(http.url, client=client)
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            with pytest.raises(trio_mcp.HTTPStatusError) as info:
                await session.call_tool("echo", {"text": "x"})
            assert info.value.status_code == 400
        await client.aclose()
        nursery.cancel_scope.cancel()
    assert seen == ["tools/call"]
    assert methods(server).count("initialize") == 1


async def test_refusal_right_after_renewal_is_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    import httpx

    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        calls = 0

        async def handler(request: httpx.Request) -> httpx.Response:
            nonlocal calls
            body = await request.aread()
            if b'"tools/call"' in body:
                calls += 1
                return httpx.Response(
                    400,
                    json={
                        "error": {"code": -32000, "message": "Bad Request: Server not initialized"}
                    },
                )
            return await http.handle(request)

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        params = trio_mcp.StreamableHTTPParameters(http.url, client=client)
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            start = trio.current_time()
            with pytest.raises(trio_mcp.TransportError, match="refused the new MCP session"):
                await session.call_tool("echo", {"text": "x"})
            assert trio.current_time() == start
        await client.aclose()
        nursery.cancel_scope.cancel()
    assert calls == 2  # the call and one replay, never a loop
    assert methods(server).count("initialize") == 2


async def test_concurrent_requests_share_one_renewal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, opened(server, nursery) as (http, session):
        http.restart(unknown_session=400)
        texts: list[str] = []

        async def call(i: int) -> None:
            result = await session.call_tool("echo", {"text": str(i)})
            texts.append(result.content[0].text)  # type: ignore[union-attr]

        async with trio.open_nursery() as callers:
            for i in range(10):
                callers.start_soon(call, i)
        assert sorted(texts) == [str(i) for i in range(10)]
        nursery.cancel_scope.cancel()
    assert methods(server).count("initialize") == 2
    assert methods(server).count("notifications/initialized") == 2


async def test_subscriptions_and_log_level_are_set_up_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, opened(server, nursery) as (http, session):
        updated: list[str] = []
        session.on_resource_updated(lambda params: updated.append(params.uri))
        await session.set_logging_level("warning")
        await session.subscribe_resource("mem://note")
        await session.subscribe_resource("mem://gone")
        await session.unsubscribe_resource("mem://gone")
        http.restart(unknown_session=400)
        await session.ping()  # finds the session lost and renews it
        await server.wait_for_message("resources/subscribe", count=3)
        await trio.sleep(1)  # the GET stream of the new session
        await server.notify_resource_updated("mem://note")
        await trio.sleep(1)
        assert updated == ["mem://note"]
        nursery.cancel_scope.cancel()
    received = methods(server)
    renewal = received.index("initialize", 1)
    after = received[renewal:]
    assert after.count("logging/setLevel") == 1
    assert [
        m["params"]["uri"]
        for m in server.received[len(received) - len(after) :]
        if m.get("method") == "resources/subscribe"
    ] == ["mem://note"]
    levels = [
        m["params"]["level"] for m in server.received if m.get("method") == "logging/setLevel"
    ]
    assert levels == ["warning", "warning"]


async def test_catalogue_relists_and_list_changed_handlers_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, opened(server, nursery) as (http, session):
        kinds: list[str] = []
        session.on_list_changed(kinds.append)
        async with session.catalogue() as catalogue:
            assert [tool.name for tool in catalogue.tools] == ["echo"]
            http.stop()

            @server.tool
            async def added(ctx: ToolContext) -> str:  # the new version has a new tool
                return "new"

            http.restart()
            await session.ping()
            with trio.fail_after(5):
                await catalogue.wait_updated()
            assert sorted(tool.name for tool in catalogue.tools) == ["added", "echo"]
        assert sorted(kinds) == ["prompts", "resources", "tools"]
        nursery.cancel_scope.cancel()


async def test_get_stream_reopens_after_an_outage(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    import httpx

    server = make_server()
    caplog.set_level(logging.DEBUG, logger="trio_mcp")
    gets: list[float] = []
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:

        async def handler(request: httpx.Request) -> httpx.Response:
            if request.method == "GET":
                gets.append(trio.current_time())
            return await http.handle(request)

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        backoff = trio_mcp.Backoff(initial=1.0, multiplier=2.0, maximum=30.0, jitter=0)
        params = trio_mcp.StreamableHTTPParameters(
            http.url, client=client, retry=trio_mcp.RetryPolicy(max_attempts=1, backoff=backoff)
        )
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            await session.subscribe_resource("mem://note")
            updated: list[str] = []
            session.on_resource_updated(lambda params: updated.append(params.uri))
            gaps: list[str] = []
            session.on_list_changed(gaps.append, "tools")
            http.stop()
            down = trio.current_time()
            del gets[:]
            await trio.sleep(30)  # the GET stream keeps trying: 1, 2, 4, then every 5 s
            assert [t - down for t in gets] == [1.0, 3.0, 7.0, 12.0, 17.0, 22.0, 27.0]
            assert state_of(session) is LinkState.RECONNECTING
            assert not gaps
            http.restart(unknown_session=400)  # the old session id is unknown now
            await trio.sleep(3)  # the next attempt (at 32 s) renews the session
            assert [t - down for t in gets][-2:] == [32.0, 32.0]
            assert state_of(session) is LinkState.UP
            assert gaps == ["tools"]  # the lists may have changed: re-listed
            await server.wait_for_message("resources/subscribe", count=2)
            await server.notify_resource_updated("mem://note")
            await trio.sleep(0.1)
            assert updated == ["mem://note"]  # notifications flow again
        await client.aclose()
        nursery.cancel_scope.cancel()
    messages = [(r.levelname, r.getMessage()) for r in caplog.records]
    broke = [m for level, m in messages if "re-opening it in" in m and level == "INFO"]
    assert len(broke) == 1
    assert "re-opening it in 1.0 s" in broke[0]
    outage = [m for level, m in messages if "cannot be re-opened" in m and level == "WARNING"]
    assert len(outage) == 1  # once per outage, not per attempt
    assert "trying again in 2.0 s" in outage[0]
    assert not any("trio time" in m for _, m in messages)
    back = [r.getMessage() for r in caplog.records if "open again after" in r.getMessage()]
    assert len(back) == 1
    assert "after 32.0 s" in back[0]


async def test_calls_fail_fast_while_the_server_is_down(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, opened(server, nursery) as (http, session):
        http.stop()
        for _ in range(3):
            start = trio.current_time()
            with pytest.raises(trio_mcp.TransportError):
                await session.call_tool("echo", {"text": "x"}, timeout=5)
            assert trio.current_time() == start
        assert state_of(session) is LinkState.RECONNECTING
        http.restart()
        result = await session.call_tool("echo", {"text": "y"}, timeout=5)
        assert result.content[0].text == "y"  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


async def test_recovery_coalesces_and_is_bounded() -> None:
    spawned: list[Any] = []
    recovery = Recovery()

    def spawn(fn: Any, *args: Any, name: str) -> bool:
        spawned.append((fn, args))
        return True

    runs = 0

    async def work() -> None:
        nonlocal runs
        runs += 1
        recovery.start(spawn, work)  # a renewal while the work runs: one more pass
        await trio.lowlevel.checkpoint()

    recovery.start(spawn, work)
    recovery.start(spawn, work)  # coalesced: still one task
    assert len(spawned) == 1
    fn, args = spawned[0]
    await fn(*args)
    assert runs == MAX_PASSES  # bounded, even when every pass brings another renewal
    assert not recovery.running


def make_modern_server() -> MockServer:
    server = MockServer(eras="modern")

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    server.add_resource("mem://note", text="one")
    return server


async def test_modern_listen_reopens_and_rediscovers_after_a_restart(
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from trio_mcp import _subscriptions

    monkeypatch.setattr(
        _subscriptions, "LISTEN_BACKOFF", trio_mcp.Backoff(initial=1.0, maximum=30.0, jitter=0)
    )
    caplog.set_level(logging.INFO, logger="trio_mcp")
    server = make_modern_server()
    async with trio.open_nursery() as nursery, opened(server, nursery) as (http, session):
        assert session.era == "modern"
        updated: list[str] = []
        async with (
            session.catalogue() as catalogue,
            session.listen(resource_uris=["mem://note"]) as channel,
        ):
            assert [tool.name for tool in catalogue.tools] == ["echo"]
            http.stop()
            down = trio.current_time()
            await trio.sleep(20)  # the listen streams keep trying: 1, 3, 7, 12, 17 s
            listens = [
                m
                for m, h in http.requests
                if m == "POST" and h.get("mcp-method") == "subscriptions/listen"
            ]
            assert len(listens) == 2 + 2 * 5

            @server.tool
            async def added(ctx: ToolContext) -> str:  # the new version has a new tool
                return "new"

            http.restart()
            with trio.fail_after(6):
                await catalogue.wait_updated()
            back = trio.current_time() - down
            assert back == 22.1  # re-opened at 22 s, re-listed after the 0.1 s debounce
            assert sorted(tool.name for tool in catalogue.tools) == ["added", "echo"]
            await server.notify_resource_updated("mem://note")
            with trio.fail_after(1):
                note = await channel.receive()
            while note.method != "notifications/resources/updated":
                note = await channel.receive()
            updated.append(note.params["uri"])
        assert updated == ["mem://note"]
        nursery.cancel_scope.cancel()
    discovers = [m for m in server.received if m.get("method") == "server/discover"]
    assert len(discovers) >= 2  # discovered again after the gap
    broke = [r.getMessage() for r in caplog.records if "listen stream broke" in r.getMessage()]
    assert len(broke) == 2  # once per stream and outage, not per attempt


async def test_get_stream_refused_in_a_new_session_is_not_a_loop(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    import httpx

    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        gets = 0

        async def handler(request: httpx.Request) -> httpx.Response:
            nonlocal gets
            if request.method == "GET":
                gets += 1  # this server never knows the session on GET
                return httpx.Response(400, json=TS_SDK_BODY)
            return await http.handle(request)

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        params = trio_mcp.StreamableHTTPParameters(http.url, client=client)
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            await trio.sleep(60)
            result = await session.call_tool("echo", {"text": "still"})
            assert result.content[0].text == "still"  # type: ignore[union-attr]
        await client.aclose()
        nursery.cancel_scope.cancel()
    assert gets == 2  # the first GET renewed the session; its refusal there ended it
    assert methods(server).count("initialize") == 2
    assert any("refused the GET stream" in r.getMessage() for r in caplog.records)


async def test_link_is_closed_with_the_transport() -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, opened(server, nursery) as (_http, session):
        assert state_of(session) is LinkState.UP
        nursery.cancel_scope.cancel()
    assert state_of(session) is LinkState.CLOSED


async def test_mock_restart_checks_its_option() -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        with pytest.raises(ValueError, match="404 or 400"):
            http.restart(unknown_session=500)  # type: ignore[arg-type]
        assert http.unknown_session == 404
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("status", [404, 400])
async def test_restart_storm_on_virtual_time(
    status: int, autojump_clock: trio.testing.MockClock
) -> None:
    """10 tasks call continuously while the server dies and comes back every few seconds."""
    server = make_server()
    late: list[float] = []
    outcomes: dict[str, int] = {}
    async with trio.open_nursery() as nursery, opened(server, nursery) as (http, session):
        await session.subscribe_resource("mem://note")
        tasks_before = len(nursery.child_tasks)
        done = False

        async def caller() -> None:
            while not done:
                start = trio.current_time()
                try:
                    await session.call_tool("echo", {"text": "x"}, timeout=1)
                    kind = "ok"
                except trio_mcp.ConnectionClosed:
                    kind = "closed"
                except trio_mcp.TransportError:
                    kind = "transport"
                except trio.TooSlowError:
                    kind = "slow"
                took = trio.current_time() - start
                if took > 1:
                    late.append(took)
                outcomes[kind] = outcomes.get(kind, 0) + 1
                await trio.sleep(0.25 if kind == "ok" else 0.1)

        async with trio.open_nursery() as callers:
            for _ in range(10):
                callers.start_soon(caller)
            for round_ in range(5):
                await trio.sleep(2.5)
                http.stop()
                await trio.sleep(1.5 + round_ % 3)
                http.restart(unknown_session=status)  # type: ignore[arg-type]
            await trio.sleep(3)
            done = True
        # the server is back: a call and the subscription's updates work
        start = trio.current_time()
        result = await session.call_tool("echo", {"text": "end"}, timeout=1)
        assert result.content[0].text == "end"  # type: ignore[union-attr]
        assert trio.current_time() == start
        updated: list[str] = []
        session.on_resource_updated(lambda params: updated.append(params.uri))
        await trio.sleep(6)  # the GET stream is back within its capped backoff
        await server.notify_resource_updated("mem://note")
        await trio.sleep(0.1)
        assert updated == ["mem://note"]
        assert len(nursery.child_tasks) <= tasks_before  # nothing piled up
        nursery.cancel_scope.cancel()
    assert late == []  # no call waited past its deadline
    assert outcomes["ok"] > 300
    assert set(outcomes) <= {"ok", "closed", "transport", "slow"}
    assert outcomes.get("slow", 0) == 0  # down means failing fast, not timing out


async def test_get_stream_reopens_at_once_when_a_call_gets_through(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        backoff = trio_mcp.Backoff(initial=1.0, multiplier=2.0, maximum=30.0, jitter=0)
        params = trio_mcp.StreamableHTTPParameters(
            http.url,
            client=http.client,
            retry=trio_mcp.RetryPolicy(max_attempts=1, backoff=backoff),
        )
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            http.stop()
            await trio.sleep(10.5)  # attempts at 1, 3, 7 s; the next one is due at 12 s
            http.restart()
            gets_before = sum(1 for m, _ in http.requests if m == "GET")
            await session.call_tool("echo", {"text": "x"})  # renews the session: link UP
            await trio.sleep(0.5)
            gets = [h for m, h in http.requests if m == "GET"][gets_before:]
            assert gets  # re-opened at once, not at the next scheduled attempt
            assert gets[-1]["mcp-session-id"] == session.transport.session_id  # type: ignore[attr-defined]
            assert state_of(session) is LinkState.UP
        nursery.cancel_scope.cancel()


async def test_a_server_failing_only_its_get_stream_is_not_polled_per_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    import httpx

    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        gets = 0

        async def handler(request: httpx.Request) -> httpx.Response:
            nonlocal gets
            if request.method == "GET":
                gets += 1
                return httpx.Response(503)
            return await http.handle(request)

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        params = trio_mcp.StreamableHTTPParameters(http.url, client=client)
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            for _ in range(300):  # a call every 0.1 s for 30 s
                await session.call_tool("echo", {"text": "x"})
                await trio.sleep(0.1)
        await client.aclose()
        nursery.cancel_scope.cancel()
    assert gets <= 12  # the backoff schedule (one early re-open), not one per call


async def test_get_stream_and_calls_racing_share_one_renewal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
        backoff = trio_mcp.Backoff(initial=1.0, multiplier=2.0, maximum=30.0, jitter=0)
        params = trio_mcp.StreamableHTTPParameters(
            http.url,
            client=http.client,
            retry=trio_mcp.RetryPolicy(max_attempts=1, backoff=backoff),
        )
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            http.stop()
            await trio.sleep(2)
            http.restart(unknown_session=400)
            await trio.sleep(1)  # the GET stream's attempt is due now, with the calls

            async def call(i: int) -> None:
                result = await session.call_tool("echo", {"text": str(i)})
                assert result.content[0].text == str(i)  # type: ignore[union-attr]

            async with trio.open_nursery() as callers:
                for i in range(10):
                    callers.start_soon(call, i)
            await trio.sleep(1)
            assert state_of(session) is LinkState.UP
        nursery.cancel_scope.cancel()
    assert methods(server).count("initialize") == 2
