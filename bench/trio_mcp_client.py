"""The benchmark adapter for trio_mcp.

Same workloads as the floor and the SDK, through the public API:
``trio_mcp.open_mcp_session(nursery, command)``, ``session.call_tool(name, arguments)`` and
``session.list_tools()``.

Run through ``bench/run.py`` (or ``python bench/_worker.py trio_mcp WORKLOAD``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio

import trio_mcp

NAME = "trio_mcp"


@asynccontextmanager
async def open_session(command: list[str]) -> AsyncIterator[Any]:
    """Opens (and initializes) a session on its own nursery; closes it on exit."""
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, command) as session:
            yield session


def runtime() -> Any:
    """trio_mcp runs on Trio."""
    from _runtime import TrioRuntime

    return TrioRuntime()


async def call_tool(session: Any, name: str, arguments: dict[str, Any]) -> Any:
    """Calls a tool; returns trio_mcp's typed ``CallToolResult``."""
    return await session.call_tool(name, arguments)


def result_text(result: Any) -> str:
    """The text of the first content block."""
    return str(result.content[0].text)


async def list_tools(session: Any) -> list[Any]:
    """Lists every tool (trio_mcp follows pagination itself)."""
    return list(await session.list_tools())


# =========================================================================================
# LEAD: keep codec_pair() pointed at the encoder/decoder the session really uses.
#
# The codec benchmark times, per ``tools/call``: encoding the whole request (envelope
# included, to bytes without framing) plus decoding the whole response line into the typed
# result the caller gets. codec_pair() mirrors ClientSession.call_tool() in the legacy era:
# params dict -> trio_mcp._jsonrpc.encode_request; response -> decode_envelope, then
# trio_mcp.types.decoder_for(CallToolResult).decode(envelope.result). If those internals
# move, it falls back to a placeholder (plain msgspec + a CallToolResult-like Struct);
# CODEC_IMPL says which one ran, and lands in the JSON output.
# =========================================================================================

CODEC_IMPL = "unset"


def codec_pair() -> tuple[Callable[[int, str, dict[str, Any]], bytes], Callable[[bytes], Any]]:
    """trio_mcp's encode of a ``tools/call`` request and decode of its response."""
    global CODEC_IMPL
    try:
        from trio_mcp import _jsonrpc, types

        encode_request = _jsonrpc.encode_request
        decode_envelope = _jsonrpc.decode_envelope
        decode_result = types.decoder_for(types.CallToolResult).decode
    except (ImportError, AttributeError):
        CODEC_IMPL = "placeholder: msgspec + local CallToolResult-like Struct"
        return _placeholder_codec_pair()
    CODEC_IMPL = "trio_mcp._jsonrpc.encode_request/decode_envelope + types.decoder_for"

    def encode(rid: int, name: str, arguments: dict[str, Any]) -> bytes:
        return encode_request(rid, "tools/call", {"name": name, "arguments": arguments})

    def decode(line: bytes) -> Any:
        return decode_result(decode_envelope(line).result)

    return encode, decode


class _Wire(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class _TextContent(_Wire, tag="text", tag_field="type", kw_only=True):
    text: str
    annotations: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class _ImageContent(_Wire, tag="image", tag_field="type", kw_only=True):
    data: str
    mime_type: str


class _CallToolResult(_Wire, kw_only=True):
    content: list[_TextContent | _ImageContent]
    is_error: bool | msgspec.UnsetType = msgspec.UNSET
    structured_content: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class _Request(msgspec.Struct):
    jsonrpc: str
    id: int | str
    method: str
    params: Any


class _Envelope(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    result: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


def _placeholder_codec_pair() -> tuple[
    Callable[[int, str, dict[str, Any]], bytes], Callable[[bytes], Any]
]:
    enc = msgspec.json.Encoder().encode
    dec_env = msgspec.json.Decoder(_Envelope).decode
    dec_result = msgspec.json.Decoder(_CallToolResult).decode

    def encode(rid: int, name: str, arguments: dict[str, Any]) -> bytes:
        return enc(_Request("2.0", rid, "tools/call", {"name": name, "arguments": arguments}))

    def decode(line: bytes) -> Any:
        return dec_result(dec_env(line).result)

    return encode, decode


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
