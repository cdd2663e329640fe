"""A floor over Streamable HTTP: raw h11 on trio sockets, msgspec decoding.

The physical limit of an HTTP/1.1 MCP client in Python on trio: no httpx, no httpcore.
A stack of idle keep-alive connections (a request takes the most recently used one, or
opens a new one while fewer than ``MAX_CONNECTIONS`` exist, or waits for one in trio's
FIFO), one ``h11.Connection`` per socket, the request written with one ``send_all``, the
answer read whole and decoded like the httpx floor (JSON or a one-event SSE body). Same
MCP behaviour as ``httpx_floor_client.py``: legacy handshake, no GET stream, no retries.

Run through ``bench/run.py`` (or ``python bench/_worker.py h11_floor WORKLOAD --transport http``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import h11
import trio
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

NAME = "h11_floor"
MAX_CONNECTIONS = 100
_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def decode_body(content_type: str, body: bytes) -> bytes:
    """The JSON-RPC message in a JSON body or a one-event SSE body."""
    if content_type.startswith("text/event-stream"):
        for line in body.split(b"\n"):
            if line.startswith(b"data:"):
                return line[5:].lstrip(b" ")
        raise ServerError(-32000, "no data in the event stream")
    return body


class _Conn:
    __slots__ = ("h11", "stream")

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)


class H11Pool:
    """Keep-alive HTTP/1.1 connections to one host."""

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._idle: list[_Conn] = []
        self._slots = trio.Semaphore(MAX_CONNECTIONS)

    async def post(
        self, path: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, dict[bytes, bytes], bytes]:
        """One POST: status, headers (lower-case names), whole body."""
        await self._slots.acquire()
        try:
            conn = (
                self._idle.pop()
                if self._idle
                else _Conn(await trio.open_tcp_stream(self._host, self._port))
            )
            h = conn.h11
            req = h11.Request(
                method="POST",
                target=path,
                headers=[*headers, (b"content-length", str(len(body)).encode())],
            )
            await conn.stream.send_all(
                h.send(req) + h.send(h11.Data(data=body)) + h.send(h11.EndOfMessage())
            )
            status, got, chunks = 0, {}, []
            while True:
                event = h.next_event()
                if event is h11.NEED_DATA:
                    data = await conn.stream.receive_some(1 << 20)
                    h.receive_data(data)
                    if not data and h.their_state is not h11.DONE:
                        raise ServerError(-32000, "connection closed")
                    continue
                if isinstance(event, h11.Response):
                    status, got = event.status_code, dict(event.headers)
                elif isinstance(event, h11.Data):
                    chunks.append(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    break
            if h.our_state is h11.DONE and h.their_state is h11.DONE:
                h.start_next_cycle()
                self._idle.append(conn)
            else:
                await conn.stream.aclose()
            return status, got, chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        """Closes every idle connection."""
        for conn in self._idle:
            await conn.stream.aclose()
        self._idle.clear()


class H11FloorSession:
    """One MCP session over an :class:`H11Pool`."""

    def __init__(self, pool: H11Pool, host: str, path: str) -> None:
        self._pool = pool
        self._path = path
        self._next_id = 1
        self._headers = [
            (b"host", host.encode()),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
        ]

    async def request(self, method: str, params: Any, kind: type[Any]) -> Any:
        """Posts one request and decodes its result into ``kind``."""
        rid = self._next_id
        self._next_id = rid + 1
        _status, headers, body = await self._pool.post(
            self._path, self._headers, _encode(Request("2.0", rid, method, params))
        )
        if method == "initialize" and b"mcp-session-id" in headers:
            self._headers.append((b"mcp-session-id", headers[b"mcp-session-id"]))
            self._headers.append((b"mcp-protocol-version", PROTOCOL_VERSION.encode()))
        env = _decoder(Envelope)(decode_body(headers.get(b"content-type", b"").decode(), body))
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
                client_info=Implementation(name="bench-h11-floor", version="1"),
            ),
            dict,
        )
        await self._pool.post(self._path, self._headers, _INITIALIZED)


@asynccontextmanager
async def open_session(url: str) -> AsyncIterator[H11FloorSession]:
    """Initializes, yields the session, closes the connections."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    pool = H11Pool(parts.hostname, parts.port)
    try:
        session = H11FloorSession(pool, parts.netloc, parts.path or "/")
        await session.initialize()
        yield session
    finally:
        await pool.aclose()


# ----------------------------------------------------------------- benchmark adapter API


def runtime() -> Any:
    """The event-loop runtime the worker drives this client with."""
    from _runtime import TrioRuntime

    return TrioRuntime()


async def call_tool(session: H11FloorSession, name: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool; returns the typed result."""
    return await session.call_tool(name, arguments)


def result_text(result: CallToolResult) -> str:
    """The text of the first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def list_tools(session: H11FloorSession) -> list[Tool]:
    """Lists every tool as typed Structs."""
    return await session.list_tools()


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
