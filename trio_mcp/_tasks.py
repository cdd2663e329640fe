"""Long-running tools: driving server tasks to their result (see ``docs/tasks.md``).

Two wire forms, one caller-facing behaviour:

* **2026-07-28, the Tasks extension** (SEP-2663, ``io.modelcontextprotocol/tasks``): a
  ``tools/call`` may answer ``resultType: "task"`` with a flat task; the client polls
  ``tasks/get`` (whose answer carries the ``result``, the ``error`` or the
  ``inputRequests``), answers input with ``tasks/update`` and cancels with
  ``tasks/cancel``.
* **2025-11-25, experimental tasks** (SEP-1686): a ``tools/call`` sent with ``task: {}``
  answers ``{"task": {...}}``; the client polls ``tasks/get`` (or is woken by
  ``notifications/tasks/status``) and fetches the outcome with ``tasks/result``, during
  which the server sends its input requests as ordinary server-to-client requests.

The `TaskDriver` does both; [`ToolTask`][trio_mcp.tasks.ToolTask] is the handle of
[`ClientSession.start_tool_task()`][trio_mcp.ClientSession.start_tool_task]. Time is trio's clock
only.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec
import trio

from . import types as t
from ._exceptions import (
    InputRequestError,
    MCPError,
    ProtocolError,
    ServerError,
    TaskCancelledError,
    TaskFailedError,
    TaskLostError,
)
from ._handlers import HandlerError
from ._jsonrpc import decode_json

if TYPE_CHECKING:
    from ._subscriptions import Notification
    from ._taskpushes import TaskPushes

__all__ = [
    "TASKS_EXTENSION",
    "TaskDriver",
    "TaskState",
    "ToolTask",
    "ToolTaskView",
    "decode_task",
]

logger = logging.getLogger("trio_mcp")

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The extension id of SEP-2663 tasks, advertised under ``capabilities.extensions``."""

TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
KNOWN_STATUSES: Final = frozenset({"working", "input_required", *TERMINAL_STATUSES})
DEFAULT_POLL_INTERVAL: Final = 1.0
"""Seconds between polls when the server suggests no interval."""
MIN_POLL_INTERVAL: Final = 0.01
"""The shortest poll interval honoured, so a server's ``0`` cannot make a busy loop."""

_encoder = msgspec.json.Encoder()

# Field names drifted while SEP-2663 was in review; every spelling seen is decoded.
_TTL_FIELDS: Final = (("ttlMs", 0.001), ("ttlSeconds", 1.0), ("ttl", 0.001))
_POLL_FIELDS: Final = (
    ("pollIntervalMs", 0.001),
    ("pollIntervalMilliseconds", 0.001),
    ("pollInterval", 0.001),
)


@dataclass(frozen=True, slots=True)
class TaskState:
    """What the server last said about a task, in either protocol era.

    Attributes:
        task_id: The server's id of the task.
        status: ``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``.
        status_message: The server's human-readable status, if any.
        created_at: ISO 8601 creation time, if sent.
        last_updated_at: ISO 8601 time of the last change, if sent.
        ttl: Seconds the server keeps the task after creation; ``None`` when unlimited or
            not said (decoded from ``ttlMs``, ``ttlSeconds`` or 2025-11-25 ``ttl``).
        poll_interval: The server's suggested seconds between polls, or ``None``
            (decoded from ``pollIntervalMs``, ``pollIntervalMilliseconds`` or
            ``pollInterval``).
    """

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl: float | None = None
    poll_interval: float | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (``completed``, ``failed`` or ``cancelled``)."""
        return self.status in TERMINAL_STATUSES


def _seconds(body: Mapping[str, Any], fields: tuple[tuple[str, float], ...]) -> float | None:
    for name, scale in fields:
        value = body.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value) * scale
    return None


def _text(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    return value if isinstance(value, str) else None


def decode_task(body: Mapping[str, Any], where: str) -> TaskState:
    """Decode a task object of either era (flat SEP-2663 or 2025-11-25 ``Task``).

    Args:
        body: The decoded task fields.
        where: What the object is, for error messages.

    Returns:
        The [`TaskState`][trio_mcp.tasks.TaskState].

    Raises:
        ProtocolError: No ``taskId``, or a status this client does not know.
    """
    task_id = body.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise ProtocolError(f"{where}: the task has no taskId")
    status = body.get("status")
    if status not in KNOWN_STATUSES:
        raise ProtocolError(
            f"{where}: task {task_id} has unknown status {status!r} "
            f"(known: {', '.join(sorted(KNOWN_STATUSES))})"
        )
    return TaskState(
        task_id=task_id,
        status=cast(str, status),
        status_message=_text(body, "statusMessage"),
        created_at=_text(body, "createdAt"),
        last_updated_at=_text(body, "lastUpdatedAt"),
        ttl=_seconds(body, _TTL_FIELDS),
        poll_interval=_seconds(body, _POLL_FIELDS),
    )


def _as_dict(value: object) -> dict[str, Any] | None:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


Call = Callable[..., Awaitable[msgspec.Raw]]
Gather = Callable[[Mapping[str, msgspec.Raw]], Awaitable[dict[str, Any]]]
AddHandler = Callable[[str, Callable[["Notification"], Any]], Callable[[], None]]


@dataclass(eq=False)
class TaskDriver:
    """Polls one task to its end, answering its input requests (internal).

    ``call`` is the session's one logical request (``_meta``, timeouts); ``gather``
    answers input requests through the session's handlers.
    """

    state: TaskState
    legacy: bool
    call: Call
    gather: Gather
    add_handler: AddHandler
    cancel_notice_timeout: float
    max_input_rounds: int
    body: dict[str, Any] = field(default_factory=dict[str, Any])
    pushes: TaskPushes | None = None  # modern: the session's listen stream for task pushes
    cancel_sent: bool = False
    _changed: trio.Event = field(default_factory=trio.Event)
    _answered: frozenset[str] = frozenset()
    _rounds: int = 0
    _refreshed_terminal: bool = False
    _polled: bool = False

    @property
    def task_id(self) -> str:
        return self.state.task_id

    def on_status(self, note: Notification) -> None:
        """``notifications/tasks/status`` (2025-11-25) or ``notifications/tasks`` (the tasks
        extension, 2026-07-28): adopt it and wake the poller."""
        if note.params.get("taskId") != self.task_id:
            return
        try:
            state = decode_task(note.params, note.method)
        except ProtocolError as exc:
            logger.debug("ignoring a malformed task status notification: %s", exc)
            return
        if not self.state.terminal:
            self.state = state
        self._changed.set()

    async def refresh(self) -> TaskState:
        """One ``tasks/get``.

        Raises:
            TaskLostError: The server answered with an error (it forgot the task).
            ProtocolError: The answer is not a task, or has an unknown status.
        """
        try:
            raw = await self.call("tasks/get", {"taskId": self.task_id}, idempotent=True)
        except ServerError as exc:
            raise TaskLostError(
                f"the server no longer knows task {self.task_id}: {exc.message}",
                task_id=self.task_id,
            ) from exc
        body = _as_dict(decode_json(raw, "result of tasks/get"))
        if body is None:
            raise ProtocolError(f"the result of tasks/get for task {self.task_id} is no object")
        state = decode_task(body, "result of tasks/get")
        if state.task_id != self.task_id:
            raise ProtocolError(
                f"tasks/get for task {self.task_id} answered about task {state.task_id}"
            )
        self.state = state
        self.body = body
        self._polled = True
        return state

    async def pause(self) -> None:
        """Wait the server's poll interval, or until a status push about this task arrives.

        Pushes are optional for a server (and need not cover every change), so the poll
        at the server's interval stays: a push only ends the wait sooner.
        """
        interval = self.state.poll_interval
        interval = DEFAULT_POLL_INTERVAL if interval is None else interval
        self._changed = trio.Event()
        with trio.move_on_after(max(interval, MIN_POLL_INTERVAL)):
            await self._changed.wait()

    async def finish(self) -> msgspec.Raw:
        """Drive the task to its end and return the raw final result.

        Raises:
            TaskFailedError: The task failed.
            TaskCancelledError: The task was cancelled (not by this driver).
            TaskLostError: The server forgot the task.
            InputRequestError: Its input could not be given, or it asked too often.
            ProtocolError: The server broke the protocol (unknown status, ...).
        """
        with self.listening():
            return await self._drive()

    @contextlib.contextmanager
    def listening(self) -> Generator[None]:
        """While the block runs, status pushes about this task wake `pause()`: the
        handlers of both eras' notifications, and the session's listen stream (modern)."""
        remove = self.add_handler("notifications/tasks/status", self.on_status)
        remove_pushed = self.add_handler("notifications/tasks", self.on_status)
        watching = (
            self.pushes.watching(self.task_id)
            if self.pushes is not None and not self.legacy
            else contextlib.nullcontext()
        )
        try:
            with watching:
                yield
        finally:
            remove()
            remove_pushed()

    async def _drive(self) -> msgspec.Raw:
        while True:
            state = self.state
            if state.status == "working":
                await self.pause()
                await self.refresh()
            elif self.legacy:
                return await self._legacy_outcome()
            elif state.status == "input_required":
                await self._answer_inputs()
            else:
                return await self._modern_outcome()

    async def _legacy_outcome(self) -> msgspec.Raw:
        if self.state.status == "cancelled":
            raise TaskCancelledError(f"task {self.task_id} was cancelled", task_id=self.task_id)
        # input_required or terminal: tasks/result blocks until the end, while the server
        # sends its input requests (related-task _meta) to the session's handlers.
        try:
            raw = await self.call("tasks/result", {"taskId": self.task_id})
        except ServerError as exc:
            if self.state.status == "input_required" or self.state.status == "failed":
                raise TaskFailedError(self.task_id, exc.code, exc.message, exc.data) from exc
            raise TaskLostError(
                f"tasks/result for task {self.task_id} failed: {exc.message}",
                task_id=self.task_id,
            ) from exc
        self.state = TaskState(
            self.task_id, "completed", self.state.status_message, self.state.created_at,
            self.state.last_updated_at, self.state.ttl, self.state.poll_interval,
        )  # fmt: skip
        return raw

    async def _answer_inputs(self) -> None:
        requests = _as_dict(self.body.get("inputRequests")) or {}
        fresh = {key: value for key, value in requests.items() if key not in self._answered}
        if not fresh:
            # Not yet told what is wanted, or our answers are still being taken in.
            if self._polled:
                await self.pause()
            await self.refresh()
            return
        self._rounds += 1
        if self._rounds > self.max_input_rounds:
            raise InputRequestError(
                f"task {self.task_id} still required input after {self.max_input_rounds} "
                "rounds; giving up (raise max_input_rounds to allow more)"
            )
        wanted = {key: msgspec.Raw(_encoder.encode(value)) for key, value in fresh.items()}
        responses = await self.gather(wanted)
        await self.call("tasks/update", {"taskId": self.task_id, "inputResponses": responses})
        self._answered |= frozenset(fresh)
        await self.refresh()

    async def _modern_outcome(self) -> msgspec.Raw:
        state = self.state
        key = {"completed": "result", "failed": "error"}.get(state.status)
        if key is not None and _as_dict(self.body.get(key)) is None:
            if self._refreshed_terminal:
                if state.status == "failed":
                    raise TaskFailedError(self.task_id, -32603, state.status_message or "failed")
                raise ProtocolError(f"task {self.task_id} completed without a result")
            self._refreshed_terminal = True
            await self.refresh()
            return await self._modern_outcome()
        if state.status == "completed":
            return msgspec.Raw(_encoder.encode(self.body["result"]))
        if state.status == "failed":
            error = cast("dict[str, Any]", self.body["error"])
            code = error.get("code")
            message = error.get("message")
            raise TaskFailedError(
                self.task_id,
                code if isinstance(code, int) else -32603,
                message if isinstance(message, str) else (state.status_message or "failed"),
                error.get("data"),
            )
        raise TaskCancelledError(f"task {self.task_id} was cancelled", task_id=self.task_id)

    async def cancel(self) -> None:
        """Send ``tasks/cancel`` (once).

        Raises:
            ServerError: The server refused (e.g. the task had already ended).
        """
        if self.cancel_sent:
            await trio.lowlevel.checkpoint()
            return
        self.cancel_sent = True
        raw = await self.call("tasks/cancel", {"taskId": self.task_id})
        body = _as_dict(decode_json(raw, "result of tasks/cancel", empty=b"null"))
        try:
            self.state = decode_task(body or {}, "result of tasks/cancel")
        except ProtocolError:  # SEP-2663 answers a bare acknowledgement
            self.state = replace(self.state, status="cancelled")

    async def cancel_quietly(self) -> None:
        """``tasks/cancel`` from a shielded, bounded scope; never raises (for cleanup)."""
        if self.state.terminal or self.cancel_sent:
            return
        with trio.move_on_after(self.cancel_notice_timeout, shield=True) as scope:
            try:
                await self.cancel()
            except (MCPError, trio.ClosedResourceError) as exc:
                logger.debug("tasks/cancel for task %s failed: %r", self.task_id, exc)
        if scope.cancelled_caught:
            logger.warning("tasks/cancel for task %s could not be sent in time", self.task_id)

    async def run(self) -> msgspec.Raw:
        """`finish()`, cancelling the task on the server if anything goes wrong."""
        try:
            return await self.finish()
        except BaseException:
            await self.cancel_quietly()
            raise


class ToolTask:
    """A tool call running as a server task: the handle of
    [`ClientSession.start_tool_task()`][trio_mcp.ClientSession.start_tool_task].

    Use it inside its ``async with`` block; leaving the block cancels the task on the
    server if it has not ended (``tasks/cancel``), so nothing is left running. Every
    method is a checkpoint and takes the caller's cancel scope.
    """

    def __init__(
        self,
        driver: TaskDriver | None,
        decode: Callable[[msgspec.Raw], t.CallToolResult],
        immediate: msgspec.Raw | None,
    ) -> None:
        self._driver = driver
        self._decode = decode
        self._result: t.CallToolResult | None = None
        if immediate is not None:
            self._result = decode(immediate)

    @property
    def task_id(self) -> str | None:
        """The server's task id; ``None`` when the server answered at once, without a task."""
        return None if self._driver is None else self._driver.task_id

    @property
    def state(self) -> TaskState | None:
        """What the server last said about the task (``None`` without a task)."""
        return None if self._driver is None else self._driver.state

    async def poll(self) -> TaskState | None:
        """Ask the server for the task's state now (one ``tasks/get``).

        Returns:
            The new [`TaskState`][trio_mcp.tasks.TaskState] (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
            ProtocolError: The status is unknown.
        """
        if self._driver is None or self._driver.state.terminal:
            await trio.lowlevel.checkpoint()
            return self.state
        return await self._driver.refresh()

    async def wait_for_change(self) -> TaskState | None:
        """Wait until the status (or status message) changes: pushed, or polled at the
        server's interval.

        Input requests are not answered here: [`result()`][trio_mcp.tasks.ToolTask.result] answers
        them.

        Returns:
            The new [`TaskState`][trio_mcp.tasks.TaskState] (``None`` without a task).

        Raises:
            TaskLostError: The server no longer knows the task.
        """
        driver = self._driver
        if driver is None or driver.state.terminal:
            await trio.lowlevel.checkpoint()
            return self.state
        before = (driver.state.status, driver.state.status_message)
        with driver.listening():
            while (driver.state.status, driver.state.status_message) == before:
                await driver.pause()
                if (driver.state.status, driver.state.status_message) == before:
                    await driver.refresh()
        return driver.state

    async def result(self) -> t.CallToolResult:
        """Wait for the task to end, answering its input requests, and return its result.

        Returns:
            The tool's [`CallToolResult`][trio_mcp.types.CallToolResult].

        Raises:
            TaskFailedError: The task failed.
            TaskCancelledError: The task was cancelled.
            TaskLostError: The server forgot the task.
            InputRequestError: The task's input could not be given.
        """
        if self._result is not None:
            await trio.lowlevel.checkpoint()
            return self._result
        assert self._driver is not None
        self._result = self._decode(await self._driver.finish())
        return self._result

    async def cancel(self) -> None:
        """Cancel the task on the server now (``tasks/cancel``).

        Raises:
            ServerError: The server refused (the task had already ended, ...).
        """
        if self._driver is None:
            await trio.lowlevel.checkpoint()
            return
        await self._driver.cancel()

    async def _close(self) -> None:
        if self._driver is not None and self._result is None:
            await self._driver.cancel_quietly()


# -- the client as task receiver (2025-11-25) -------------------------------------------------

RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
RECEIVER_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
RECEIVABLE: Final = {"sampling/createMessage": ("sampling", "createMessage"),
                     "elicitation/create": ("elicitation", "create")}  # fmt: skip
MAX_RECEIVED_TASKS: Final = 64
"""The most tasks the client keeps for a server at once (ended ones are dropped first)."""
DEFAULT_RECEIVED_TTL: Final = 300.0
"""How long an ended task is kept when the server asked for no ``ttl`` (seconds)."""
_INVALID_PARAMS: Final = -32602
_INTERNAL_ERROR: Final = -32603


def _now_iso() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat()


@dataclass(eq=False)
class _Received:
    task_id: str
    created_at: str
    ttl_ms: int | None
    last_updated_at: str = ""
    status: str = "working"
    status_message: str | None = None
    result: Any = None
    error: tuple[int, str, Any] | None = None
    ended_at: float | None = None
    done: trio.Event = field(default_factory=trio.Event)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    def end(self, status: str, message: str | None = None) -> None:
        if self.status in TERMINAL_STATUSES:
            return
        self.status, self.status_message = status, message
        self.last_updated_at = _now_iso()
        self.ended_at = trio.current_time()
        self.done.set()

    def wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at or self.created_at,
            "ttl": self.ttl_ms,
            "pollInterval": 100,
        }
        if self.status_message is not None:
            body["statusMessage"] = self.status_message
        return body


class TaskReceiver:
    """The client's side of task-augmented server requests (2025-11-25, internal).

    A legacy server that sees ``tasks.requests.sampling.createMessage`` (or
    ``elicitation.create``) in the client's capabilities may send those requests with a
    ``task`` param: the client answers at once with a ``CreateTaskResult``, runs the
    handler as a task of the session's nursery, and serves ``tasks/get``,
    ``tasks/result``, ``tasks/list`` and ``tasks/cancel``. At most
    `MAX_RECEIVED_TASKS` are kept; ended ones go after their ``ttl``.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        handle: Callable[[str, msgspec.Raw, Any], Awaitable[Any]],
        can_handle: Callable[[str], bool],
    ) -> None:
        self._nursery = nursery
        self._handle = handle
        self._can_handle = can_handle
        self._tasks: dict[str, _Received] = {}
        self._counter = 0

    def capabilities(self) -> dict[str, Any]:
        """The ``tasks`` client capability, for the request kinds a handler serves."""
        requests: dict[str, Any] = {}
        for method, (group, name) in RECEIVABLE.items():
            if self._can_handle(method):
                requests.setdefault(group, {})[name] = {}
        if not requests:
            return {}
        return {"tasks": {"list": {}, "cancel": {}, "requests": requests}}

    def wants_task(self, method: str, params: msgspec.Raw) -> dict[str, Any] | None:
        """The ``task`` param of a receivable request, or ``None`` for a plain request."""
        if method not in RECEIVABLE or not self._can_handle(method):
            return None
        try:
            body = _as_dict(decode_json(params, "params"))
        except ProtocolError:
            return None
        return None if body is None else _as_dict(body.get("task"))

    def _purge(self) -> None:
        now = trio.current_time()
        for task in list(self._tasks.values()):
            if task.ended_at is None:
                continue
            ttl = DEFAULT_RECEIVED_TTL if task.ttl_ms is None else task.ttl_ms / 1000
            if now - task.ended_at >= ttl:
                del self._tasks[task.task_id]

    def create(self, method: str, params: msgspec.Raw, ctx: Any, task: Mapping[str, Any]) -> Any:
        """Accept a task-augmented request: start its handler, answer ``CreateTaskResult``."""
        self._purge()
        if len(self._tasks) >= MAX_RECEIVED_TASKS:
            raise HandlerError(
                _INTERNAL_ERROR, f"the client already runs {MAX_RECEIVED_TASKS} tasks"
            )
        ttl: object = task.get("ttl")
        ttl_ms = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0 else None
        self._counter += 1
        received = _Received(f"client-task-{self._counter}", _now_iso(), ttl_ms)
        self._tasks[received.task_id] = received
        self._nursery.start_soon(self._run, received, method, params, ctx)
        return {"task": received.wire()}

    async def _run(self, task: _Received, method: str, params: msgspec.Raw, ctx: Any) -> None:
        try:
            with task.scope:
                try:
                    result = await self._handle(method, params, ctx)
                except HandlerError as exc:
                    task.error = (exc.code, exc.message, exc.data)
                    task.end("failed", exc.message)
                else:
                    task.result = result
                    task.end("completed")
        finally:
            task.end("cancelled", "the client stopped the task")

    def _find(self, params: msgspec.Raw) -> _Received:
        self._purge()
        body = _as_dict(decode_json(params, "params", empty=b"{}")) or {}
        task = self._tasks.get(str(body.get("taskId")))
        if task is None:
            raise HandlerError(_INVALID_PARAMS, f"no task {body.get('taskId')!r}")
        return task

    async def serve(self, method: str, params: msgspec.Raw) -> Any:
        """Answer the server's ``tasks/*`` request.

        Raises:
            HandlerError: An unknown task (``-32602``), or the task's own error
                (``tasks/result`` of a failed task).
        """
        await trio.lowlevel.checkpoint()
        if method == "tasks/list":
            self._purge()
            return {"tasks": [task.wire() for task in self._tasks.values()]}
        task = self._find(params)
        if method == "tasks/get":
            return task.wire()
        if method == "tasks/cancel":
            if task.status in TERMINAL_STATUSES:
                raise HandlerError(_INVALID_PARAMS, f"task {task.task_id} already {task.status}")
            task.end("cancelled", "cancelled by the server")
            task.scope.cancel()
            return task.wire()
        await task.done.wait()  # tasks/result blocks until the task has ended
        if task.error is not None:
            raise HandlerError(*task.error)
        if task.status == "cancelled":
            raise HandlerError(_INTERNAL_ERROR, f"task {task.task_id} was cancelled")
        result: dict[str, Any] = dict(_as_dict(task.result) or {})
        given: object = result.get("_meta")
        meta: dict[str, Any] = (
            dict(cast("dict[str, Any]", given)) if isinstance(given, dict) else {}
        )
        meta[RELATED_TASK] = {"taskId": task.task_id}
        result["_meta"] = meta
        return result


class ToolTaskView:
    """What a [`ToolTask`][trio_mcp.tasks.ToolTask] handle shows without I/O, shared by the handles
    that drive one from another world (the blocking and the asyncio session's)."""

    _task: ToolTask

    @property
    def task_id(self) -> str | None:
        """The server's task id; ``None`` when the server answered at once, without a task."""
        return self._task.task_id

    @property
    def state(self) -> TaskState | None:
        """What the server last said about the task (``None`` without a task)."""
        return self._task.state
