"""The Server-Sent Events parser (``_eventstream.py``): pure, incremental, size-capped."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._transports._eventstream import ServerSentEvent, SSEDecoder


def test_decoder_line_endings_split_anywhere() -> None:
    stream = b"\xef\xbb\xbfdata: a\r\ndata: b\rdata:c\n\n: comment\r\n\r\nevent: e\ndata:  d\n\n"
    expected = [(b"message", b"a\nb\nc"), (b"e", b" d")]
    for size in (1, 2, 3, 7, len(stream)):
        decoder = SSEDecoder()
        events = []
        for i in range(0, len(stream), size):
            events.extend(decoder.feed(stream[i : i + size]))
        assert [(e.event.encode(), e.data) for e in events] == expected


def test_decoder_ids_and_retry() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"id: 1\ndata: x\n\nretry: 1500\nid: 2\n\ndata: y\n\n")
    assert [(e.data, e.id) for e in events] == [(b"x", "1"), (b"y", "2")]
    assert decoder.last_event_id == "2"  # set by the event without data too
    assert decoder.retry == 1500
    decoder.feed(b"retry: 1e3\nretry: -5\nretry:\nid: bad\x00id\n\n")
    assert decoder.retry == 1500  # only ASCII digits count
    assert decoder.last_event_id == "2"  # an id with NUL is ignored
    decoder.feed(b"id\n\n")  # an empty id resets it
    assert decoder.last_event_id == ""


def test_decoder_skips_events_without_data() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: x\n\n\n\n: hi\n\n") == []
    assert decoder.feed(b"data: not yet\n") == []  # no blank line: not an event yet
    assert [e.data for e in decoder.feed(b"\ndata:\n\n")] == [b"not yet", b""]


def test_decoder_size_cap() -> None:
    decoder = SSEDecoder(max_event_size=10)
    events = decoder.feed(b"data: 12345\ndata: 67890\n\ndata: ok\n\n")
    assert [(e.data, e.too_large) for e in events] == [(b"12345\n67890", 11), (b"ok", None)]
    # an endless line is not buffered
    events = decoder.feed(b"data: " + b"x" * 1000)
    assert len(events) == 1
    events = decoder.feed(b"y" * 1000 + b"\n\ndata: next\n\n")
    assert [e.data for e in events] == [b"next"]


def test_endless_line_is_reported_at_once() -> None:
    # A line that grows past the limit without ending is reported as soon as it is seen,
    # not when (if ever) it ends: the reader must not wait for the caller's timeout.
    decoder = SSEDecoder(max_event_size=100)
    assert decoder.feed(b'id: 7\ndata: {"jsonrpc":"2.0","id":3,"result":{"blob":"') == []
    events = decoder.feed(b"x" * 200)
    assert events == [
        ServerSentEvent(
            "message",
            b'{"jsonrpc":"2.0","id":3,"result":{"blob":"' + b"x" * 200,
            "7",
            len(b'data: {"jsonrpc":"2.0","id":3,"result":{"blob":"') + 200,
        )
    ]
    # the rest of that event is skipped, whatever comes; the next event is fine
    assert decoder.feed(b"x" * 10_000) == []
    assert decoder.feed(b'x"}}\ndata: more of it\n\n') == []
    assert decoder.last_event_id == "7"
    assert [e.data for e in decoder.feed(b"data: ok\n\n")] == [b"ok"]


def test_event_growing_past_the_limit_in_many_lines_is_reported_at_once() -> None:
    decoder = SSEDecoder(max_event_size=10)
    events = decoder.feed(b"event: e\ndata: 123456\ndata: 7890\n")  # no blank line yet
    assert [(e.event, e.data, e.too_large) for e in events] == [("e", b"123456\n7890", 11)]
    assert decoder.feed(b"data: more\n\n") == []
    assert [e.data for e in decoder.feed(b"data: ok\n\n")] == [b"ok"]


def test_endless_comment_is_skipped_silently() -> None:
    decoder = SSEDecoder(max_event_size=10)
    assert decoder.feed(b": " + b"k" * 100) == []
    assert decoder.feed(b"k" * 100 + b"\ndata: ok\n\n")[0].data == b"ok"


def _reference(stream: bytes) -> list[tuple[str, bytes, str | None]]:
    """The WHATWG algorithm, written the slow and obvious way (no size cap)."""
    import re

    if stream.startswith(b"\xef\xbb\xbf"):
        stream = stream[3:]
    if stream.endswith(b"\r"):  # a final CR may be the first half of a CRLF: not a line end yet
        stream = stream[:-1]
    lines = re.split(rb"\r\n|\r|\n", stream)[:-1]  # the last piece has no line end yet
    events: list[tuple[str, bytes, str | None]] = []
    event, data, has_data, last_id = "", b"", False, None
    for line in lines:
        if not line:
            if has_data:
                events.append((event or "message", data, last_id or None))
            event, data, has_data = "", b"", False
            continue
        if line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        if name == b"data":
            data = data + b"\n" + value if has_data else value
            has_data = True
        elif name == b"event":
            event = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            last_id = value.decode("utf-8", "replace")
    return events


_SSE_PIECES = st.sampled_from(
    [b"data", b"data:", b"data: ", b"event: e", b"id: 7", b"id", b":", b" x", b"\xc3", b"ab"]
)
_SSE_ENDS = st.sampled_from([b"\n", b"\r", b"\r\n", b""])


@settings(deadline=None)  # examples: the profile's (tests/conftest.py; nox -s fuzz)
@given(
    parts=st.lists(st.tuples(_SSE_PIECES, _SSE_ENDS), max_size=30),
    cuts=st.lists(st.integers(min_value=1, max_value=9), max_size=20),
)
def test_any_split_of_any_stream_matches_the_reference(
    parts: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    stream = b"".join(piece + end for piece, end in parts)
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    position = 0
    for cut in cuts:
        events += decoder.feed(stream[position : position + cut])
        position += cut
    events += decoder.feed(stream[position:])
    assert [(e.event, e.data, e.id) for e in events] == _reference(stream)
