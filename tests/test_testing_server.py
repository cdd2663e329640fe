"""Tests for trio_mcp.testing: the scriptable in-process MCP server, driven with raw JSON."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

import trio_mcp.testing
from trio_mcp._exceptions import ToolError
from trio_mcp._transports._base import Transport, TransportFactory
from trio_mcp._transports._memory import memory_transport_pair
from trio_mcp.testing import (
    ClientRequestError,
    MockServer,
    ServerCrash,
    ToolContext,
    demo_server,
)

MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
SUB = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
REPO = Path(__file__).resolve().parents[1]

ALL_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {"form": {}}, "roots": {}}


def meta(
    capabilities: dict[str, Any] | None = None, log_level: str | None = None
) -> dict[str, Any]:
    """Modern per-request _meta."""
    result: dict[str, Any] = {
        PV: MODERN,
        CAPS: ALL_CAPS if capabilities is None else capabilities,
        INFO: {"name": "raw-test-client", "version": "0.0.1"},
    }
    if log_level is not None:
        result["io.modelcontextprotocol/logLevel"] = log_level
    return result


class Wire:
    """A raw JSON-RPC client on the client end of an in-memory connection."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.notifications: list[dict[str, Any]] = []
        self._next_id = 0

    async def send(self, message: dict[str, Any]) -> None:
        await self.transport.send(msgspec.json.encode(message))

    async def receive(self) -> dict[str, Any]:
        data = await self.transport.receive()
        assert isinstance(data, bytes)
        message = msgspec.json.decode(data)
        assert isinstance(message, dict)
        return message

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, id: int | str | None = None
    ) -> int | str:
        if id is None:
            self._next_id += 1
            id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return id

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def response(self, id: int | str) -> dict[str, Any]:
        """Read until the response to ``id``, keeping notifications aside."""
        while True:
            message = await self.receive()
            if "method" not in message:
                assert message["id"] == id, f"expected a response to {id}, got {message}"
                return message
            self.notifications.append(message)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.response(await self.request(method, params))
        assert "result" in response, response
        result = response["result"]
        assert isinstance(result, dict)
        return result

    async def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await self.response(await self.request(method, params))
        assert "error" in response, response
        error = response["error"]
        assert isinstance(error, dict)
        return error

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        result = await self.call(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": ALL_CAPS,
                "clientInfo": {"name": "raw-test-client", "version": "0.0.1"},
            },
        )
        await self.notify("notifications/initialized")
        return result


@asynccontextmanager
async def connect(server: MockServer) -> AsyncIterator[Wire]:
    async with trio.open_nursery() as nursery, server.open_transport(nursery) as transport:
        yield Wire(transport)


def echo_server(eras: Any = "both") -> MockServer:
    server = MockServer(name="mock", version="1.0", eras=eras)

    @server.tool(description="Echo")
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    return server


# -- public surface ------------------------------------------------------------------------


def test_public_surface() -> None:
    names = trio_mcp.testing.__all__
    assert names == sorted(names)
    assert {"MockServer", "ToolContext", "ServerCrash"} <= set(names)
    for name in names:
        assert not name.startswith("Test")
        assert getattr(trio_mcp.testing, name).__doc__


def test_mock_server_is_a_transport_factory() -> None:
    assert isinstance(MockServer(), TransportFactory)


def test_rejects_unknown_eras() -> None:
    with pytest.raises(ValueError, match="eras"):
        MockServer(eras="future")  # type: ignore[arg-type]


# -- legacy lifecycle -------------------------------------------------------------------------


async def test_legacy_handshake_accepts_known_versions() -> None:
    server = echo_server()
    async with connect(server) as wire:
        result = await wire.initialize("2025-06-18")
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"] == {"name": "mock", "version": "1.0"}
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert "resultType" not in result
    assert server.protocol_version == "2025-06-18"
    assert server.client_info == {"name": "raw-test-client", "version": "0.0.1"}
    assert server.client_capabilities == ALL_CAPS
    assert [m.get("method") for m in server.received] == ["initialize", "notifications/initialized"]


async def test_legacy_handshake_counter_offers_latest() -> None:
    server = echo_server("legacy")
    async with connect(server) as wire:
        result = await wire.initialize("1999-01-01")
    assert result["protocolVersion"] == "2025-11-25"


async def test_legacy_requests_before_initialize() -> None:
    async with connect(echo_server("legacy")) as wire:
        assert await wire.call("ping") == {}
        error = await wire.error("tools/list")
        assert error["code"] == -32600
        await wire.initialize()
        assert [t["name"] for t in (await wire.call("tools/list"))["tools"]] == ["echo"]
        second = await wire.error(
            "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}
        )
        assert second["code"] == -32600


async def test_modern_only_server_refuses_legacy() -> None:
    async with connect(echo_server("modern")) as wire:
        error = await wire.error("initialize", {"protocolVersion": "2025-11-25"})
        assert error["code"] == -32601
        assert MODERN in error["message"]
        assert (await wire.error("ping", {"_meta": meta()}))["code"] == -32601
        assert (await wire.error("logging/setLevel", {"_meta": meta(), "level": "info"}))[
            "code"
        ] == -32601
        missing = await wire.error("tools/list")
        assert missing["code"] == -32602
        no_caps = await wire.error("tools/list", {"_meta": {PV: MODERN}})
        assert no_caps["code"] == -32602


async def test_malformed_messages() -> None:
    async with connect(echo_server()) as wire:
        await wire.transport.send(b"{not json")
        parse = await wire.receive()
        assert parse["error"]["code"] == -32700
        assert parse["id"] is None
        await wire.transport.send(b"[1, 2]")
        assert (await wire.receive())["error"]["code"] == -32600


# -- lists, pagination, caching ---------------------------------------------------------------


async def test_tools_list_pagination_legacy_and_modern() -> None:
    server = MockServer()
    for index in range(5):

        async def tool(ctx: ToolContext) -> str:
            return "ok"

        server.tool(name=f"tool{index}")(tool)
    server.page_size = 2
    server.cache_hints = {"tools/list": (60_000, "private")}
    async with connect(server) as wire:
        names: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            params: dict[str, Any] = {"_meta": meta()}
            if cursor is not None:
                params["cursor"] = cursor
            page = await wire.call("tools/list", params)
            pages += 1
            assert page["resultType"] == "complete"
            assert page["ttlMs"] == 60_000
            assert page["cacheScope"] == "private"
            assert page["_meta"][SERVER_INFO] == {"name": "mock", "version": "1.0"}
            names += [tool["name"] for tool in page["tools"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert pages == 3
        assert names == [f"tool{i}" for i in range(5)]
        bad = await wire.error("tools/list", {"_meta": meta(), "cursor": "bogus!"})
        assert bad["code"] == -32602
    async with connect(server) as wire:
        await wire.initialize()
        first = await wire.call("tools/list")
        assert len(first["tools"]) == 2
        assert "ttlMs" not in first
        assert "resultType" not in first
        second = await wire.call("tools/list", {"cursor": first["nextCursor"]})
        assert [t["name"] for t in second["tools"]] == ["tool2", "tool3"]


async def test_tool_definitions() -> None:
    server = MockServer()

    @server.tool(
        description="Weather",
        annotations={"readOnlyHint": True},
        x_mcp_header={"region": "Region"},
        title="Weather tool",
    )
    async def weather(
        ctx: ToolContext, region: str, days: int = 3, metric: bool | None = None
    ) -> str:
        return region

    @server.tool
    async def documented(ctx: ToolContext, items: list[str]) -> str:
        """First line of the docstring.

        More text.
        """
        return ",".join(items)

    async with connect(server) as wire:
        await wire.initialize()
        tools = {t["name"]: t for t in (await wire.call("tools/list"))["tools"]}
    assert tools["weather"]["inputSchema"] == {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "days": {"type": "integer", "default": 3},
            "metric": {"type": "boolean"},
        },
        "required": ["region"],
    }
    assert tools["weather"]["annotations"] == {"readOnlyHint": True}
    assert tools["weather"]["title"] == "Weather tool"
    assert tools["documented"]["description"] == "First line of the docstring."
    assert tools["documented"]["inputSchema"]["properties"]["items"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    with pytest.raises(ValueError, match="nope"):
        server.tool(input_schema={"type": "object", "properties": {}}, x_mcp_header={"nope": "X"})(
            weather
        )


async def test_resources_prompts_templates_completion() -> None:
    server = demo_server()
    async with connect(server) as wire:
        await wire.initialize()
        resources = (await wire.call("resources/list"))["resources"]
        assert resources[0]["uri"] == "demo://readme"
        read = await wire.call("resources/read", {"uri": "demo://readme"})
        assert read["contents"][0]["text"].startswith("This is")
        item = await wire.call("resources/read", {"uri": "demo://items/42"})
        assert item["contents"] == [
            {"uri": "demo://items/42", "mimeType": "text/plain", "text": "Item 42"}
        ]
        templates = (await wire.call("resources/templates/list"))["resourceTemplates"]
        assert templates[0]["uriTemplate"] == "demo://items/{item_id}"
        missing = await wire.error("resources/read", {"uri": "demo://nothing"})
        assert (missing["code"], missing["data"]) == (-32002, {"uri": "demo://nothing"})
        prompt = await wire.call("prompts/get", {"name": "greeting", "arguments": {"name": "Bo"}})
        assert prompt["messages"][0]["content"]["text"] == "Please greet Bo."
        assert (await wire.error("prompts/get", {"name": "greeting"}))["code"] == -32602
        assert (await wire.error("prompts/get", {"name": "nope"}))["code"] == -32602
        completion = await wire.call(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greeting"},
                "argument": {"name": "name", "value": "A"},
            },
        )
        assert completion["completion"] == {"values": ["Alice"], "total": 1, "hasMore": False}
    async with connect(server) as wire:
        missing = await wire.error("resources/read", {"_meta": meta(), "uri": "demo://nothing"})
        assert missing["code"] == -32602
        read = await wire.call("resources/read", {"_meta": meta(), "uri": "demo://readme"})
        assert (read["resultType"], read["ttlMs"], read["cacheScope"]) == ("complete", 0, "public")


# -- tool calls ---------------------------------------------------------------------------------


async def test_tool_results_and_errors() -> None:
    server = MockServer()

    @server.tool
    async def structured(ctx: ToolContext) -> dict[str, Any]:
        return {"answer": 42}

    @server.tool
    async def failing(ctx: ToolContext) -> str:
        raise ToolError("the tool failed")

    @server.tool
    async def broken(ctx: ToolContext) -> str:
        raise ValueError("boom")

    @server.tool
    def sync_tool(ctx: ToolContext, n: int) -> list[dict[str, Any]]:
        return [{"type": "text", "text": str(n * 2)}]

    async with connect(server) as wire:
        await wire.initialize()
        result = await wire.call("tools/call", {"name": "structured"})
        assert result["structuredContent"] == {"answer": 42}
        failed = await wire.call("tools/call", {"name": "failing"})
        assert failed == {"content": [{"type": "text", "text": "the tool failed"}], "isError": True}
        error = await wire.error("tools/call", {"name": "broken"})
        assert error["code"] == -32603
        assert "boom" in error["message"]
        assert (await wire.call("tools/call", {"name": "sync_tool", "arguments": {"n": 4}}))[
            "content"
        ][0]["text"] == "8"
        unknown = await wire.error("tools/call", {"name": "nope"})
        assert (unknown["code"], unknown["message"]) == (-32602, "Unknown tool: nope")
        missing = await wire.error("tools/call", {"name": "sync_tool", "arguments": {}})
        assert missing["code"] == -32602
        assert "Missing required property 'n'" in missing["message"]
        extra = await wire.error("tools/call", {"name": "sync_tool", "arguments": {"n": 1, "x": 2}})
        assert extra["code"] == -32602
    async with connect(server) as wire:
        modern = await wire.call("tools/call", {"_meta": meta(), "name": "failing"})
        assert modern["resultType"] == "complete"
        assert modern["isError"] is True
        assert "ttlMs" not in modern


async def test_call_with_progress(autojump_clock: trio.testing.MockClock) -> None:
    server = demo_server()
    async with connect(server) as wire:
        await wire.initialize()
        start = trio.current_time()
        request_id = await wire.request(
            "tools/call",
            {
                "name": "slow",
                "arguments": {"seconds": 2, "steps": 4},
                "_meta": {"progressToken": "p1"},
            },
        )
        response = await wire.response(request_id)
        assert trio.current_time() - start == pytest.approx(2.0)
        assert response["result"]["content"][0]["text"] == "slept 2 seconds"
        progress = [n["params"] for n in wire.notifications]
        assert [p["progress"] for p in progress] == [1, 2, 3, 4]
        assert all(p["progressToken"] == "p1" and p["total"] == 4 for p in progress)
        assert progress[0]["message"] == "step 1 of 4"
        wire.notifications.clear()
        quiet = await wire.call("tools/call", {"name": "slow", "arguments": {"seconds": 1}})
        assert quiet["content"][0]["text"] == "slept 1 seconds"
        assert wire.notifications == []


async def test_cancellation_is_recorded_and_unanswered() -> None:
    server = MockServer()
    started = trio.Event()
    cancelled = trio.Event()

    @server.tool
    async def hang(ctx: ToolContext) -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            assert ctx.cancelled
            cancelled.set()
        return "never"  # pragma: no cover

    async with connect(server) as wire:
        await wire.initialize()
        call_id = await wire.request("tools/call", {"name": "hang"})
        await started.wait()
        await wire.notify("notifications/cancelled", {"requestId": call_id, "reason": "test"})
        await cancelled.wait()
        assert server.cancelled == [call_id]
        # The next message is the ping's answer: the cancelled call was never answered.
        ping_id = await wire.request("ping")
        assert (await wire.receive())["id"] == ping_id
        # Cancelling something unknown is recorded and otherwise ignored.
        await wire.notify("notifications/cancelled", {"requestId": 999})
        await server.wait_for_message("notifications/cancelled", count=2)
        assert server.cancelled == [call_id, 999]


async def test_thousand_concurrent_calls() -> None:
    server = MockServer()
    count = 1000
    started = 0
    all_started = trio.Event()

    @server.tool
    async def gather(ctx: ToolContext, n: int) -> str:
        nonlocal started
        started += 1
        if started == count:
            all_started.set()
        await all_started.wait()  # every call is in flight at once, or this never returns
        return str(n)

    begin = time.perf_counter()
    with trio.fail_after(30):
        async with connect(server) as wire:
            await wire.initialize()
            for n in range(count):
                await wire.request("tools/call", {"name": "gather", "arguments": {"n": n}}, id=n)
            answers: dict[int, str] = {}
            while len(answers) < count:
                message = await wire.receive()
                answers[message["id"]] = message["result"]["content"][0]["text"]
    assert answers == {n: str(n) for n in range(count)}
    assert time.perf_counter() - begin < 10


# -- server-to-client requests (legacy) ------------------------------------------------------------


async def test_legacy_server_to_client_round_trip() -> None:
    server = MockServer(eras="legacy")

    @server.tool
    async def ask(ctx: ToolContext) -> str:
        sampled = await ctx.sample({"messages": [], "maxTokens": 5})
        roots = await ctx.list_roots()
        refused = 0
        try:
            await ctx.elicit({"message": "name?", "requestedSchema": {"type": "object"}})
        except ClientRequestError as exc:
            refused = exc.code
        return f"{sampled['content']['text']}|{len(roots['roots'])}|{refused}"

    async with connect(server) as wire:
        await wire.initialize()
        call_id = await wire.request("tools/call", {"name": "ask"})
        sample = await wire.receive()
        assert sample["method"] == "sampling/createMessage"
        assert sample["params"] == {"messages": [], "maxTokens": 5}
        assert sample["id"] != call_id or isinstance(sample["id"], int)
        await wire.send(
            {
                "jsonrpc": "2.0",
                "id": sample["id"],
                "result": {"role": "assistant", "content": {"type": "text", "text": "hi"}},
            }
        )
        roots = await wire.receive()
        assert roots["method"] == "roots/list"
        assert roots["id"] != sample["id"]
        await wire.send(
            {"jsonrpc": "2.0", "id": roots["id"], "result": {"roots": [{"uri": "file:///"}]}}
        )
        elicit = await wire.receive()
        assert elicit["method"] == "elicitation/create"
        await wire.send(
            {"jsonrpc": "2.0", "id": elicit["id"], "error": {"code": -1, "message": "declined"}}
        )
        response = await wire.response(call_id)
        assert response["result"]["content"][0]["text"] == "hi|1|-1"
        # Outside any tool call too:
        async with trio.open_nursery() as nursery:
            results: list[dict[str, Any]] = []

            async def ping_client() -> None:
                results.append(await server.request_client("ping"))

            nursery.start_soon(ping_client)
            ping = await wire.receive()
            assert ping["method"] == "ping"
            await wire.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
        assert results == [{}]


async def test_legacy_cancelling_tool_cancels_its_client_request() -> None:
    server = MockServer(eras="legacy")

    @server.tool
    async def ask(ctx: ToolContext) -> str:
        return str(await ctx.sample({"messages": [], "maxTokens": 1}))

    async with connect(server) as wire:
        await wire.initialize()
        call_id = await wire.request("tools/call", {"name": "ask"})
        sample = await wire.receive()
        await wire.notify("notifications/cancelled", {"requestId": call_id})
        announced = await wire.receive()
        assert announced["method"] == "notifications/cancelled"
        assert announced["params"]["requestId"] == sample["id"]


async def test_legacy_logging_and_list_changed() -> None:
    server = demo_server("legacy")
    async with connect(server) as wire:
        await wire.initialize()
        await wire.call(
            "tools/call", {"name": "log", "arguments": {"level": "info", "message": "a"}}
        )
        assert [n["params"]["data"] for n in wire.notifications] == ["a"]
        assert (await wire.call("logging/setLevel", {"level": "warning"})) == {}
        await wire.call(
            "tools/call", {"name": "log", "arguments": {"level": "info", "message": "b"}}
        )
        await wire.call(
            "tools/call", {"name": "log", "arguments": {"level": "error", "message": "c"}}
        )
        assert [n["params"]["data"] for n in wire.notifications] == ["a", "c"]
        assert wire.notifications[-1]["params"]["logger"] == "demo"
        assert (await wire.error("logging/setLevel", {"level": "loud"}))["code"] == -32602

        await server.notify_tools_changed()
        assert await wire.receive() == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
        }
        await server.notify_resource_updated("demo://readme")  # not subscribed: nothing
        assert await wire.call("resources/subscribe", {"uri": "demo://readme"}) == {}
        await server.notify_resource_updated("demo://readme")
        updated = await wire.receive()
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"] == {"uri": "demo://readme"}


# -- modern: MRTR ---------------------------------------------------------------------------------


def mrtr_server() -> tuple[MockServer, list[int]]:
    server = MockServer(eras="modern")
    rounds: list[int] = []

    @server.tool
    async def book(ctx: ToolContext, city: str) -> str:
        rounds.append(ctx.round)
        answer = await ctx.elicit({"message": "Who?", "requestedSchema": {"type": "object"}})
        sampled = await ctx.sample({"messages": [], "maxTokens": 5})
        return f"{city}:{answer['content']['name']}:{sampled['content']['text']}"

    @server.tool
    async def both(ctx: ToolContext) -> str:
        got = await ctx.input_many(
            {"a": {"method": "roots/list"}, "b": {"method": "roots/list", "params": {}}}
        )
        return f"{len(got['a']['roots'])}{len(got['b']['roots'])}"

    return server, rounds


async def test_modern_mrtr_round_trip() -> None:
    server, rounds = mrtr_server()
    elicited = {"action": "accept", "content": {"name": "Ann"}}
    sampled = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
    async with connect(server) as wire:
        base = {"_meta": meta(), "name": "book", "arguments": {"city": "Oslo"}}
        first = await wire.call("tools/call", base)
        assert first["resultType"] == "input_required"
        assert first["inputRequests"] == {
            "input-1": {
                "method": "elicitation/create",
                "params": {"message": "Who?", "requestedSchema": {"type": "object"}},
            }
        }
        assert "ttlMs" not in first
        state1 = first["requestState"]
        assert isinstance(state1, str)

        second = await wire.call(
            "tools/call", {**base, "inputResponses": {"input-1": elicited}, "requestState": state1}
        )
        assert second["resultType"] == "input_required"
        assert list(second["inputRequests"]) == ["input-2"]
        assert second["inputRequests"]["input-2"]["method"] == "sampling/createMessage"
        state2 = second["requestState"]
        assert state2 != state1

        final = await wire.call(
            "tools/call",
            {
                **base,
                "inputResponses": {"input-1": elicited, "input-2": sampled},
                "requestState": state2,
            },
        )
        assert final["resultType"] == "complete"
        assert final["content"] == [{"type": "text", "text": "Oslo:Ann:ok"}]
        assert server.request_states_seen == [state1, state2]
        assert rounds == [0, 1, 2]  # re-executed from the start on every round

        tampered = await wire.error(
            "tools/call",
            {**base, "inputResponses": {"input-1": elicited}, "requestState": state1 + "x"},
        )
        assert tampered["code"] == -32602
        wrong_tool = await wire.error(
            "tools/call", {"_meta": meta(), "name": "both", "requestState": state1}
        )
        assert wrong_tool["code"] == -32602
        assert server.request_states_seen == [state1, state2, state1 + "x", state1]


async def test_modern_input_many_and_capabilities() -> None:
    server, _ = mrtr_server()
    async with connect(server) as wire:
        first = await wire.call("tools/call", {"_meta": meta(), "name": "both"})
        assert first["inputRequests"] == {
            "a": {"method": "roots/list"},
            "b": {"method": "roots/list", "params": {}},
        }
        roots = {"roots": [{"uri": "file:///a"}]}
        done = await wire.call(
            "tools/call",
            {
                "_meta": meta(),
                "name": "both",
                "inputResponses": {"a": roots, "b": {"roots": []}},
                "requestState": first["requestState"],
            },
        )
        assert done["content"][0]["text"] == "10"
        lacking = await wire.error(
            "tools/call",
            {"_meta": meta(capabilities={}), "name": "book", "arguments": {"city": "x"}},
        )
        assert lacking["code"] == -32021
        assert lacking["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_modern_concurrent_keyed_inputs_in_one_round() -> None:
    server = MockServer(eras="modern")

    @server.tool
    async def pair(ctx: ToolContext) -> str:
        answers: dict[str, Any] = {}

        async def ask(key: str) -> None:
            answers[key] = await ctx.elicit({"message": key}, key=key)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "left")
            nursery.start_soon(ask, "right")
        return answers["left"]["action"] + answers["right"]["action"]

    async with connect(server) as wire:
        first = await wire.call("tools/call", {"_meta": meta(), "name": "pair"})
        assert first["resultType"] == "input_required"
        assert set(first["inputRequests"]) == {"left", "right"}
        final = await wire.call(
            "tools/call",
            {
                "_meta": meta(),
                "name": "pair",
                "inputResponses": {"left": {"action": "accept"}, "right": {"action": "decline"}},
                "requestState": first["requestState"],
            },
        )
        assert final["content"][0]["text"] == "acceptdecline"


async def test_modern_mrtr_on_prompts_and_resources() -> None:
    server = MockServer(eras="modern")

    async def prompt(ctx: ToolContext, topic: str) -> str:
        roots = await ctx.list_roots()
        return f"{topic} in {roots['roots'][0]['uri']}"

    async def read(ctx: ToolContext, uri: str, name: str) -> bytes:
        await ctx.list_roots()
        return name.encode()

    server.add_prompt("explain", prompt, ["topic"])
    server.add_resource_template("mem://{name}", "mem", read)
    roots = {"roots": [{"uri": "file:///w"}]}
    async with connect(server) as wire:
        base = {"_meta": meta(), "name": "explain", "arguments": {"topic": "trio"}}
        first = await wire.call("prompts/get", base)
        assert first["inputRequests"] == {"input-1": {"method": "roots/list"}}
        done = await wire.call(
            "prompts/get",
            {**base, "inputResponses": {"input-1": roots}, "requestState": first["requestState"]},
        )
        assert done["messages"][0]["content"]["text"] == "trio in file:///w"
        read_first = await wire.call("resources/read", {"_meta": meta(), "uri": "mem://x"})
        assert read_first["resultType"] == "input_required"
        # A prompt's requestState is no good for a resource read.
        stolen = await wire.error(
            "resources/read",
            {"_meta": meta(), "uri": "mem://x", "requestState": first["requestState"]},
        )
        assert stolen["code"] == -32602
        read_done = await wire.call(
            "resources/read",
            {
                "_meta": meta(),
                "uri": "mem://x",
                "inputResponses": {"input-1": roots},
                "requestState": read_first["requestState"],
            },
        )
        assert read_done["contents"] == [{"uri": "mem://x", "blob": "eA=="}]
        assert read_done["ttlMs"] == 0


def test_schema_inference_survives_unresolvable_annotations() -> None:
    server = MockServer()
    namespace: dict[str, Any] = {}
    exec(  # an annotation that only exists for type checkers
        "async def tool(ctx: 'MissingContext', text: 'str', n: 'int | None' = None) -> str:\n"
        "    return text\n",
        namespace,
    )
    server.tool(namespace["tool"])
    schema = server._state.tools["tool"].definition["inputSchema"]
    assert schema == {
        "type": "object",
        "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["text"],
    }


# -- modern: discovery, versions, logging ---------------------------------------------------


async def test_discover_modern_and_dual_era() -> None:
    modern = echo_server("modern")
    modern.cache_hints = {"server/discover": (3_600_000, "public")}
    modern.instructions = "Be nice."
    async with connect(modern) as wire:
        result = await wire.call("server/discover", {"_meta": meta()})
    assert result == {
        "supportedVersions": [MODERN],
        "capabilities": {"logging": {}, "tools": {"listChanged": True}},
        "instructions": "Be nice.",
        "resultType": "complete",
        "_meta": {SERVER_INFO: {"name": "mock", "version": "1.0"}},
        "ttlMs": 3_600_000,
        "cacheScope": "public",
    }
    assert modern.client_info == {"name": "raw-test-client", "version": "0.0.1"}
    assert modern.protocol_version == MODERN

    dual = echo_server("both")
    async with connect(dual) as wire:
        result = await wire.call("server/discover", {"_meta": meta()})
        assert result["supportedVersions"] == [
            MODERN,
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05",
        ]
        wrong = await wire.error("tools/list", {"_meta": {**meta(), PV: "1900-01-01"}})
        assert wrong["code"] == -32022
        assert wrong["data"]["requested"] == "1900-01-01"
        assert MODERN in wrong["data"]["supported"]
        # A modern request works before any initialize; initialize then selects legacy.
        assert (await wire.call("tools/list", {"_meta": meta()}))["resultType"] == "complete"
        await wire.initialize()
        legacy = await wire.call("tools/list", {"_meta": meta()})
        assert "resultType" not in legacy
        assert (await wire.error("server/discover", {"_meta": meta()}))["code"] == -32601


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("method_not_found", -32601),
        ("invalid_params", -32602),
        ("invalid_request", -32600),
        ("unsupported_version", -32022),
    ],
)
async def test_discover_scripted_errors(mode: Any, code: int) -> None:
    server = echo_server("legacy")
    server.respond_to_discover = mode
    async with connect(server) as wire:
        error = await wire.error("server/discover", {"_meta": meta()})
    assert error["code"] == code
    if mode == "unsupported_version":
        assert error["data"]["requested"] == MODERN
        assert error["data"]["supported"] == [
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05",
        ]


async def test_discover_defaults_and_silence() -> None:
    assert MockServer(eras="legacy").respond_to_discover == "method_not_found"
    assert MockServer(eras="both").respond_to_discover == "result"
    server = echo_server("legacy")
    server.respond_to_discover = "silent"
    async with connect(server) as wire:
        discover_id = await wire.request("server/discover", {"_meta": meta()})
        ping_id = await wire.request("ping")
        assert (await wire.receive())["id"] == ping_id
        assert discover_id != ping_id
        await wire.initialize()  # the fallback works after a silent probe
    server.respond_to_discover = "result"
    async with connect(server) as wire:
        result = await wire.call("server/discover", {"_meta": meta()})
        assert result["supportedVersions"] == server.legacy_versions


async def test_modern_unsupported_versions_configurable() -> None:
    server = echo_server("modern")
    server.supported_versions = ["2027-01-01"]
    async with connect(server) as wire:
        error = await wire.error("tools/list", {"_meta": meta()})
    assert error == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2027-01-01"], "requested": MODERN},
    }


async def test_modern_logging_is_per_request() -> None:
    server = demo_server("modern")
    async with connect(server) as wire:
        args = {"level": "info", "message": "hello"}
        await wire.call("tools/call", {"_meta": meta(), "name": "log", "arguments": args})
        assert wire.notifications == []
        await wire.call(
            "tools/call",
            {
                "_meta": meta(log_level="warning"),
                "name": "log",
                "arguments": args,
            },
        )
        assert wire.notifications == []
        await wire.call(
            "tools/call",
            {
                "_meta": meta(log_level="debug"),
                "name": "log",
                "arguments": args,
            },
        )
        assert [n["params"] for n in wire.notifications] == [
            {"level": "info", "data": "hello", "logger": "demo"}
        ]
        bad = await wire.error("tools/list", {"_meta": meta(log_level="loud")})
        assert bad["code"] == -32602


# -- modern: subscriptions/listen ----------------------------------------------------------------


async def test_listen_acknowledges_and_tags_notifications() -> None:
    server = echo_server("modern")
    server.add_resource("demo://a", text="a")
    async with connect(server) as wire:
        await wire.request(
            "subscriptions/listen",
            {
                "_meta": meta(),
                "notifications": {
                    "toolsListChanged": True,
                    "promptsListChanged": True,  # no prompts: not honoured
                    "resourceSubscriptions": ["demo://a"],
                },
            },
            id="listen-1",
        )
        ack = await wire.receive()
        assert ack == {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "_meta": {SUB: "listen-1"},
                "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["demo://a"]},
            },
        }
        await server.notify_prompts_changed()  # not honoured
        await server.notify_resource_updated("demo://other")  # not subscribed
        await server.notify_tools_changed()
        await server.notify_resource_updated("demo://a")
        assert await wire.receive() == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUB: "listen-1"}},
        }
        assert await wire.receive() == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"_meta": {SUB: "listen-1"}, "uri": "demo://a"},
        }
        await wire.notify("notifications/cancelled", {"requestId": "listen-1"})
        await server.wait_for_message("notifications/cancelled")
        assert server.subscriptions_ended == ["listen-1"]
        assert server.cancelled == []
        await server.notify_tools_changed()  # the stream is gone: nothing is sent
        listed = await wire.request("tools/list", {"_meta": meta()})
        message = await wire.receive()
        assert message["id"] == listed


async def test_listen_graceful_end_and_bad_filter() -> None:
    server = echo_server("modern")
    async with connect(server) as wire:
        listen_id = await wire.request(
            "subscriptions/listen", {"_meta": meta(), "notifications": {"toolsListChanged": True}}
        )
        assert (await wire.receive())["method"] == "notifications/subscriptions/acknowledged"
        await server.end_subscriptions()
        closed = await wire.receive()
        assert closed["id"] == listen_id
        assert closed["result"]["resultType"] == "complete"
        assert closed["result"]["_meta"][SUB] == listen_id
        assert (await wire.error("subscriptions/listen", {"_meta": meta()}))["code"] == -32602


# -- crashes ---------------------------------------------------------------------------------------


async def test_tool_crash_ends_the_stream() -> None:
    server = MockServer()
    hung = trio.Event()

    @server.tool
    async def hang(ctx: ToolContext) -> str:
        hung.set()
        await trio.sleep_forever()
        return "never"  # pragma: no cover

    @server.tool
    async def die(ctx: ToolContext) -> str:
        await ctx.progress(1)
        raise ServerCrash("bye")

    async with connect(server) as wire:
        await wire.initialize()
        await wire.request("tools/call", {"name": "hang"})
        await hung.wait()
        await wire.request("tools/call", {"name": "die", "_meta": {"progressToken": 7}})
        progress = await wire.receive()
        assert progress["method"] == "notifications/progress"
        with pytest.raises(trio.EndOfChannel):
            await wire.receive()
    assert server.crash_count == 1
    # The server can be connected to again after a crash.
    async with connect(server) as wire:
        assert (await wire.initialize())["protocolVersion"] == "2025-11-25"


async def test_scripted_crash() -> None:
    server = echo_server()
    async with connect(server) as wire:
        await wire.initialize()
        await server.crash()
        with pytest.raises(trio.EndOfChannel):
            await wire.receive()
    assert server.crash_count == 1


async def test_serve_on_a_raw_stream_ends_with_the_client() -> None:
    server = echo_server()
    client, stream = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, stream)
        await client.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
        reply = await client.receive()
        assert isinstance(reply, bytes)
        assert msgspec.json.decode(reply) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {},
        }
        await client.aclose()  # the server loop ends, so the nursery exits


# -- stdio -----------------------------------------------------------------------------------------


class StdioProcess:
    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process = process
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.buffer = b""

    async def send(self, message: dict[str, Any]) -> None:
        await self.stdin.send_all(msgspec.json.encode(message) + b"\n")

    async def receive(self) -> dict[str, Any] | None:
        while b"\n" not in self.buffer:
            chunk = await self.stdout.receive_some()
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message = msgspec.json.decode(line)
        assert isinstance(message, dict)
        return message


@asynccontextmanager
async def run_demo(era: str) -> AsyncIterator[StdioProcess]:
    """Run ``python -m trio_mcp.testing``; killed on the way out if still running."""
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            partial(
                trio.run_process,
                [sys.executable, "-m", "trio_mcp.testing", "--era", era],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=REPO,
                check=False,
            )
        )
        try:
            yield StdioProcess(process)
        finally:
            process.kill()


async def test_stdio_demo_answers_initialize() -> None:
    with trio.fail_after(60):
        async with run_demo("both") as io:
            await io.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"},
                    },
                }
            )
            init = await io.receive()
            assert init is not None
            assert init["result"]["protocolVersion"] == "2025-11-25"
            assert init["result"]["serverInfo"]["name"] == "trio-mcp-demo"
            await io.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await io.send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "über\nnewline"}},
                }
            )
            echo = await io.receive()
            assert echo is not None
            assert echo["result"]["content"][0]["text"] == "über\nnewline"
            await io.stdin.aclose()
            assert await io.receive() is None
            assert await io.process.wait() == 0


async def test_stdio_demo_modern_and_crash() -> None:
    with trio.fail_after(60):
        async with run_demo("modern") as io:
            await io.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "server/discover",
                    "params": {"_meta": meta()},
                }
            )
            discover = await io.receive()
            assert discover is not None
            assert discover["result"]["supportedVersions"] == [MODERN]
            await io.send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"_meta": meta(), "name": "crash"},
                }
            )
            assert await io.receive() is None
            assert await io.process.wait() == 1
            assert io.process.stderr is not None
            stderr = b""
            while chunk := await io.process.stderr.receive_some():
                stderr += chunk
            assert b"crashed" in stderr
