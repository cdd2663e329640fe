"""Era detection (the server/discover probe) and the modern protocol layer, byte-exact."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

import trio_mcp
from trio_mcp import _requests as requests_module
from trio_mcp._transports._memory import memory_transport_pair

from .rawpeer import RawPeer, connect, hang, no_answer

MODERN = "2026-07-28"
DISCOVER_OK = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}},
    "instructions": "be nice",
}


async def discover_ok(peer: RawPeer, message: dict[str, Any]) -> Any:
    return DISCOVER_OK


def meta_of(message: dict[str, Any]) -> dict[str, Any]:
    return message["params"]["_meta"]  # type: ignore[no-any-return]


async def test_discover_result_means_modern() -> None:
    async with connect(server__discover=discover_ok) as (session, peer):
        assert session.era == "modern"
        assert session.protocol_version == MODERN
        assert session.server_info is not None and session.server_info.name == "modern"
        assert session.instructions == "be nice"
        assert not peer.sent("initialize")
        probe = peer.sent("server/discover")[0]
        assert meta_of(probe)["io.modelcontextprotocol/protocolVersion"] == MODERN


@pytest.mark.parametrize("code", [-32601, -32602, -32600, -32000])
async def test_any_other_error_means_legacy(code: int) -> None:
    async def reject(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], code, "nope")
        no_answer()

    async with connect(server__discover=reject) as (session, peer):
        assert session.era == "legacy"
        assert peer.sent("initialize")


async def test_silent_server_means_legacy_after_probe_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    async with connect(server__discover=hang, options={"probe_timeout": 2.0}) as (session, peer):
        assert session.era == "legacy"
        assert trio.current_time() - start == 2.0
        # the probe is not announced as cancelled to a legacy server
        assert peer.cancelled == []


async def test_late_answer_to_timed_out_probe_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def late(peer: RawPeer, message: dict[str, Any]) -> Any:
        await trio.sleep(5)
        return DISCOVER_OK

    async with connect(server__discover=late, options={"probe_timeout": 1.0}) as (session, _peer):
        await trio.sleep(10)
        assert session.era == "legacy"
        assert (await session.request("ping")) == {}


async def test_unsupported_version_with_mutual_version_retries() -> None:
    calls: list[str] = []

    async def picky(peer: RawPeer, message: dict[str, Any]) -> Any:
        version = meta_of(message)["io.modelcontextprotocol/protocolVersion"]
        calls.append(version)
        if version != MODERN:  # pragma: no cover - we always start at MODERN
            return DISCOVER_OK
        if len(calls) == 1:
            await peer.error(
                message["id"], -32022, "Unsupported protocol version",
                {"supported": [MODERN, "2025-11-25"], "requested": "1900-01-01"},
            )  # fmt: skip
            no_answer()
        return DISCOVER_OK

    async with connect(server__discover=picky) as (session, peer):
        assert session.era == "modern"
        assert calls == [MODERN, MODERN]
        assert not peer.sent("initialize")


async def test_unsupported_version_without_mutual_version_fails_clearly() -> None:
    async def future_only(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32022, "Unsupported protocol version",
                         {"supported": ["2099-01-01"], "requested": MODERN})  # fmt: skip
        no_answer()

    client, server = memory_transport_pair()
    peer = RawPeer(server, server__discover=future_only)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        with pytest.raises(trio_mcp.UnsupportedProtocolVersionError) as info:
            async with trio_mcp.open_mcp_session(nursery, client):
                pass  # pragma: no cover
        assert info.value.supported == ["2099-01-01"]
        assert not peer.sent("initialize")
        nursery.cancel_scope.cancel()


async def test_unsupported_version_listing_only_legacy_falls_back() -> None:
    async def legacy_only(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32022, "Unsupported protocol version",
                         {"supported": ["2025-11-25"], "requested": MODERN})  # fmt: skip
        no_answer()

    async with connect(server__discover=legacy_only) as (session, _peer):
        assert session.era == "legacy"


async def test_discover_result_without_modern_versions_means_legacy() -> None:
    async def old(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {**DISCOVER_OK, "supportedVersions": ["2025-11-25"]}

    async with connect(server__discover=old) as (session, _peer):
        assert session.era == "legacy"


async def test_pinned_legacy_sends_no_probe() -> None:
    async with connect(options={"protocol": "legacy"}) as (session, peer):
        assert session.era == "legacy"
        assert not peer.sent("server/discover")


async def test_pinned_modern_version() -> None:
    async with connect(server__discover=discover_ok, options={"protocol": MODERN}) as (
        session,
        peer,
    ):
        assert session.era == "modern"
        assert session.protocol_version == MODERN


async def test_invalid_protocol_option() -> None:
    async with trio.open_nursery() as nursery:
        client, _server = memory_transport_pair()
        with pytest.raises(ValueError, match="protocol must be"):
            async with trio_mcp.open_mcp_session(nursery, client, protocol="2030-01-01"):
                pass  # pragma: no cover


# -- the modern layer -----------------------------------------------------------------


async def test_every_modern_request_carries_meta() -> None:
    async def tools(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"}

    async def sample(params: Any, ctx: Any) -> Any:  # pragma: no cover - never called
        return {}

    async with connect(server__discover=discover_ok, tools__list=tools,
                       options={"sampling": sample}) as (session, peer):  # fmt: skip
        await session.set_logging_level("warning")
        await session.list_tools()
        meta = meta_of(peer.sent("tools/list")[0])
        assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "trio-mcp"
        assert meta["io.modelcontextprotocol/logLevel"] == "warning"
        # capabilities relevant to the request: none for a list, sampling for a tool call
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
        assert not peer.sent("logging/setLevel")


async def test_unknown_result_type_is_a_protocol_error() -> None:
    async def weird(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"resultType": "streaming", "content": []}

    async with connect(server__discover=discover_ok, tools__call=weird) as (session, _peer):
        with pytest.raises(trio_mcp.ProtocolError, match="streaming"):
            await session.call_tool("x", {})


async def test_missing_result_type_means_complete() -> None:
    async def plain(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"content": [{"type": "text", "text": "ok"}]}

    async with connect(server__discover=discover_ok, tools__call=plain) as (session, _peer):
        assert (await session.call_tool("x", {})).content[0].text == "ok"  # type: ignore[union-attr]


async def test_unsupported_version_mid_session_gets_one_corrective_retry() -> None:
    seen: list[int] = []

    async def once(peer: RawPeer, message: dict[str, Any]) -> Any:
        seen.append(message["id"])
        if len(seen) == 1:
            await peer.error(message["id"], -32022, "Unsupported",
                             {"supported": [MODERN], "requested": "x"})  # fmt: skip
            no_answer()
        await peer.error(message["id"], -32022, "Unsupported", {"supported": [MODERN]})
        no_answer()

    async with connect(server__discover=discover_ok, tools__call=once) as (session, _peer):
        with pytest.raises(trio_mcp.UnsupportedProtocolVersionError):
            await session.call_tool("x", {})
        assert len(seen) == 1  # same version: no pointless retry


async def test_ping_on_modern_sends_discover_not_ping() -> None:
    async with connect(server__discover=discover_ok) as (session, peer):
        await session.ping()
        assert not peer.sent("ping")
        assert len(peer.sent("server/discover")) == 2


async def test_resource_not_found_maps_in_both_eras() -> None:
    async def missing_modern(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32602, "Resource not found", {"uri": "x"})
        no_answer()

    async def missing_legacy(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32002, "Resource not found", {"uri": "x"})
        no_answer()

    async with connect(server__discover=discover_ok, resources__read=missing_modern) as (s, _p):
        with pytest.raises(trio_mcp.ResourceNotFoundError):
            await s.read_resource("x")
    async with connect(resources__read=missing_legacy) as (s, _p):
        with pytest.raises(trio_mcp.ResourceNotFoundError):
            await s.read_resource("x")


# -- multi-round-trip requests ---------------------------------------------------------

STATE = '"tricky \\u00e9 state"'  # raw JSON text of the requestState string


async def mrtr_tool(peer: RawPeer, message: dict[str, Any]) -> Any:
    params = message["params"]
    responses = params.get("inputResponses")
    if responses is None:
        await peer.stream.send(
            b'{"jsonrpc":"2.0","id":' + str(message["id"]).encode() + b',"result":'
            b'{"resultType":"input_required","requestState":' + STATE.encode() + b","
            b'"inputRequests":{"login":{"method":"elicitation/create","params":{"mode":"form",'
            b'"message":"who?","requestedSchema":{"type":"object","properties":'
            b'{"name":{"type":"string"},"team":{"type":"string","default":"core"}}}}},'
            b'"answer":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":9}}}}}'
        )
        no_answer()
    return {
        "resultType": "complete",
        "content": [{"type": "text", "text": f"{responses['login']['content']}|"
                     f"{responses['answer']['content']['text']}|{params['requestState']}"}],
    }  # fmt: skip


async def elicit(params: Any, ctx: Any) -> Any:
    return {"action": "accept", "content": {"name": "octocat"}}


async def sample(params: Any, ctx: Any) -> Any:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}


async def test_mrtr_round_trip_echoes_state_and_uses_new_id() -> None:
    async with connect(server__discover=discover_ok, tools__call=mrtr_tool,
                       options={"elicitation": elicit, "sampling": sample}) as (session, peer):  # fmt: skip
        result = await session.call_tool("x", {"a": 1})
        assert result.content[0].text == (  # type: ignore[union-attr]
            "{'name': 'octocat', 'team': 'core'}|Paris|tricky \u00e9 state"
        )
        first, second = peer.sent("tools/call")
        assert first["id"] != second["id"]
        assert second["params"]["arguments"] == {"a": 1}
        assert second["params"]["requestState"] == "tricky \u00e9 state"
        caps = meta_of(first)["io.modelcontextprotocol/clientCapabilities"]
        assert "elicitation" in caps and "sampling" in caps


async def test_a_complete_modern_result_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its typed decode also tells its ``resultType``: no separate pass for that."""
    decoded: list[str] = []
    real = requests_module.decode_payload

    def counting(raw: Any, tp: Any, what: str, **kw: Any) -> Any:
        decoded.append(tp.__name__)
        return real(raw, tp, what, **kw)

    monkeypatch.setattr(requests_module, "decode_payload", counting)

    async def tools(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"resultType": "complete", "tools": [{"name": "t", "inputSchema": {}}]}

    async def call(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}

    async with connect(server__discover=discover_ok, tools__list=tools, tools__call=call) as (
        session,
        _peer,
    ):
        decoded.clear()
        assert [tool.name for tool in await session.list_tools(cache=False)] == ["t"]
        assert (await session.call_tool("t")).text == "hi"
    assert decoded == ["ListToolsResult", "CallToolResult"]

    decoded.clear()
    async with connect(server__discover=discover_ok, tools__call=mrtr_tool,
                       options={"elicitation": elicit, "sampling": sample}) as (session, _peer):  # fmt: skip
        await session.call_tool("x", {"a": 1})
    assert decoded.count("ResultHead") == 1  # only the incomplete result needs it


async def test_mrtr_state_is_echoed_byte_for_byte() -> None:
    raw_seen: list[bytes] = []
    client, server = memory_transport_pair()
    peer = RawPeer(server, server__discover=discover_ok, tools__call=mrtr_tool)
    original_receive = server.receive

    async def spy() -> bytes:
        data = await original_receive()
        raw_seen.append(data)
        return data

    server.receive = spy  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(
            nursery, client, elicitation=elicit, sampling=sample
        ) as session:
            await session.call_tool("x", {})
        nursery.cancel_scope.cancel()
    retry = [d for d in raw_seen if b"inputResponses" in d][0]
    assert b'"requestState":' + STATE.encode() in retry


async def test_mrtr_without_handler_fails_locally() -> None:
    async with connect(server__discover=discover_ok, tools__call=mrtr_tool,
                       options={"elicitation": elicit}) as (session, peer):  # fmt: skip
        with pytest.raises(trio_mcp.InputRequestError, match="sampling/createMessage"):
            await session.call_tool("x", {})
        assert len(peer.sent("tools/call")) == 1


async def test_mrtr_round_cap() -> None:
    async def forever(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {"resultType": "input_required", "requestState": "again"}

    async with connect(server__discover=discover_ok, tools__call=forever,
                       options={"max_input_rounds": 3}) as (session, peer):  # fmt: skip
        with pytest.raises(trio_mcp.InputRequestError, match="3 rounds"):
            await session.call_tool("x", {})
        assert len(peer.sent("tools/call")) == 4


async def test_mrtr_parallel_calls_are_isolated() -> None:
    async def per_call(peer: RawPeer, message: dict[str, Any]) -> Any:
        params = message["params"]
        tag = params["arguments"]["tag"]
        if "requestState" not in params:
            await trio.lowlevel.checkpoint()
            return {"resultType": "input_required", "requestState": f"state-{tag}"}
        return {"content": [{"type": "text", "text": params["requestState"]}]}

    async with connect(server__discover=discover_ok, tools__call=per_call) as (session, _peer):
        results: dict[int, str] = {}

        async def one(i: int) -> None:
            result = await session.call_tool("x", {"tag": i})
            results[i] = result.content[0].text  # type: ignore[union-attr]

        async with trio.open_nursery() as nursery:
            for i in range(50):
                nursery.start_soon(one, i)
        assert results == {i: f"state-{i}" for i in range(50)}


async def test_cancel_during_input_phase_cancels_handler_and_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler_cancelled = trio.Event()

    async def slow_elicit(params: Any, ctx: Any) -> Any:
        try:
            await trio.sleep_forever()
        finally:
            handler_cancelled.set()

    async with connect(server__discover=discover_ok, tools__call=mrtr_tool,
                       options={"elicitation": slow_elicit, "sampling": sample}) as (session, peer):  # fmt: skip
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("x", {}, timeout=3)
        assert handler_cancelled.is_set()
        assert len(peer.sent("tools/call")) == 1


# -- listen & caching ------------------------------------------------------------------


async def test_modern_listen_correlates_by_subscription_id() -> None:
    async def listen(peer: RawPeer, message: dict[str, Any]) -> Any:
        sub = message["id"]
        meta = {"io.modelcontextprotocol/subscriptionId": sub}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                         "params": {"_meta": meta, "notifications": message["params"]["notifications"]}})  # fmt: skip
        await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                         "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 999}}})  # fmt: skip
        await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                         "params": {"_meta": meta}})  # fmt: skip
        await trio.sleep_forever()

    async with connect(server__discover=discover_ok, subscriptions__listen=listen) as (
        session,
        peer,
    ):
        async with session.listen(tools=True) as rx:
            note = await rx.receive()
            assert note.method == "notifications/tools/list_changed"
            assert note.params["_meta"]["io.modelcontextprotocol/subscriptionId"] != 999
        await trio.testing.wait_all_tasks_blocked()
        listen_id = peer.sent("subscriptions/listen")[0]["id"]
        assert peer.sent("subscriptions/listen")[0]["params"]["notifications"] == {
            "toolsListChanged": True
        }
        assert peer.cancelled == [listen_id]


async def test_legacy_listen_filters_and_subscribes() -> None:
    async def subscribe(peer: RawPeer, message: dict[str, Any]) -> Any:
        return {}

    async with connect(resources__subscribe=subscribe, resources__unsubscribe=subscribe) as (
        session,
        peer,
    ):
        async with session.listen(resource_uris=["file:///a"]) as rx:
            assert peer.sent("resources/subscribe")[0]["params"] == {"uri": "file:///a"}
            for uri in ("file:///b", "file:///a"):
                await peer.send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                 "params": {"uri": uri}})  # fmt: skip
            await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            note = await rx.receive()
            assert note.params == {"uri": "file:///a"}
        await trio.testing.wait_all_tasks_blocked()
        assert peer.sent("resources/unsubscribe")[0]["params"] == {"uri": "file:///a"}


async def test_cache_honours_ttl_and_invalidation(autojump_clock: trio.testing.MockClock) -> None:
    async def tools(peer: RawPeer, message: dict[str, Any]) -> Any:
        n = len(peer.sent("tools/list"))
        return {"resultType": "complete", "tools": [{"name": f"t{n}", "inputSchema": {}}],
                "ttlMs": 1000, "cacheScope": "private"}  # fmt: skip

    async with connect(server__discover=discover_ok, tools__list=tools) as (session, peer):
        assert [t.name for t in await session.list_tools()] == ["t1"]
        assert [t.name for t in await session.list_tools()] == ["t1"]  # cached
        assert [t.name for t in await session.list_tools(cache=False)] == ["t2"]
        await trio.sleep(1.0)
        assert [t.name for t in await session.list_tools()] == ["t3"]  # expired
        await peer.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        await trio.testing.wait_all_tasks_blocked()
        assert [t.name for t in await session.list_tools()] == ["t4"]  # invalidated


async def test_modern_listen_rejected_raises_and_teardown_ends_channel() -> None:
    async def unsupported(peer: RawPeer, message: dict[str, Any]) -> Any:
        await peer.error(message["id"], -32601, "no listen here")
        no_answer()

    async with connect(server__discover=discover_ok, subscriptions__listen=unsupported) as (
        session,
        _p,
    ):
        with pytest.raises(trio_mcp.ServerError, match="no listen here"):
            async with session.listen(tools=True):
                pass  # pragma: no cover

    async def teardown(peer: RawPeer, message: dict[str, Any]) -> Any:
        sub = message["id"]
        meta = {"io.modelcontextprotocol/subscriptionId": sub}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                         "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}})  # fmt: skip
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": sub}})  # fmt: skip
        no_answer()

    async with connect(server__discover=discover_ok, subscriptions__listen=teardown) as (
        session,
        _p,
    ):
        async with session.listen(tools=True) as rx:
            with trio.fail_after(5):
                assert [note async for note in rx] == []


async def test_listen_waits_for_acknowledgement_before_yielding() -> None:
    order: list[str] = []

    async def slow_ack(peer: RawPeer, message: dict[str, Any]) -> Any:
        await trio.lowlevel.checkpoint()
        order.append("ack")
        meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                         "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}})  # fmt: skip
        await trio.sleep_forever()

    async with connect(server__discover=discover_ok, subscriptions__listen=slow_ack) as (
        session,
        _p,
    ):
        async with session.listen(tools=True):
            order.append("body")
    assert order == ["ack", "body"]


@pytest.mark.parametrize("modern", [True, False])
async def test_errors_inside_listen_block_stay_bare(modern: bool) -> None:
    async def ack(peer: RawPeer, message: dict[str, Any]) -> Any:
        meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                         "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}})  # fmt: skip
        await trio.sleep_forever()

    handlers: dict[str, Any] = {"subscriptions__listen": ack}
    if modern:
        handlers["server__discover"] = discover_ok
    async with connect(**handlers) as (session, _p):
        with pytest.raises(KeyError):
            async with session.listen(tools=True):
                raise KeyError("mine")
