"""Event streams end where their body ends: a final CR is a line end (WHATWG), not a wait.

A stream with CR line endings that ends ``\\r\\r`` used to lose its last event: the decoder
kept the final CR as a possible first half of CRLF and nothing flushed it at the end of the
body, so the response never arrived and the call waited for its timeout.
"""

from __future__ import annotations

import json

import h11
import httpx
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._transports._base import MessageInfo
from trio_mcp._transports._eventstream import ServerSentEvent, SSEDecoder
from trio_mcp._transports._http import StreamableHTTPParameters

from .test_http_transport import LoopbackServer, body, loopback, open_http, request, result

# -- the decoder --------------------------------------------------------------------------------


def test_a_final_cr_ends_the_last_event_at_end_of_input() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\rdata: b\r\r") == [ServerSentEvent(data=b"a")]
    assert decoder.end() == [ServerSentEvent(data=b"b")]


def test_end_discards_an_unfinished_event_and_is_harmless_otherwise() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.end() == []  # a line ended, but no blank line: discarded, as WHATWG says
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [ServerSentEvent(data=b"a")]
    assert decoder.end() == []
    assert SSEDecoder().end() == []
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef\xbb") == []  # half a BOM, then the end: no event, no error
    assert decoder.end() == []


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == []
    assert decoder.feed(b"\n") == [ServerSentEvent(data=b"a")]  # not two events, not none
    assert decoder.end() == []


_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"), max_size=8
)
_EVENTS = st.lists(
    st.tuples(
        st.one_of(st.none(), _TEXT.filter(lambda s: s != "")),  # the event type
        st.one_of(st.none(), _TEXT),  # an id
        st.lists(_TEXT, min_size=1, max_size=3),  # the data lines
        st.booleans(),  # a comment line before the event
    ),
    max_size=6,
)
_ENDINGS = st.sampled_from(["\n", "\r", "\r\n"])


def _encode(events: list[tuple[str | None, str | None, list[str], bool]], ending: str) -> bytes:
    lines: list[str] = []
    for name, event_id, data, comment in events:
        if comment:
            lines.append(": keep-alive")
        if name is not None:
            lines.append(f"event: {name}")
        if event_id is not None:
            lines.append(f"id: {event_id}")
        lines.extend(f"data: {line}" for line in data)
        lines.append("")
    return "".join(line + ending for line in lines).encode()


def _expected(
    events: list[tuple[str | None, str | None, list[str], bool]],
) -> list[tuple[str, bytes, str | None]]:
    out: list[tuple[str, bytes, str | None]] = []
    last_id: str | None = None
    for name, event_id, data, _ in events:
        if event_id is not None:
            last_id = event_id
        out.append((name or "message", "\n".join(data).encode(), last_id or None))
    return out


def _decode(chunks: list[bytes]) -> list[tuple[str, bytes, str | None]]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    events += decoder.end()
    return [(e.event, e.data, e.id) for e in events]


@settings(deadline=None)  # examples: the profile's (tests/conftest.py)
@given(
    events=_EVENTS,
    ending=_ENDINGS,
    bom=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=12), max_size=25),
)
def test_any_split_of_any_stream_with_any_line_ending_decodes_the_same(
    events: list[tuple[str | None, str | None, list[str], bool]],
    ending: str,
    bom: bool,
    cuts: list[int],
) -> None:
    stream = (b"\xef\xbb\xbf" if bom else b"") + _encode(events, ending)
    chunks: list[bytes] = []
    position = 0
    for cut in cuts:
        chunks.append(stream[position : position + cut])
        position += cut
    chunks.append(stream[position:])
    whole = _decode([stream])
    assert whole == _expected(events)  # every event, the last one included
    assert _decode(chunks) == whole
    assert _decode([stream[i : i + 1] for i in range(len(stream))]) == whole


# -- every body reader flushes the decoder at the end of the body -------------------------------


def _cr_stream(message: object) -> bytes:
    return b"event: message\rdata: " + json.dumps(message).encode() + b"\r\r"


async def test_cr_stream_through_httpx_delivers_its_last_event(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        data = _cr_stream(result(body(req)["id"], {"tools": []}))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    async with open_http(handler) as (transport, _):
        with trio.fail_after(1):  # virtual time: without the fix, it waits for the timeout
            await transport.send(request(7, "tools/list"), MessageInfo("tools/list", 7))
            assert json.loads(await transport.receive()) == result(7, {"tools": []})


async def test_cr_stream_on_a_real_socket_delivers_its_last_event() -> None:
    async def script(stream: trio.SocketStream, conn: h11.Connection) -> None:
        await stream.send_all(conn.send(h11.Data(data=_cr_stream(result(1, {"ok": True})))))
        await stream.send_all(conn.send(h11.EndOfMessage()))

    server = LoopbackServer(script)
    with trio.fail_after(10):
        async with loopback(server) as url, trio.open_nursery() as nursery:
            params = StreamableHTTPParameters(url, timeout=30)
            async with params.open_transport(nursery) as transport:
                transport.negotiated(modern=True, protocol_version="2026-07-28")
                await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
                assert json.loads(await transport.receive()) == result(1, {"ok": True})
