"""What the reconnecting byte-stream transports share: HTTP+SSE and WebSocket.

When the connection of a legacy HTTP+SSE or a WebSocket transport breaks (a server
restarted, a proxy dropped it), the transport reconnects on its own with a bounded backoff
(`DEFAULT_RECONNECT_BACKOFF`), replays the session's ``initialize`` request (its answer
is consumed by the transport) and ``notifications/initialized``, and tells its session
([`renewed()`][trio_mcp.transports.Transport.renewed]). Every answer comes on the one connection, so
the requests that were waiting when it broke fail at once (`Outstanding` remembers
which); requests made while it reconnects fail fast (`reconnecting_error()`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Final, TypeAlias

from msgspec import UNSET

from .._exceptions import ConnectionClosed
from .._resilience import Backoff

if TYPE_CHECKING:
    from .._jsonrpc import Envelope

__all__ = [
    "DEFAULT_RECONNECT_BACKOFF",
    "INITIALIZED",
    "Outstanding",
    "reconnecting_error",
    "refusal",
]

RequestId: TypeAlias = "int | str"

DEFAULT_RECONNECT_BACKOFF: Final = Backoff(initial=0.25, multiplier=2.0, maximum=1.0, jitter=0.1)
"""The schedule of reconnection attempts: 0.25 s after the break, then 0.5 s later, then every
second (10 % jitter) until the server is back or the transport is closed. The cap keeps a server
that comes back answering within about a second (one cheap connection attempt a second to a server
that is down)."""

INITIALIZED: Final = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
"""The notification replayed after a new ``initialize``."""

# More requests than any session keeps pending: past it the oldest ids are forgotten (a
# request whose end the transport did not see, e.g. one cancelled by a wrapper).
_OUTSTANDING_LIMIT: Final = 65536


class Outstanding:
    """The ids of the requests sent on a connection and not yet answered (bounded)."""

    __slots__ = ("_ids",)

    def __init__(self) -> None:
        self._ids: OrderedDict[RequestId, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, request_id: RequestId) -> None:
        """A request was sent."""
        self._ids[request_id] = None
        if len(self._ids) > _OUTSTANDING_LIMIT:
            self._ids.popitem(last=False)

    def discard(self, request_id: RequestId | None) -> None:
        """A request was answered, failed or cancelled."""
        if request_id is not None:
            self._ids.pop(request_id, None)

    def take(self) -> list[RequestId]:
        """Every outstanding id; forgets them all."""
        ids = list(self._ids)
        self._ids.clear()
        return ids


def reconnecting_error(where: str) -> ConnectionClosed:
    """The error of a message sent while the transport reconnects (it fails fast).

    Args:
        where: The server's URL.
    """
    return ConnectionClosed(
        f"the connection to {where} broke and is being re-established; nothing is sent "
        "meanwhile: try again once it is back (the transport's link says when)"
    )


def refusal(message: bytes, envelope: Envelope | None) -> str | None:
    """Why the server refused a replayed ``initialize``, or None if it accepted it.

    Args:
        message: The answer as received.
        envelope: The answer decoded (None: it does not decode, which is a refusal too).
    """
    if envelope is not None and envelope.error is UNSET:
        return None
    return message[:300].decode("utf-8", "replace")
