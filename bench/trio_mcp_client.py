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
# LEAD: point codec_pair() at the encoder/decoder the session really uses.
#
# The codec benchmark times, per ``tools/call``: encoding the whole request (envelope
# included, to bytes without framing) plus decoding the whole response line into the typed
# result the caller gets. Replace the two placeholders below with the session's own
# code path, e.g. its request encoder and its envelope decoder + CallToolResult decoder.
# Until then it uses plain msgspec with a CallToolResult-like Struct (or trio_mcp's public
# ``CallToolResult`` type when it exists); ``CODEC_IMPL`` says which, and lands in the JSON.
# =========================================================================================

CODEC_IMPL = "placeholder: msgspec + local CallToolResult-like Struct"


def codec_pair() -> tuple[Callable[[int, str, dict[str, Any]], bytes], Callable[[bytes], Any]]:
    """trio_mcp's encode of a ``tools/call`` request and decode of its response."""
    global CODEC_IMPL
    import msgspec
    from msgspec import UNSET, Raw, Struct, UnsetType

    class _Wire(Struct, rename="camel", kw_only=True, omit_defaults=True):
        pass

    class TextContent(_Wire, tag="text", tag_field="type", kw_only=True):
        text: str
        annotations: dict[str, Any] | UnsetType = UNSET

    class ImageContent(_Wire, tag="image", tag_field="type", kw_only=True):
        data: str
        mime_type: str

    class LocalCallToolResult(_Wire, kw_only=True):
        content: list[TextContent | ImageContent]
        is_error: bool | UnsetType = UNSET
        structured_content: dict[str, Any] | UnsetType = UNSET

    class Params(_Wire, kw_only=True):
        name: str
        arguments: dict[str, Any] | UnsetType = UNSET

    class Request(Struct):
        jsonrpc: str
        id: int | str
        method: str
        params: Params

    class Envelope(Struct):
        id: int | str | None = None
        method: str | None = None
        result: Raw = Raw()
        error: Raw = Raw()

    result_type: Any = getattr(trio_mcp, "CallToolResult", None)
    if isinstance(result_type, type) and issubclass(result_type, Struct):
        CODEC_IMPL = "placeholder envelope + trio_mcp.CallToolResult"
    else:
        result_type = LocalCallToolResult

    enc = msgspec.json.Encoder().encode
    dec_env = msgspec.json.Decoder(Envelope).decode
    dec_result = msgspec.json.Decoder(result_type).decode

    def encode(rid: int, name: str, arguments: dict[str, Any]) -> bytes:
        return enc(Request("2.0", rid, "tools/call", Params(name=name, arguments=arguments)))

    def decode(line: bytes) -> Any:
        return dec_result(dec_env(line).result)

    return encode, decode


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
