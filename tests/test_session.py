"""The session engine against a byte-exact scripted peer over the memory transport."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp._transports._memory import memory_transport_pair

from .rawpeer import RawPeer, connect, hang


async def echo(peer: RawPeer, message: dict[str, Any]) -> Any:
    text = message["params"]["arguments"]["text"]
    return {"content": [{"type": "text", "text": text}]}


async def test_legacy_handshake_after_failed_probe() -> None:
    async with connect() as (session, peer):
        assert session.era == "legacy"
        assert session.protocol_version == "2025-11-25"
        assert session.server_info is not None and session.server_info.name == "raw"
        await trio.testing.wait_all_tasks_blocked()
        methods = [m.get("method") for m in peer.received]
        assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
        init = peer.sent("initialize")[0]["params"]
        assert init["protocolVersion"] == "2025-11-25"
        assert init["clientInfo"] == {"name": "trio-mcp", "version": trio_mcp.__version__}


async def test_call_tool_returns_typed_result() -> None:
    async with connect(tools__call=echo) as (session, _peer):
        result = await session.call_tool("echo", {"text": "hi"})
        assert isinstance(result, trio_mcp.CallToolResult)
        assert result.content[0].text == "hi"  # type: ignore[union-attr]


async def test_timeout_raises_at_exact_time_and_announces_cancel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(tools__call=hang) as (session, peer):
        start = trio.current_time()
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("slow", {}, timeout=2.5)
        assert trio.current_time() - start == 2.5
        await trio.testing.wait_all_tasks_blocked()
        call_id = peer.sent("tools/call")[0]["id"]
        assert peer.cancelled == [call_id]


async def test_caller_fail_after_cancels_and_late_response_is_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()

    async def late(peer: RawPeer, message: dict[str, Any]) -> Any:
        await release.wait()
        return {"content": [{"type": "text", "text": "late"}]}

    async with connect(tools__call=late) as (session, peer):
        with pytest.raises(trio.TooSlowError):
            with trio.fail_after(1):
                await session.call_tool("x", {})
        assert session._rpc.pending_count == 0
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert len(peer.cancelled) == 1
        # the session still works after the dropped late response
        assert (await session.request("ping")) == {}


async def test_thousand_concurrent_calls() -> None:
    async with connect(tools__call=echo) as (session, _peer):
        results: dict[int, str] = {}

        async def one(i: int) -> None:
            result = await session.call_tool("echo", {"text": str(i)})
            results[i] = result.content[0].text  # type: ignore[union-attr]

        async with trio.open_nursery() as nursery:
            for i in range(1000):
                nursery.start_soon(one, i)
        assert results == {i: str(i) for i in range(1000)}


async def test_crash_fails_every_waiter_at_once() -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server, tools__call=hang)
    errors: list[BaseException] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client) as session:

            async def waiter() -> None:
                try:
                    await session.call_tool("x", {})
                except trio_mcp.ConnectionClosed as exc:
                    errors.append(exc)

            async with trio.open_nursery() as inner:
                for _ in range(5):
                    inner.start_soon(waiter)
                await trio.testing.wait_all_tasks_blocked()
                await server.aclose()  # the server goes away
            assert len(errors) == 5
            with pytest.raises(trio_mcp.ConnectionClosed):
                await session.call_tool("x", {})
        nursery.cancel_scope.cancel()


async def test_server_error_maps_to_server_error() -> None:
    async def boom(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32000, "kaput", {"why": "test"})
        from .rawpeer import no_answer

        no_answer()

    async with connect(tools__call=boom) as (session, _peer):
        with pytest.raises(trio_mcp.ServerError) as info:
            await session.call_tool("x", {})
        assert (info.value.code, info.value.message, info.value.data) == (
            -32000,
            "kaput",
            {"why": "test"},
        )


async def test_garbage_from_server_is_dropped_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def garbage(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.stream.send(b"\xff\xfe not json")
        return {"content": [{"type": "text", "text": "after garbage"}]}

    async with connect(tools__call=garbage) as (session, _peer):
        result = await session.call_tool("x", {})
        assert result.content[0].text == "after garbage"  # type: ignore[union-attr]
        assert session.failure is None
    assert "dropping an invalid message" in caplog.text


async def test_malformed_answer_fails_only_its_request() -> None:
    async def malformed(peer: RawPeer, message: dict[str, Any]) -> Any:
        # an answer with neither result nor error: only this caller fails
        await peer.send({"jsonrpc": "2.0", "id": message["id"]})
        from .rawpeer import no_answer

        no_answer()

    async with connect(tools__call=malformed) as (session, _peer):
        with pytest.raises(trio_mcp.ProtocolError, match="could not be decoded"):
            await session.call_tool("x", {})
        assert (await session.request("ping")) == {}


async def test_closed_session_raises_closed_resource_error() -> None:
    async with connect() as (session, _peer):
        pass
    with pytest.raises(trio.ClosedResourceError):
        await session.call_tool("x", {})


async def test_progress_callback_and_reset(autojump_clock: trio.testing.MockClock) -> None:
    async def slow_with_progress(peer: RawPeer, message: dict[str, Any]) -> Any:
        token = message["params"]["_meta"]["progressToken"]
        for i in range(3):
            await trio.sleep(0.8)
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": i + 1, "total": 3},
                }
            )
        return {"content": []}

    seen: list[float] = []
    async with connect(
        tools__call=slow_with_progress,
        options={"default_timeout": 1.0, "progress_resets_timeout": True, "max_timeout": 10.0},
    ) as (session, _peer):
        result = await session.call_tool("x", {}, on_progress=lambda p: seen.append(p.progress))
        assert result.content == []
        assert seen == [1, 2, 3]


async def test_progress_reset_respects_hard_maximum(autojump_clock: trio.testing.MockClock) -> None:
    async def chatty(peer: RawPeer, message: dict[str, Any]) -> Any:
        token = message["params"]["_meta"]["progressToken"]
        while True:
            await trio.sleep(0.5)
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1},
                }
            )

    async with connect(
        tools__call=chatty,
        options={"default_timeout": 1.0, "progress_resets_timeout": True, "max_timeout": 3.0},
    ) as (session, _peer):
        start = trio.current_time()
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("x", {})
        assert trio.current_time() - start == 3.0


@pytest.mark.parametrize("eras", ["legacy", "modern"])
async def test_progress_without_max_timeout_still_has_a_limit(
    eras: str, autojump_clock: trio.testing.MockClock
) -> None:
    # A server that reports progress forever held the call forever (issue 37): without
    # max_timeout, progress may extend a call to ten times its timeout, no further.
    from trio_mcp.testing import MockServer, ToolContext

    server = MockServer(eras=eras)  # type: ignore[arg-type]

    @server.tool(description="Reports progress and never ends")
    async def forever(ctx: ToolContext) -> str:
        while True:
            await trio.sleep(0.5)
            await ctx.progress(1)

    @server.tool(description="Reports progress, ends in 8 s")
    async def long(ctx: ToolContext) -> str:
        for step in range(16):
            await trio.sleep(0.5)
            await ctx.progress(step)
        return "done"

    options = {"default_timeout": 1.0, "progress_resets_timeout": True}
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server, **options) as session:
            start = trio.current_time()
            assert (await session.call_tool("long", {})).text == "done"  # 8 s > timeout
            assert trio.current_time() - start == 8.0
            start = trio.current_time()
            with trio.fail_after(100), pytest.raises(trio.TooSlowError):
                await session.call_tool("forever", {})
            assert trio.current_time() - start == 10.0
            # max_timeout=math.inf is the explicit way to let progress extend a call forever
            explicit = {**options, "max_timeout": math.inf}
        async with trio_mcp.open_mcp_session(nursery, server, **explicit) as session:
            start = trio.current_time()
            with trio.move_on_after(60) as outer:
                await session.call_tool("forever", {})
            assert outer.cancelled_caught and trio.current_time() - start == 60.0


async def test_server_to_client_requests_use_handlers() -> None:
    answers: list[Any] = []

    async def ask(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.send({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
        await peer.send({"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage",
                         "params": {"messages": [], "maxTokens": 5}})  # fmt: skip
        while len([m for m in peer.received if m.get("id") in ("s1", "s2")]) < 2:
            await peer.got_message.wait()
        answers.extend(m for m in peer.received if m.get("id") in ("s1", "s2"))
        return {"content": []}

    async def roots_handler(ctx: trio_mcp.RequestContext) -> list[str]:
        return ["file:///a"]

    async with connect(tools__call=ask, options={"roots": roots_handler}) as (session, peer):
        await session.call_tool("x", {})
        caps = peer.sent("initialize")[0]["params"]["capabilities"]
        assert "roots" in caps and "sampling" not in caps
    by_id = {m["id"]: m for m in answers}
    assert by_id["s1"]["result"] == {"roots": [{"uri": "file:///a"}]}
    assert by_id["s2"]["error"]["code"] == -32601


async def test_handler_cancelled_by_server(autojump_clock: trio.testing.MockClock) -> None:
    cancelled = trio.Event()

    async def slow_sampling(params: Any, ctx: trio_mcp.RequestContext) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    async def ask(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.send({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage",
                         "params": {"messages": [], "maxTokens": 5}})  # fmt: skip
        await trio.sleep(1)
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        )
        await cancelled.wait()
        return {"content": []}

    async with connect(tools__call=ask, options={"sampling": slow_sampling}) as (session, peer):
        await session.call_tool("x", {})
        await trio.testing.wait_all_tasks_blocked()
        assert not [m for m in peer.received if m.get("id") == 7]


async def test_notifications_channel_and_callbacks() -> None:
    async def notify(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "data": "hello"}})  # fmt: skip
        return {"content": []}

    seen: list[str] = []
    async with connect(tools__call=notify) as (session, _peer):
        session.add_notification_handler("*", lambda n: seen.append(n.method))
        async with session.notifications("notifications/tools/list_changed") as rx:
            await session.call_tool("x", {})
            note = rx.receive_nowait()
            assert note.method == "notifications/tools/list_changed"
            with pytest.raises(trio.WouldBlock):
                rx.receive_nowait()
    assert seen == ["notifications/tools/list_changed", "notifications/message"]


async def test_pagination_follows_cursors_and_guards_loops() -> None:
    async def pages(peer: RawPeer, message: dict[str, Any]) -> Any:
        cursor = (message.get("params") or {}).get("cursor")
        tool = {"name": f"t{cursor or 0}", "inputSchema": {"type": "object"}}
        nxt = {None: "1", "1": "2"}.get(cursor)
        return {"tools": [tool], **({"nextCursor": nxt} if nxt else {})}

    async with connect(tools__list=pages) as (session, _peer):
        tools = await session.list_tools()
        assert [tool.name for tool in tools] == ["t0", "t1", "t2"]

    async def loop(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"tools": [], "nextCursor": "same"}

    async with connect(tools__list=loop) as (session, _peer):
        with pytest.raises(trio_mcp.ProtocolError, match="repeated cursor"):
            await session.list_tools()


async def test_counter_offer_of_unknown_version_fails_clearly() -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server)
    peer.init_result = {**peer.init_result, "protocolVersion": "1999-01-01"}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        with pytest.raises(trio_mcp.ProtocolError, match="1999-01-01"):
            async with trio_mcp.open_mcp_session(nursery, client):
                pass  # pragma: no cover
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
async def test_counter_offer_of_older_legacy_version_is_accepted(version: str) -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server)
    peer.init_result = {**peer.init_result, "protocolVersion": version}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client) as session:
            assert session.protocol_version == version
        nursery.cancel_scope.cancel()


async def test_an_open_session_holds_no_instance_dicts() -> None:
    """Issue 27: the per-session objects are slotted (a mixin base of ClientSession must
    declare ``__slots__ = ()``), and what most sessions never use is made on first use."""
    async with connect(tools__call=echo) as (session, _peer):
        await session.call_tool("echo", {"text": "hi"})
        for part in (session, session._rpc, session._notes, session._tools):
            assert not hasattr(part, "__dict__"), type(part).__name__
        assert session._rpc._drop_logs is None
        assert session._notes._elicitation_waiters is None
        assert session._notes._elicitations_done is None


def test_the_version_is_written_once_and_the_build_reads_it() -> None:
    # trio_mcp.__version__ (what clientInfo sends) is the version the wheel is built with:
    # pyproject.toml takes it from trio_mcp/_version.py, not a second copy
    import re
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    root = Path(trio_mcp.__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "trio_mcp/_version.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+([a-z]+\d+)?", trio_mcp.__version__)
