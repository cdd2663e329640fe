"""The benchmark adapter for fastmcp's client (``fastmcp==4.1.2``, ``nox -s bench`` only).

``fastmcp.Client(url)`` (Streamable HTTP, on the official SDK underneath), driven on
asyncio (fastmcp's own runtime), with ``call_tool(name, arguments)`` and ``list_tools()``.
HTTP only: ``bench/run.py`` runs it in the HTTP suites.

Run through ``bench/run.py`` (or ``python bench/_worker.py fastmcp WORKLOAD --transport http``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastmcp import Client

NAME = "fastmcp"


@asynccontextmanager
async def open_session(url: str) -> AsyncIterator[Client[Any]]:
    """Connects (initialize included), yields the client, disconnects."""
    async with Client(url) as client:
        yield client


def runtime() -> Any:
    """fastmcp runs on asyncio (through anyio)."""
    from _runtime import AnyioRuntime

    return AnyioRuntime("asyncio")


async def call_tool(client: Client[Any], name: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool; returns fastmcp's ``CallToolResult``."""
    return await client.call_tool(name, arguments)


def result_text(result: Any) -> str:
    """The text of the first content block."""
    return str(result.content[0].text)


async def list_tools(client: Client[Any]) -> list[Any]:
    """Lists every tool (the SDK's pydantic ``Tool`` models)."""
    return list(await client.list_tools())


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
