"""Server-Sent Events: an incremental ``text/event-stream`` parser with a size cap.

Pure and I/O free: feed it the bytes of a response body as they arrive and it returns the
events each chunk completes. Both HTTP transports (Streamable HTTP and the deprecated
HTTP+SSE) read their event streams through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "SSEDecoder", "ServerSentEvent"]

DEFAULT_MAX_EVENT_SIZE: Final = 64 * 1024 * 1024
"""The default largest event data `SSEDecoder` accepts (64 MiB)."""

_BOM: Final = b"\xef\xbb\xbf"
# Bytes of an oversized event kept, to find which request it answered.
_OVERSIZED_PREFIX: Final = 4096
# Room for a field name and its colon on top of the data of the longest accepted line.
_LINE_OVERHEAD: Final = 64


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event of a ``text/event-stream``.

    Attributes:
        event: The event type (``"message"`` unless the server named another).
        data: The event's data lines joined with ``\\n``, as UTF-8 bytes.
        id: The last event id at the time of this event (``None`` if none was set).
        too_large: When the data exceeded the decoder's limit, how many bytes had been seen
            when the limit was hit (then ``data`` holds only the first few KiB); ``None``
            otherwise.
    """

    event: str = "message"
    data: bytes = b""
    id: str | None = None
    too_large: int | None = None


class SSEDecoder:
    """An incremental ``text/event-stream`` parser (WHATWG HTML, section 9.2.6) with a size cap.

    Feed it byte chunks as they arrive; it returns the events completed by each chunk.
    Lines may end in CRLF, CR or LF; comment lines (``:``, used for keep-alive) are
    ignored; ``id`` (without NUL) sets `last_event_id`; ``retry`` (ASCII digits only)
    sets `retry`. An incomplete event at the end of the stream is discarded, as the
    standard says.

    A CR at the very end of a chunk may be the first half of a CRLF, so `feed()` keeps
    it until the next byte arrives; whoever reads a body must call `end()` when the
    body ends, which takes that CR as the line end it is (a stream with CR line endings
    that ends ``\\r\\r`` would otherwise never deliver its last event).

    An event whose data grows past ``max_event_size`` (in many lines, or in one line that
    does not end) is reported at once, without buffering it and without waiting for its
    end: `feed()` returns it with `ServerSentEvent.too_large` set, and the rest
    of that event is skipped.

    Args:
        max_event_size: The largest event data accepted, in bytes.
        last_event_id: The last event id seen before (when a stream is resumed).
    """

    def __init__(
        self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, *, last_event_id: str | None = None
    ) -> None:
        self.max_event_size = max_event_size
        self.last_event_id: str | None = last_event_id
        """The id of the last dispatched event (``id`` lines persist across events)."""
        self.retry: int | None = None
        """The reconnection time the server asked for, in milliseconds."""
        self._buffer = bytearray()
        self._scanned = 0
        self._at_start = True
        self._skipping_line = False  # the rest of an over-long line is dropped
        self._discarding = False  # the current event was reported as too large
        self._event = ""
        # the data lines of the event being built, joined with "\n" when it is dispatched
        self._data: list[bytes] = []
        self._data_size = 0
        self._has_data = False
        self._id_buffer: str | None = last_event_id
        self._line_limit = max_event_size + _LINE_OVERHEAD

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Parse the next chunk of the stream.

        Args:
            chunk: Bytes exactly as received (any split is fine).

        Returns:
            The events completed by this chunk (and the oversized ones it revealed), in
            order.
        """
        buffer = self._buffer
        buffer += chunk
        if self._at_start:
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                return []
            if buffer.startswith(_BOM):
                del buffer[: len(_BOM)]
            self._at_start = False
        events: list[ServerSentEvent] = []
        line_start = 0
        scan = self._scanned
        size = len(buffer)
        while True:
            # The next line end: memchr-speed finds, a CR only looked for before the LF.
            lf = buffer.find(b"\n", scan)
            cr = buffer.find(b"\r", scan, size if lf < 0 else lf)
            if cr >= 0:
                if cr + 1 == size:
                    scan = cr  # a CR at the end may be the first half of CRLF
                    break
                eol, after = cr, cr + 2 if buffer[cr + 1] == 0x0A else cr + 1
            elif lf >= 0:
                eol, after = lf, lf + 1
            else:
                scan = size
                break
            if self._skipping_line:
                self._skipping_line = False
            else:
                event = self._line(buffer, line_start, eol)
                if event is not None:
                    events.append(event)
            line_start = scan = after
        del buffer[:line_start]
        self._scanned = scan - line_start
        if len(buffer) > self._line_limit:
            # A line that does not end: report its event now and drop the rest unbuffered.
            if not buffer.startswith(b":") and not self._discarding:
                events.append(self._too_large(len(buffer), bytes(buffer[:_OVERSIZED_PREFIX])))
            buffer.clear()
            self._scanned = 0
            self._skipping_line = True
        return events

    def end(self) -> list[ServerSentEvent]:
        """The stream ended: finish the line a final CR ended, and return its event.

        Call it once, when the body ends (not when the reading was stopped early). A final
        CR held back by `feed()` (it might have been the first half of a CRLF) is a
        line end after all; an event still without its blank line is discarded, as the
        standard says.

        Returns:
            The events the final CR completed (at most one).
        """
        if not self._at_start and self._buffer.endswith(b"\r"):  # a held-back final CR
            return self.feed(b"\n")  # CR LF is one line end, the same as the CR alone
        return []

    def _too_large(self, size: int, line: bytes) -> ServerSentEvent:
        """The event being built grew past the limit: report it and skip the rest of it."""
        kept = bytearray(b"\n".join(self._data)[:_OVERSIZED_PREFIX])
        if len(kept) < _OVERSIZED_PREFIX:
            name, _, value = line.partition(b":")
            if name == b"data":
                if self._has_data:
                    kept += b"\n"
                kept += value[1:] if value.startswith(b" ") else value
        event = ServerSentEvent(
            self._event or "message",
            bytes(kept[:_OVERSIZED_PREFIX]),
            self._id_buffer or None,
            self._data_size + size,
        )
        self._data = []
        self._data_size = 0
        self._has_data = False
        self._discarding = True
        return event

    def _line(self, buffer: bytearray, start: int, end: int) -> ServerSentEvent | None:
        """Handle the line ``buffer[start:end]`` (copying only a data line's value, once)."""
        if start == end:
            return self._dispatch()
        if buffer[start] == 0x3A:  # ":" a comment
            return None
        colon = buffer.find(b":", start, end)
        if colon < 0:
            name, value_start = bytes(buffer[start:end]), end
        else:
            name, value_start = bytes(buffer[start:colon]), colon + 1
            if value_start < end and buffer[value_start] == 0x20:
                value_start += 1
        if name == b"data":
            if self._discarding:
                return None
            separator = 1 if self._has_data else 0
            length = end - value_start
            if self._data_size + separator + length > self.max_event_size:
                with memoryview(buffer) as view:
                    value = bytes(view[value_start:end])
                return self._too_large(separator + length, b"data:" + value[:_OVERSIZED_PREFIX])
            with memoryview(buffer) as view:
                self._data.append(bytes(view[value_start:end]))
            self._data_size += separator + length
            self._has_data = True
            return None
        value = bytes(buffer[value_start:end])
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id_buffer = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        self.last_event_id = self._id_buffer
        result: ServerSentEvent | None = None
        if self._has_data and not self._discarding:
            parts = self._data
            data = parts[0] if len(parts) == 1 else b"\n".join(parts)
            result = ServerSentEvent(self._event or "message", data, self._id_buffer or None)
        self._event = ""
        self._data = []
        self._data_size = 0
        self._has_data = False
        self._discarding = False
        return result
