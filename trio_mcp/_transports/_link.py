"""The health of one transport's link to its server: up, reconnecting or closed.

A transport reports here what it sees (a broken connection, a session the server forgot, a
stream or session that came back); the session, its statistics and a group's member status
read it. Every change bumps `Link.version`, so a watcher that remembers the version it
last saw never misses a transition, even one that came and went before it looked
(`Link.wait_changed()`). Time comes from trio's clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from .._exceptions import MCPError

__all__ = ["Link", "LinkFailure", "LinkState"]


class LinkState(enum.Enum):
    """Where a transport's link to its server stands.

    Attributes:
        UP: Requests reach the server (as far as the transport knows).
        RECONNECTING: The link broke or the server lost the session; the transport is
            getting it back (calls made meanwhile fail fast or wait for the new session).
        CLOSED: The transport was closed, or gave up for good.
    """

    UP = "up"
    RECONNECTING = "reconnecting"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class LinkFailure:
    """One failure of the link, kept after the link recovers.

    Attributes:
        error: What failed (the library exception a caller saw or would have seen).
        at: When, on trio's clock (``trio.current_time()``).
    """

    error: MCPError
    at: float


class Link:
    """The state of one transport's link, with its history in counters.

    Transports call `failed()`, `restored()` and `closed()`; readers use the
    properties and `wait_changed()`. Cheap: nothing is allocated per request.
    """

    __slots__ = ("_changed", "_last_failure", "_reconnects", "_state", "_version")

    def __init__(self) -> None:
        self._state = LinkState.UP
        self._last_failure: LinkFailure | None = None
        self._reconnects = 0
        self._version = 0
        self._changed: trio.Event | None = None

    @property
    def state(self) -> LinkState:
        """The current state."""
        return self._state

    @property
    def last_failure(self) -> LinkFailure | None:
        """The most recent failure, kept after recovery (None: never failed)."""
        return self._last_failure

    @property
    def reconnects(self) -> int:
        """How many times the link came back after a failure."""
        return self._reconnects

    @property
    def version(self) -> int:
        """A counter bumped by every change of state (and every new failure)."""
        return self._version

    def failed(self, error: MCPError) -> None:
        """Record a failure; an UP link becomes RECONNECTING. No effect once CLOSED."""
        if self._state is LinkState.CLOSED:
            return
        self._last_failure = LinkFailure(error, _now())
        self._state = LinkState.RECONNECTING
        self._bump()

    def restored(self) -> None:
        """The link works again: a RECONNECTING link becomes UP and counts a reconnect."""
        if self._state is not LinkState.RECONNECTING:
            return
        self._state = LinkState.UP
        self._reconnects += 1
        self._bump()

    def closed(self) -> None:
        """The transport closed or gave up; final."""
        if self._state is LinkState.CLOSED:
            return
        self._state = LinkState.CLOSED
        self._bump()

    async def wait_changed(self, seen: int) -> int:
        """Wait until `version` differs from ``seen``; return the new version.

        Returns at once (after a checkpoint) when a change already happened since ``seen``.
        """
        while self._version == seen:
            if self._changed is None:
                self._changed = trio.Event()
            await self._changed.wait()
        await trio.lowlevel.checkpoint()
        return self._version

    def _bump(self) -> None:
        self._version += 1
        if self._changed is not None:
            self._changed.set()
            self._changed = None


def _now() -> float:
    try:
        return trio.current_time()
    except RuntimeError:  # outside trio (a transport built in a test by hand)
        return 0.0
