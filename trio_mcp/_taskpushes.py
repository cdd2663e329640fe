"""One ``subscriptions/listen`` stream per session for the status of every task it waits on.

2026-07-28 servers with the tasks extension push ``notifications/tasks`` for the task ids a
listen stream names (``taskIds``). `TaskPushes` keeps one such stream per session,
naming every task a handle waits on right now: a handle joins with
`TaskPushes.watching()`, which (re)opens the stream with the new set of ids in the
session's nursery, and leaves when its task ended. The pushes themselves reach the waiting
handles through the session's notification handlers; the stream's channel is drained here.
The handles poll ``tasks/get`` at the server's ``pollInterval`` all the same (a push only
ends a wait sooner), so a server that does not honour ``taskIds``, or rejects or ends the
stream, costs nothing but the latency pushes would have saved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any

import trio

from ._exceptions import MCPError, ServerError
from ._jsonrpc import METHOD_NOT_FOUND

__all__ = ["TaskPushes"]

logger = logging.getLogger("trio_mcp")

OpenListen = Callable[
    [frozenset[str], list[Mapping[str, Any]]],
    AbstractAsyncContextManager["trio.MemoryReceiveChannel[Any]"],
]
"""Opens a listen stream for these task ids; appends the acknowledged filter to the list."""
Spawn = Callable[..., bool]


class TaskPushes:
    """The session's one listen stream for the tasks its handles wait on (see the module).

    Args:
        open_listen: Opens ``subscriptions/listen`` with ``taskIds`` (the session's).
        spawn: Starts a task in the session's nursery under its guard.
    """

    __slots__ = ("_ids", "_open_listen", "_refused", "_running", "_scope", "_spawn")

    def __init__(self, open_listen: OpenListen, spawn: Spawn) -> None:
        self._open_listen = open_listen
        self._spawn = spawn
        self._ids: dict[str, int] = {}  # task id -> how many handles wait on it
        self._running = False
        self._refused = False  # the server has no subscriptions/listen: never ask again
        self._scope: trio.CancelScope | None = None

    @contextmanager
    def watching(self, task_id: str) -> Generator[None]:
        """Name ``task_id`` on the session's stream while the block runs."""
        self._ids[task_id] = self._ids.get(task_id, 0) + 1
        self._changed()
        try:
            yield
        finally:
            left = self._ids.get(task_id, 1) - 1
            if left:
                self._ids[task_id] = left
            else:
                self._ids.pop(task_id, None)
            self._changed()

    def _changed(self) -> None:
        """The set of ids changed: reopen the stream (or start it, or let it end)."""
        if self._scope is not None:
            self._scope.cancel()
        if not self._running and self._ids and not self._refused:
            self._running = self._spawn(self._run, name="trio_mcp task pushes")

    async def _run(self) -> None:
        try:
            while self._ids:
                ids = frozenset(self._ids)
                granted: list[Mapping[str, Any]] = []
                with trio.CancelScope() as scope:
                    self._scope = scope
                    try:
                        # (granted: what it honours; not logged, the polls go on anyway)
                        async with self._open_listen(ids, granted) as channel:
                            async for _note in channel:  # (the handlers got it already)
                                pass
                    except (MCPError, trio.ClosedResourceError) as exc:
                        # rejected, or the session stopped: the handles keep polling
                        logger.debug("task status pushes are off: %r", exc)
                        self._refused = (
                            isinstance(exc, ServerError) and exc.code == METHOD_NOT_FOUND
                        )
                        return
                    finally:
                        self._scope = None
                if not scope.cancelled_caught:
                    return  # the server ended the stream: poll from now on
        finally:
            self._running = False
