"""The asyncio bridge: trio_mcp sessions for asyncio programs, through Trio's guest mode.

:func:`open_asyncio_session` runs Trio *on top of* the running asyncio loop
(:func:`trio.lowlevel.start_guest_run`): Trio's tasks, and every read and write of the
session, run on the asyncio thread, between asyncio's callbacks; Trio only parks one helper
thread in its I/O wait (epoll) while it is idle. One guest run serves every session of a
loop (Trio allows one run per thread); it starts with the first session and ends with the
last, so ``asyncio.run`` closes cleanly.

Each call of an :class:`AsyncioSession` starts a Trio task in a cancel scope of its own and
awaits an asyncio future for its outcome. Cancellation maps both ways: cancelling the
asyncio task cancels the Trio scope (the server gets ``notifications/cancelled``) and the
task then sees :class:`asyncio.CancelledError`; an exception on the Trio side
(:class:`ServerError`, :class:`ConnectionClosed`, :class:`trio.TooSlowError`, ...) arrives
in asyncio as that same exception.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import logging
import os
import signal
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn, TypeVar, overload

import outcome
import trio

from . import _types as t
from ._construction import NoPublicConstructor
from ._handlers import RequestContext
from ._session import ClientSession, ListKind, Notification, ResultClaimHandler, SessionView
from ._tasks import TaskState, ToolTask, ToolTaskView
from ._transports._base import Transport

if TYPE_CHECKING:
    from ._catalogue import Catalogue

__all__ = ["AsyncioNotifications", "AsyncioSession", "AsyncioToolTask", "open_asyncio_session"]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")
R = TypeVar("R")
V = TypeVar("V")

#: A progress callback of the asyncio bridge: a plain function or a coroutine function
#: (run as an asyncio task; the call waits for it).
ProgressCallback = Callable[[t.ProgressNotificationParams], "Awaitable[None] | None"]


#: How long (real seconds) closing the sessions left open at interpreter exit may take.
_EXIT_GRACE: Final = 10.0


class _GuestHost:
    """One Trio guest run on one asyncio loop, shared by that loop's sessions.

    Every session opened on the loop holds a strong reference in :attr:`bridges` until it
    is closed. A guard task on the loop closes those still open when asyncio cancels its
    tasks at the end of ``asyncio.run``, and :func:`_close_all_at_exit` closes them (or,
    with the loop gone, kills their servers) at interpreter exit.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.users: int = 0
        self.ending: bool = False
        self.token: trio.lowlevel.TrioToken | None = None
        self.nursery: trio.Nursery | None = None
        self.quit: trio.Event = trio.Event()
        #: Resolved once the guest run's nursery is up (an exception: it never came up).
        self.ready: asyncio.Future[None] = loop.create_future()
        self.done: asyncio.Future[outcome.Outcome[None]] = loop.create_future()
        self.bridges: dict[_Bridge, None] = {}
        self.guard: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """Start the guest run (:attr:`ready` tells when it is up) and the guard task."""

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


async def _acquire_host() -> _GuestHost:
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
        await _release_host(host)
        raise
    return host


async def _release_host(host: _GuestHost) -> None:
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


class _Bridge:
    """The guest run of one session, and the calls that cross into it."""

    def __init__(self, host: _GuestHost) -> None:
        self.host = host
        self.session: ClientSession | None = None
        self.closed: bool = False
        self.stop: trio.Event = trio.Event()
        #: Resolved once the session's Trio task has ended (the session and server closed).
        self.ended: asyncio.Future[None] = host.loop.create_future()

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
    """Notifications from :meth:`AsyncioSession.notifications` or :meth:`AsyncioSession.listen`.

    Iterate over it (``async for note in stream:``), which ends when the subscription or the
    session ends, or ``await`` :meth:`receive`.
    """

    def __init__(self, bridge: _Bridge, channel: trio.MemoryReceiveChannel[Notification]) -> None:
        self._bridge = bridge
        self._channel = channel

    async def receive(self) -> Notification:
        """Wait for the next notification (use ``asyncio.timeout`` to bound the wait).

        Returns:
            The next :class:`Notification`.

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
    """A tool call running as a server task, for asyncio (:meth:`AsyncioSession.start_tool_task`).

    The asyncio twin of :class:`ToolTask`: its coroutines run the work in the guest Trio
    run and are awaited by asyncio, so ``asyncio.timeout`` and task cancellation bound
    them (the task keeps running on the server until the ``async with`` block is left or
    :meth:`cancel` is awaited). Use it only inside its ``async with`` block.
    """

    def __init__(self, bridge: _Bridge, task: ToolTask) -> None:
        self._bridge = bridge
        self._task = task

    async def poll(self) -> TaskState | None:
        """Ask the server for the task's state now (one ``tasks/get``).

        Returns:
            The new :class:`TaskState` (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
        """
        return await self._bridge.call(self._task.poll)

    async def wait_for_change(self) -> TaskState | None:
        """Poll at the server's interval until the status (or status message) changes.

        Returns:
            The new :class:`TaskState` (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
        """
        return await self._bridge.call(self._task.wait_for_change)

    async def result(self) -> t.CallToolResult:
        """Wait for the task to end, answering its input requests, and return its result.

        Returns:
            The tool's :class:`CallToolResult`.

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


class AsyncioSession(SessionView, metaclass=NoPublicConstructor):
    """A :class:`ClientSession` for asyncio code. Open it with :func:`open_asyncio_session`.

    Every method of :class:`ClientSession` is here with the same parameters and return type,
    awaited from asyncio; :meth:`notifications` and :meth:`listen` are async context managers
    yielding an :class:`AsyncioNotifications`, and :meth:`aclose` closes. Callbacks
    (``on_progress``, notification callbacks, handlers) may be plain functions or asyncio
    coroutine functions.
    """

    _open_with: ClassVar[str] = "trio_mcp.open_asyncio_session(...)"

    def __init__(self, bridge: _Bridge) -> None:
        self._bridge = bridge

    @property
    def _session(self) -> ClientSession:
        session = self._bridge.session
        assert session is not None
        return session

    @property
    def transport(self) -> Transport:
        """The transport the session runs on (driven by the guest Trio run)."""
        return self._session.transport

    @property
    def closed(self) -> bool:
        """Whether the session has been closed."""
        return self._bridge.closed or self._session.closed

    @property
    def async_session(self) -> ClientSession:
        """The underlying Trio :class:`ClientSession`, for code running in the guest run."""
        return self._session

    def _callback(self, func: Callable[..., Any] | None) -> Any:
        return None if func is None else _in_asyncio(self._bridge.host, func)

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T] | None = None,
    ) -> Any:
        """Send any request and return its result (see :meth:`ClientSession.request`).

        Args:
            method: The JSON-RPC method.
            params: The params, in wire form (camelCase keys).
            timeout: Seconds before :class:`trio.TooSlowError` (default: the session's).
            on_progress: Called (or awaited by asyncio) with each progress notification.
            result_type: Decode the result into this type; by default the decoded JSON.
        """
        return await self._bridge.call(
            self._session.request, method, params, timeout=timeout,
            on_progress=self._callback(on_progress), result_type=result_type,
        )  # fmt: skip

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification to the server.

        Args:
            method: The notification method.
            params: The params in wire form, or None.
        """
        await self._bridge.call(self._session.notify, method, params)

    def set_request_handler(
        self, method: str, handler: Callable[[Any, RequestContext], Any] | None
    ) -> None:
        """Serve server-to-client requests of ``method`` with ``handler``.

        Args:
            method: The request method, e.g. ``"x-vendor/thing"``.
            handler: A plain or asyncio coroutine function taking the decoded params and a
                :class:`RequestContext`; None removes the handler.
        """
        self._bridge.check()
        self._session.set_request_handler(method, self._callback(handler))

    def add_notification_handler(
        self, method: str, callback: Callable[[Notification], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` for each notification of ``method`` (``"*"`` for all).

        Args:
            method: The notification method, or ``"*"`` for every notification.
            callback: A plain function (called at once, keep it quick) or an asyncio
                coroutine function (run as an asyncio task).

        Returns:
            A function that removes the handler again.
        """
        self._bridge.check()
        host = self._bridge.host

        def deliver(note: Notification) -> Any:
            value = callback(note)
            if inspect.isawaitable(value):
                return _from_asyncio(host, value)
            return value

        return self._session.add_notification_handler(method, deliver)

    def notifications(
        self, *methods: str, buffer: int | None = None
    ) -> AbstractAsyncContextManager[AsyncioNotifications]:
        """Receive the server's notifications while the ``async with`` block runs.

        Args:
            *methods: Only these methods (all notifications when none are given).
            buffer: How many notifications may wait unread (default: the session's).

        Returns:
            An async context manager yielding an :class:`AsyncioNotifications`.
        """
        session = self._session
        return self._hold(lambda: session.notifications(*methods, buffer=buffer), self._stream)

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
        buffer: int | None = None,
    ) -> AbstractAsyncContextManager[AsyncioNotifications]:
        """Receive change notifications while the ``async with`` block runs, in either era.

        Args:
            tools: Deliver ``notifications/tools/list_changed``.
            prompts: Deliver ``notifications/prompts/list_changed``.
            resources: Deliver ``notifications/resources/list_changed``.
            resource_uris: Deliver ``notifications/resources/updated`` for these URIs.
            buffer: How many notifications may wait unread.

        Returns:
            An async context manager yielding an :class:`AsyncioNotifications`.
        """
        session = self._session
        uris = tuple(resource_uris)
        return self._hold(
            lambda: session.listen(
                tools=tools, prompts=prompts, resources=resources, resource_uris=uris,
                buffer=buffer,
            ),
            self._stream,
        )  # fmt: skip

    def _stream(self, channel: trio.MemoryReceiveChannel[Notification]) -> AsyncioNotifications:
        return AsyncioNotifications(self._bridge, channel)

    def catalogue(
        self,
        *,
        tools: bool = True,
        prompts: bool = False,
        resources: bool = False,
        debounce: float = 0.1,
    ) -> AbstractAsyncContextManager[Catalogue]:
        """Keep a live catalogue of the server's tools, prompts and resources.

        The :class:`Catalogue` is refreshed by the guest Trio run; read its attributes from
        asyncio code (its ``refresh()`` is a Trio coroutine: not for asyncio).

        Args:
            tools: Keep the tools (default).
            prompts: Keep the prompts.
            resources: Keep the resources.
            debounce: Seconds to wait for further changes before refreshing.

        Returns:
            An async context manager yielding the :class:`Catalogue`.
        """
        session = self._session
        return self._hold(
            lambda: session.catalogue(
                tools=tools, prompts=prompts, resources=resources, debounce=debounce
            ),
            _same,
        )

    def _deliver(self, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        self._bridge.check()
        host = self._bridge.host

        def deliver(value: Any) -> Any:
            result = callback(value)
            if inspect.isawaitable(result):
                return _from_asyncio(host, result)
            return result

        return deliver

    def on_log(
        self, callback: Callable[[t.LoggingMessageNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each log message (``notifications/message``), typed.

        Args:
            callback: A plain function (keep it quick) or an asyncio coroutine function.

        Returns:
            A function that removes the callback again.
        """
        return self._session.on_log(self._deliver(callback))

    def on_progress(
        self, callback: Callable[[t.ProgressNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with every progress notification, of any request, typed.

        Args:
            callback: A plain function (keep it quick) or an asyncio coroutine function.

        Returns:
            A function that removes the callback again.
        """
        return self._session.on_progress(self._deliver(callback))

    def on_list_changed(
        self, callback: Callable[[ListKind], Any], *kinds: ListKind
    ) -> Callable[[], None]:
        """Call ``callback`` with ``"tools"``, ``"prompts"`` or ``"resources"`` on list changes.

        Args:
            callback: A plain function (keep it quick) or an asyncio coroutine function.
            *kinds: Only these kinds (all when none are given).

        Returns:
            A function that removes the callback again.
        """
        return self._session.on_list_changed(self._deliver(callback), *kinds)

    def on_resource_updated(
        self, callback: Callable[[t.ResourceUpdatedNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each ``notifications/resources/updated``, typed.

        Args:
            callback: A plain function (keep it quick) or an asyncio coroutine function.

        Returns:
            A function that removes the callback again.
        """
        return self._session.on_resource_updated(self._deliver(callback))

    async def keep_alive(
        self, interval: float, *, max_failures: int = 3, timeout: float | None = None
    ) -> NoReturn:
        """Ping the server every ``interval`` seconds until it stops answering.

        Run it as an asyncio task and cancel that when done.

        Args:
            interval: Seconds between pings.
            max_failures: Consecutive failed pings that end it.
            timeout: Seconds each ping may take (default: ``interval``).
        """
        await self._bridge.call(
            self._session.keep_alive, interval, max_failures=max_failures, timeout=timeout
        )
        raise AssertionError("unreachable: keep_alive() returns only by raising")

    @asynccontextmanager
    async def _hold(
        self, open_cm: Callable[[], Any], wrap: Callable[[Any], V]
    ) -> AsyncGenerator[V, None]:
        bridge = self._bridge
        bridge.check()
        leave = trio.Event()
        left = trio.Event()
        host = bridge.host

        async def hold(*, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
            started = False
            try:
                async with open_cm() as value:
                    task_status.started(value)
                    started = True
                    await leave.wait()
            except Exception:
                if not started:
                    raise  # to nursery.start(), so to the caller
                logger.debug("leaving a subscription failed", exc_info=True)
            finally:
                left.set()

        async def start() -> Any:
            assert host.nursery is not None
            return await host.nursery.start(hold)

        value = await bridge.call(start)
        try:
            yield wrap(value)
        finally:
            host.run_sync(leave.set)
            if not bridge.closed:
                await asyncio.shield(bridge.call(left.wait))

    async def list_tools(self, *, cache: bool = True, timeout: float | None = None) -> list[t.Tool]:
        """List every tool the server offers, following every ``nextCursor``.

        Args:
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds for each page request.
        """
        return await self._bridge.call(self._session.list_tools, cache=cache, timeout=timeout)

    async def list_tools_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListToolsResult:
        """Fetch one page of tools.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return await self._bridge.call(
            self._session.list_tools_page, cursor, cache=cache, timeout=timeout
        )

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: None = None,
    ) -> t.CallToolResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T],
    ) -> T: ...

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T] | None = None,
    ) -> t.CallToolResult | T:
        """Call a tool and return its result (see :meth:`ClientSession.call_tool`).

        Args:
            name: The tool's name.
            arguments: The tool's arguments (JSON-compatible values).
            timeout: Seconds before :class:`trio.TooSlowError` and cancellation.
            on_progress: Called (or awaited by asyncio) with each progress notification.
            result_type: Decode ``structured_content`` into this type and return that.
        """
        return await self._bridge.call(
            self._session.call_tool, name, arguments, timeout=timeout,
            on_progress=self._callback(on_progress), result_type=result_type,
        )  # fmt: skip

    def start_tool_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AbstractAsyncContextManager[AsyncioToolTask]:
        """Call a tool and hold the server task it becomes (see ``docs/tasks.md``).

        Yields an :class:`AsyncioToolTask` whose coroutines asyncio awaits; leaving the
        block cancels an unfinished task on the server (``tasks/cancel``). To just wait
        for the result, :meth:`call_tool` drives tasks.

        Args:
            name: The tool's name.
            arguments: The tool's arguments.
            timeout: Seconds for the ``tools/call`` request itself.
            on_progress: Called (or awaited by asyncio) with each progress notification.

        Returns:
            An async context manager yielding the :class:`AsyncioToolTask`.
        """
        session = self._session
        progress = self._callback(on_progress)
        bridge = self._bridge
        return self._hold(
            lambda: session.start_tool_task(name, arguments, timeout=timeout, on_progress=progress),
            lambda task: AsyncioToolTask(bridge, task),
        )

    async def list_tasks(self, *, timeout: float | None = None) -> list[TaskState]:
        """List the server's tasks (2025-11-25 ``tasks/list``).

        Args:
            timeout: Seconds for each page request.
        """
        return await self._bridge.call(self._session.list_tasks, timeout=timeout)

    def claim_result_type(
        self,
        result_type: str,
        handler: ResultClaimHandler,
        *,
        methods: Iterable[str] | None = None,
    ) -> Callable[[], None]:
        """Handle results of a new ``resultType`` yourself (SEP-2133).

        ``handler`` is a Trio coroutine function, run in the guest Trio run; see
        :meth:`ClientSession.claim_result_type`.

        Args:
            result_type: The ``resultType`` value to claim.
            handler: ``async def handler(method, result) -> Mapping``.
            methods: Only results of these methods.

        Returns:
            A function that removes the claim again.
        """
        self._bridge.check()
        return self._session.claim_result_type(result_type, handler, methods=methods)

    async def list_resources(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Resource]:
        """List every resource, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._bridge.call(self._session.list_resources, cache=cache, timeout=timeout)

    async def list_resources_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListResourcesResult:
        """Fetch one page of resources.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return await self._bridge.call(
            self._session.list_resources_page, cursor, cache=cache, timeout=timeout
        )

    async def list_resource_templates(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.ResourceTemplate]:
        """List every resource template, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._bridge.call(
            self._session.list_resource_templates, cache=cache, timeout=timeout
        )

    async def list_resource_templates_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListResourceTemplatesResult:
        """Fetch one page of resource templates.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return await self._bridge.call(
            self._session.list_resource_templates_page, cursor, cache=cache, timeout=timeout
        )

    async def read_resource(
        self, uri: str, *, cache: bool = True, timeout: float | None = None
    ) -> t.ReadResourceResult:
        """Read a resource.

        Args:
            uri: The resource's URI.
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return await self._bridge.call(
            self._session.read_resource, uri, cache=cache, timeout=timeout
        )

    async def subscribe_resource(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (legacy servers).

        Args:
            uri: The resource's URI.
        """
        await self._bridge.call(self._session.subscribe_resource, uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop ``notifications/resources/updated`` about ``uri`` (no-op on modern servers).

        Args:
            uri: The resource's URI.
        """
        await self._bridge.call(self._session.unsubscribe_resource, uri)

    async def list_prompts(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Prompt]:
        """List every prompt, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._bridge.call(self._session.list_prompts, cache=cache, timeout=timeout)

    async def list_prompts_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListPromptsResult:
        """Fetch one page of prompts.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return await self._bridge.call(
            self._session.list_prompts_page, cursor, cache=cache, timeout=timeout
        )

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> t.GetPromptResult:
        """Get a prompt, filled in with ``arguments``.

        Args:
            name: The prompt's name.
            arguments: Values for the prompt's arguments.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return await self._bridge.call(self._session.get_prompt, name, arguments, timeout=timeout)

    async def complete(
        self,
        ref: t.PromptReference | t.ResourceTemplateReference | Mapping[str, Any],
        argument_name: str,
        argument_value: str,
        *,
        context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> t.CompleteResult:
        """Ask the server to complete an argument of a prompt or resource template.

        Args:
            ref: ``PromptReference(name=...)``, ``ResourceTemplateReference(uri=...)`` or the
                same as a dict.
            argument_name: The argument being completed.
            argument_value: What the user typed so far.
            context_arguments: Values of other, already chosen arguments.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return await self._bridge.call(
            self._session.complete, ref, argument_name, argument_value,
            context_arguments=context_arguments, timeout=timeout,
        )  # fmt: skip

    async def set_logging_level(self, level: str) -> None:
        """Set the minimum level of log messages the server sends.

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``, ``critical``,
                ``alert`` or ``emergency``.
        """
        await self._bridge.call(self._session.set_logging_level, level)

    async def wait_elicitation_complete(
        self, elicitation_id: str, *, timeout: float | None = None
    ) -> None:
        """Wait for ``notifications/elicitation/complete`` naming ``elicitation_id``.

        Args:
            elicitation_id: The ``elicitationId`` of the elicitation.
            timeout: Seconds before :class:`trio.TooSlowError` (default: wait forever).
        """
        await self._bridge.call(
            self._session.wait_elicitation_complete, elicitation_id, timeout=timeout
        )

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers.

        Args:
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        await self._bridge.call(self._session.ping, timeout=timeout)

    async def aclose(self) -> None:
        """Close the session and its transport (for stdio, the server process). Idempotent.

        Calls still pending fail with :class:`trio.ClosedResourceError`. Leaving the
        ``async with`` block of :func:`open_asyncio_session` closes too.
        """
        await asyncio.sleep(0)
        await self._bridge.shut()


def _same(value: V) -> V:
    return value


def _wrap_handlers(host: _GuestHost, options: dict[str, Any]) -> dict[str, Any]:
    wrapped = dict(options)
    for name in ("sampling", "elicitation", "roots"):
        handler = wrapped.get(name)
        if callable(handler):
            wrapped[name] = _in_asyncio(host, handler)
    return wrapped


@asynccontextmanager
async def _open(target: Any, options: dict[str, Any]) -> AsyncGenerator[AsyncioSession, None]:
    from ._connect import open_mcp_session

    host = await _acquire_host()
    try:
        bridge = _Bridge(host)
        opened: asyncio.Future[ClientSession] = host.loop.create_future()
        ended = bridge.ended
        scope = trio.CancelScope()
        handlers = _wrap_handlers(host, options)

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
        await _release_host(host)


def open_asyncio_session(
    target: Any, /, **options: Any
) -> AbstractAsyncContextManager[AsyncioSession]:
    """Connect to an MCP server from asyncio code (Trio runs as a guest of the asyncio loop).

    ::

        async with trio_mcp.open_asyncio_session(["python", "-m", "server"]) as session:
            print(await session.list_tools())

    Leaving the block closes the session (for stdio, the server process too); the block
    is left only once that is done.

    Args:
        target: What :func:`open_mcp_session` connects to: an argv list, a command line, an
            ``http(s)://`` or ``ws(s)://`` URL, or a parameters object.
        **options: The options of :func:`open_mcp_session`. ``sampling``, ``elicitation``
            and ``roots`` handlers may be plain or asyncio coroutine functions.

    Returns:
        An async context manager yielding the :class:`AsyncioSession`.

    Raises:
        RuntimeError: No asyncio loop is running, or this thread already runs Trio.
        TypeError: Wrong arguments, or an option that does not apply to the target.
        ConnectionClosed: The server could not be started or went away during start-up.
    """
    return _open(target, options)
