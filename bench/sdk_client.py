"""The benchmark adapter for the official MCP Python SDK (``mcp==2.3.0``).

Uses ``mcp.client.stdio.stdio_client`` + ``mcp.client.session.ClientSession`` and the legacy
``initialize()`` handshake, the way the SDK's own stdio examples do. The SDK is written
against anyio; by default it runs on anyio's **trio** backend (the SDK works there, so
every client is driven by the same Trio workload code). Set ``BENCH_SDK_BACKEND=asyncio``
(``bench/run.py --sdk-backend asyncio``) to run it on asyncio, its most common deployment,
driven through anyio's task groups instead.

Run through ``bench/run.py`` (or ``python bench/_worker.py sdk WORKLOAD``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import trio  # the default backend; imported here so its cost counts as the SDK's
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

NAME = "sdk"
BACKEND = os.environ.get("BENCH_SDK_BACKEND", "trio")

del trio


@asynccontextmanager
async def open_session(target: list[str] | str) -> AsyncIterator[ClientSession]:
    """Starts the server (stdio) or connects to its URL (Streamable HTTP), initializes
    (legacy handshake), yields, closes."""
    if isinstance(target, str):
        from mcp.client.streamable_http import streamable_http_client

        # No SSE event limit (default 1 MiB): the blob workload sends 1 MiB results.
        async with streamable_http_client(target, max_sse_event_size=None) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
        return
    params = StdioServerParameters(command=target[0], args=list(target[1:]))
    async with stdio_client(params, errlog=sys.stderr) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def runtime() -> Any:
    """The runtime for the configured backend."""
    from _runtime import AnyioRuntime, TrioRuntime

    return TrioRuntime() if BACKEND == "trio" else AnyioRuntime(BACKEND)


async def call_tool(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool; returns the SDK's pydantic ``CallToolResult``."""
    return await session.call_tool(name, arguments)


def result_text(result: types.CallToolResult) -> str:
    """The text of the first content block."""
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def list_tools(session: ClientSession) -> list[types.Tool]:
    """Lists every tool (all pages) as pydantic ``Tool`` models."""
    tools: list[types.Tool] = []
    params: types.PaginatedRequestParams | None = None
    while True:
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        if page.next_cursor is None:
            return tools
        params = types.PaginatedRequestParams(cursor=page.next_cursor)


def codec_pair() -> tuple[Callable[[int, str, dict[str, Any]], bytes], Callable[[bytes], Any]]:
    """The SDK's own encode/decode path for one ``tools/call``, minus the I/O.

    Encode mirrors ``ClientSession.send_request`` + ``JSONRPCDispatcher.send_raw_request`` +
    the stdio writer: build the pydantic request, ``model_dump`` it, wrap it in a
    ``JSONRPCRequest`` and ``model_dump_json`` it. Decode mirrors the stdio reader +
    ``send_request``: ``jsonrpc_message_adapter.validate_json``, the per-version result
    validation, then the session's ``CallToolResult`` adapter.
    """
    from mcp_types import methods as _methods
    from pydantic import TypeAdapter

    try:
        from mcp.client.session import _CallToolResultAdapter as adapter
    except ImportError:  # pragma: no cover - other SDK versions
        adapter = TypeAdapter(types.CallToolResult)
    version = "2025-11-25"

    def encode(rid: int, name: str, arguments: dict[str, Any]) -> bytes:
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=name, arguments=arguments)
        )
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        msg = types.JSONRPCRequest(
            jsonrpc="2.0", id=rid, method=data["method"], params=dict(data["params"])
        )
        return (msg.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()

    def decode(line: bytes) -> Any:
        msg = types.jsonrpc_message_adapter.validate_json(line.decode(), by_name=False)
        raw = msg.result  # type: ignore[union-attr]
        _methods.validate_server_result("tools/call", version, raw)
        return adapter.validate_python(raw, by_name=False)

    return encode, decode


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
