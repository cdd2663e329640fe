"""The "channel floor": the floor client with trio_mcp's delivery design.

Identical to :mod:`floor_client` (same wire types, one reader task, coalesced writes by one
writer task, msgspec typed results) except for how a response reaches its caller: each
request opens its own ``trio.open_memory_channel(1)``; the reader hands the raw payload
over with ``send_nowait`` and the caller ``await``\\ s ``receive()``. That is the delivery
trio_mcp's product owners chose (one memory channel per request), so this is the floor its
stdio targets are measured against. The Event + slot floor (:mod:`floor_client`) stays in
the tables as the limit of any sleeping Trio client.

Run through ``bench/run.py`` (or ``python bench/_worker.py channel_floor WORKLOAD``).
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio
from floor_client import (
    PROTOCOL_VERSION,
    CallToolParams,
    CallToolResult,
    Implementation,
    InitializeParams,
    InitializeResult,
    ListToolsParams,
    ListToolsResult,
    Request,
    ServerError,
    TextContent,
    Tool,
    _decode_envelope,
    _decode_error,
    _decoder,
    _encode,
)
from msgspec import Raw, UnsetType

NAME = "channel_floor"

T = TypeVar("T")

# What the reader hands over: (is_error, raw payload).
_Delivery = tuple[bool, Raw]
_CLOSED: _Delivery = (True, Raw(b'{"code":-32000,"message":"connection closed"}'))
_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class ChannelFloorSession:
    """A minimal MCP client session; each response travels on its own memory channel."""

    def __init__(self, process: trio.Process) -> None:
        self._process = process
        self._pending: dict[int | str, trio.MemorySendChannel[_Delivery]] = {}
        self._next_id = 1
        self._send, self._receive = trio.open_memory_channel[bytes](float("inf"))
        self._closed = False

    async def request(self, method: str, params: Any, kind: type[T]) -> T:
        """Sends one request and decodes its result into ``kind``."""
        if self._closed:
            raise trio.ClosedResourceError
        rid = self._next_id
        self._next_id = rid + 1
        send, receive = trio.open_memory_channel[_Delivery](1)
        self._pending[rid] = send
        self._send.send_nowait(_encode(Request("2.0", rid, method, params)))
        try:
            with receive:
                is_error, payload = await receive.receive()
        finally:
            self._pending.pop(rid, None)
        if is_error:
            err = _decode_error(payload)
            raise ServerError(err.code, err.message)
        return _decoder(kind)(payload)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Calls a tool."""
        return await self.request(
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

    async def _initialize(self) -> InitializeResult:
        result = await self.request(
            "initialize",
            InitializeParams(
                protocol_version=PROTOCOL_VERSION,
                capabilities={},
                client_info=Implementation(name="bench-channel-floor", version="1"),
            ),
            InitializeResult,
        )
        self._send.send_nowait(_INITIALIZED)
        return result

    async def _writer(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        receive = self._receive
        async with stdin:
            async for first in receive:
                batch = [first]
                while True:
                    try:
                        batch.append(receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                batch.append(b"")
                await stdin.send_all(b"\n".join(batch))

    async def _reader(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        partial: list[bytes | bytearray] = []
        try:
            while True:
                data = await stdout.receive_some(1 << 20)
                if not data:
                    break
                if b"\n" not in data:
                    partial.append(data)
                    continue
                lines: list[bytes | bytearray] = list(data.split(b"\n"))
                if partial:
                    partial.append(lines[0])
                    lines[0] = b"".join(partial)
                    partial = []
                tail = lines.pop()
                if tail:
                    partial.append(tail)
                for line in lines:
                    if line:
                        self._dispatch(line)
        finally:
            self._closed = True
            for send in self._pending.values():
                try:
                    send.send_nowait(_CLOSED)
                except (trio.WouldBlock, trio.BrokenResourceError):
                    pass

    def _dispatch(self, line: bytes | bytearray) -> None:
        env = _decode_envelope(line)
        if env.method is not None:
            return  # server notification or request: the floor ignores them
        send = self._pending.pop(env.id, None) if env.id is not None else None
        if send is None:
            return
        try:
            send.send_nowait((True, env.error) if env.error else (False, env.result))
        except (trio.WouldBlock, trio.BrokenResourceError):
            pass  # the caller is gone (cancelled): drop the late answer

    async def _aclose(self) -> None:
        self._send.close()  # the writer flushes what is queued, then closes stdin
        with trio.move_on_after(5):
            await self._process.wait()
        if self._process.returncode is None:
            self._process.kill()
            await self._process.wait()


@asynccontextmanager
async def open_session(command: list[str]) -> AsyncIterator[ChannelFloorSession]:
    """Starts the server, initializes, yields the session, then closes it all."""
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        async with trio.open_nursery() as nursery:
            session = ChannelFloorSession(process)
            nursery.start_soon(session._reader)
            nursery.start_soon(session._writer)
            try:
                await session._initialize()
                yield session
            finally:
                with trio.CancelScope(shield=True):
                    await session._aclose()
                nursery.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()


# ----------------------------------------------------------------- benchmark adapter API


def runtime() -> Any:
    """The event-loop runtime the worker drives this client with."""
    from _runtime import TrioRuntime

    return TrioRuntime()


async def call_tool(session: ChannelFloorSession, name: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool; returns the typed result."""
    return await session.call_tool(name, arguments)


def result_text(result: CallToolResult) -> str:
    """The text of the first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def list_tools(session: ChannelFloorSession) -> list[Tool]:
    """Lists every tool as typed Structs."""
    return await session.list_tools()


def codec_pair() -> tuple[Callable[[int, str, dict[str, Any]], bytes], Callable[[bytes], Any]]:
    """Same codec as the floor (the delivery is the only difference)."""
    from floor_client import codec_pair as floor_codec_pair

    return floor_codec_pair()


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
