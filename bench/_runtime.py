"""Event-loop runtimes the benchmark worker drives a client with.

The worker's workloads need four things: run a coroutine function, a task group, an event
and a semaphore. Trio clients (floor, trio_mcp, and the SDK on anyio's trio backend) use
Trio's own primitives, so every client on Trio is driven by exactly the same code; the SDK
on asyncio uses anyio's. Imported lazily, after the worker has measured the client's
import cost.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any


class TrioRuntime:
    """Trio primitives."""

    name = "trio"

    def __init__(self) -> None:
        import trio

        self._trio = trio
        self.Event = trio.Event
        self.open_group = trio.open_nursery

    def run(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        return self._trio.run(fn)

    def semaphore(self, n: int) -> Any:
        return self._trio.Semaphore(n)


class AnyioRuntime:
    """anyio primitives on the given backend (``asyncio`` or ``trio``)."""

    def __init__(self, backend: str) -> None:
        import anyio

        self._anyio = anyio
        self.name = f"anyio-{backend}"
        self._backend = backend
        self.Event = anyio.Event
        self.open_group = anyio.create_task_group

    def run(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        return self._anyio.run(fn, backend=self._backend)

    def semaphore(self, n: int) -> Any:
        return self._anyio.Semaphore(n)


def exec_worker(client: str) -> None:
    """Lets ``python bench/<client>_client.py WORKLOAD ...`` run the worker for ``client``."""
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")
    os.execv(sys.executable, [sys.executable, worker, client, *sys.argv[1:]])
