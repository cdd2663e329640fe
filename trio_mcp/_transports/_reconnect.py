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

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar

import trio
from msgspec import UNSET

from .._exceptions import ConnectionClosed, MCPError
from .._resilience import Backoff

if TYPE_CHECKING:
    from .._jsonrpc import Envelope

__all__ = [
    "DEFAULT_RECONNECT_BACKOFF",
    "INITIALIZED",
    "Outstanding",
    "Refused",
    "reconnecting_error",
    "refusal",
    "renew_until_done",
]

T = TypeVar("T")

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


class Refused(Exception):
    """The server refused the reconnection for good (the stream, the handshake or the new
    ``initialize``): reconnecting is over.

    Args:
        error: What the session ends with.
    """

    def __init__(self, error: ConnectionClosed) -> None:
        super().__init__(str(error))
        self.error = error


async def renew_until_done(
    backoff: Backoff, renew: Callable[[], Awaitable[T]], where: str, logger: logging.Logger
) -> tuple[T, int]:
    """Try ``renew`` after each delay of ``backoff`` until it works (trio's clock).

    Each failed attempt is logged (the first at INFO, the rest at DEBUG); the caller's
    cancel scope (the transport closing) is the only other way out.

    Args:
        backoff: The delays before the attempts.
        renew: One attempt; raises [`MCPError`][trio_mcp.MCPError] when it failed (the server
            may not be back yet) or `Refused` when it never will work.
        where: The server, for the log (a URL without its userinfo).
        logger: The transport's logger.

    Returns:
        What ``renew`` returned, and the number of attempts it took.

    Raises:
        Refused: The server refused for good (logged as a warning).
    """
    attempt = 0
    while True:
        attempt += 1
        await trio.sleep(backoff.delay(attempt))
        try:
            return await renew(), attempt
        except Refused as exc:
            logger.warning("%s", exc.error)
            raise
        except MCPError as exc:
            logger.log(
                logging.INFO if attempt == 1 else logging.DEBUG,
                "reconnecting to %s failed (attempt %d): %s",
                where,
                attempt,
                exc,
            )
