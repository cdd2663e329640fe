"""The frozen snapshots that ``statistics()`` methods return: a session's, an HTTP pool's.

trio's convention (``trio.Lock.statistics()``, ``MemorySendChannel.statistics()``): a method
returns a frozen object of plain numbers, made when it is called from counters the object
keeps anyway. Nothing here is allocated per request; a snapshot costs a few microseconds, so
a dashboard may take one every second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._eras import Era
    from ._exceptions import MCPError

__all__ = ["PoolStatistics", "SessionStatistics"]


@dataclass(frozen=True, slots=True)
class PoolStatistics:
    """A snapshot of an HTTP transport's connection pool (trio_mcp's own HTTP/1.1 pool).

    Attributes:
        open: Connections open now (in use or idle).
        idle: Of those, connections idle and kept alive for the next request.
        opened: Connections opened since the pool was made.
        closed: Connections closed since the pool was made.
        proxied: Whether the session's URL goes through a proxy of the environment
            (``HTTPS_PROXY``...) or the client's own machinery rather than straight to the
            pool; the pool's figures then count only what did reach it.
    """

    open: int
    idle: int
    opened: int
    closed: int
    proxied: bool


@dataclass(frozen=True, slots=True)
class SessionStatistics:
    """A snapshot of one session.

    Returned by [`ClientSession.statistics`][trio_mcp.ClientSession.statistics].

    Attributes:
        era: ``"legacy"`` or ``"modern"``; None before the session negotiated one.
        protocol_version: The revision in use, e.g. ``"2026-07-28"``.
        pending_requests: Requests sent and not answered yet.
        requests_sent: Requests handed to the transport since the session opened.
        requests_answered: Answers (results and errors) received for them.
        server_requests_running: The server's requests to us (sampling, elicitation...)
            whose handlers run now.
        bytes_sent: Bytes of the JSON-RPC messages handed to the transport.
        bytes_received: Bytes of the JSON-RPC messages received from it (framing such as
            HTTP headers or SSE ``data:`` lines not counted).
        dropped: How many messages were dropped, by why: ``"subscriber_full"`` (a
            notification channel's buffer was full), ``"callbacks_busy"`` (too many async
            notification callbacks ran), ``"invalid"`` (a message that did not decode),
            ``"batch"`` (a JSON-RPC batch the revision forbids), ``"reply_queue_full"``,
            ``"reused_id"`` (a server request reusing a running one's id). Only reasons
            that happened are present.
        link_state: ``"up"``, ``"reconnecting"`` or ``"closed"``: the transport's link.
        reconnects: How many times the transport's link came back after a failure.
        last_error: The latest failure: why the session stopped, else the transport's
            latest link failure (kept after it recovered); None if there was none.
        last_error_at: When ``last_error`` happened (trio's clock), if the link recorded it.
        http_pool: The HTTP pool under the transport, for an HTTP transport on
            trio_mcp's own pool; else None.
    """

    era: Era | None
    protocol_version: str | None
    pending_requests: int
    requests_sent: int
    requests_answered: int
    server_requests_running: int
    bytes_sent: int
    bytes_received: int
    dropped: Mapping[str, int]
    link_state: str
    reconnects: int
    last_error: MCPError | None
    last_error_at: float | None
    http_pool: PoolStatistics | None

    @property
    def dropped_total(self) -> int:
        """How many messages were dropped in all (the sum of `dropped`)."""
        return sum(self.dropped.values())
