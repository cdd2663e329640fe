"""A hand-scripted raw JSON-RPC peer for engine tests: full control over every byte."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio

import trio_mcp
from trio_mcp._transports._memory import MemoryServerStream, memory_transport_pair

Handler = Callable[["RawPeer", dict[str, Any]], Awaitable[Any]]

LEGACY_INIT_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {"listChanged": True}, "logging": {}},
    "serverInfo": {"name": "raw", "version": "0.1"},
}


class RawPeer:
    """Answers requests with scripted handlers; records everything the client sent.

    A handler returns a result dict (sent as the response), or raises to send nothing.
    ``discover`` decides the answer to ``server/discover`` (default: method not found).
    """

    def __init__(self, stream: MemoryServerStream, **handlers: Handler) -> None:
        self.stream = stream
        self.handlers: dict[str, Handler] = {k.replace("__", "/"): v for k, v in handlers.items()}
        self.received: list[dict[str, Any]] = []
        self.cancelled: list[Any] = []
        self.init_result: dict[str, Any] = dict(LEGACY_INIT_RESULT)
        self.got_message = trio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        await self.stream.send(msgspec.json.encode(message))

    async def respond(self, request_id: Any, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        await self.send({"jsonrpc": "2.0", "id": request_id, "error": err})

    async def run(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                data = await self.stream.receive()
            except trio.EndOfChannel:
                return
            message = msgspec.json.decode(data)
            self.received.append(message)
            self.got_message.set()
            self.got_message = trio.Event()
            method = message.get("method")
            if method == "notifications/cancelled":
                self.cancelled.append(message["params"]["requestId"])
                continue
            if "id" not in message or method is None:
                continue
            nursery.start_soon(self._serve, message)

    async def _serve(self, message: dict[str, Any]) -> None:
        method = message["method"]
        handler = self.handlers.get(method)
        if handler is not None:
            try:
                result = await handler(self, message)
            except _NoAnswer:
                return
            await self.respond(message["id"], result)
        elif method == "initialize":
            await self.respond(message["id"], self.init_result)
        elif method == "ping":
            await self.respond(message["id"], {})
        else:
            await self.error(message["id"], -32601, f"Method not found: {method}")

    def sent(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method]


class _NoAnswer(Exception):
    pass


def no_answer() -> None:
    """Raise inside a handler to send no response at all."""
    raise _NoAnswer


async def hang(peer: RawPeer, message: dict[str, Any]) -> Any:
    await trio.sleep_forever()


@asynccontextmanager
async def connect(**handlers: Any) -> AsyncGenerator[tuple[trio_mcp.ClientSession, RawPeer], None]:
    """A session over the memory transport to a :class:`RawPeer` with these handlers.

    ``options=`` (a dict) is passed to :func:`trio_mcp.open_mcp_session`; every other keyword
    is a handler, named by method with ``/`` spelled ``__``.
    """
    options = handlers.pop("options", {})
    client, server = memory_transport_pair()
    peer = RawPeer(server, **handlers)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run, nursery)
        async with trio_mcp.open_mcp_session(nursery, client, **options) as session:
            yield session, peer
        await server.aclose()
        nursery.cancel_scope.cancel()
