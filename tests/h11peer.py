"""The server side of the loopback HTTP/1.1 test servers: reading a request with h11."""

from __future__ import annotations

import h11
import trio


async def read_request(
    stream: trio.abc.Stream, conn: h11.Connection
) -> tuple[h11.Request, bytes] | None:
    """Read one whole request and its body; None when the client closed first."""
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            if not data:
                return None
            conn.receive_data(data)
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            return request, bytes(body)
        else:  # ConnectionClosed: no request
            return None
