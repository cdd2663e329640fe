"""One way to log dropped messages: the first drop at once, then a count per interval.

A server that floods notifications (or garbage) must not flood the log too: every place
that drops a message it cannot deliver (a full subscriber, too many callbacks running, an
invalid message, a full reply queue) reports it to a `DropLog` instead of logging
each drop. The first drop is logged as it happens; drops within the next ``interval``
seconds of Trio's clock are only counted, and the next drop after the interval logs one
summary line with that count (then a new interval starts). `DropLog.flush()` logs what
is still counted when the source ends (a subscription closes, a session closes).
"""

from __future__ import annotations

import logging
from typing import Final

import trio

__all__ = ["DropLog"]

logger = logging.getLogger("trio_mcp")

DROP_LOG_INTERVAL: Final = 10.0
"""Seconds (Trio's clock) between two log lines of one `DropLog`."""


class DropLog:
    """Counts drops of one kind and logs them at most once per interval.

    Args:
        what: What happened, as the start of each line, e.g. ``"notification subscriber
            is full; dropped"``.
        level: The logging level of the lines.
        interval: Seconds of Trio's clock between two lines.
    """

    __slots__ = ("_interval", "_last", "_level", "_next_at", "_pending", "_since", "_what", "total")

    def __init__(
        self, what: str, *, level: int = logging.WARNING, interval: float = DROP_LOG_INTERVAL
    ) -> None:
        self._what = what
        self._level = level
        self._interval = interval
        self._next_at: float | None = None
        self._since = 0.0
        self._pending = 0
        self._last = ""
        self.total = 0
        """How many drops there were in all."""

    def dropped(self, detail: str) -> None:
        """Count one drop (call from inside Trio); ``detail`` says which message it was."""
        now = trio.current_time()
        self.total += 1
        if self._next_at is not None and now < self._next_at:
            self._pending += 1
            self._last = detail
            return
        if self._pending:
            self._pending += 1
            self._last = detail
            self._summarise(now)
        else:
            logger.log(self._level, "%s %s", self._what, detail)
        self._since = now
        self._next_at = now + self._interval

    def flush(self) -> None:
        """Log the drops counted since the last line, if any (the source is ending)."""
        if self._pending:
            self._summarise(trio.current_time())

    def _summarise(self, now: float) -> None:
        logger.log(
            self._level,
            "%s %d more in the last %.3f s (the last: %s); %d in all",
            self._what, self._pending, now - self._since, self._last, self.total,
        )  # fmt: skip
        self._pending = 0
