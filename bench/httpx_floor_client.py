"""A floor over Streamable HTTP: the smallest correct httpx + msgspec MCP client.

What a hand-written client on httpx costs, with nothing else: one shared
``httpx.AsyncClient`` (its default pool), one POST per request (``client.post``), the answer
read whole and decoded with msgspec, JSON or a single-event SSE body. Legacy handshake
(``initialize``, ``Mcp-Session-Id``, ``notifications/initialized``), no GET stream, no
retries, no DELETE, no cancellation, no validation beyond typed decoding. trio_mcp over
HTTP is compared with it (and with the raw h11 floor, ``h11_floor_client.py``).

Run through ``bench/run.py`` (or ``python bench/_worker.py httpx_floor WORKLOAD --transport http``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio  # noqa: F401  (the runtime: its import cost counts as the client's)
from floor_client import (
    PROTOCOL_VERSION,
    CallToolParams,
    CallToolResult,
    Envelope,
    Implementation,
    InitializeParams,
    ListToolsParams,
    ListToolsResult,
    Request,
    ServerError,
    TextContent,
    Tool,
    _decode_error,
    _decoder,
    _encode,
)
from msgspec import UnsetType

NAME = "httpx_floor"
_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def decode_body(content_type: str, body: bytes) -> bytes:
    """The JSON-RPC message in a JSON body or a one-event SSE body."""
    if content_type.startswith("text/event-stream"):
        for line in body.split(b"\n"):
            if line.startswith(b"data:"):
                return line[5:].lstrip(b" ")
        raise ServerError(-32000, "no data in the event stream")
    return body


class HttpxFloorSession:
    """One MCP session over an ``httpx.AsyncClient``."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self._client = client
        self._url = url
        self._next_id = 1
        self._headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }

    async def _post(self, body: bytes) -> httpx.Response:
        return await self._client.post(self._url, content=body, headers=self._headers)

    async def request(self, method: str, params: Any, kind: type[Any]) -> Any:
        """Posts one request and decodes its result into ``kind``."""
        rid = self._next_id
        self._next_id = rid + 1
        response = await self._post(_encode(Request("2.0", rid, method, params)))
        if method == "initialize":
            session_id = response.headers.get("mcp-session-id")
            if session_id:
                self._headers["Mcp-Session-Id"] = session_id
                self._headers["MCP-Protocol-Version"] = PROTOCOL_VERSION
        data = decode_body(response.headers.get("content-type", ""), response.content)
        env = _decoder(Envelope)(data)
        if env.error:
            err = _decode_error(env.error)
            raise ServerError(err.code, err.message)
        return _decoder(kind)(env.result)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Calls a tool."""
        return await self.request(  # type: ignore[no-any-return]
            "tools/call", CallToolParams(name=name, arguments=arguments), CallToolResult
        )

    async def list_tools(self) -> list[Tool]:
        """Lists every tool, following pagination."""
        tools: list[Tool] = []
        params = ListToolsParams()
        while True:
            page = await self.request("tools/list", params, ListToolsResult)
            tools.extend(page.tools)
            if isinstance(page.next_cursor, UnsetType):
                return tools
            params = ListToolsParams(cursor=page.next_cursor)

    async def initialize(self) -> None:
        """The legacy handshake."""
        await self.request(
            "initialize",
            InitializeParams(
                protocol_version=PROTOCOL_VERSION,
                capabilities={},
                client_info=Implementation(name="bench-httpx-floor", version="1"),
            ),
            dict,
        )
        await self._post(_INITIALIZED)


@asynccontextmanager
async def open_session(url: str) -> AsyncIterator[HttpxFloorSession]:
    """Opens a client, initializes, yields the session, closes the client."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), verify=False) as client:
        session = HttpxFloorSession(client, url)
        await session.initialize()
        yield session


# ----------------------------------------------------------------- benchmark adapter API


def runtime() -> Any:
    """The event-loop runtime the worker drives this client with."""
    from _runtime import TrioRuntime

    return TrioRuntime()


async def call_tool(session: HttpxFloorSession, name: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool; returns the typed result."""
    return await session.call_tool(name, arguments)


def result_text(result: CallToolResult) -> str:
    """The text of the first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def list_tools(session: HttpxFloorSession) -> list[Tool]:
    """Lists every tool as typed Structs."""
    return await session.list_tools()


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
