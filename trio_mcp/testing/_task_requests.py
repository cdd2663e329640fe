"""Task requests: tool calls that run as tasks, and the ``tasks/*`` methods, both eras.

One job: decide whether a ``tools/call`` runs as a task (`new_task()`), answer it with
the task at once and run the tool in the background (`run_task()`), and serve
``tasks/get``, ``tasks/list``, ``tasks/update``, ``tasks/cancel`` (`task_request()`)
and the 2025-11-25 ``tasks/result`` (`task_result()`). [`MockTask`][trio_mcp.testing.MockTask]
itself lives in ``_tasks``; the connection is reached through `TaskLink`.
"""

from __future__ import annotations

from typing import Any, Protocol

from .._exceptions import ToolError
from ._context import Link, ToolContext
from ._methods import call_tool
from ._mrtr import Inputs
from ._registry import JSONDict, ServerState
from ._results import text_block
from ._tasks import RELATED_TASK, TASKS_EXTENSION, TERMINAL, MockTask
from ._wire import CLIENT_CAPABILITIES, Era, RequestId, RpcError, as_dict

__all__ = [
    "TaskLink",
    "known_task",
    "new_task",
    "run_task",
    "task_request",
    "task_result",
    "task_wire",
]


class TaskLink(Link, Protocol):
    """What task requests need of the connection they arrive on."""

    @property
    def state(self) -> ServerState:
        """What the server has registered."""
        ...

    async def send_result(self, request_id: RequestId, result: JSONDict) -> None:
        """Answer a request with ``result``."""
        ...

    async def send_error(
        self, request_id: RequestId | None, code: int, message: str, data: Any = None
    ) -> None:
        """Answer a request with a JSON-RPC error."""
        ...

    def complete(self, method: str, body: JSONDict) -> JSONDict:
        """Decorate a modern result (``resultType``, ``serverInfo``, cache hints)."""
        ...


def new_task(link: TaskLink, era: Era, params: JSONDict) -> MockTask | None:
    """A new task when this ``tools/call`` is to run as one, else None."""
    entry = link.state.tools.get(str(params.get("name")))
    if entry is None or entry.task is None:
        return None
    if era == "legacy":
        if as_dict(params.get("task")) is None:
            return None
    else:
        meta = as_dict(params.get("_meta")) or {}
        extensions = as_dict((as_dict(meta.get(CLIENT_CAPABILITIES)) or {}).get("extensions"))
        if extensions is None or TASKS_EXTENSION not in extensions:
            return None
    server = link.server
    server.task_serial += 1
    task = MockTask(task_id=f"task-{server.task_serial}", tool=entry.name, era=era)
    server.tasks[task.task_id] = task
    return task


def task_wire(link: Link, task: MockTask) -> JSONDict:
    """``task`` as the wire shows it, with the server's ttl, poll interval and spelling."""
    server = link.server
    return task.wire(
        ttl_ms=server.task_ttl_ms,
        poll_ms=server.task_poll_interval_ms,
        spelling=server.task_field_spelling,
    )


async def run_task(link: TaskLink, task: MockTask, request_id: RequestId, params: JSONDict) -> None:
    """Answer with the task at once, then run the tool in this handler's task."""
    if task.era == "legacy":
        await link.send_result(request_id, {"task": task_wire(link, task)})
    else:
        created = link.complete("tools/call", task_wire(link, task))
        created["resultType"] = "task"
        await link.send_result(request_id, created)
    ctx = ToolContext(
        link,
        request_id=request_id,
        method="tools/call",
        params=params,
        era=task.era,
        scope=task.scope,
        inputs=Inputs(params, 0),
    )
    ctx._task = task  # pyright: ignore[reportPrivateUsage]
    with task.scope:
        try:
            result: JSONDict = await call_tool(link.state, ctx, params)
        except ToolError as error:
            custom = as_dict(error.result)
            result = {"content": [text_block(str(error))]}
            if custom is not None and "content" in custom:
                result = dict(custom)
            result["isError"] = True
        except RpcError as error:
            task.error = {"code": error.code, "message": error.message}
            if error.data is not None:
                task.error["data"] = error.data
            task.set_status("failed", error.message)
            await link.task_status_changed(task)
            return
        except Exception as exc:
            message = f"Internal error: {type(exc).__name__}: {exc}"
            task.error = {"code": -32603, "message": message}
            task.set_status("failed", message)
            await link.task_status_changed(task)
            return
        task.result = result
        task.set_status("completed")
        await link.task_status_changed(task)


def known_task(link: Link, params: JSONDict) -> MockTask:
    """The task ``params["taskId"]`` names (``-32602`` when the server has none such)."""
    task_id = params.get("taskId")
    task = link.server.tasks.get(task_id) if isinstance(task_id, str) else None
    if task is None:
        raise RpcError(-32602, f"Invalid params: unknown task {task_id!r}")
    return task


def task_request(link: TaskLink, era: Era, method: str, params: JSONDict) -> JSONDict:
    """``tasks/get``, ``tasks/update``, ``tasks/cancel`` (both eras), ``tasks/list``."""
    if method == "tasks/list":
        return {"tasks": [task_wire(link, task) for task in link.server.tasks.values()]}
    task = known_task(link, params)
    if method == "tasks/cancel":
        if task.status in TERMINAL:
            raise RpcError(-32602, f"Invalid params: task {task.task_id} already ended")
        task.cancel_requested = True
        task.set_status("cancelled", "cancelled by the client")
        task.scope.cancel()
        return task_wire(link, task) if era == "legacy" else {}
    if method == "tasks/update":
        responses = as_dict(params.get("inputResponses"))
        if responses is None:
            raise RpcError(-32602, "Invalid params: tasks/update needs inputResponses")
        task.updates.append(dict(responses))
        task.responses.update(responses)
        task.answered.set()
        return {}
    body = task_wire(link, task)
    if era == "modern":
        if task.status == "completed" and task.result is not None:
            body["result"] = link.complete("tools/call", dict(task.result))
        elif task.status == "failed" and task.error is not None:
            body["error"] = dict(task.error)
        elif task.status == "input_required" and task.input_requests:
            body["inputRequests"] = dict(task.input_requests)
    return body


async def task_result(link: TaskLink, request_id: RequestId, params: JSONDict) -> None:
    """2025-11-25 ``tasks/result``: wait for the end, answer what tools/call would."""
    try:
        task = known_task(link, params)
    except RpcError as error:
        await link.send_error(request_id, error.code, error.message, error.data)
        return
    await task.done.wait()
    if task.status == "completed" and task.result is not None:
        result = dict(task.result)
        meta = dict(as_dict(result.get("_meta")) or {})
        meta[RELATED_TASK] = {"taskId": task.task_id}
        result["_meta"] = meta
        await link.send_result(request_id, result)
        return
    failure = task.error or {"code": -32603, "message": f"task {task.task_id} {task.status}"}
    await link.send_error(request_id, failure["code"], failure["message"], failure.get("data"))
