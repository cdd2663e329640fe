"""The JSON-RPC core (trio_mcp._rpc) and the session on top: the review's findings, one each.

Every test here failed on dcb50c0 (the engine before the hardening), or tests a behaviour
that did not exist there.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp._jsonrpc import decode_envelope, decode_payload, salvage_head, split_batch
from trio_mcp._transports._base import MessageInfo
from trio_mcp._transports._memory import MemoryServerStream, MemoryTransport, memory_transport_pair

from .rawpeer import RawPeer, connect, hang, no_answer

DOCUMENTED = (trio_mcp.MCPError, trio.TooSlowError, trio.ClosedResourceError)
MODERN = "2026-07-28"


async def echo(peer: RawPeer, message: dict[str, Any]) -> Any:
    return {"content": [{"type": "text", "text": str(message["params"]["arguments"])}]}


async def discover_ok(peer: RawPeer, message: dict[str, Any]) -> Any:
    return {
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}},
    }


# -- the decode boundary ---------------------------------------------------------------------

BAD_ENVELOPES = [
    b'{"jsonrpc":"2.0","method":"notifications/\xff"}',
    b'{"jsonrpc":"2.0","id":"\xff","result":{}}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"\xff"}}',
    b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"jsonrpc":"2.0","id":[1],"result":{}}',
    b'{"jsonrpc":"2.0","id":1.5,"result":{}}',
    b'{"jsonrpc":"2.0","id":true,"result":{}}',
    b'{"jsonrpc":"2.0","id":1}',
    b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"y"}}',
    b'{"jsonrpc":"1.0","id":1,"result":{}}',
    b"[]",
    b"not json",
    b"",
]


@pytest.mark.parametrize("data", BAD_ENVELOPES)
def test_decode_envelope_raises_only_protocol_error(data: bytes) -> None:
    with pytest.raises(trio_mcp.ProtocolError):
        decode_envelope(data)


@pytest.mark.parametrize(
    "raw",
    [b'{"content":"\xff"}', b"[" * 5000 + b"]" * 5000, b"[1,2]", b'{"content":[{"type":1}]}'],
)
def test_decode_payload_raises_only_protocol_error(raw: bytes) -> None:
    with pytest.raises(trio_mcp.ProtocolError):
        decode_payload(msgspec.Raw(raw), trio_mcp.CallToolResult, "result")


def test_split_batch_and_salvage() -> None:
    parts = split_batch(b'[{"jsonrpc":"2.0","method":"a"}, {"jsonrpc":"2.0","id":2,"result":1}]')
    assert [decode_envelope(p).method for p in parts][0] == "a"
    with pytest.raises(trio_mcp.ProtocolError):
        split_batch(b"[]")
    with pytest.raises(trio_mcp.ProtocolError):
        split_batch(b"[1," + b"[" * 5000)
    assert salvage_head(b'{"id":7,"result":"\xff"}') == (7, None)
    assert salvage_head(b'{"id":[7]}') == (None, None)
    assert salvage_head(b'{"id":true,"method":"m"}') == (None, "m")
    assert salvage_head(b'{"method":"\xff","id":3}') == (3, "")
    assert salvage_head(b'{"method":5,"id":3,"x":"\xff"}') == (3, "")
    assert salvage_head(b"\xff") == (None, None)


# -- C1: one malformed message never kills the session ---------------------------------------

C1_MESSAGES = [
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}',
    b'{"jsonrpc":"2.0","method":"notifications/\xff"}',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"\xff"}}',
    b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[1]}}',
    b'{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":["x"]}}',
    b'{"jsonrpc":"2.0","id":[1],"result":{}}',
    b'{"jsonrpc":"2.0","id":99,"method":"sampling/createMessage","params":"\xff"}',
    b'[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]',
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
]


@pytest.mark.parametrize("data", C1_MESSAGES)
async def test_one_malformed_message_never_kills_the_session(data: bytes) -> None:
    async def ok(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {}

    async with connect(tools__call=echo, resources__subscribe=ok, resources__unsubscribe=ok) as (
        session,
        peer,
    ):
        async with session.listen(resource_uris=["x"]):
            await peer.stream.send(data)
            await trio.testing.wait_all_tasks_blocked()
            result = await session.call_tool("echo", {"a": 1})
        assert result.content[0].text == "{'a': 1}"  # type: ignore[union-attr]
        assert session.failure is None


async def test_malformed_request_with_usable_id_gets_invalid_request() -> None:
    async with connect() as (session, peer):
        deep = b"[" * 5000 + b"]" * 5000
        await peer.stream.send(b'{"jsonrpc":"2.0","id":5,"method":"roots/list","params":%s}' % deep)
        await trio.testing.wait_all_tasks_blocked()
        answers = [m for m in peer.received if m.get("id") == 5]
        assert answers and answers[0]["error"]["code"] == -32600
        assert (await session.request("ping")) == {}


# -- M2: foreign exceptions never reach callers ----------------------------------------------

BAD_RESULTS: list[Any] = [
    [1, 2],
    "x",
    {"content": [{"type": "text", "text": 1}]},
    {"content": "\udcff"},  # surrogate: msgspec refuses to encode; sent raw below
]


@pytest.mark.parametrize("result", BAD_RESULTS[:3])
async def test_a_malformed_typed_result_is_a_protocol_error(result: Any) -> None:
    async def bad(peer: RawPeer, message: dict[str, Any]) -> Any:
        return result

    async with connect(tools__call=bad) as (session, _peer):
        with pytest.raises(trio_mcp.ProtocolError):
            await session.call_tool("x", {})
        assert (await session.request("ping")) == {}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":%d,"result":{"content":"\xff"}}',
        b'{"jsonrpc":"2.0","id":%d,"result":' + b"[" * 3000 + b"]" * 3000 + b"}",
        b'{"jsonrpc":"2.0","id":%d}',
    ],
)
async def test_undecodable_answers_fail_only_their_request(raw: bytes) -> None:
    async def bad(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.stream.send(raw % message["id"])
        no_answer()

    async with connect(tools__call=bad, x__raw=bad) as (session, _peer):
        with pytest.raises(trio_mcp.ProtocolError):
            await session.call_tool("x", {})
        with pytest.raises(trio_mcp.ProtocolError):
            await session.request("x/raw")
        assert (await session.request("ping")) == {}


async def test_modern_garbage_result_head_is_a_protocol_error() -> None:
    async def bad(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"resultType": 5}

    async with connect(server__discover=discover_ok, tools__call=bad) as (session, _peer):
        assert session.era == "modern"
        with pytest.raises(trio_mcp.ProtocolError):
            await session.call_tool("x", {})


async def test_modern_invalid_input_request_is_an_input_request_error() -> None:
    async def bad(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.stream.send(
            b'{"jsonrpc":"2.0","id":%d,"result":{"resultType":"input_required",'
            b'"inputRequests":{"a":{"method":"\xff"}}}}' % message["id"]
        )
        no_answer()

    async with connect(server__discover=discover_ok, tools__call=bad) as (session, _peer):
        with pytest.raises(trio_mcp.InputRequestError):
            await session.call_tool("x", {})


# -- M5 / M6: a fresh exception per caller, no pending leak ----------------------------------


async def test_every_caller_gets_a_fresh_exception_after_a_crash() -> None:
    async with connect() as (session, peer):
        await peer.stream.aclose()
        errors: list[BaseException] = []
        for _ in range(50):
            try:
                await session.call_tool("x", {})
            except trio_mcp.ConnectionClosed as exc:
                errors.append(exc)
        assert len({id(e) for e in errors}) == 50
        depths = []
        for error in errors:
            depth, tb = 0, error.__traceback__
            while tb is not None:
                depth, tb = depth + 1, tb.tb_next
            depths.append(depth)
        assert max(depths) == min(depths)  # tracebacks do not grow


async def test_unencodable_arguments_raise_type_error_and_leak_nothing() -> None:
    async with connect(tools__call=echo) as (session, _peer):
        for _ in range(100):
            with pytest.raises(TypeError, match="cannot encode"):
                await session.call_tool("x", {"a": object()})
        assert session._rpc.pending_count == 0
        assert (await session.call_tool("echo", {"a": 1})).content


# -- C3: a cancelled nursery leaves no zombie ------------------------------------------------


async def test_cancelled_session_nursery_fails_other_callers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server, tools__call=hang)

    async def host(task_status: trio.TaskStatus[trio.Nursery]) -> None:
        async with trio.open_nursery() as inner:
            task_status.started(inner)
            await trio.sleep_forever()

    async with trio.open_nursery() as outer:
        outer.start_soon(peer.run, outer)
        service: trio.Nursery = await outer.start(host)
        async with trio_mcp.open_mcp_session(service, client, protocol="legacy") as session:
            pending_error: list[BaseException] = []

            async def caller() -> None:
                try:
                    await session.call_tool("x", {})
                except BaseException as exc:
                    pending_error.append(exc)

            outer.start_soon(caller)
            await trio.testing.wait_all_tasks_blocked()
            service.cancel_scope.cancel()
            with trio.fail_after(5):
                await trio.testing.wait_all_tasks_blocked()
                assert isinstance(pending_error[0], trio_mcp.ConnectionClosed)
                with pytest.raises(trio_mcp.ConnectionClosed, match="nursery"):
                    await session.call_tool("x", {})
            assert isinstance(session.failure, trio_mcp.ConnectionClosed)
        outer.cancel_scope.cancel()


# -- m4: calls pending during your own close -------------------------------------------------


async def test_calls_pending_during_own_close_get_closed_resource_error() -> None:
    async with connect(tools__call=hang) as (session, _peer):
        seen: list[BaseException] = []

        async def caller() -> None:
            try:
                await session.call_tool("x", {})
            except BaseException as exc:
                seen.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller)
            await trio.testing.wait_all_tasks_blocked()
            await session.aclose()
        assert isinstance(seen[0], trio.ClosedResourceError)


# -- M4: one meaning of timeout= --------------------------------------------------------------


def progress_server(period: float, count: int) -> Any:
    async def slow(peer: RawPeer, message: dict[str, Any]) -> Any:
        token = message["params"]["_meta"]["progressToken"]
        for i in range(count):
            await trio.sleep(period)
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": i + 1},
                }
            )
        return {"content": [{"type": "text", "text": "done"}]}

    return slow


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("how", ["timeout", "default_timeout"])
async def test_timeout_means_the_same_in_both_eras(
    autojump_clock: trio.testing.MockClock, era: str, how: str
) -> None:
    options: dict[str, Any] = {"progress_resets_timeout": True}
    if how == "default_timeout":
        options["default_timeout"] = 8
    handlers: dict[str, Any] = {"tools__call": progress_server(5, 4), "options": options}
    if era == "modern":
        handlers["server__discover"] = discover_ok
    async with connect(**handlers) as (session, _peer):
        assert session.era == era
        seen: list[float] = []
        start = trio.current_time()
        result = await session.call_tool(
            "x",
            {},
            timeout=8 if how == "timeout" else None,
            on_progress=lambda p: seen.append(p.progress),
        )
        assert result.content[0].text == "done"  # type: ignore[union-attr]
        assert trio.current_time() - start == 20
        assert seen == [1, 2, 3, 4]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_max_timeout_caps_progress_resets(
    autojump_clock: trio.testing.MockClock, era: str
) -> None:
    options = {"progress_resets_timeout": True, "max_timeout": 12}
    handlers: dict[str, Any] = {"tools__call": progress_server(5, 4), "options": options}
    if era == "modern":
        handlers["server__discover"] = discover_ok
    async with connect(**handlers) as (session, peer):
        start = trio.current_time()
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("x", {}, timeout=8)
        assert trio.current_time() - start == 12
        await trio.testing.wait_all_tasks_blocked()
        assert len(peer.cancelled) == 1


async def test_modern_timeout_covers_every_round(autojump_clock: trio.testing.MockClock) -> None:
    rounds = 0

    async def needs_input(peer: RawPeer, message: dict[str, Any]) -> Any:
        nonlocal rounds
        rounds += 1
        await trio.sleep(3)
        return {
            "resultType": "input_required",
            "inputRequests": {"r": {"method": "roots/list", "params": {}}},
        }

    async with connect(
        server__discover=discover_ok, tools__call=needs_input, options={"max_input_rounds": 100}
    ) as (session, _peer):
        session._handlers.roots = ["file:///a"]
        start = trio.current_time()
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("x", {}, timeout=10)
        assert trio.current_time() - start == 10
        assert rounds == 4


# -- M9: batches where the revision allows them ----------------------------------------------


async def test_batches_are_split_for_2025_03_26_only() -> None:
    async def batch_answer(peer: RawPeer, message: dict[str, Any]) -> Any:
        batch = [
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
            {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}},
        ]
        await peer.stream.send(msgspec.json.encode(batch))
        no_answer()

    client, server = memory_transport_pair()
    peer = RawPeer(server, tools__call=batch_answer)
    peer.init_result = {**peer.init_result, "protocolVersion": "2025-03-26"}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client, protocol="legacy") as session:
            async with session.notifications("notifications/tools/list_changed") as notes:
                result = await session.call_tool("x", {})
                assert result.content == []
                assert (await notes.receive()).method == "notifications/tools/list_changed"
        nursery.cancel_scope.cancel()


async def test_batches_are_dropped_where_the_revision_forbids_them(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect() as (session, peer):
        assert session.protocol_version == "2025-11-25"
        await peer.stream.send(b'[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]')
        await trio.testing.wait_all_tasks_blocked()
        assert session.failure is None
        assert "batch" in caplog.text


# -- M10, E1, E2: API shape ------------------------------------------------------------------


def test_client_session_has_no_public_constructor() -> None:
    client, _server = memory_transport_pair()
    with pytest.raises(TypeError, match="open_mcp_session"):
        trio_mcp.ClientSession(None, client)  # type: ignore[call-arg]


async def test_a_misspelt_option_names_itself_and_open_mcp_session() -> None:
    with pytest.raises(TypeError, match="open_mcp_session"):
        trio_mcp.open_mcp_session(["x"], defualt_timeout=1)  # type: ignore[call-overload]
    with (
        pytest.warns(DeprecationWarning, match="StreamableHTTPParameters"),
        pytest.raises(TypeError, match="'env' does not apply"),
    ):
        trio_mcp.open_mcp_session("http://127.0.0.1:1/mcp", env={"A": "1"})  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="protocol"):
        trio_mcp.open_mcp_session(["x"], protocol="2099-01-01")
    with pytest.raises(TypeError, match=r"\(nursery, target\)"):
        trio_mcp.open_mcp_session(["a"], ["b"])  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        trio_mcp.open_mcp_session()  # type: ignore[call-overload]


@asynccontextmanager
async def peer_task(peer: RawPeer) -> AsyncGenerator[None, None]:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        yield
        nursery.cancel_scope.cancel()


async def test_nursery_less_form_raises_the_users_error_bare() -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server, tools__call=echo)
    seen: list[trio_mcp.ClientSession] = []

    async def body() -> None:
        async with trio_mcp.open_mcp_session(client, protocol="legacy") as session:
            seen.append(session)
            assert (await session.call_tool("echo", {})).content
            raise KeyError("mine")

    async with peer_task(peer):
        with pytest.raises(KeyError, match="mine") as info:
            await body()
        assert type(info.value) is KeyError  # bare, not an ExceptionGroup
        assert seen[0].closed


async def test_nursery_less_form_start_up_error_is_bare() -> None:
    client, server = memory_transport_pair()

    async def reject(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32603, "no")
        no_answer()

    peer = RawPeer(server, initialize=reject)
    async with peer_task(peer):
        with pytest.raises(trio_mcp.ServerError, match="no"):
            async with trio_mcp.open_mcp_session(client, protocol="legacy"):
                pass  # pragma: no cover


async def test_nursery_less_form_session_failure_is_bare() -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server, tools__call=hang)

    async def body() -> None:
        async with trio_mcp.open_mcp_session(client, protocol="legacy") as session:
            await server.aclose()
            await session.call_tool("x", {})

    async with peer_task(peer):
        with pytest.raises(trio_mcp.ConnectionClosed):
            await body()


# -- m2, m3, m6, M11: handlers, callbacks, bounds ---------------------------------------------


async def test_request_context_carries_the_requests_meta() -> None:
    seen: list[Any] = []

    async def roots(ctx: trio_mcp.RequestContext) -> list[str]:
        seen.append(ctx.meta)
        return ["file:///r"]

    client, server = memory_transport_pair()
    peer = RawPeer(server)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client, protocol="legacy", roots=roots):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": "r1",
                    "method": "roots/list",
                    "params": {"_meta": {"progressToken": "p"}},
                }
            )
            await trio.testing.wait_all_tasks_blocked()
            assert seen == [{"progressToken": "p"}]
        nursery.cancel_scope.cancel()


async def test_async_callable_objects_run_as_notification_handlers() -> None:
    class Handler:
        def __init__(self) -> None:
            self.seen: list[str] = []

        async def __call__(self, note: trio_mcp.Notification) -> None:
            await trio.lowlevel.checkpoint()
            self.seen.append(note.method)

    handler = Handler()
    async with connect() as (session, peer):
        session.add_notification_handler("*", handler)
        await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        await trio.testing.wait_all_tasks_blocked()
        assert handler.seen == ["notifications/tools/list_changed"]


async def test_duplicate_server_request_ids_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    release = trio.Event()

    async def roots(ctx: trio_mcp.RequestContext) -> list[str]:
        await release.wait()
        return ["file:///r"]

    client, server = memory_transport_pair()
    peer = RawPeer(server)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client, protocol="legacy", roots=roots):
            request = {"jsonrpc": "2.0", "id": 7, "method": "roots/list"}
            await peer.send(request)
            await peer.send(request)
            await trio.testing.wait_all_tasks_blocked()
            assert "reuses the id 7" in caplog.text
            # the first one can still be cancelled by the server
            await peer.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
            )
            await trio.testing.wait_all_tasks_blocked()
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert not [m for m in peer.received if m.get("id") == 7]
        nursery.cancel_scope.cancel()


async def test_server_requests_beyond_the_cap_are_refused() -> None:
    async def roots(ctx: trio_mcp.RequestContext) -> list[str]:
        await trio.sleep_forever()
        return []  # pragma: no cover

    client, server = memory_transport_pair()
    peer = RawPeer(server)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(
            nursery, client, protocol="legacy", roots=roots, max_server_requests=3
        ):
            for i in range(10):
                await peer.send({"jsonrpc": "2.0", "id": i, "method": "roots/list"})
            await trio.testing.wait_all_tasks_blocked()
            refused = [m for m in peer.received if "error" in m]
            assert len(refused) == 7
            assert all("busy" in m["error"]["message"] for m in refused)
        nursery.cancel_scope.cancel()


async def test_pings_from_the_server_are_answered() -> None:
    async with connect() as (_session, peer):
        await peer.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        await peer.send({"jsonrpc": "2.0", "id": "q", "method": "nope"})
        await trio.testing.wait_all_tasks_blocked()
        answers = {m["id"]: m for m in peer.received if m.get("id") in ("p", "q")}
        assert answers["p"]["result"] == {}
        assert answers["q"]["error"]["code"] == -32601


async def test_capabilities_claim_only_what_the_client_does() -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server)

    async def elicit(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
        return {"action": "decline"}

    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(
            nursery, client, protocol="legacy", roots=["file:///a"], elicitation=elicit
        ):
            caps = peer.sent("initialize")[0]["params"]["capabilities"]
            assert caps["roots"] == {}
            assert caps["elicitation"] == {"form": {}}
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": "e1",
                    "method": "elicitation/create",
                    "params": {
                        "mode": "url",
                        "message": "m",
                        "url": "https://x",
                        "elicitationId": "e",
                    },
                }
            )
            await trio.testing.wait_all_tasks_blocked()
            answer = next(m for m in peer.received if m.get("id") == "e1")
            assert answer["error"]["code"] == -32602
        nursery.cancel_scope.cancel()


async def test_ttl_cache_is_bounded(autojump_clock: trio.testing.MockClock) -> None:
    async def read(peer: RawPeer, message: dict[str, Any]) -> Any:
        uri = message["params"]["uri"]
        return {"contents": [{"uri": uri, "text": "x"}], "ttlMs": 1000}

    async with connect(server__discover=discover_ok, resources__read=read) as (session, _peer):
        for i in range(3000):
            await session.read_resource(f"file:///{i}")
        assert len(session._cache) <= 1024


# -- era detection: slow servers, silent servers, stale verdicts -----------------------------


class SequentialPeer:
    """A server that reads its input in order after a start delay, as a real process does."""

    def __init__(self, stream: MemoryServerStream, delay: float, initialize: str) -> None:
        self.stream = stream
        self.delay = delay
        self.initialize = initialize  # "reject" (committed to modern) or "accept"
        self.methods: list[str] = []

    async def run(self) -> None:
        await trio.sleep(self.delay)
        while True:
            try:
                data = await self.stream.receive()
            except trio.EndOfChannel:
                return
            message = msgspec.json.decode(data)
            method = message.get("method")
            self.methods.append(method)
            if "id" not in message:
                continue
            if method == "server/discover":
                result = await discover_ok(None, message)  # type: ignore[arg-type]
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            elif method == "initialize" and self.initialize == "reject":
                answer = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32022, "message": "modern", "data": {"supported": [MODERN]}},
                }
            elif method == "initialize":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": LEGACY}
            else:
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}
            await self.stream.send(msgspec.json.encode(answer))


LEGACY = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "serverInfo": {"name": "s", "version": "1"},
}


@pytest.mark.parametrize("delay", [4.0, 20.0])
@pytest.mark.parametrize("initialize", ["reject", "accept"])
async def test_auto_opens_a_slow_dual_era_server_in_the_modern_era(
    autojump_clock: trio.testing.MockClock, delay: float, initialize: str
) -> None:
    client, server = memory_transport_pair()
    peer = SequentialPeer(server, delay, initialize)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        cache = trio_mcp.EraCache()
        async with trio_mcp.open_mcp_session(nursery, client, era_cache=cache) as session:
            assert session.era == "modern"
            assert trio.current_time() == delay
            assert await session.list_tools() == []
        assert "notifications/initialized" not in peer.methods
        nursery.cancel_scope.cancel()


async def test_auto_opens_a_silent_legacy_server_after_one_probe_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def silent(peer: RawPeer, message: dict[str, Any]) -> Any:
        no_answer()

    async with connect(server__discover=silent, options={"probe_timeout": 3}) as (session, peer):
        assert session.era == "legacy"
        assert trio.current_time() == 3
        await trio.testing.wait_all_tasks_blocked()
        assert not peer.cancelled  # the probe is not announced as cancelled


class KeyedTransport(MemoryTransport):
    """A memory transport with an era key, whose initialize fails like a modern HTTP server's."""

    def __init__(self, inner: MemoryTransport, key: str) -> None:
        self.__dict__.update(inner.__dict__)
        self._key = key

    @property
    def era_key(self) -> str | None:
        return self._key

    def queue_nowait(self, data: bytes) -> bool:
        return False  # every message goes through send() below

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        message = msgspec.json.decode(data)
        if message.get("method") == "initialize":
            await trio.lowlevel.checkpoint()
            self._fail_request(message["id"], trio_mcp.HTTPStatusError(400, "bad request"))
            return
        await super().send(data, info)


async def test_a_stale_legacy_verdict_is_probed_again() -> None:
    cache = trio_mcp.EraCache()
    cache.put("origin", "legacy")
    client, server = memory_transport_pair()
    peer = RawPeer(server, server__discover=discover_ok)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        transport = KeyedTransport(client, "origin")
        async with trio_mcp.open_mcp_session(nursery, transport, era_cache=cache) as session:
            assert session.era == "modern"
        assert cache.get("origin") == "modern"
        nursery.cancel_scope.cancel()


def test_era_cache_is_bounded() -> None:
    cache = trio_mcp.EraCache(max_entries=2)
    cache.put("a", "legacy")
    cache.put("b", "modern")
    assert cache.get("a") == "legacy"
    cache.put("c", "modern")
    assert "b" not in cache and cache.get("a") == "legacy" and len(cache) == 2


# -- background tasks never raise into the user's nursery ------------------------------------


async def test_a_buggy_transport_receive_is_recorded_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, server = memory_transport_pair()
    peer = RawPeer(server)

    class Buggy(MemoryTransport):
        def __init__(self) -> None:
            self.__dict__.update(client.__dict__)
            self.fail = False

        async def receive(self) -> bytes:
            if self.fail:
                raise RuntimeError("bug")
            return await super().receive()

    transport = Buggy()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, transport, protocol="legacy") as session:
            transport.fail = True
            await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            await trio.testing.wait_all_tasks_blocked()
            assert isinstance(session.failure, trio_mcp.ConnectionClosed)
            with pytest.raises(trio_mcp.ConnectionClosed, match="reader failed"):
                await session.request("ping")
        nursery.cancel_scope.cancel()
    assert any(r.levelno == logging.ERROR for r in caplog.records)


# -- a call made in an already-cancelled scope did not happen --------------------------------


@pytest.mark.parametrize("protocol", ["legacy", MODERN])
async def test_a_call_in_a_cancelled_scope_is_never_sent(protocol: str) -> None:
    """trio's rule: a cancelled operation did not happen. The request is not written (so no
    ``notifications/cancelled`` follows either), whether it would be written at once (a lone
    call) or queued behind another pending one; a notification is not written either."""
    handlers: dict[str, Any] = {"tools__call": hang}
    if protocol == MODERN:
        handlers["server__discover"] = discover_ok
    async with connect(options={"protocol": protocol}, **handlers) as (session, peer):
        await session.ping()  # everything the opening sent has arrived
        start = len(peer.received)

        async def call_cancelled() -> None:
            with trio.CancelScope() as scope:
                scope.cancel()
                await session.call_tool("x", {})
            assert scope.cancelled_caught

        for _ in range(10):  # each alone: the path that writes at once
            await call_cancelled()
        async with trio.open_nursery() as nursery:  # behind a pending call: the queued path
            nursery.start_soon(session.call_tool, "pending", {})
            await trio.testing.wait_all_tasks_blocked()
            for _ in range(10):
                nursery.start_soon(call_cancelled)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        with trio.CancelScope() as scope:
            scope.cancel()
            await session.notify("notifications/roots/list_changed")
        assert scope.cancelled_caught
        await session.ping()
        sent = [m.get("method") for m in peer.received[start:]]
        # (the last is the ping: ``server/discover`` in the modern era)
        assert sent[:2] == ["tools/call", "notifications/cancelled"] and len(sent) == 3
        assert peer.received[start]["params"]["name"] == "pending"
        assert session._rpc.pending_count == 0


# -- the response channels (issue 35: the first burst opens one per request) --------------


def test_response_channels_open_without_typing_work() -> None:
    # On this trio, open_channel skips open_memory_channel's two typing aliases (the first
    # burst of a run opens a channel per request) and makes the same objects.
    from trio_mcp import _pending

    assert _pending.open_channel is not trio.open_memory_channel
    send, receive = _pending.open_channel(float("inf"))
    public_send, public_receive = trio.open_memory_channel[Any](float("inf"))
    assert type(send) is type(public_send) and type(receive) is type(public_receive)
    assert send.statistics() == public_send.statistics()
    for item in range(100):  # unbounded, like the public function's
        send.send_nowait(item)
    assert [receive.receive_nowait() for _ in range(100)] == list(range(100))
    clone = send.clone()
    send.close()
    clone.send_nowait("last")
    clone.close()
    assert receive.receive_nowait() == "last"
    with pytest.raises(trio.EndOfChannel):
        receive.receive_nowait()


def test_response_channels_fall_back_to_trio_where_its_internals_differ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import trio._channel

    from trio_mcp import _pending

    monkeypatch.delattr(trio._channel, "MemoryChannelState")
    assert _pending._direct_opener() is None

    monkeypatch.undo()
    monkeypatch.setattr(trio.MemoryReceiveChannel, "_create", lambda state: "not a channel")
    assert _pending._direct_opener() is None
    monkeypatch.undo()
    assert _pending._direct_opener() is not None
