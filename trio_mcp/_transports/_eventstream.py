"""Server-Sent Events: an incremental ``text/event-stream`` parser with a size cap.

Pure and I/O free: feed it the bytes of a response body as they arrive and it returns the
events each chunk completes. Both HTTP transports (Streamable HTTP and the deprecated
HTTP+SSE) read their event streams through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "SSEDecoder", "ServerSentEvent"]

#: The default largest event data :class:`SSEDecoder` accepts (64 MiB).
DEFAULT_MAX_EVENT_SIZE: Final = 64 * 1024 * 1024

_EOL: Final = re.compile(rb"\r\n|\r|\n")
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
    ignored; ``id`` (without NUL) sets :attr:`last_event_id`; ``retry`` (ASCII digits only)
    sets :attr:`retry`. An incomplete event at the end of the stream is discarded, as the
    standard says.

    An event whose data grows past ``max_event_size`` (in many lines, or in one line that
    does not end) is reported at once, without buffering it and without waiting for its
    end: :meth:`feed` returns it with :attr:`ServerSentEvent.too_large` set, and the rest
    of that event is skipped.

    Args:
        max_event_size: The largest event data accepted, in bytes.
        last_event_id: The last event id seen before (when a stream is resumed).
    """

    def __init__(
        self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, *, last_event_id: str | None = None
    ) -> None:
        self.max_event_size = max_event_size
        #: The id of the last dispatched event (``id`` lines persist across events).
        self.last_event_id: str | None = last_event_id
        #: The reconnection time the server asked for, in milliseconds.
        self.retry: int | None = None
        self._buffer = bytearray()
        self._scanned = 0
        self._at_start = True
        self._skipping_line = False  # the rest of an over-long line is dropped
        self._discarding = False  # the current event was reported as too large
        self._event = ""
        self._data = bytearray()
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
        while True:
            match = _EOL.search(buffer, scan)
            if match is None:
                scan = len(buffer)
                break
            if match.end() == len(buffer) and match.group() == b"\r":
                scan = match.start()  # a CR at the end may be the first half of CRLF
                break
            if self._skipping_line:
                self._skipping_line = False
            else:
                event = self._line(bytes(buffer[line_start : match.start()]))
                if event is not None:
                    events.append(event)
            line_start = scan = match.end()
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

    def _too_large(self, size: int, line: bytes) -> ServerSentEvent:
        """The event being built grew past the limit: report it and skip the rest of it."""
        kept = self._data[:_OVERSIZED_PREFIX]
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
            len(self._data) + size,
        )
        self._data = bytearray()
        self._has_data = False
        self._discarding = True
        return event

    def _line(self, line: bytes) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            return None
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            if self._discarding:
                return None
            separator = 1 if self._has_data else 0
            if len(self._data) + separator + len(value) > self.max_event_size:
                return self._too_large(separator + len(value), b"data:" + value)
            if self._has_data:
                self._data += b"\n"
            self._data += value
            self._has_data = True
        elif name == b"event":
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
            result = ServerSentEvent(
                self._event or "message", bytes(self._data), self._id_buffer or None
            )
        self._event = ""
        self._data = bytearray()
        self._has_data = False
        self._discarding = False
        return result
