"""The blocking client: a :class:`ClientSession` for scripts, notebooks and threaded apps.

:func:`open_blocking_session` starts ``trio.run`` in a daemon thread, opens the session
there with the nursery-less ``open_mcp_session(target, ...)`` and returns a
:class:`BlockingSession` whose methods are those of :class:`ClientSession` (same names,
parameters and return types), called without ``await``. Each call crosses into the Trio
thread with :func:`trio.from_thread.run` and runs in a cancel scope of its own, so:

* ``timeout=`` works as in the async API (:class:`trio.TooSlowError`);
* ``KeyboardInterrupt`` (Ctrl-C) in the calling thread cancels that call, which tells the
  server (``notifications/cancelled``), then re-raises ``KeyboardInterrupt``;
* any number of threads may call one session at once, and any number of sessions may be
  open (one Trio thread each).

Handlers the server calls into (``sampling=``, ``elicitation=``, ``roots=``,
:meth:`BlockingSession.set_request_handler`, ``on_progress=``, notification callbacks) may
be plain functions: they run in a worker thread (:func:`trio.to_thread.run_sync`), never on
the Trio thread, so they may block (``input()``) without stalling the session.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Final, NoReturn, TypeVar, overload

import trio

from . import _types as t
from ._construction import NoPublicConstructor
from ._handlers import RequestContext
from ._session import ClientSession, ListKind, Notification, ResultClaimHandler, SessionView
from ._tasks import TaskState, ToolTask, ToolTaskView
from ._transports._base import Transport

if TYPE_CHECKING:
    from ._catalogue import Catalogue

__all__ = ["BlockingNotifications", "BlockingSession", "BlockingToolTask", "open_blocking_session"]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")
R = TypeVar("R")
V = TypeVar("V")

#: A progress callback of the blocking API: a plain function (run in a worker thread) or an
#: async one (run on the Trio thread).
ProgressCallback = Callable[[t.ProgressNotificationParams], "Awaitable[None] | None"]

#: How long (real seconds) an interrupted call may take to announce its cancellation.
_CANCEL_GRACE: Final = 10.0
#: How long (real seconds) :meth:`BlockingSession.close` waits for the Trio thread.
_CLOSE_GRACE: Final = 30.0

#: Every runner from the start of its open until it is closed: strong references, so a
#: session dropped without ``close()`` (or an open interrupted by Ctrl-C) is still closed,
#: and its server ended, at interpreter exit.
_open_runners: dict[_Runner, None] = {}
_registry_lock = threading.Lock()
_atexit_registered = False


def _close_all_at_exit() -> None:
    with _registry_lock:
        runners = list(_open_runners)
    for runner in runners:
        try:
            runner.close()
        except BaseException:  # pragma: no cover - best effort at interpreter exit
            logger.debug("closing a blocking session at exit failed", exc_info=True)


def _register(runner: _Runner) -> None:
    global _atexit_registered
    with _registry_lock:
        _open_runners[runner] = None
        if not _atexit_registered:
            atexit.register(_close_all_at_exit)
            _atexit_registered = True


def _unregister(runner: _Runner) -> None:
    with _registry_lock:
        _open_runners.pop(runner, None)


def _in_thread(func: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """Wrap a plain function so the Trio thread runs it in a worker thread.

    An ``async def`` function is returned unchanged (it runs on the Trio thread). What the
    plain function returns is awaited when it is awaitable (an object whose ``__call__`` is
    async).
    """
    if inspect.iscoroutinefunction(func):
        return func

    async def run(*args: Any) -> Any:
        value = await trio.to_thread.run_sync(func, *args, abandon_on_cancel=True)
        if inspect.isawaitable(value):
            value = await value
        return value

    return run


def _check_not_in_trio(what: str) -> None:
    if trio.lowlevel.in_trio_task():
        raise RuntimeError(
            f"{what} blocks the calling thread, and was called from inside a Trio task "
            "(that would freeze its whole Trio run, or deadlock): use the async API, "
            "trio_mcp.open_mcp_session(...), or trio.to_thread.run_sync(...)"
        )


class _Runner:
    """The Trio thread of one blocking session and the calls that cross into it."""

    def __init__(self) -> None:
        self.token: trio.lowlevel.TrioToken | None = None
        self.session: ClientSession | None = None
        self.nursery: trio.Nursery | None = None
        self.stop: trio.Event | None = None
        self.scope: trio.CancelScope | None = None
        self.thread: threading.Thread | None = None
        self.closed: bool = False
        self.cancel_notice_timeout: float = 1.0

    def start(self, target: Any, options: dict[str, Any]) -> None:
        """Start the thread and wait until the session is open (or failed to open).

        Ctrl-C (or any exception) in the waiting caller cancels the open in the Trio
        thread, which ends a server it started, and re-raises once that is done.
        """
        ready: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self.thread = threading.Thread(
            target=self._thread_main, args=(target, options, ready), name="trio_mcp", daemon=True
        )
        _register(self)
        try:
            self.thread.start()
            error = ready.get()
        except BaseException:
            self.close()
            raise
        if error is not None:
            self.thread.join()
            self.closed = True
            _unregister(self)
            raise error

    def _thread_main(
        self, target: Any, options: dict[str, Any], ready: queue.SimpleQueue[BaseException | None]
    ) -> None:
        try:
            trio.run(self._main, target, options, ready)
        except BaseException as exc:  # start-up failed, or a bug: tell the waiting caller
            ready.put(exc)

    async def _main(
        self, target: Any, options: dict[str, Any], ready: queue.SimpleQueue[BaseException | None]
    ) -> None:
        from ._connect import open_mcp_session

        self.stop = trio.Event()
        self.scope = trio.CancelScope()
        self.token = trio.lowlevel.current_trio_token()  # close() may signal from now on
        with self.scope:
            if self.closed:  # closed before the token was there to tell us
                self.scope.cancel()
            async with open_mcp_session(target, **options) as session:
                async with trio.open_nursery() as nursery:
                    self.session = session
                    self.nursery = nursery
                    ready.put(None)
                    if self.closed:  # interrupted while starting
                        return
                    await self.stop.wait()
                    nursery.cancel_scope.cancel()
        if self.scope.cancelled_caught:
            ready.put(trio.ClosedResourceError("the blocking MCP session was closed as it opened"))

    def check(self, what: str) -> tuple[ClientSession, trio.lowlevel.TrioToken]:
        _check_not_in_trio(what)
        if self.closed or self.session is None or self.token is None:
            raise trio.ClosedResourceError("this blocking MCP session is closed")
        return self.session, self.token

    def call(self, what: str, func: Callable[..., Awaitable[R]], *args: Any, **kwargs: Any) -> R:
        """Run ``await func(*args, **kwargs)`` on the Trio thread and return its result."""
        _, token = self.check(what)
        scope = trio.CancelScope()
        finished = threading.Event()

        async def invoke() -> R:
            try:
                with scope:
                    return await func(*args, **kwargs)
                raise KeyboardInterrupt  # cancelled by the caller's Ctrl-C
            finally:
                finished.set()

        try:
            return trio.from_thread.run(invoke, trio_token=token)
        except KeyboardInterrupt:
            self._interrupt(scope, finished, token)
            raise
        except (trio.Cancelled, trio.RunFinishedError):
            raise trio.ClosedResourceError(
                f"{what}: the blocking MCP session was closed during the call"
            ) from None

    def _interrupt(
        self, scope: trio.CancelScope, finished: threading.Event, token: trio.lowlevel.TrioToken
    ) -> None:
        """Cancel an interrupted call and wait (bounded) until the server was told."""
        try:
            trio.from_thread.run_sync(scope.cancel, trio_token=token)
        except trio.RunFinishedError:
            return
        finished.wait(self.cancel_notice_timeout + _CANCEL_GRACE)

    def run_sync(self, what: str, func: Callable[..., R], *args: Any) -> R:
        """Run the plain ``func(*args)`` on the Trio thread (for session state)."""
        _, token = self.check(what)
        try:
            return trio.from_thread.run_sync(func, *args, trio_token=token)
        except trio.RunFinishedError:
            raise trio.ClosedResourceError("this blocking MCP session is closed") from None

    def close(self) -> None:
        """End the session (or cancel its open) and wait, bounded, for the Trio thread.

        Idempotent; a second call (after a Ctrl-C that interrupted the first one's wait, or
        at exit) waits for the thread again, so the server has ended when it returns.
        """
        if not self.closed:
            self.closed = True
            token = self.token
            if token is not None:
                try:
                    token.run_sync_soon(self._stop_soon)
                except trio.RunFinishedError:
                    pass
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            if thread.ident is not None:  # started
                thread.join(_CLOSE_GRACE)
            if thread.is_alive():  # pragma: no cover - a transport that would not close
                logger.warning("the trio_mcp session thread did not end within %s s", _CLOSE_GRACE)
                return
        _unregister(self)

    def _stop_soon(self) -> None:
        """In the Trio thread: close an open session; cancel an open still under way."""
        if self.session is None and self.scope is not None:
            self.scope.cancel()
        if self.stop is not None:
            self.stop.set()


class BlockingNotifications:
    """Notifications from :meth:`BlockingSession.notifications` or :meth:`BlockingSession.listen`.

    Iterate over it (``for note in stream:``), which blocks until the next notification and
    ends when the subscription or the session ends, or call :meth:`receive`.
    """

    def __init__(self, runner: _Runner, channel: trio.MemoryReceiveChannel[Notification]) -> None:
        self._runner = runner
        self._channel = channel

    def receive(self, *, timeout: float | None = None) -> Notification:
        """Wait for the next notification.

        Args:
            timeout: Seconds to wait before :class:`trio.TooSlowError`; None waits forever.

        Returns:
            The next :class:`Notification`.

        Raises:
            trio.EndOfChannel: The subscription or the session ended.
            trio.TooSlowError: The timeout expired.
        """
        channel = self._channel

        async def receive() -> Notification:
            if timeout is None:
                return await channel.receive()
            with trio.fail_after(timeout):
                return await channel.receive()

        try:
            return self._runner.call("receive()", receive)
        except trio.ClosedResourceError:
            raise trio.EndOfChannel from None

    def __iter__(self) -> Iterator[Notification]:
        while True:
            try:
                yield self.receive()
            except trio.EndOfChannel:
                return


class BlockingToolTask(ToolTaskView):
    """A tool call running as a server task, for threads (:meth:`BlockingSession.start_tool_task`).

    The blocking twin of :class:`ToolTask`: every method blocks the calling thread while
    the session's Trio thread does the work, and Ctrl-C cancels the wait (the task on
    the server is cancelled when the ``with`` block is left, as in Trio). Use it only
    inside its ``with`` block.
    """

    def __init__(self, runner: _Runner, task: ToolTask) -> None:
        self._runner = runner
        self._task = task

    def poll(self, *, timeout: float | None = None) -> TaskState | None:
        """Ask the server for the task's state now (one ``tasks/get``).

        Args:
            timeout: Seconds before :class:`trio.TooSlowError`; None waits as long as needed.

        Returns:
            The new :class:`TaskState` (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
        """
        return self._runner.call("poll()", _bounded(self._task.poll, timeout))

    def wait_for_change(self, *, timeout: float | None = None) -> TaskState | None:
        """Poll at the server's interval until the status (or status message) changes.

        Args:
            timeout: Seconds before :class:`trio.TooSlowError` (the task keeps running).

        Returns:
            The new :class:`TaskState` (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
            trio.TooSlowError: The timeout expired.
        """
        return self._runner.call("wait_for_change()", _bounded(self._task.wait_for_change, timeout))

    def result(self, *, timeout: float | None = None) -> t.CallToolResult:
        """Wait for the task to end, answering its input requests, and return its result.

        Args:
            timeout: Seconds before :class:`trio.TooSlowError`. The task keeps running on the
                server until the ``with`` block is left or :meth:`cancel` is called.

        Returns:
            The tool's :class:`CallToolResult`.

        Raises:
            TaskFailedError: The task failed.
            TaskCancelledError: The task was cancelled.
            TaskLostError: The server forgot the task.
            trio.TooSlowError: The timeout expired.
        """
        return self._runner.call("result()", _bounded(self._task.result, timeout))

    def cancel(self) -> None:
        """Cancel the task on the server now (``tasks/cancel``).

        Raises:
            ServerError: The server refused (the task had already ended, ...).
        """
        self._runner.call("cancel()", self._task.cancel)


def _bounded(func: Callable[[], Awaitable[R]], timeout: float | None) -> Callable[[], Awaitable[R]]:
    """``func`` under ``trio.fail_after(timeout)`` (unbounded when ``timeout`` is None)."""
    if timeout is None:
        return func

    async def bounded() -> R:
        with trio.fail_after(timeout):
            return await func()

    return bounded


class BlockingSession(SessionView, metaclass=NoPublicConstructor):
    """A :class:`ClientSession` for code that does not run Trio: scripts, notebooks, threads.

    Open it with :func:`open_blocking_session`. Every method of :class:`ClientSession` is
    here with the same parameters and return type, without ``await``; the async context
    managers :meth:`notifications` and :meth:`listen` are plain context managers yielding a
    blocking iterator (:class:`BlockingNotifications`), and ``aclose()`` is :meth:`close`.

    Any thread may call any method, also many threads at once. A method called from inside
    a Trio task raises :class:`RuntimeError` at once (it would block the Trio run); after
    :meth:`close` every method raises :class:`trio.ClosedResourceError`. Errors are those of
    the async API: a server that dies mid-call fails the call with :class:`ConnectionClosed`.
    """

    _open_with: ClassVar[str] = "trio_mcp.open_blocking_session(...)"

    def __init__(self, runner: _Runner) -> None:
        self._runner = runner

    @property
    def _session(self) -> ClientSession:
        session = self._runner.session
        assert session is not None
        return session

    # -- properties (read from the calling thread) ---------------------------------------

    @property
    def transport(self) -> Transport:
        """The transport the session runs on (driven by the session's Trio thread)."""
        return self._session.transport

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._runner.closed or self._session.closed

    @property
    def async_session(self) -> ClientSession:
        """The underlying :class:`ClientSession`, for code running on its Trio thread."""
        return self._session

    # -- low-level -----------------------------------------------------------------------

    def request(
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
            on_progress: Called with each progress notification (in a worker thread).
            result_type: Decode the result into this type; by default the decoded JSON.
        """
        return self._runner.call(
            "request()", self._session.request, method, params, timeout=timeout,
            on_progress=_progress(on_progress), result_type=result_type,
        )  # fmt: skip

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification to the server.

        Args:
            method: The notification method.
            params: The params in wire form, or None.
        """
        self._runner.call("notify()", self._session.notify, method, params)

    def set_request_handler(
        self, method: str, handler: Callable[[Any, RequestContext], Any] | None
    ) -> None:
        """Serve server-to-client requests of ``method`` with ``handler``.

        Args:
            method: The request method, e.g. ``"x-vendor/thing"``.
            handler: A plain function (run in a worker thread) or an async one, taking the
                decoded params and a :class:`RequestContext`; None removes the handler.
        """
        wrapped = None if handler is None else _in_thread(handler)
        self._runner.run_sync(
            "set_request_handler()", self._session.set_request_handler, method, wrapped
        )

    def add_notification_handler(
        self, method: str, callback: Callable[[Notification], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` for each notification of ``method`` (``"*"`` for all).

        Args:
            method: The notification method, or ``"*"`` for every notification.
            callback: A plain function (run in a worker thread) or an async one, called with
                each :class:`Notification`.

        Returns:
            A function (callable from any thread) that removes the handler again.
        """
        runner = self._runner
        remove = runner.run_sync(
            "add_notification_handler()",
            self._session.add_notification_handler,
            method,
            _in_thread(callback),
        )

        def remove_handler() -> None:
            if not runner.closed:
                runner.run_sync("remove()", remove)

        return remove_handler

    def notifications(
        self, *methods: str, buffer: int | None = None
    ) -> AbstractContextManager[BlockingNotifications]:
        """Receive the server's notifications while the ``with`` block runs.

        Args:
            *methods: Only these methods (all notifications when none are given).
            buffer: How many notifications may wait unread (default: the session's).

        Returns:
            A context manager yielding a :class:`BlockingNotifications`.
        """
        session = self._session
        return self._hold(
            "notifications()", lambda: session.notifications(*methods, buffer=buffer), self._stream
        )

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
        buffer: int | None = None,
    ) -> AbstractContextManager[BlockingNotifications]:
        """Receive change notifications while the ``with`` block runs, in either era.

        Args:
            tools: Deliver ``notifications/tools/list_changed``.
            prompts: Deliver ``notifications/prompts/list_changed``.
            resources: Deliver ``notifications/resources/list_changed``.
            resource_uris: Deliver ``notifications/resources/updated`` for these URIs.
            buffer: How many notifications may wait unread.

        Returns:
            A context manager yielding a :class:`BlockingNotifications`.
        """
        session = self._session
        uris = tuple(resource_uris)
        return self._hold(
            "listen()",
            lambda: session.listen(
                tools=tools, prompts=prompts, resources=resources, resource_uris=uris,
                buffer=buffer,
            ),
            self._stream,
        )  # fmt: skip

    def _stream(self, channel: trio.MemoryReceiveChannel[Notification]) -> BlockingNotifications:
        return BlockingNotifications(self._runner, channel)

    def catalogue(
        self,
        *,
        tools: bool = True,
        prompts: bool = False,
        resources: bool = False,
        debounce: float = 0.1,
    ) -> AbstractContextManager[Catalogue]:
        """Keep a live catalogue of the server's tools, prompts and resources.

        The :class:`Catalogue` is refreshed on the session's Trio thread; read its
        attributes from yours (its async ``refresh()`` is for code on that thread).

        Args:
            tools: Keep the tools (default).
            prompts: Keep the prompts.
            resources: Keep the resources.
            debounce: Seconds to wait for further changes before refreshing.

        Returns:
            A context manager yielding the :class:`Catalogue`.
        """
        session = self._session
        return self._hold(
            "catalogue()",
            lambda: session.catalogue(
                tools=tools, prompts=prompts, resources=resources, debounce=debounce
            ),
            _same,
        )

    def _register(self, what: str, register: Callable[[Any], Callable[[], None]],
                  callback: Callable[..., Any]) -> Callable[[], None]:  # fmt: skip
        runner = self._runner
        remove = runner.run_sync(what, register, _in_thread(callback))

        def remove_handler() -> None:
            if not runner.closed:
                runner.run_sync("remove()", remove)

        return remove_handler

    def on_log(
        self, callback: Callable[[t.LoggingMessageNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each log message (``notifications/message``), typed.

        Args:
            callback: A plain function (run in a worker thread) or an async one.

        Returns:
            A function (callable from any thread) that removes the callback again.
        """
        return self._register("on_log()", self._session.on_log, callback)

    def on_progress(
        self, callback: Callable[[t.ProgressNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with every progress notification, of any request, typed.

        Args:
            callback: A plain function (run in a worker thread) or an async one.

        Returns:
            A function (callable from any thread) that removes the callback again.
        """
        return self._register("on_progress()", self._session.on_progress, callback)

    def on_list_changed(
        self, callback: Callable[[ListKind], Any], *kinds: ListKind
    ) -> Callable[[], None]:
        """Call ``callback`` with ``"tools"``, ``"prompts"`` or ``"resources"`` on list changes.

        Args:
            callback: A plain function (run in a worker thread) or an async one.
            *kinds: Only these kinds (all when none are given).

        Returns:
            A function (callable from any thread) that removes the callback again.
        """
        session = self._session
        return self._register(
            "on_list_changed()", lambda cb: session.on_list_changed(cb, *kinds), callback
        )

    def on_resource_updated(
        self, callback: Callable[[t.ResourceUpdatedNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each ``notifications/resources/updated``, typed.

        Args:
            callback: A plain function (run in a worker thread) or an async one.

        Returns:
            A function (callable from any thread) that removes the callback again.
        """
        return self._register("on_resource_updated()", self._session.on_resource_updated, callback)

    def keep_alive(
        self, interval: float, *, max_failures: int = 3, timeout: float | None = None
    ) -> NoReturn:
        """Ping the server every ``interval`` seconds until it stops answering.

        Blocks the calling thread (run it in a thread of yours); Ctrl-C stops it.

        Args:
            interval: Seconds between pings.
            max_failures: Consecutive failed pings that end it.
            timeout: Seconds each ping may take (default: ``interval``).
        """
        self._runner.call(
            "keep_alive()", self._session.keep_alive, interval, max_failures=max_failures,
            timeout=timeout,
        )  # fmt: skip
        raise AssertionError("unreachable: keep_alive() returns only by raising")

    @contextmanager
    def _hold(
        self, what: str, open_cm: Callable[[], Any], wrap: Callable[[Any], V]
    ) -> Generator[V, None, None]:
        """Enter an async context manager in a task on the Trio thread; exit it afterwards."""
        runner = self._runner
        runner.check(what)
        leave = trio.Event()
        left = trio.Event()

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
                logger.debug("%s: leaving failed", what, exc_info=True)
            finally:
                left.set()

        async def start() -> Any:
            nursery = runner.nursery
            if nursery is None:  # pragma: no cover
                raise trio.ClosedResourceError("this blocking MCP session is closed")
            return await nursery.start(hold)

        value = runner.call(what, start)
        try:
            yield wrap(value)
        finally:
            if not runner.closed:
                try:
                    runner.run_sync(what, leave.set)
                    runner.call(what, left.wait)
                except trio.ClosedResourceError:
                    pass

    # -- typed API -----------------------------------------------------------------------

    def list_tools(self, *, cache: bool = True, timeout: float | None = None) -> list[t.Tool]:
        """List every tool the server offers, following every ``nextCursor``.

        Args:
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds for each page request.
        """
        return self._runner.call(
            "list_tools()", self._session.list_tools, cache=cache, timeout=timeout
        )

    def list_tools_page(
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
        return self._runner.call(
            "list_tools_page()", self._session.list_tools_page, cursor, cache=cache,
            timeout=timeout,
        )  # fmt: skip

    @overload
    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: None = None,
    ) -> t.CallToolResult: ...

    @overload
    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T],
    ) -> T: ...

    def call_tool(
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
            on_progress: Called with each progress notification (in a worker thread).
            result_type: Decode ``structured_content`` into this type and return that.
        """
        return self._runner.call(
            "call_tool()", self._session.call_tool, name, arguments, timeout=timeout,
            on_progress=_progress(on_progress), result_type=result_type,
        )  # fmt: skip

    def start_tool_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AbstractContextManager[BlockingToolTask]:
        """Call a tool and hold the server task it becomes (see ``docs/tasks.md``).

        Yields a :class:`BlockingToolTask` whose methods block this thread; leaving the
        ``with`` block cancels an unfinished task on the server (``tasks/cancel``). To
        just wait for the result, :meth:`call_tool` drives tasks by itself.

        Args:
            name: The tool's name.
            arguments: The tool's arguments.
            timeout: Seconds for the ``tools/call`` request itself.
            on_progress: Called with each progress notification (in a worker thread).

        Returns:
            A context manager yielding the :class:`BlockingToolTask`.
        """
        session = self._session
        progress = _progress(on_progress)
        runner = self._runner
        return self._hold(
            "start_tool_task()",
            lambda: session.start_tool_task(name, arguments, timeout=timeout, on_progress=progress),
            lambda task: BlockingToolTask(runner, task),
        )

    def list_tasks(self, *, timeout: float | None = None) -> list[TaskState]:
        """List the server's tasks (2025-11-25 ``tasks/list``).

        Args:
            timeout: Seconds for each page request.
        """
        return self._runner.call("list_tasks()", self._session.list_tasks, timeout=timeout)

    def claim_result_type(
        self,
        result_type: str,
        handler: ResultClaimHandler,
        *,
        methods: Iterable[str] | None = None,
    ) -> Callable[[], None]:
        """Handle results of a new ``resultType`` yourself (SEP-2133).

        ``handler`` is a Trio coroutine function run on the session's Trio thread; see
        :meth:`ClientSession.claim_result_type`.

        Args:
            result_type: The ``resultType`` value to claim.
            handler: ``async def handler(method, result) -> Mapping``.
            methods: Only results of these methods.

        Returns:
            A function that removes the claim again.
        """
        runner = self._runner
        remove = runner.run_sync(
            "claim_result_type()",
            lambda: self._session.claim_result_type(result_type, handler, methods=methods),
        )

        def remove_claim() -> None:
            if not runner.closed:
                runner.run_sync("remove()", remove)

        return remove_claim

    def list_resources(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Resource]:
        """List every resource, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return self._runner.call(
            "list_resources()", self._session.list_resources, cache=cache, timeout=timeout
        )

    def list_resources_page(
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
        return self._runner.call(
            "list_resources_page()", self._session.list_resources_page, cursor, cache=cache,
            timeout=timeout,
        )  # fmt: skip

    def list_resource_templates(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.ResourceTemplate]:
        """List every resource template, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return self._runner.call(
            "list_resource_templates()", self._session.list_resource_templates, cache=cache,
            timeout=timeout,
        )  # fmt: skip

    def list_resource_templates_page(
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
        return self._runner.call(
            "list_resource_templates_page()", self._session.list_resource_templates_page,
            cursor, cache=cache, timeout=timeout,
        )  # fmt: skip

    def read_resource(
        self, uri: str, *, cache: bool = True, timeout: float | None = None
    ) -> t.ReadResourceResult:
        """Read a resource.

        Args:
            uri: The resource's URI.
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return self._runner.call(
            "read_resource()", self._session.read_resource, uri, cache=cache, timeout=timeout
        )

    def subscribe_resource(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (legacy servers).

        Args:
            uri: The resource's URI.
        """
        self._runner.call("subscribe_resource()", self._session.subscribe_resource, uri)

    def unsubscribe_resource(self, uri: str) -> None:
        """Stop ``notifications/resources/updated`` about ``uri`` (no-op on modern servers).

        Args:
            uri: The resource's URI.
        """
        self._runner.call("unsubscribe_resource()", self._session.unsubscribe_resource, uri)

    def list_prompts(self, *, cache: bool = True, timeout: float | None = None) -> list[t.Prompt]:
        """List every prompt, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return self._runner.call(
            "list_prompts()", self._session.list_prompts, cache=cache, timeout=timeout
        )

    def list_prompts_page(
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
        return self._runner.call(
            "list_prompts_page()", self._session.list_prompts_page, cursor, cache=cache,
            timeout=timeout,
        )  # fmt: skip

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> t.GetPromptResult:
        """Get a prompt, filled in with ``arguments``.

        Args:
            name: The prompt's name.
            arguments: Values for the prompt's arguments.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        return self._runner.call(
            "get_prompt()", self._session.get_prompt, name, arguments, timeout=timeout
        )

    def complete(
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
        return self._runner.call(
            "complete()", self._session.complete, ref, argument_name, argument_value,
            context_arguments=context_arguments, timeout=timeout,
        )  # fmt: skip

    def set_logging_level(self, level: str) -> None:
        """Set the minimum level of log messages the server sends.

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``, ``critical``,
                ``alert`` or ``emergency``.
        """
        self._runner.call("set_logging_level()", self._session.set_logging_level, level)

    def wait_elicitation_complete(
        self, elicitation_id: str, *, timeout: float | None = None
    ) -> None:
        """Wait for ``notifications/elicitation/complete`` naming ``elicitation_id``.

        Args:
            elicitation_id: The ``elicitationId`` of the elicitation.
            timeout: Seconds before :class:`trio.TooSlowError` (default: wait forever).
        """
        self._runner.call(
            "wait_elicitation_complete()", self._session.wait_elicitation_complete,
            elicitation_id, timeout=timeout,
        )  # fmt: skip

    def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers.

        Args:
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        self._runner.call("ping()", self._session.ping, timeout=timeout)

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the session, the server process (stdio) and the Trio thread. Idempotent.

        Calls still running in other threads fail with :class:`trio.ClosedResourceError`.
        Sessions still open at interpreter exit are closed then.
        """
        _check_not_in_trio("BlockingSession.close()")
        self._runner.close()

    def __enter__(self) -> BlockingSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _progress(callback: ProgressCallback | None) -> Any:
    return None if callback is None else _in_thread(callback)


def _same(value: V) -> V:
    return value


def _wrap_handlers(options: dict[str, Any]) -> dict[str, Any]:
    wrapped = dict(options)
    for name in ("sampling", "elicitation", "roots"):
        handler = wrapped.get(name)
        if callable(handler):
            wrapped[name] = _in_thread(handler)
    return wrapped


def open_blocking_session(target: Any, /, **options: Any) -> BlockingSession:
    """Connect to an MCP server from code that does not run Trio, and return the session.

    Starts ``trio.run`` in a daemon thread and opens the session there with
    ``trio_mcp.open_mcp_session(target, **options)``; returns once the session is ready.
    Use it as a context manager, or call :meth:`BlockingSession.close` (sessions still open
    at interpreter exit are closed then)::

        with trio_mcp.open_blocking_session(["python", "-m", "server"]) as session:
            print(session.list_tools())

    Args:
        target: What :func:`open_mcp_session` connects to: an argv list, a command line, an
            ``http(s)://`` or ``ws(s)://`` URL, or a parameters object.
        **options: The options of :func:`open_mcp_session`. ``sampling``, ``elicitation``
            and ``roots`` handlers may be plain functions: they run in a worker thread.

    Returns:
        The open :class:`BlockingSession`.

    Raises:
        RuntimeError: Called from inside a Trio task.
        TypeError: Wrong arguments, or an option that does not apply to the target.
        ConnectionClosed: The server could not be started or went away during start-up.
    """
    _check_not_in_trio("open_blocking_session()")
    runner = _Runner()
    runner.cancel_notice_timeout = float(options.get("cancel_notice_timeout", 1.0))
    runner.start(target, _wrap_handlers(options))
    session: BlockingSession = BlockingSession._create(runner)
    return session
