"""What the blocking and the asyncio bridges share (``_blocking.py``, ``_asyncio.py``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import trio

__all__ = ["hold_open"]

logger = logging.getLogger("trio_mcp")


async def hold_open(
    what: str,
    open_cm: Callable[[], AbstractAsyncContextManager[Any]],
    leave: trio.Event,
    left: trio.Event,
    *,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Enter ``open_cm()`` in this task, hand its value to ``nursery.start``, hold it open.

    The context manager is left once ``leave`` is set; ``left`` is set when it has been
    left (also when entering failed). An error while entering goes to ``nursery.start``,
    so to the caller; one while leaving is only logged (the caller has moved on).

    Args:
        what: The bridge method, for the log.
        open_cm: Makes the async context manager (a method of
            [`ClientSession`][trio_mcp.ClientSession]).
        leave: Set it to leave the context manager.
        left: Set once it has been left.
        task_status: From ``nursery.start``.
    """
    started = False
    try:
        async with open_cm() as value:
            task_status.started(value)
            started = True
            await leave.wait()
    except Exception:
        if not started:
            raise  # to nursery.start(), so to the caller
        logger.debug("%s: leaving failed", what, exc_info=True)
    finally:
        left.set()
