"""The blocking client: a [`ClientSession`][trio_mcp.ClientSession] for scripts, notebooks and
threaded apps.

[`open_blocking_session()`][trio_mcp.open_blocking_session] starts ``trio.run`` in a daemon thread,
opens the session there with the nursery-less ``open_mcp_session(target, ...)`` and returns a
[`BlockingSession`][trio_mcp.BlockingSession] whose methods are those of
[`ClientSession`][trio_mcp.ClientSession] (same names, parameters and return types), called without
``await``. Each call crosses into the Trio thread with `trio.from_thread.run()` and runs in a cancel
scope of its own, so:

* ``timeout=`` works as in the async API (`trio.TooSlowError`);
* ``KeyboardInterrupt`` (Ctrl-C) in the calling thread cancels that call, which tells the
  server (``notifications/cancelled``), then re-raises ``KeyboardInterrupt``;
* any number of threads may call one session at once, and any number of sessions may be
  open (one Trio thread each).

Handlers the server calls into (``sampling=``, ``elicitation=``, ``roots=``,
`BlockingSession.set_request_handler()`, ``on_progress=``, notification callbacks) may
be plain functions: they run in a worker thread (`trio.to_thread.run_sync()`), never on
the Trio thread, so they may block (``input()``) without stalling the session.

This module is the hand-written half: the Trio thread, the crossings into it and
`BlockingSessionBase` (``close``, ``closed``...). The other half,
every method of [`ClientSession`][trio_mcp.ClientSession] without ``await``, is
``_blocking_api.py``, written by ``scripts/gen_bridges.py`` (its docstring says why a generator).
"""

from __future__ import annotations

import atexit
import functools
import inspect
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Generator, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from types import TracebackType
from typing import Any, ClassVar, Final, TypeVar

import trio

from . import types as t
from ._bridging import hold_open
from ._construction import NoPublicConstructor
from ._session import ClientSession, Notification, SessionView
from ._tasks import TaskState, ToolTask, ToolTaskView

__all__ = [
    "BlockingNotifications",
    "BlockingSessionBase",
    "BlockingToolTask",
]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")
R = TypeVar("R")
V = TypeVar("V")
S = TypeVar("S", bound="BlockingSessionBase")

ProgressCallback = Callable[[t.ProgressNotificationParams], Awaitable[None] | None]
"""A progress callback of the blocking API: a plain function (run in a worker thread) or an async
one (run on the Trio thread)."""

_CANCEL_GRACE: Final = 10.0
"""How long (real seconds) an interrupted call may take to announce its cancellation."""
_CLOSE_GRACE: Final = 30.0
"""How long (real seconds) [`BlockingSession.close()`][trio_mcp.BlockingSession.close] waits for the
Trio thread."""

_open_runners: dict[Runner, None] = {}
"""Every runner from the start of its open until it is closed: strong references, so a session
dropped without ``close()`` (or an open interrupted by Ctrl-C) is still closed, and its server
ended, at interpreter exit."""
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


def _register(runner: Runner) -> None:
    global _atexit_registered
    with _registry_lock:
        _open_runners[runner] = None
        if not _atexit_registered:
            atexit.register(_close_all_at_exit)
            _atexit_registered = True


def _unregister(runner: Runner) -> None:
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


def check_not_in_trio(what: str) -> None:
    if trio.lowlevel.in_trio_task():
        raise RuntimeError(
            f"{what} blocks the calling thread, and was called from inside a Trio task "
            "(that would freeze its whole Trio run, or deadlock): use the async API, "
            "trio_mcp.open_mcp_session(...), or trio.to_thread.run_sync(...)"
        )


class Runner:
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
        check_not_in_trio(what)
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
    """Notifications from `BlockingSession.notifications()` or `BlockingSession.listen()`.

    Iterate over it (``for note in stream:``), which blocks until the next notification and
    ends when the subscription or the session ends, or call
    [`receive()`][trio_mcp.BlockingNotifications.receive].
    """

    def __init__(self, runner: Runner, channel: trio.MemoryReceiveChannel[Notification]) -> None:
        self._runner = runner
        self._channel = channel

    def receive(self, *, timeout: float | None = None) -> Notification:
        """Wait for the next notification.

        Args:
            timeout: Seconds to wait before `trio.TooSlowError`; None waits forever.

        Returns:
            The next [`Notification`][trio_mcp.Notification].

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
    """A tool call running as a server task, for threads (`BlockingSession.start_tool_task()`).

    The blocking twin of [`ToolTask`][trio_mcp.tasks.ToolTask]: every method blocks the calling
    thread while the session's Trio thread does the work, and Ctrl-C cancels the wait (the task on
    the server is cancelled when the ``with`` block is left, as in Trio). Use it only
    inside its ``with`` block.
    """

    def __init__(self, runner: Runner, task: ToolTask) -> None:
        self._runner = runner
        self._task = task

    def poll(self, *, timeout: float | None = None) -> TaskState | None:
        """Ask the server for the task's state now (one ``tasks/get``).

        Args:
            timeout: Seconds before `trio.TooSlowError`; None waits as long as needed.

        Returns:
            The new [`TaskState`][trio_mcp.tasks.TaskState] (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
        """
        return self._runner.call("poll()", _bounded(self._task.poll, timeout))

    def wait_for_change(self, *, timeout: float | None = None) -> TaskState | None:
        """Poll at the server's interval until the status (or status message) changes.

        Args:
            timeout: Seconds before `trio.TooSlowError` (the task keeps running).

        Returns:
            The new [`TaskState`][trio_mcp.tasks.TaskState] (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
            trio.TooSlowError: The timeout expired.
        """
        return self._runner.call("wait_for_change()", _bounded(self._task.wait_for_change, timeout))

    def result(self, *, timeout: float | None = None) -> t.CallToolResult:
        """Wait for the task to end, answering its input requests, and return its result.

        Args:
            timeout: Seconds before `trio.TooSlowError`. The task keeps running on the
                server until the ``with`` block is left or
                [`cancel()`][trio_mcp.BlockingToolTask.cancel] is called.

        Returns:
            The tool's [`CallToolResult`][trio_mcp.types.CallToolResult].

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


class BlockingSessionBase(SessionView, metaclass=NoPublicConstructor):
    """The hand-written part of [`BlockingSession`][trio_mcp.BlockingSession]: state, closing, and
    the crossings.

    [`BlockingSession`][trio_mcp.BlockingSession] (``trio_mcp/_blocking_api.py``) adds every public
    method of [`ClientSession`][trio_mcp.ClientSession], generated by ``scripts/gen_bridges.py`` as
    calls of the helpers here: `Runner.call()` for async methods, `_hold()` for async context
    managers, `_run_sync()` for plain methods, `_callback()` for callbacks.
    """

    _open_with: ClassVar[str] = "trio_mcp.open_blocking_session(...)"

    def __init__(self, runner: Runner) -> None:
        self._runner = runner

    @property
    def _session(self) -> ClientSession:
        session = self._runner.session
        assert session is not None
        return session

    # -- properties (read from the calling thread) ---------------------------------------

    @property
    def closed(self) -> bool:
        """Whether [`close()`][trio_mcp.BlockingSession.close] has been called."""
        return self._runner.closed or self._session.closed

    @property
    def async_session(self) -> ClientSession:
        """The underlying [`ClientSession`][trio_mcp.ClientSession], for code running on its Trio
        thread."""
        return self._session

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the session, the server process (stdio) and the Trio thread. Idempotent.

        Calls still running in other threads fail with `trio.ClosedResourceError`.
        Sessions still open at interpreter exit are closed then.
        """
        check_not_in_trio("BlockingSession.close()")
        self._runner.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- what the generated methods call -------------------------------------------------

    @staticmethod
    def _callback(func: Callable[..., Any] | None) -> Any:
        """A callback for the session: a plain function runs in a worker thread."""
        return None if func is None else _in_thread(func)

    def _run_sync(self, what: str, func: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """Run the plain ``func(*args, **kwargs)`` on the Trio thread (for session state)."""
        return self._runner.run_sync(what, functools.partial(func, *args, **kwargs))

    def _remover(self, remove: Callable[[], None]) -> Callable[[], None]:
        """``remove`` (of a handler or claim), callable from any thread, after close too."""
        runner = self._runner

        def remove_handler() -> None:
            if not runner.closed:
                runner.run_sync("remove()", remove)

        return remove_handler

    def _stream(self, channel: trio.MemoryReceiveChannel[Notification]) -> BlockingNotifications:
        return BlockingNotifications(self._runner, channel)

    def _tool_task(self, task: ToolTask) -> BlockingToolTask:
        return BlockingToolTask(self._runner, task)

    @staticmethod
    def _same(value: V) -> V:
        return value

    @contextmanager
    def _hold(
        self,
        what: str,
        open_cm: Callable[[], AbstractAsyncContextManager[Any]],
        wrap: Callable[[Any], V],
    ) -> Generator[V, None, None]:
        """Enter an async context manager in a task on the Trio thread; exit it afterwards."""
        runner = self._runner
        runner.check(what)
        leave = trio.Event()
        left = trio.Event()

        async def start() -> Any:
            nursery = runner.nursery
            if nursery is None:  # pragma: no cover
                raise trio.ClosedResourceError("this blocking MCP session is closed")
            return await nursery.start(hold_open, what, open_cm, leave, left)

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


def wrap_handlers(options: dict[str, Any]) -> dict[str, Any]:
    wrapped = dict(options)
    for name in ("sampling", "elicitation", "roots"):
        handler = wrapped.get(name)
        if callable(handler):
            wrapped[name] = _in_thread(handler)
    return wrapped
