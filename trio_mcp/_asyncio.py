"""The asyncio bridge: trio_mcp sessions for asyncio programs, through Trio's guest mode.

[`open_asyncio_session()`][trio_mcp.open_asyncio_session] runs Trio *on top of* the running asyncio
loop (`trio.lowlevel.start_guest_run()`): Trio's tasks, and every read and write of the
session, run on the asyncio thread, between asyncio's callbacks; Trio only parks one helper
thread in its I/O wait (epoll) while it is idle. One guest run serves every session of a
loop (Trio allows one run per thread); it starts with the first session and ends with the
last, so ``asyncio.run`` closes cleanly.

Each call of an [`AsyncioSession`][trio_mcp.AsyncioSession] starts a Trio task in a cancel scope of
its own and awaits an asyncio future for its outcome. Cancellation maps both ways: cancelling the
asyncio task cancels the Trio scope (the server gets ``notifications/cancelled``) and the
task then sees `asyncio.CancelledError`; an exception on the Trio side
([`ServerError`][trio_mcp.ServerError], [`ConnectionClosed`][trio_mcp.ConnectionClosed],
`trio.TooSlowError`, ...) arrives in asyncio as that same exception.

Here is the guest run and the calls that cross into it, and `AsyncioSessionBase`
with ``aclose`` and ``closed``; ``scripts/gen_bridges.py`` derives the rest
of [`AsyncioSession`][trio_mcp.AsyncioSession] (``_asyncio_api.py``) from
[`ClientSession`][trio_mcp.ClientSession].
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import logging
import os
import signal
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, ClassVar, Final, TypeVar

import outcome
import trio

from . import types as t
from ._bridging import hold_open
from ._construction import NoPublicConstructor
from ._session import ClientSession, Notification, SessionView
from ._tasks import TaskState, ToolTask, ToolTaskView

__all__ = [
    "AsyncioNotifications",
    "AsyncioSessionBase",
    "AsyncioToolTask",
]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")
R = TypeVar("R")
V = TypeVar("V")

ProgressCallback = Callable[[t.ProgressNotificationParams], Awaitable[None] | None]
"""A progress callback of the asyncio bridge: a plain function or a coroutine function (run as an
asyncio task; the call waits for it)."""


_EXIT_GRACE: Final = 10.0
"""How long (real seconds) closing the sessions left open at interpreter exit may take."""


class _GuestHost:
    """One Trio guest run on one asyncio loop, shared by that loop's sessions.

    Every session opened on the loop holds a strong reference in `bridges` until it
    is closed. A guard task on the loop closes those still open when asyncio cancels its
    tasks at the end of ``asyncio.run``, and `_close_all_at_exit()` closes them (or,
    with the loop gone, kills their servers) at interpreter exit.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.users: int = 0
        self.ending: bool = False
        self.token: trio.lowlevel.TrioToken | None = None
        self.nursery: trio.Nursery | None = None
        self.quit: trio.Event = trio.Event()
        self.ready: asyncio.Future[None] = loop.create_future()
        """Resolved once the guest run's nursery is up (an exception: it never came up)."""
        self.done: asyncio.Future[outcome.Outcome[None]] = loop.create_future()
        self.bridges: dict[Bridge, None] = {}
        self.guard: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """Start the guest run (`ready` tells when it is up) and the guard task."""

        def done_callback(result: outcome.Outcome[None]) -> None:
            if not self.ready.done():
                self.ready.set_exception(
                    RuntimeError(f"the Trio guest run ended at once: {result}")
                )
            if not self.done.done():
                self.done.set_result(result)

        trio.lowlevel.start_guest_run(
            self._main,
            run_sync_soon_threadsafe=self.loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=self.loop.call_soon,
            done_callback=done_callback,
            host_uses_signal_set_wakeup_fd=True,
            strict_exception_groups=True,
        )
        self.guard = self.loop.create_task(self._guard(), name="trio_mcp guest-run guard")

    async def _main(self) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            self.token = trio.lowlevel.current_trio_token()
            if not self.ready.done():
                self.ready.set_result(None)
            await self.quit.wait()

    async def _guard(self) -> None:
        """Wait for the guest run's end; cancelled first (``asyncio.run`` ending), close all."""
        try:
            await asyncio.shield(self.done)
        except asyncio.CancelledError:
            await self.shutdown()
            raise

    async def shutdown(self) -> None:
        """Close every session still open on this loop, then end the guest run."""
        bridges = list(self.bridges)
        if bridges:
            logger.debug("closing %d asyncio-bridged MCP session(s) left open", len(bridges))
            await asyncio.gather(*(bridge.shut() for bridge in bridges), return_exceptions=True)
        await self.finish()

    def kill_servers(self) -> None:
        """Kill the servers of sessions still open (at exit, when the loop cannot run)."""
        for bridge in list(self.bridges):
            bridge.kill_server()

    async def finish(self) -> outcome.Outcome[None]:
        """End the guest run (idempotent) and wait until it has ended."""
        if not self.ending:
            self.ending = True
            self.ready.add_done_callback(self._quit_when_ready)
        try:
            return await asyncio.shield(self.done)
        finally:
            if _hosts.get(self.loop) is self:
                del _hosts[self.loop]

    def _quit_when_ready(self, ready: asyncio.Future[None]) -> None:
        if not ready.cancelled() and ready.exception() is None:
            self.run_sync(self.quit.set)

    def spawn(self, func: Callable[[], Awaitable[None]]) -> None:
        """Start ``func()`` as a task of the guest run (callable from asyncio code)."""
        token, nursery = self.token, self.nursery
        assert token is not None and nursery is not None
        token.run_sync_soon(nursery.start_soon, func)

    def run_sync(self, func: Callable[[], object]) -> None:
        """Run the plain ``func()`` inside the guest run soon (a no-op once it has ended)."""
        if self.token is None or self.done.done():
            return
        try:
            self.token.run_sync_soon(func)
        except trio.RunFinishedError:  # pragma: no cover - ended between check and call
            pass


_hosts: dict[asyncio.AbstractEventLoop, _GuestHost] = {}
_atexit_lock = threading.Lock()
_atexit_registered = False


def _close_all_at_exit() -> None:
    """Close the sessions still open at interpreter exit; kill the servers of the rest."""
    for host in list(_hosts.values()):
        loop = host.loop
        if host.bridges and not loop.is_closed() and not loop.is_running():
            try:  # a stopped loop (a Jupyter kernel shutting down): let it close them
                loop.run_until_complete(asyncio.wait_for(host.shutdown(), _EXIT_GRACE))
            except BaseException:  # pragma: no cover - best effort at interpreter exit
                logger.debug("closing asyncio-bridged sessions at exit failed", exc_info=True)
        host.kill_servers()


def _register_atexit() -> None:
    global _atexit_registered
    with _atexit_lock:
        if not _atexit_registered:
            atexit.register(_close_all_at_exit)
            _atexit_registered = True


async def acquire_host() -> _GuestHost:
    """Join the loop's guest run, starting it first if there is none (or it is ending)."""
    loop = asyncio.get_running_loop()
    while True:
        host = _hosts.get(loop)
        if host is None:
            break
        if not host.ending:
            return await _join(host)
        await asyncio.shield(host.done)  # the previous guest run is ending: wait for it
    if trio.lowlevel.in_trio_run():
        raise RuntimeError(
            "open_asyncio_session(): this thread already runs Trio (trio.run or another guest "
            "run); use trio_mcp.open_mcp_session(...) there"
        )
    _register_atexit()
    host = _GuestHost(loop)
    host.begin()
    _hosts[loop] = host
    return await _join(host)


async def _join(host: _GuestHost) -> _GuestHost:
    """Count a user of ``host`` and wait until its guest run is up (also when joined early)."""
    host.users += 1
    try:
        await asyncio.shield(host.ready)
    except BaseException:
        await release_host(host)
        raise
    return host


async def release_host(host: _GuestHost) -> None:
    host.users -= 1
    if host.users > 0:
        return
    result = await host.finish()
    if host.ready.exception() is None:
        result.unwrap()


async def _from_asyncio(host: _GuestHost, awaitable: Awaitable[R]) -> R:
    """In Trio: run an asyncio awaitable as an asyncio task and wait for its result."""
    future = asyncio.ensure_future(awaitable, loop=host.loop)
    finished = trio.Event()
    future.add_done_callback(lambda _: host.run_sync(finished.set))
    try:
        await finished.wait()
    except trio.Cancelled:
        future.cancel()
        raise
    return future.result()


def _in_asyncio(host: _GuestHost, func: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """Wrap a user callback so that what it returns is awaited by asyncio, not Trio."""

    async def run(*args: Any) -> Any:
        value = func(*args)
        if inspect.isawaitable(value):
            value = await _from_asyncio(host, value)
        return value

    return run


class Bridge:
    """The guest run of one session, and the calls that cross into it."""

    def __init__(self, host: _GuestHost) -> None:
        self.host = host
        self.session: ClientSession | None = None
        self.closed: bool = False
        self.stop: trio.Event = trio.Event()
        self.ended: asyncio.Future[None] = host.loop.create_future()
        """Resolved once the session's Trio task has ended (the session and server closed)."""

    async def shut(self) -> None:
        """Close the session and wait until it is closed. Idempotent."""
        if not self.closed:
            self.closed = True
            self.host.run_sync(self.stop.set)
        try:
            await asyncio.shield(self.ended)
        finally:
            if self.ended.done():
                self.host.bridges.pop(self, None)

    def kill_server(self) -> None:
        """Kill the server's process group now (at exit, when the loop cannot run any more)."""
        self.host.bridges.pop(self, None)
        session = self.session
        pid = getattr(session.transport, "pid", None) if session is not None else None
        if isinstance(pid, int) and not self.ended.done():
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:  # pragma: no cover - gone already
                pass

    def check(self) -> ClientSession:
        if self.closed or self.session is None:
            raise trio.ClosedResourceError("this MCP session is closed")
        return self.session

    async def call(self, func: Callable[..., Awaitable[R]], *args: Any, **kwargs: Any) -> R:
        """Run ``await func(*args, **kwargs)`` in the guest run; await its outcome here."""
        self.check()
        loop = self.host.loop
        result: asyncio.Future[R] = loop.create_future()
        finished: asyncio.Future[None] = loop.create_future()
        scope = trio.CancelScope()

        async def invoke() -> None:
            try:
                with scope:
                    value = await func(*args, **kwargs)
                    if not result.done():
                        result.set_result(value)
            except Exception as exc:
                if not result.done():
                    result.set_exception(exc)
            finally:
                if not result.done():
                    result.set_exception(
                        trio.ClosedResourceError("the MCP session was closed during the call")
                    )
                finished.set_result(None)

        self.host.spawn(invoke)
        try:
            return await result
        except asyncio.CancelledError:
            self.host.run_sync(scope.cancel)
            await asyncio.shield(finished)  # bounded: the cancel notice is
            raise


class AsyncioNotifications:
    """Notifications from `AsyncioSession.notifications()` or `AsyncioSession.listen()`.

    Iterate over it (``async for note in stream:``), which ends when the subscription or the
    session ends, or ``await`` [`receive()`][trio_mcp.AsyncioNotifications.receive].
    """

    def __init__(self, bridge: Bridge, channel: trio.MemoryReceiveChannel[Notification]) -> None:
        self._bridge = bridge
        self._channel = channel

    async def receive(self) -> Notification:
        """Wait for the next notification (use ``asyncio.timeout`` to bound the wait).

        Returns:
            The next [`Notification`][trio_mcp.Notification].

        Raises:
            trio.EndOfChannel: The subscription or the session ended.
        """
        try:
            return await self._bridge.call(self._channel.receive)
        except trio.ClosedResourceError:
            raise trio.EndOfChannel from None

    def __aiter__(self) -> AsyncIterator[Notification]:
        return self

    async def __anext__(self) -> Notification:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


class AsyncioToolTask(ToolTaskView):
    """A tool call running as a server task, for asyncio (`AsyncioSession.start_tool_task()`).

    The asyncio twin of [`ToolTask`][trio_mcp.tasks.ToolTask]: its coroutines run the work in the
    guest Trio run and are awaited by asyncio, so ``asyncio.timeout`` and task cancellation bound
    them (the task keeps running on the server until the ``async with`` block is left or
    [`cancel()`][trio_mcp.AsyncioToolTask.cancel] is awaited). Use it only inside its ``async with``
    block.
    """

    def __init__(self, bridge: Bridge, task: ToolTask) -> None:
        self._bridge = bridge
        self._task = task

    async def poll(self) -> TaskState | None:
        """Ask the server for the task's state now (one ``tasks/get``).

        Returns:
            The new [`TaskState`][trio_mcp.tasks.TaskState] (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
        """
        return await self._bridge.call(self._task.poll)

    async def wait_for_change(self) -> TaskState | None:
        """Poll at the server's interval until the status (or status message) changes.

        Returns:
            The new [`TaskState`][trio_mcp.tasks.TaskState] (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
        """
        return await self._bridge.call(self._task.wait_for_change)

    async def result(self) -> t.CallToolResult:
        """Wait for the task to end, answering its input requests, and return its result.

        Returns:
            The tool's [`CallToolResult`][trio_mcp.types.CallToolResult].

        Raises:
            TaskFailedError: The task failed.
            TaskCancelledError: The task was cancelled.
            TaskLostError: The server forgot the task.
        """
        return await self._bridge.call(self._task.result)

    async def cancel(self) -> None:
        """Cancel the task on the server now (``tasks/cancel``).

        Raises:
            ServerError: The server refused (the task had already ended, ...).
        """
        await self._bridge.call(self._task.cancel)


class AsyncioSessionBase(SessionView, metaclass=NoPublicConstructor):
    """The hand-written part of [`AsyncioSession`][trio_mcp.AsyncioSession]: state, closing, and the
    crossings.

    [`AsyncioSession`][trio_mcp.AsyncioSession] (``trio_mcp/_asyncio_api.py``) adds every public
    method of [`ClientSession`][trio_mcp.ClientSession], generated by ``scripts/gen_bridges.py`` as
    calls of the helpers here: `Bridge.call()` for async methods, `_hold()` for async context
    managers, `_callback()` and `_deliver()` for callbacks.
    """

    _open_with: ClassVar[str] = "trio_mcp.open_asyncio_session(...)"

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge

    @property
    def _session(self) -> ClientSession:
        session = self._bridge.session
        assert session is not None
        return session

    @property
    def closed(self) -> bool:
        """Whether the session has been closed."""
        return self._bridge.closed or self._session.closed

    @property
    def async_session(self) -> ClientSession:
        """The underlying Trio [`ClientSession`][trio_mcp.ClientSession], for code running in the
        guest run."""
        return self._session

    async def aclose(self) -> None:
        """Close the session and its transport (for stdio, the server process). Idempotent.

        Calls still pending fail with `trio.ClosedResourceError`. Leaving the
        ``async with`` block of [`open_asyncio_session()`][trio_mcp.open_asyncio_session] closes
        too.
        """
        await asyncio.sleep(0)
        await self._bridge.shut()

    # -- what the generated methods call -------------------------------------------------

    def _callback(self, func: Callable[..., Any] | None) -> Any:
        """A callback the session awaits: what ``func`` returns is awaited by asyncio."""
        return None if func is None else _in_asyncio(self._bridge.host, func)

    def _deliver(self, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """A notification callback: called at once; an awaitable it returns runs in asyncio."""
        host = self._bridge.host

        def deliver(value: Any) -> Any:
            result = callback(value)
            if inspect.isawaitable(result):
                return _from_asyncio(host, result)
            return result

        return deliver

    def _stream(self, channel: trio.MemoryReceiveChannel[Notification]) -> AsyncioNotifications:
        return AsyncioNotifications(self._bridge, channel)

    def _tool_task(self, task: ToolTask) -> AsyncioToolTask:
        return AsyncioToolTask(self._bridge, task)

    @staticmethod
    def _same(value: V) -> V:
        return value

    @asynccontextmanager
    async def _hold(
        self,
        what: str,
        open_cm: Callable[[], AbstractAsyncContextManager[Any]],
        wrap: Callable[[Any], V],
    ) -> AsyncGenerator[V, None]:
        """Enter an async context manager in a task of the guest run; exit it afterwards."""
        bridge = self._bridge
        bridge.check()
        leave = trio.Event()
        left = trio.Event()
        host = bridge.host

        async def start() -> Any:
            assert host.nursery is not None
            return await host.nursery.start(hold_open, what, open_cm, leave, left)

        value = await bridge.call(start)
        try:
            yield wrap(value)
        finally:
            host.run_sync(leave.set)
            if not bridge.closed:
                await asyncio.shield(bridge.call(left.wait))


def wrap_handlers(host: _GuestHost, options: dict[str, Any]) -> dict[str, Any]:
    wrapped = dict(options)
    for name in ("sampling", "elicitation", "roots"):
        handler = wrapped.get(name)
        if callable(handler):
            wrapped[name] = _in_asyncio(host, handler)
    return wrapped
