"""The session's and the JSON-RPC core's less travelled paths, one behaviour per test.

Negotiation corner cases, options, caching, callbacks and bounds, and the RPC core driven
directly with a scriptable transport.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp._jsonrpc import encode_request
from trio_mcp._rpc import RPCConnection
from trio_mcp._transports._base import MessageInfo, Transport
from trio_mcp._transports._memory import MemoryServerStream, MemoryTransport, memory_transport_pair
from trio_mcp.testing import MockServer, ToolContext

from .rawpeer import RawPeer, connect, hang, no_answer

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

MODERN = "2026-07-28"


async def discover_ok(peer: RawPeer, message: dict[str, Any]) -> Any:
    return {"supportedVersions": [MODERN], "capabilities": {"tools": {}, "resources": {}}}


async def ok(peer: RawPeer, message: dict[str, Any]) -> Any:
    return {}


# -- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "option",
    [
        {"default_timeout": 0},
        {"init_timeout": -1},
        {"probe_timeout": 0},
        {"max_pages": 0},
        {"max_server_requests": 0},
        {"notification_buffer": -1},
    ],
)
def test_bad_option_values_are_value_errors(option: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="open_mcp_session"):
        trio_mcp.open_mcp_session(["x"], **option)


def test_options_on_a_transport_object_are_type_errors() -> None:
    client, _server = memory_transport_pair()
    with (
        pytest.warns(DeprecationWarning, match="the parameters object given as the target"),
        pytest.raises(TypeError, match="set them on the object"),
    ):
        trio_mcp.open_mcp_session(client, headers={"a": "b"})  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="cannot connect"):
        trio_mcp.open_mcp_session(42)  # type: ignore[call-overload]


async def test_call_timeout_must_be_positive() -> None:
    async with connect() as (session, _peer):
        with pytest.raises(ValueError, match="positive"):
            await session.call_tool("x", {}, timeout=0)
        with pytest.raises(ValueError, match="unknown log level"):
            await session.set_logging_level("loud")


# -- negotiation corner cases ----------------------------------------------------------------


@asynccontextmanager
async def opening(**handlers: Any) -> AsyncGenerator[None, None]:
    """Open a session (nursery-less form: start-up errors arrive bare) and close it at once."""
    options = handlers.pop("options", {})
    client, server = memory_transport_pair()
    peer = RawPeer(server, **handlers)
    error: BaseException | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        try:
            async with trio_mcp.open_mcp_session(client, **options):
                yield
        except BaseException as exc:
            error = exc
        finally:
            nursery.cancel_scope.cancel()
    if error is not None:
        raise error


async def test_pinned_modern_probe_that_never_answers_times_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with pytest.raises(trio.TooSlowError, match="server/discover"):
        async with opening(server__discover=hang, options={"protocol": MODERN, "init_timeout": 5}):
            pass  # pragma: no cover
    assert trio.current_time() == 5


async def test_pinned_modern_against_a_legacy_server_raises_its_error() -> None:
    async def not_found(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32601, "no such method")
        no_answer()

    with pytest.raises(trio_mcp.ServerError, match="no such method"):
        async with opening(server__discover=not_found, options={"protocol": MODERN}):
            pass  # pragma: no cover

    async def empty(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {}

    with pytest.raises(trio_mcp.ProtocolError):
        async with opening(server__discover=empty, options={"protocol": MODERN}):
            pass  # pragma: no cover


async def test_a_server_that_keeps_asking_for_the_same_version_fails() -> None:
    async def picky(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32022, "unsupported", {"supported": [MODERN]})
        no_answer()

    with pytest.raises(trio_mcp.ProtocolError, match="every mutually supported"):
        async with opening(server__discover=picky):
            pass  # pragma: no cover


async def test_legacy_initialize_timeout(autojump_clock: trio.testing.MockClock) -> None:
    with pytest.raises(trio.TooSlowError, match="initialize timed out after 7"):
        async with opening(initialize=hang, options={"protocol": "legacy", "init_timeout": 7}):
            pass  # pragma: no cover
    assert trio.current_time() == 7


async def test_malformed_server_info_in_discover_is_ignored() -> None:
    async def odd(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {
            "supportedVersions": [MODERN],
            "capabilities": {},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": 5}},
        }

    async with connect(server__discover=odd) as (session, _peer):
        assert session.era == "modern" and session.server_info is None


class SlowPeer:
    """Reads in order after a delay; answers discover as told, then initialize as told."""

    def __init__(self, stream: MemoryServerStream, discover: Any, initialize: Any) -> None:
        self.stream, self.discover, self.initialize = stream, discover, initialize

    async def run(self) -> None:
        await trio.sleep(5)
        while (data := await _next(self.stream)) is not None:
            message = msgspec.json.decode(data)
            if "id" not in message:
                continue
            answer = self.discover if message["method"] == "server/discover" else None
            if message["method"] == "initialize":
                answer = self.initialize
            if message["method"] == "tools/list":
                answer = {"result": {"tools": []}}
            if answer is not None:
                reply = {"jsonrpc": "2.0", "id": message["id"], **answer}
                await self.stream.send(msgspec.json.encode(reply))


async def _next(stream: MemoryServerStream) -> bytes | None:
    try:
        return await stream.receive()
    except trio.EndOfChannel:
        return None


LEGACY_OK = {
    "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"},
    }
}


@pytest.mark.parametrize(
    "discover",
    [
        {"error": {"code": -32601, "message": "nope"}},
        {"result": {}},
        {"result": {"supportedVersions": ["2099-01-01"], "capabilities": {}}},
    ],
)
async def test_a_slow_legacy_server_that_answers_the_probe_late_is_legacy(
    autojump_clock: trio.testing.MockClock, discover: Any
) -> None:
    client, server = memory_transport_pair()
    peer = SlowPeer(server, discover, LEGACY_OK)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        async with trio_mcp.open_mcp_session(
            nursery, client, era_cache=trio_mcp.EraCache()
        ) as session:
            assert session.era == "legacy"
            assert session.protocol_version == "2025-11-25"
        nursery.cancel_scope.cancel()


async def test_initialize_rejected_without_a_modern_probe_answer_raises(
    autojump_clock: trio.testing.MockClock,
) -> None:
    client, server = memory_transport_pair()
    rejected = {"error": {"code": -32603, "message": "broken server"}}
    peer = SlowPeer(server, {"error": {"code": -32601, "message": "nope"}}, rejected)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        with pytest.raises(trio_mcp.ServerError, match="broken server"):
            async with trio_mcp.open_mcp_session(nursery, client, era_cache=trio_mcp.EraCache()):
                pass  # pragma: no cover
        nursery.cancel_scope.cancel()


class Scripted(MemoryTransport):
    """A memory transport whose sends can fail per method, like an HTTP transport's."""

    def __init__(self, inner: MemoryTransport, key: str | None = None) -> None:
        self.__dict__.update(inner.__dict__)
        self._key = key
        self.fail_once: dict[str, trio_mcp.MCPError] = {}
        self.fallbacks = 0

    @property
    def era_key(self) -> str | None:
        return self._key

    async def fallback(self) -> bool:
        self.fallbacks += 1
        return True

    def queue_nowait(self, data: bytes) -> bool:
        return False  # every message goes through send() below

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        message = msgspec.json.decode(data)
        error = self.fail_once.pop(message.get("method", ""), None)
        if error is not None and "id" in message:
            await trio.lowlevel.checkpoint()
            self._fail_request(message["id"], error)
            return
        await super().send(data, info)


@asynccontextmanager
async def scripted(
    **handlers: Any,
) -> AsyncGenerator[tuple[Scripted, RawPeer, trio.Nursery], None]:
    client, server = memory_transport_pair()
    peer = RawPeer(server, **handlers)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        yield Scripted(client, "key"), peer, nursery
        nursery.cancel_scope.cancel()


async def test_a_probe_whose_stream_ended_means_legacy() -> None:
    async with scripted() as (transport, _peer, nursery):
        transport.fail_once["server/discover"] = trio_mcp.ConnectionClosed("stream ended")
        cache = trio_mcp.EraCache()
        async with trio_mcp.open_mcp_session(nursery, transport, era_cache=cache) as session:
            assert session.era == "legacy"
        assert cache.get("key") == "legacy"


async def test_a_failed_initialize_falls_back_to_the_older_transport() -> None:
    async with scripted() as (transport, _peer, nursery):
        transport.fail_once["initialize"] = trio_mcp.HTTPStatusError(405, "", "http://x")
        async with trio_mcp.open_mcp_session(nursery, transport, protocol="legacy") as session:
            assert session.era == "legacy"
        assert transport.fallbacks == 1


async def test_an_idempotent_request_is_reissued_once_after_its_stream_broke() -> None:
    async def tools(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}

    async with scripted(server__discover=discover_ok, tools__list=tools) as (
        transport,
        peer,
        nursery,
    ):
        async with trio_mcp.open_mcp_session(nursery, transport) as session:
            transport.fail_once["tools/list"] = trio_mcp.ConnectionClosed("stream broke")
            assert [t.name for t in await session.list_tools(cache=False)] == ["t"]
            transport.fail_once["tools/call"] = trio_mcp.ConnectionClosed("stream broke")
            with pytest.raises(trio_mcp.ConnectionClosed):  # not idempotent: no retry
                await session.call_tool("t", {})


class ProbeKiller:
    """A transport factory whose first server dies on the era probe, like old SDK servers."""

    def __init__(self) -> None:
        self.connections = 0

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        self.connections += 1
        client, server = memory_transport_pair()
        first = self.connections == 1

        async def serve() -> None:
            while (data := await _next(server)) is not None:
                message = msgspec.json.decode(data)
                if message.get("method") == "server/discover" and first:
                    await server.aclose()  # the process exits
                    return
                if message.get("method") == "initialize":
                    reply = {"jsonrpc": "2.0", "id": message["id"], **LEGACY_OK}
                    await server.send(msgspec.json.encode(reply))

        nursery.start_soon(serve)
        try:
            yield Scripted(client, "stdio:old-server")
        finally:
            await client.aclose()


async def test_a_server_that_dies_on_the_probe_is_restarted_once_and_remembered() -> None:
    factory = ProbeKiller()
    cache = trio_mcp.EraCache()
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, factory, era_cache=cache) as session:
            assert session.era == "legacy"
        assert factory.connections == 2
        assert cache.get("stdio:old-server") == "legacy"
        async with trio_mcp.open_mcp_session(nursery, factory, era_cache=cache) as session:
            assert session.era == "legacy"
        assert factory.connections == 3  # no probe, so no restart


async def test_a_server_dead_before_the_probe_is_not_restarted() -> None:
    class AlwaysDies(ProbeKiller):
        @asynccontextmanager
        async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
            self.connections += 1
            client, server = memory_transport_pair()
            await server.aclose()
            yield Scripted(client, "stdio:dead")

    factory = AlwaysDies()
    with pytest.raises(trio_mcp.ConnectionClosed):
        async with trio_mcp.open_mcp_session(factory, era_cache=trio_mcp.EraCache()):
            pass  # pragma: no cover
    assert factory.connections == 1  # it never read the probe: no restart


# -- the typed API's less common paths -------------------------------------------------------


async def test_pages_caches_and_result_types(autojump_clock: trio.testing.MockClock) -> None:
    reads = 0

    async def read(peer: RawPeer, message: dict[str, Any]) -> Any:
        nonlocal reads
        reads += 1
        return {"contents": [{"uri": message["params"]["uri"], "text": "x"}], "ttlMs": 1000}

    async def listing(key: str) -> Any:
        async def handler(peer: RawPeer, message: dict[str, Any]) -> Any:
            return {key: []}

        return handler

    async with connect(
        server__discover=discover_ok,
        tools__list=await listing("tools"),
        resources__read=read,
        resources__list=await listing("resources"),
        resources__templates__list=await listing("resourceTemplates"),
        prompts__list=await listing("prompts"),
    ) as (session, _peer):
        await session.read_resource("file:///a")
        await session.read_resource("file:///a")
        assert reads == 1  # the second read came from the cache
        assert (await session.list_resources_page(timeout=5)).resources == []
        assert (await session.list_resource_templates_page()).resource_templates == []
        assert (await session.list_prompts_page()).prompts == []
        await session.unsubscribe_resource("file:///a")  # a no-op in the modern era
        await trio.sleep(2)
        for i in range(1100):  # expired entries are swept before the oldest are dropped
            await session.read_resource(f"file:///{i}")
        assert len(session._cache) <= 1024
        raw = await session.request("tools/list", result_type=trio_mcp.types.ListToolsResult)
        assert isinstance(raw, trio_mcp.types.ListToolsResult)


async def test_too_many_pages_is_a_protocol_error() -> None:
    pages = 0

    async def endless(peer: RawPeer, message: dict[str, Any]) -> Any:
        nonlocal pages
        pages += 1
        return {"tools": [], "nextCursor": f"c{pages}"}

    async with connect(tools__list=endless, options={"max_pages": 3}) as (session, _peer):
        with pytest.raises(trio_mcp.ProtocolError, match="more than 3 pages"):
            await session.list_tools()


async def test_handlers_can_be_added_and_removed() -> None:
    seen: list[str] = []
    async with connect() as (session, peer):

        async def custom(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
            return {"got": params}

        session.set_request_handler("x/custom", custom)
        remove = session.add_notification_handler(
            "notifications/x", lambda n: seen.append(n.method)
        )
        await peer.send({"jsonrpc": "2.0", "id": "c1", "method": "x/custom", "params": {"a": 1}})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/x"})
        await trio.testing.wait_all_tasks_blocked()
        remove()
        remove()  # idempotent
        session.set_request_handler("x/custom", None)
        await peer.send({"jsonrpc": "2.0", "id": "c2", "method": "x/custom"})
        await peer.send({"jsonrpc": "2.0", "method": "notifications/x"})
        await trio.testing.wait_all_tasks_blocked()
        answers = {m["id"]: m for m in peer.received if m.get("id") in ("c1", "c2")}
        assert answers["c1"]["result"] == {"got": {"a": 1}}
        assert answers["c2"]["error"]["code"] == -32601
        assert seen == ["notifications/x"]


async def test_callbacks_that_fail_are_logged_and_bounded(caplog: pytest.LogCaptureFixture) -> None:
    release = trio.Event()

    def sync_bad(note: trio_mcp.Notification) -> None:
        raise RuntimeError("sync callback bug")

    async def async_bad(note: trio_mcp.Notification) -> None:
        raise RuntimeError("async callback bug")

    async def slow(note: trio_mcp.Notification) -> None:
        await release.wait()

    async with connect() as (session, peer):
        session.add_notification_handler("notifications/a", sync_bad)
        session.add_notification_handler("notifications/a", async_bad)
        await peer.send({"jsonrpc": "2.0", "method": "notifications/a"})
        await trio.testing.wait_all_tasks_blocked()
        assert "sync callback bug" in caplog.text and "async callback bug" in caplog.text
        session.add_notification_handler("notifications/b", slow)
        for _ in range(70):
            await peer.send({"jsonrpc": "2.0", "method": "notifications/b"})
        await trio.testing.wait_all_tasks_blocked()
        assert "dropping the async notification callback" in caplog.text
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert session._notes.callback_tasks == 0


async def test_a_full_subscriber_drops_loudly_and_channels_end_with_the_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with connect() as (session, peer):
        async with session.notifications("notifications/a", buffer=1) as notes:
            for _ in range(3):
                await peer.send({"jsonrpc": "2.0", "method": "notifications/a"})
            await trio.testing.wait_all_tasks_blocked()
            assert "subscriber is full; dropped notifications/a" in caplog.text
            await peer.stream.aclose()  # the server goes away: the channel ends
            got = [note async for note in notes]
            assert len(got) == 1
        assert "1 more in the last" in caplog.text and "2 in all" in caplog.text  # on exit


async def test_input_handler_errors_become_input_request_errors() -> None:
    async def needs_input(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {
            "resultType": "input_required",
            "inputRequests": {
                "e": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "m",
                        "requestedSchema": {"type": "object", "properties": {}},
                    },
                }
            },
        }

    async def refuse(params: Any, ctx: trio_mcp.RequestContext) -> Any:
        raise trio_mcp.HandlerError(-32603, "no user here")

    client, server = memory_transport_pair()
    peer = RawPeer(server, server__discover=discover_ok, tools__call=needs_input)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client, elicitation=refuse) as session:
            with pytest.raises(trio_mcp.InputRequestError, match="no user here"):
                await session.call_tool("x", {})
        nursery.cancel_scope.cancel()


# -- listen's less common paths --------------------------------------------------------------


async def test_legacy_listen_with_prompts_and_a_failing_unsubscribe(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, "trio_mcp")

    async def refuse(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32603, "cannot unsubscribe")
        no_answer()

    async with connect(resources__subscribe=ok, resources__unsubscribe=refuse) as (session, peer):
        async with session.listen(prompts=True, resource_uris=["file:///a"]) as changes:
            await peer.send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
            assert (await changes.receive()).method == "notifications/prompts/list_changed"
    assert "unsubscribe file:///a failed" in caplog.text


async def test_modern_listen_without_acknowledgement_listens_anyway(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(server__discover=discover_ok, subscriptions__listen=hang) as (
        session,
        _peer,
    ):
        async with session.listen(prompts=True, tools=True):
            assert trio.current_time() == 10
    assert "no acknowledgement" in caplog.text


# -- the RPC core, driven directly -----------------------------------------------------------


class Pipe(Transport):
    """A transport whose every behaviour a test scripts."""

    needs_info = False

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.incoming_send, self.incoming = trio.open_memory_channel[bytes](100)
        self.send_error: BaseException | None = None
        self.receive_error: BaseException | None = None
        self.closed = False

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        await trio.lowlevel.checkpoint()
        if self.send_error is not None:
            raise self.send_error
        self.sent.append(data)

    async def receive(self) -> bytes:
        if self.receive_error is not None:
            raise self.receive_error
        return await self.incoming.receive()

    async def aclose(self) -> None:
        self.closed = True
        self.incoming_send.close()


def rpc_for(pipe: Pipe, nursery: trio.Nursery, **kwargs: Any) -> RPCConnection:
    async def handle(request_id: Any, method: str, params: Any) -> Any:
        if method == "boom":
            raise RuntimeError("handler bug")
        return {}

    options: dict[str, Any] = {
        "on_notification": lambda method, params: None,
        "handle_request": handle,
        "can_handle": lambda method: True,
        "on_failure": lambda: None,
        "batches_allowed": lambda: True,
    }
    options.update(kwargs)
    return RPCConnection(pipe, nursery, **options)


async def test_rpc_core_paths(caplog: pytest.LogCaptureFixture) -> None:
    pipe = Pipe()
    async with trio.open_nursery() as nursery:
        rpc = rpc_for(pipe, nursery)
        rpc.start()
        # a per-request failure reaches that request; odd ids are logged and dropped
        call = await rpc.start_request("a", None)
        rpc.fail_request(True, trio_mcp.TransportError("x"))  # type: ignore[arg-type]
        rpc.fail_request(999, trio_mcp.TransportError("unknown"))
        rpc.fail_request(call.request_id, trio_mcp.TransportError("only this one"))
        with pytest.raises(trio_mcp.TransportError, match="only this one"):
            call.poll()
        await rpc.cancel(call)  # already done: nothing happens
        # progress faster than it is handled is bounded
        slow = await rpc.start_request("b", None, on_progress=lambda p: None)
        for i in range(100):
            note = {"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": slow.request_id, "progress": i}}  # fmt: skip
            await pipe.incoming_send.send(msgspec.json.encode(note))
        await trio.testing.wait_all_tasks_blocked()
        assert rpc._pending[slow.request_id].statistics().current_buffer_used == 64
        slow.abandon()
        # a handler bug is an internal-error answer, a malformed batch is dropped
        await pipe.incoming_send.send(encode_request("s1", "boom"))
        await pipe.incoming_send.send(b"[1,")
        await trio.testing.wait_all_tasks_blocked()
        assert b"internal error: the client could not handle boom" in pipe.sent[-1]
        assert b"handler bug" not in pipe.sent[-1]  # no internals to the server
        assert (
            "invalid JSON-RPC batch" in caplog.text or "undecodable JSON-RPC batch" in caplog.text
        )
        # a send that fails with a closed resource breaks the connection
        pipe.send_error = trio.BrokenResourceError("gone")
        with pytest.raises(trio_mcp.ConnectionClosed):
            await rpc.notify("n")
        with pytest.raises(trio_mcp.ConnectionClosed):
            await rpc.start_request("c", None)
        await rpc._send_quietly(b"{}")  # not usable: silently skipped
        await rpc.aclose()
        await rpc.aclose()  # idempotent
        assert pipe.closed


async def test_rpc_core_transport_errors_and_guard(caplog: pytest.LogCaptureFixture) -> None:
    pipe = Pipe()
    pipe.receive_error = trio.BrokenResourceError("pipe broke")
    async with trio.open_nursery() as nursery:
        rpc = rpc_for(pipe, nursery)
        rpc.start()
        await trio.testing.wait_all_tasks_blocked()
        assert isinstance(rpc.failure, trio_mcp.ConnectionClosed)
        assert "pipe broke" in str(rpc.failure)

        async def bug() -> None:
            raise RuntimeError("task bug")

        assert rpc.spawn(bug, name="buggy")
        await trio.testing.wait_all_tasks_blocked()
        assert "buggy failed" in caplog.text
        await rpc.aclose()

    pipe2 = Pipe()
    pipe2.send_error = trio_mcp.ConnectionClosed("no stdin")
    async with trio.open_nursery() as nursery:
        rpc2 = rpc_for(pipe2, nursery)
        with pytest.raises(trio_mcp.ConnectionClosed, match="no stdin"):
            await rpc2.start_request("x", None)
        assert rpc2.pending_count == 0
        pipe2.send_error = trio_mcp.TransportError("flaky")
        await rpc2._send_quietly(b"{}", "x")  # logged, not raised
        await rpc2.aclose()


async def test_rpc_core_in_a_closed_nursery_fails_cleanly() -> None:
    pipe = Pipe()
    async with trio.open_nursery() as nursery:
        pass
    rpc = rpc_for(pipe, nursery)
    assert not rpc.spawn(trio.sleep_forever, name="late")
    assert isinstance(rpc.failure, trio_mcp.ConnectionClosed)
    assert "nursery" in str(rpc.failure)


async def test_rpc_core_replies_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    pipe = Pipe()
    gate = trio.Event()

    async def blocked_send(data: bytes, info: MessageInfo | None = None) -> None:
        await gate.wait()

    pipe.send = blocked_send  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        rpc = rpc_for(pipe, nursery)
        rpc.start()
        for i in range(300):
            rpc._on_request(f"p{i}", "ping", msgspec.Raw(b""))
        assert "too many replies are queued" in caplog.text
        gate.set()
        await rpc.aclose()


def _task_names(nursery: trio.Nursery) -> list[str]:
    return sorted(task.name for task in nursery.child_tasks)


async def test_rpc_core_starts_its_reply_writer_with_the_first_reply() -> None:
    pipe = Pipe()
    async with trio.open_nursery() as nursery:
        rpc = rpc_for(pipe, nursery)
        rpc.start()
        await trio.testing.wait_all_tasks_blocked()
        assert _task_names(nursery) == ["trio_mcp reader"]  # no idle writer per session
        await pipe.incoming_send.send(b'{"jsonrpc":"2.0","id":"p1","method":"ping"}')
        await pipe.incoming_send.send(b'{"jsonrpc":"2.0","id":"p2","method":"ping"}')
        await trio.testing.wait_all_tasks_blocked()
        assert _task_names(nursery) == ["trio_mcp reader", "trio_mcp replies"]
        assert pipe.sent == [
            b'{"jsonrpc":"2.0","id":"p1","result":{}}',
            b'{"jsonrpc":"2.0","id":"p2","result":{}}',
        ]
        await rpc.aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert _task_names(nursery) == []


async def test_rpc_core_queues_no_reply_once_it_stopped() -> None:
    pipe = Pipe()
    async with trio.open_nursery() as nursery:
        rpc = rpc_for(pipe, nursery)
        rpc.fail_all(trio_mcp.ConnectionClosed("gone"))
        rpc._on_request("p1", "ping", msgspec.Raw(b""))
        await trio.testing.wait_all_tasks_blocked()
        assert _task_names(nursery) == [] and pipe.sent == []
    # the owner's nursery is gone when the first reply comes: the connection fails cleanly
    rpc = rpc_for(Pipe(), nursery)
    rpc._on_request("p1", "ping", msgspec.Raw(b""))
    assert isinstance(rpc.failure, trio_mcp.ConnectionClosed)
    assert "nursery" in str(rpc.failure)


# -- the era verdicts --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (trio_mcp.HTTPStatusError(401, "", "u"), "fail"),
        (trio_mcp.HTTPStatusError(404, "", "u"), "legacy"),
        (trio_mcp.HTTPStatusError(502, "", "u"), "fail"),
        (trio_mcp.ConnectionClosed("ended"), "legacy"),
        (trio_mcp.ServerError(-32601, "no"), "legacy"),
        (trio_mcp.ServerError(-32021, "caps"), "fail"),
        (
            trio_mcp.UnsupportedProtocolVersionError(-32022, "", {"supported": ["2025-11-25"]}),
            "legacy",
        ),
        (
            trio_mcp.UnsupportedProtocolVersionError(-32022, "", {"supported": ["1999-01-01"]}),
            "fail",
        ),
        (trio_mcp.ProtocolError("not a result"), "legacy"),
        (trio_mcp.TransportError("connect failed"), "fail"),
    ],
)
def test_probe_verdicts(error: BaseException, kind: str) -> None:
    from trio_mcp._eras import classify_probe

    assert classify_probe(None, error).kind.value == kind


def test_era_cache_validates_and_reads_like_a_mapping() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        trio_mcp.EraCache(max_entries=0)
    cache = trio_mcp.EraCache()
    cache["a"] = "modern"
    assert cache["a"] == "modern" and "a" in cache
    cache.forget("a")
    cache.put("b", "legacy")
    cache.clear()
    assert len(cache) == 0


async def test_open_mcp_session_argument_shapes() -> None:
    async with trio.open_nursery() as nursery:
        with pytest.raises(TypeError, match="target is missing"):
            trio_mcp.open_mcp_session(nursery)  # type: ignore[call-overload]


async def test_an_open_transport_that_dies_on_the_probe_is_not_restarted() -> None:
    client, server = memory_transport_pair()

    async def die(peer: RawPeer, message: dict[str, Any]) -> Any:
        await server.aclose()
        no_answer()

    peer = RawPeer(server, server__discover=die)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        with pytest.raises(trio_mcp.ConnectionClosed):
            async with trio_mcp.open_mcp_session(client):
                pass  # pragma: no cover
        nursery.cancel_scope.cancel()


def test_only_error_picks_the_real_exception() -> None:
    from trio_mcp._connect import _only_error

    mine = KeyError("mine")
    other = ValueError("other")
    cancelled = trio.Cancelled._create()  # type: ignore[attr-defined]
    group = BaseExceptionGroup("g", [mine, cancelled])
    assert _only_error(group, mine) is mine
    assert _only_error(BaseExceptionGroup("g", [mine, other]), mine) is None
    assert _only_error(BaseExceptionGroup("g", [other, cancelled]), None) is other
    assert _only_error(BaseExceptionGroup("g", [other, KeyError("x")]), None) is None
    nested = BaseExceptionGroup("g", [BaseExceptionGroup("h", [other])])
    assert _only_error(nested, None) is other


# -- idle response channels ---------------------------------------------------------------


def _echo_server() -> MockServer:
    server = MockServer()

    @server.tool()
    async def echo(ctx: ToolContext, text: str) -> str:
        await trio.lowlevel.checkpoint()
        return text

    return server


async def test_sessions_of_one_run_share_their_idle_response_channels() -> None:
    server = _echo_server()
    async with (
        trio_mcp.open_mcp_session(server) as first,
        trio_mcp.open_mcp_session(server) as second,
    ):
        pool = first._rpc._pool
        assert second._rpc._pool is pool  # one pool per run, not one per session
        async with trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(first.call_tool, "echo", {"text": "x"})
        idle = [id(pair[0]) for pair in pool]
        assert len(idle) >= 50
        async with trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(second.call_tool, "echo", {"text": "y"})
        assert sorted(id(pair[0]) for pair in pool) == sorted(idle)  # reused, none made
        result = await second.call_tool("echo", {"text": "z"})
        assert result.content[0].text == "z"  # type: ignore[union-attr]


def test_each_trio_run_has_its_own_response_channels() -> None:
    pools: list[object] = []

    async def one_run() -> None:
        async with trio_mcp.open_mcp_session(_echo_server()) as session:
            await session.call_tool("echo", {"text": "x"})
            pools.append(session._rpc._pool)

    trio.run(one_run)
    trio.run(one_run)
    assert pools[0] is not pools[1]  # freed with their run, never shared across threads
