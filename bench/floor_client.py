"""The "floor": the smallest correct hand-written Trio + msgspec MCP client over stdio.

This is the physical limit of the design trio_mcp uses (one reader task, a dict of pending
ids, coalesced writes, msgspec typed decoding), with nothing else: no validation beyond
typed decoding, no cancellation notices, no logging, no server-to-client requests. The
benchmark compares trio_mcp against it; trio_mcp is expected to come close, not to beat it.

Design:

* the server runs under :func:`trio.lowlevel.open_process` with stdin/stdout pipes;
* one reader task splits stdout into lines, decodes the JSON-RPC envelope with the
  ``result``/``error`` left as :class:`msgspec.Raw`, and wakes the waiting caller through a
  per-request slot (an :class:`trio.Event` plus the raw payload);
* callers put encoded requests on an unbounded memory channel; one writer task drains
  everything that is ready and writes it with a single ``send_all`` (coalesced writes);
* the caller decodes the payload into its own tiny Structs (typed results);
* legacy handshake: ``initialize`` then ``notifications/initialized``.

Run through ``bench/run.py`` (or ``python bench/_worker.py floor WORKLOAD``).
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import msgspec
import trio
from msgspec import UNSET, Raw, Struct, UnsetType

NAME = "floor"
PROTOCOL_VERSION = "2025-11-25"

T = TypeVar("T")


# ---------------------------------------------------------------------------- wire types


class Request(Struct):
    """An outgoing JSON-RPC request."""

    jsonrpc: str
    id: int
    method: str
    params: Any


class Envelope(Struct):
    """Any incoming message; payloads stay raw until their type is known."""

    id: int | str | None = None
    method: str | None = None
    result: Raw = Raw()
    error: Raw = Raw()


class ErrorObject(Struct):
    """A JSON-RPC error object."""

    code: int
    message: str
    data: Any = None


class _Wire(Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class TextContent(_Wire, tag="text", tag_field="type", kw_only=True):
    """A text content block."""

    text: str
    annotations: dict[str, Any] | UnsetType = UNSET


class ImageContent(_Wire, tag="image", tag_field="type", kw_only=True):
    """An image content block."""

    data: str
    mime_type: str
    annotations: dict[str, Any] | UnsetType = UNSET


class CallToolParams(_Wire, kw_only=True):
    """``tools/call`` params."""

    name: str
    arguments: dict[str, Any] | UnsetType = UNSET


class CallToolResult(_Wire, kw_only=True):
    """``tools/call`` result."""

    content: list[TextContent | ImageContent]
    is_error: bool = False
    structured_content: dict[str, Any] | UnsetType = UNSET


class ToolAnnotations(_Wire, kw_only=True):
    """Tool hints."""

    title: str | UnsetType = UNSET
    read_only_hint: bool | UnsetType = UNSET
    destructive_hint: bool | UnsetType = UNSET
    idempotent_hint: bool | UnsetType = UNSET
    open_world_hint: bool | UnsetType = UNSET


class Tool(_Wire, kw_only=True):
    """A tool definition."""

    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | UnsetType = UNSET
    annotations: ToolAnnotations | UnsetType = UNSET


class ListToolsParams(_Wire, kw_only=True):
    """``tools/list`` params."""

    cursor: str | UnsetType = UNSET


class ListToolsResult(_Wire, kw_only=True):
    """``tools/list`` result."""

    tools: list[Tool]
    next_cursor: str | UnsetType = UNSET


class Implementation(_Wire, kw_only=True):
    """Name and version of a client or server."""

    name: str
    version: str


class InitializeParams(_Wire, kw_only=True):
    """``initialize`` params."""

    protocol_version: str
    capabilities: dict[str, Any]
    client_info: Implementation


class InitializeResult(_Wire, kw_only=True):
    """``initialize`` result."""

    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | UnsetType = UNSET


_encode = msgspec.json.Encoder().encode
_decode_envelope = msgspec.json.Decoder(Envelope).decode
_decode_error = msgspec.json.Decoder(ErrorObject).decode
_decoders: dict[type[Any], Callable[[Raw], Any]] = {}
_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def _decoder(kind: type[T]) -> Callable[[Raw], T]:
    dec = _decoders.get(kind)
    if dec is None:
        dec = _decoders[kind] = msgspec.json.Decoder(kind).decode
    return dec


class ServerError(Exception):
    """A JSON-RPC error response (or a closed connection, code -32000)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


# ------------------------------------------------------------------------------- session


class _Slot:
    __slots__ = ("error", "event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Raw | None = None
        self.error: Raw | None = None


_CLOSED = Raw(b'{"code":-32000,"message":"connection closed"}')


class FloorSession:
    """A minimal MCP client session over one server process."""

    def __init__(self, process: trio.Process) -> None:
        self._process = process
        self._pending: dict[int | str, _Slot] = {}
        self._next_id = 1
        self._send, self._receive = trio.open_memory_channel[bytes](float("inf"))
        self._closed = False

    async def request(self, method: str, params: Any, kind: type[T]) -> T:
        """Sends one request and decodes its result into ``kind``."""
        if self._closed:
            raise trio.ClosedResourceError
        rid = self._next_id
        self._next_id = rid + 1
        slot = _Slot()
        self._pending[rid] = slot
        self._send.send_nowait(_encode(Request("2.0", rid, method, params)))
        try:
            await slot.event.wait()
        finally:
            self._pending.pop(rid, None)
        if slot.error is not None:
            err = _decode_error(slot.error)
            raise ServerError(err.code, err.message)
        assert slot.result is not None
        return _decoder(kind)(slot.result)

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
                client_info=Implementation(name="bench-floor", version="1"),
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
            self._fail_pending()

    def _fail_pending(self) -> None:
        """The connection is gone: wake every waiting caller with a closed-connection error."""
        for slot in self._pending.values():
            slot.error = _CLOSED
            slot.event.set()

    def _dispatch(self, line: bytes | bytearray) -> None:
        env = _decode_envelope(line)
        if env.method is not None:
            return  # server notification or request: the floor ignores them
        slot = self._pending.get(env.id) if env.id is not None else None
        if slot is None:
            return
        if env.error:
            slot.error = env.error
        else:
            slot.result = env.result
        slot.event.set()

    async def _aclose(self) -> None:
        self._send.close()  # the writer flushes what is queued, then closes stdin
        with trio.move_on_after(5):
            await self._process.wait()
        if self._process.returncode is None:
            self._process.kill()
            await self._process.wait()


S = TypeVar("S", bound=FloorSession)


@asynccontextmanager
async def open_session(
    command: list[str],
    session_type: type[S] = FloorSession,  # type: ignore[assignment]
) -> AsyncIterator[S]:
    """Starts the server, initializes, yields the session, then closes it all.

    ``session_type`` is the session class (the channel floor passes its subclass).
    """
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        async with trio.open_nursery() as nursery:
            session = session_type(process)
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


async def call_tool(session: FloorSession, name: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool; returns the typed result."""
    return await session.call_tool(name, arguments)


def result_text(result: CallToolResult) -> str:
    """The text of the first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def list_tools(session: FloorSession) -> list[Tool]:
    """Lists every tool as typed Structs."""
    return await session.list_tools()


def codec_pair() -> tuple[Callable[[int, str, dict[str, Any]], bytes], Callable[[bytes], Any]]:
    """The floor's encode of a ``tools/call`` request and decode of its response."""
    decode_result = _decoder(CallToolResult)

    def encode(rid: int, name: str, arguments: dict[str, Any]) -> bytes:
        return _encode(
            Request("2.0", rid, "tools/call", CallToolParams(name=name, arguments=arguments))
        )

    def decode(line: bytes) -> CallToolResult:
        env = _decode_envelope(line)
        return decode_result(env.result)

    return encode, decode


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
