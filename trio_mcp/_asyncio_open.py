"""`open_asyncio_session`: the entry point of the asyncio client.

Kept apart from ``_asyncio.py`` (the guest-run host, the bridge and
`AsyncioSessionBase`) and ``_asyncio_api.py`` (the [`AsyncioSession`][trio_mcp.AsyncioSession]
generated from that base class) so that it can import both at module level: the generated module
imports ``_asyncio``, so a function there that needed ``_asyncio_api`` would tie the two
modules into a cycle.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import trio

from ._asyncio import Bridge, acquire_host, logger, release_host, wrap_handlers
from ._asyncio_api import AsyncioSession
from ._connect import (
    open_mcp_session,
    take_transport_options,
)
from ._session import ClientSession

__all__ = ["open_asyncio_session"]


@asynccontextmanager
async def _open(target: Any, options: dict[str, Any]) -> AsyncGenerator[AsyncioSession, None]:
    host = await acquire_host()
    try:
        bridge = Bridge(host)
        opened: asyncio.Future[ClientSession] = host.loop.create_future()
        ended = bridge.ended
        scope = trio.CancelScope()
        handlers = wrap_handlers(host, options)

        async def run_session() -> None:
            try:
                with scope:
                    async with open_mcp_session(target, **handlers) as session:
                        if not opened.done():
                            opened.set_result(session)
                        await bridge.stop.wait()
            except Exception as exc:
                if not opened.done():
                    opened.set_exception(exc)
                else:
                    logger.debug("closing an asyncio-bridged session failed", exc_info=True)
            finally:
                if not opened.done():
                    opened.set_exception(trio.ClosedResourceError("the MCP session was closed"))
                ended.set_result(None)

        host.bridges[bridge] = None  # held until closed: closed at loop end or exit
        host.spawn(run_session)
        try:
            bridge.session = await opened
        except BaseException:
            bridge.closed = True
            host.run_sync(scope.cancel)
            await bridge.shut()
            raise
        try:
            yield AsyncioSession._create(bridge)
        finally:
            await bridge.shut()
    finally:
        await release_host(host)


def open_asyncio_session(
    target: Any, /, **options: Any
) -> AbstractAsyncContextManager[AsyncioSession]:
    """Connect to an MCP server from asyncio code (Trio runs as a guest of the asyncio loop).

    ```python
    async with trio_mcp.open_asyncio_session(["python", "-m", "server"]) as session:
        print(await session.list_tools())
    ```

    Leaving the block closes the session (for stdio, the server process too); the block
    is left only once that is done.

    Args:
        target: What [`open_mcp_session()`][trio_mcp.open_mcp_session] connects to: an argv list, a
            command line, an ``http(s)://`` or ``ws(s)://`` URL, or a parameters object.
        **options: The options of [`open_mcp_session()`][trio_mcp.open_mcp_session]. ``sampling``,
            ``elicitation`` and ``roots`` handlers may be plain or asyncio coroutine functions.

    Returns:
        An async context manager yielding the [`AsyncioSession`][trio_mcp.AsyncioSession].

    Raises:
        RuntimeError: No asyncio loop is running, or this thread already runs Trio.
        TypeError: Wrong arguments, or an option that does not apply to the target.
        ConnectionClosed: The server could not be started or went away during start-up.
    """
    target, options = take_transport_options(target, options, stacklevel=2)  # deprecated
    return _open(target, options)
