"""Re-setup after a new server session: one bounded, coalesced task at a time.

When a transport starts a new server session (a legacy Streamable HTTP session the server
lost, a reconnected WebSocket, ...), the server has forgotten what the application set up:
the session runs its re-setup work (``logging/setLevel``, ``resources/subscribe``) again
through a `Recovery`, made on the first renewal (a session that never sees one
carries nothing). A modern (stateless) session runs its own work the same way after any
gap: ``server/discover`` again, since the server may be a new process. The work runs as a
task of the session's own nursery (through the RPC engine's guard, so it never raises into
it), bounded by `RESETUP_TIMEOUT`; a renewal while it runs does not start a second
task but one more pass after this one, and at most `MAX_PASSES` passes run in a row
(a server that loses every new session at once does not keep the client busy).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import trio

__all__ = ["MAX_PASSES", "RESETUP_TIMEOUT", "Recovery"]

logger = logging.getLogger("trio_mcp")

RESETUP_TIMEOUT: Final = 30.0
"""How long one pass of re-setup work may take, in seconds of trio's clock."""
MAX_PASSES: Final = 3
"""How many passes run in a row when renewals keep coming while the work runs."""

Spawn = Callable[..., bool]
"""Start a task in the session's nursery; False if it no longer takes tasks."""


class Recovery:
    """One session's re-setup after renewals: at most one task, passes coalesced."""

    __slots__ = ("_again", "_running", "passes")

    def __init__(self) -> None:
        self._running = False
        self._again = False
        self.passes = 0
        """how many passes of re-setup work have run (for tests and statistics)"""

    @property
    def running(self) -> bool:
        """Whether a re-setup task is running now."""
        return self._running

    def start(self, spawn: Spawn, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` in a task now, or once more after the running task's pass.

        Args:
            spawn: Starts a task in the session's nursery under its guard.
            work: The re-setup; it handles its own request errors.
        """
        if self._running:
            self._again = True
            return
        self._running = True
        self._again = False
        if not spawn(self._run, work, name="trio_mcp re-setup"):
            self._running = False

    async def _run(self, work: Callable[[], Awaitable[None]]) -> None:
        try:
            for _ in range(MAX_PASSES):
                self._again = False
                self.passes += 1
                with trio.move_on_after(RESETUP_TIMEOUT) as scope:
                    await work()
                if scope.cancelled_caught:
                    logger.warning(
                        "setting up the new server session again took over %.0f s; stopped",
                        RESETUP_TIMEOUT,
                    )
                if not self._again:
                    return
            logger.warning(
                "the server started %d new sessions in a row during re-setup; "
                "not setting up again until the next one",
                MAX_PASSES,
            )
        finally:
            self._running = False
            self._again = False
