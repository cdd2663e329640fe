"""Sessions over Streamable HTTP against scripted HTTP servers (httpx.MockTransport).

Era detection over HTTP (modern request first, 4xx body inspection, 401/403 not a verdict),
the modern headers, session ids, and x-mcp-header mirroring, end to end through the session.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import trio

import trio_mcp
from trio_mcp._eras import era_cache
from trio_mcp._tools import ToolBook

URL = "http://mcp.test/mcp"
MODERN = "2026-07-28"

Handler = Callable[[httpx.Request, dict[str, Any]], httpx.Response]


@pytest.fixture(autouse=True)
def fresh_era_cache() -> None:
    era_cache.clear()


def rpc_result(message: dict[str, Any], result: Any, **headers: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return httpx.Response(200, json=body, headers=headers)


def rpc_error(
    message: dict[str, Any], status: int, code: int, text: str, data: Any = None
) -> httpx.Response:
    error: dict[str, Any] = {"code": code, "message": text}
    if data is not None:
        error["data"] = data
    return httpx.Response(status, json={"jsonrpc": "2.0", "id": message.get("id"), "error": error})


class Server:
    """Records requests and answers them with ``handler`` (notifications get 202)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[httpx.Request, dict[str, Any] | None]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            self.requests.append((request, None))
            return httpx.Response(405)
        message = json.loads(request.content)
        self.requests.append((request, message))
        if "id" not in message:
            return httpx.Response(202)
        return self.handler(request, message)

    def posts(self, method: str) -> list[httpx.Request]:
        return [r for r, m in self.requests if m is not None and m.get("method") == method]


def params(server: Server) -> trio_mcp.StreamableHTTPParameters:
    client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    return trio_mcp.StreamableHTTPParameters(URL, client=client)


DISCOVER = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "http-modern", "version": "1"}},
}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "http-legacy", "version": "1"},
}
TOOL_WITH_HEADER = {
    "name": "search",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "q": {"type": "string"},
        },
    },
}
TOOL_WITH_BAD_HEADER = {
    "name": "broken",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "object", "x-mcp-header": "Bad Header"}},
    },
}


def modern_handler(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
    method = message["method"]
    if method == "server/discover":
        return rpc_result(message, DISCOVER)
    if method == "tools/list":
        return rpc_result(message, {"resultType": "complete", "tools": [TOOL_WITH_HEADER, TOOL_WITH_BAD_HEADER],
                                    "ttlMs": 0, "cacheScope": "public"})  # fmt: skip
    if method == "tools/call":
        return rpc_result(
            message, {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
        )
    return rpc_error(message, 400, -32601, "no")


async def test_modern_server_over_http_headers_and_param_mirroring(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server(modern_handler)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(server)) as session:
            assert session.era == "modern"
            assert session.server_info is not None and session.server_info.name == "http-modern"
            with caplog.at_level(logging.WARNING, logger="trio_mcp"):
                tools = await session.list_tools()
            assert [tool.name for tool in tools] == ["search"]  # the invalid one is dropped
            assert "broken" in caplog.text
            result = await session.call_tool("search", {"region": "eu-west", "q": "x"})
            assert result.text == "ok"
    call = server.posts("tools/call")[0]
    assert call.headers["mcp-protocol-version"] == MODERN
    assert call.headers["mcp-method"] == "tools/call"
    assert call.headers["mcp-name"] == "search"
    assert call.headers["mcp-param-region"] == "eu-west"
    assert "mcp-session-id" not in call.headers
    assert not server.posts("initialize")


def legacy_handler(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
    method = message["method"]
    if method == "initialize":
        return rpc_result(message, INIT, **{"Mcp-Session-Id": "s-123"})
    if "mcp-session-id" not in request.headers:
        return rpc_error(message, 400, -32000, "Bad Request: Server not initialized")
    if method == "tools/call":
        return rpc_result(message, {"content": [{"type": "text", "text": "legacy ok"}]})
    return rpc_error(message, 400, -32601, "no")


async def test_legacy_server_over_http_after_4xx_probe() -> None:
    server = Server(legacy_handler)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(server)) as session:
            assert session.era == "legacy"
            assert session.protocol_version == "2025-11-25"
            assert (await session.call_tool("x", {})).text == "legacy ok"
    call = server.posts("tools/call")[0]
    assert call.headers["mcp-session-id"] == "s-123"
    assert call.headers["mcp-protocol-version"] == "2025-11-25"
    assert [r.method for r, _ in server.requests if r.method == "DELETE"] == ["DELETE"]
    assert era_cache["http://mcp.test:80"] == "legacy"


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_are_not_an_era_verdict(status: int) -> None:
    def deny(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return httpx.Response(status, text="unauthorized")

    server = Server(deny)
    async with trio.open_nursery() as nursery:
        with pytest.raises(trio_mcp.HTTPStatusError) as info:
            async with trio_mcp.open_mcp_session(nursery, params(server)):
                pass  # pragma: no cover
    assert info.value.status_code == status
    assert not server.posts("initialize")


async def test_modern_error_body_on_400_means_modern_retry() -> None:
    def picky(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        if message["method"] == "server/discover" and len(server.posts("server/discover")) == 1:
            return rpc_error(message, 400, -32022, "Unsupported protocol version",
                             {"supported": [MODERN], "requested": "x"})  # fmt: skip
        return modern_handler(request, message)

    server = Server(picky)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(server)) as session:
            assert session.era == "modern"
    assert len(server.posts("server/discover")) == 2
    assert not server.posts("initialize")


async def test_http_error_fails_only_the_request_that_caused_it() -> None:
    def flaky(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        if message["method"] == "tools/call" and message["params"]["name"] == "boom":
            return httpx.Response(500, text="internal kaboom")
        return modern_handler(request, message)

    server = Server(flaky)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(server)) as session:
            with pytest.raises(trio_mcp.HTTPStatusError) as info:
                await session.call_tool("boom", {})
            assert (info.value.status_code, info.value.body) == (500, "internal kaboom")
            assert (await session.call_tool("fine", {})).text == "ok"


async def test_json_rpc_error_in_a_400_body_is_a_server_error() -> None:
    def invalid(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        if message["method"] == "tools/call":
            return rpc_error(message, 400, -32602, "Unknown tool: nope")
        return modern_handler(request, message)

    server = Server(invalid)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(server)) as session:
            with pytest.raises(trio_mcp.ServerError) as info:
                await session.call_tool("nope", {})
            assert info.value.code == -32602


async def test_messages_are_routed_without_the_reader_and_in_its_context() -> None:
    """While the reader is idle, the task that read a response routes it itself (one task
    switch fewer); handlers still run in the reader's context, whoever routes."""
    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="session")

    def handler(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        if message["method"] != "tools/call":
            return modern_handler(request, message)
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "hi"}}  # fmt: skip
        answer = {"jsonrpc": "2.0", "id": message["id"],
                  "result": {"resultType": "complete", "content": []}}  # fmt: skip
        stream = "".join(f"data: {json.dumps(m)}\n\n" for m in (note, answer))
        return httpx.Response(200, text=stream, headers={"content-type": "text/event-stream"})

    class Steps(trio.abc.Instrument):
        def __init__(self) -> None:
            self.names: list[str] = []

        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            self.names.append(task.name)

    seen: list[str] = []
    steps = Steps()
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(Server(handler))) as session:
            session.add_notification_handler(
                "notifications/message", lambda n: seen.append(where.get())
            )
            where.set("caller")
            await session.call_tool("t")  # (the reader is idle from here on)
            trio.lowlevel.add_instrument(steps)
            try:
                await session.call_tool("t")
            finally:
                trio.lowlevel.remove_instrument(steps)
    assert seen == ["session", "session"]
    assert "trio_mcp reader" not in steps.names
    assert any(name.startswith("trio_mcp POST") for name in steps.names)


async def test_an_unchanged_listing_keeps_its_header_verdicts_without_a_recheck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listings = [[TOOL_WITH_HEADER, TOOL_WITH_BAD_HEADER]] * 2 + [[TOOL_WITH_BAD_HEADER]]

    def handler(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        if message["method"] == "tools/list":
            return rpc_result(message, {"resultType": "complete", "tools": listings.pop(0)})
        return modern_handler(request, message)

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(Server(handler))) as session:
            checks: list[int] = []
            real = ToolBook.checked_tool_headers

            def counting(
                book: ToolBook, tools: list[trio_mcp.Tool], *, more: bool = False
            ) -> list[trio_mcp.Tool]:
                checks.append(len(tools))
                return real(book, tools, more=more)

            monkeypatch.setattr(ToolBook, "checked_tool_headers", counting)
            for _ in range(2):
                first = await session.list_tools(cache=False)
                assert [tool.name for tool in first] == ["search"]  # "broken" dropped again
                first.clear()  # the caller owns the list it got
            assert checks == [2]  # the second, identical listing was not checked again
            assert await session.list_tools(cache=False) == []
            assert checks == [2, 1]
            result = await session.call_tool("search", {"region": "eu", "q": "x"})
            assert result.text == "ok"


async def test_paging_by_hand_applies_the_header_rules_page_by_page(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """list_tools_page drops an invalid x-mcp-header tool and records the valid ones of
    every page, so calls carry their Mcp-Param headers; list_tools checks afresh after."""
    pages = {
        None: {"tools": [TOOL_WITH_HEADER], "nextCursor": "2"},
        "2": {"tools": [TOOL_WITH_BAD_HEADER, {**TOOL_WITH_HEADER, "name": "find"}]},
    }

    def handler(request: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        if message["method"] == "tools/list":
            page = pages[(message.get("params") or {}).get("cursor")]
            return rpc_result(message, {"resultType": "complete", **page})
        return modern_handler(request, message)

    server = Server(handler)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params(server)) as session:
            first = await session.list_tools_page()
            assert [tool.name for tool in first.tools] == ["search"]
            assert first.next_cursor == "2"
            with caplog.at_level(logging.WARNING, logger="trio_mcp"):
                second = await session.list_tools_page("2")
            assert [tool.name for tool in second.tools] == ["find"]  # "broken" dropped
            assert "broken" in caplog.text
            await session.call_tool("search", {"region": "eu", "q": "x"})
            await session.call_tool("find", {"region": "us", "q": "x"})
            assert [tool.name for tool in await session.list_tools()] == ["search", "find"]
            await session.call_tool("find", {"region": "ap", "q": "x"})
    calls = server.posts("tools/call")
    assert [call.headers.get("mcp-param-region") for call in calls] == ["eu", "us", "ap"]
