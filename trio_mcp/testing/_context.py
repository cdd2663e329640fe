"""What a scripted handler gets: [`ToolContext`][trio_mcp.testing.ToolContext], in both protocol
eras.

One job: the handler's view of the request it serves (id, params, ``_meta``, era, task,
cancellation) and what it may do meanwhile: progress, log, and ask the client for input
(sampling, elicitation, roots). In the legacy era an input is a real server-to-client
request; in the modern era it follows the multi round-trip pattern of ``_mrtr``; for a
task it moves the task to ``input_required``. The connection it talks through is any
`Link` (the engine's ``Connection`` is the one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import trio

from ._mrtr import INPUT_CAPABILITIES, InputRequired, Inputs
from ._registry import JSONDict
from ._server_base import MockServerBase
from ._tasks import RELATED_TASK, MockTask
from ._wire import (
    CLIENT_CAPABILITIES,
    LEVEL_RANK,
    LOG_LEVEL,
    LOG_LEVELS,
    Era,
    RequestId,
    RpcError,
    as_dict,
)

__all__ = ["Link", "ToolContext"]


class Link(Protocol):
    """What a [`ToolContext`][trio_mcp.testing.ToolContext] needs of the connection it serves."""

    @property
    def server(self) -> MockServerBase:
        """The server the connection belongs to."""
        ...

    @property
    def log_level(self) -> str | None:
        """Legacy era: the level set with ``logging/setLevel`` (None: everything)."""
        ...

    async def send(self, message: JSONDict) -> None:
        """Send one message to the client."""
        ...

    async def client_request(self, method: str, params: JSONDict | None) -> JSONDict:
        """Send a server-to-client request and return the client's result."""
        ...

    async def task_status_changed(self, task: MockTask) -> None:
        """Tell the client a task's status changed (where its era does)."""
        ...


class ToolContext:
    """What a tool (or prompt, resource template) handler can do while it runs.

    Passed as the first argument to every handler. In the legacy era,
    [`sample()`][trio_mcp.testing.ToolContext.sample],
    [`elicit()`][trio_mcp.testing.ToolContext.elicit] and
    [`list_roots()`][trio_mcp.testing.ToolContext.list_roots] send real JSON-RPC requests to the
    client and wait for its answer. In the modern era they follow the multi round-trip pattern: the
    handler is **re-executed from the start** on every round; when it asks for an input whose key
    (``"input-1"``, ``"input-2"``, ... in call order) is missing from the request's
    ``inputResponses``, the handler is unwound and the server answers with an ``input_required``
    result instead.

    A handler is cancelled (`trio.Cancelled`) when the client sends
    ``notifications/cancelled`` for its request; no response is sent then.
    """

    def __init__(
        self,
        connection: Link,
        *,
        request_id: RequestId,
        method: str,
        params: JSONDict,
        era: Era,
        scope: trio.CancelScope,
        inputs: Inputs,
    ) -> None:
        self._connection = connection
        self._request_id = request_id
        self._method = method
        self._params = params
        self._meta: JSONDict = as_dict(params.get("_meta")) or {}
        self._era: Era = era
        self._scope = scope
        self._inputs = inputs
        self._task: MockTask | None = None

    @property
    def task(self) -> MockTask | None:
        """The task this call runs as, or None (see ``MockServer.tasks``)."""
        return self._task

    @property
    def request_id(self) -> RequestId:
        """The JSON-RPC id of the request being served."""
        return self._request_id

    @property
    def method(self) -> str:
        """The method being served (``tools/call``, ``prompts/get``, ...)."""
        return self._method

    @property
    def params(self) -> JSONDict:
        """The request's ``params``, decoded."""
        return self._params

    @property
    def meta(self) -> JSONDict:
        """The request's ``_meta`` (empty if it had none)."""
        return self._meta

    @property
    def era(self) -> Era:
        """``"legacy"`` or ``"modern"``: the era this request is served in."""
        return self._era

    @property
    def server(self) -> MockServerBase:
        """The server this request was sent to (the [`MockServer`][trio_mcp.testing.MockServer]
        itself)."""
        return self._connection.server

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this request (useful inside a shielded scope)."""
        return self._scope.cancel_called

    @property
    def round(self) -> int:
        """Modern era: how many ``input_required`` rounds came before this execution."""
        return self._inputs.round

    @property
    def input_responses(self) -> JSONDict:
        """Modern era: the ``inputResponses`` the client sent with this request."""
        return self._inputs.responses

    @property
    def request_state(self) -> str | None:
        """Modern era: the ``requestState`` the client echoed, if any."""
        state = self._params.get("requestState")
        return state if isinstance(state, str) else None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress``, if the request carried a ``progressToken``.

        Args:
            progress: The progress so far; should increase on every call.
            total: The total, if known.
            message: A human-readable status line.
        """
        token = self._meta.get("progressToken")
        if token is None:
            return
        params: JSONDict = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._connection.send(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
        )

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if the client asked for this level.

        Legacy: honours the level set with ``logging/setLevel`` (everything until then).
        Modern: sent only if the request's ``_meta`` has ``io.modelcontextprotocol/logLevel``
        at or below ``level``.

        Args:
            level: The syslog level: ``debug``, ``info``, ... ``emergency``.
            data: The message: any JSON-serialisable value.
            logger: An optional logger name.

        Raises:
            ValueError: ``level`` is not a syslog level name.
        """
        rank = LEVEL_RANK.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        if self._era == "legacy":
            threshold = self._connection.log_level
        else:
            requested = self._meta.get(LOG_LEVEL)
            if not isinstance(requested, str):
                return
            threshold = requested
        if threshold is not None and rank < LEVEL_RANK.get(threshold, 0):
            return
        params: JSONDict = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._connection.send(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
        )

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send the client any notification now (an extension's, say), params as given.

        Args:
            method: The notification method (``"notifications/com.example/alert"``).
            params: Its params object (none if None).
        """
        message: JSONDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._connection.send(message)

    async def sample(self, params: Mapping[str, Any], *, key: str | None = None) -> JSONDict:
        """Ask the client to sample its LLM (``sampling/createMessage``).

        Args:
            params: The ``CreateMessageRequest`` params.
            key: Modern era: the ``inputRequests`` key (default ``input-N``, numbered in
                call order; pass explicit keys when asking for inputs concurrently).

        Returns:
            The client's ``CreateMessageResult``, decoded.

        Raises:
            ClientRequestError: (legacy) the client answered with an error.
        """
        return await self._single("sampling/createMessage", params, key)

    async def elicit(self, params: Mapping[str, Any], *, key: str | None = None) -> JSONDict:
        """Ask the client to elicit input from its user (``elicitation/create``).

        Args:
            params: The ``ElicitRequest`` params.
            key: Modern era: the ``inputRequests`` key (see
                [`sample()`][trio_mcp.testing.ToolContext.sample]).

        Returns:
            The client's ``ElicitResult``, decoded.

        Raises:
            ClientRequestError: (legacy) the client answered with an error.
        """
        return await self._single("elicitation/create", params, key)

    async def list_roots(self, *, key: str | None = None) -> JSONDict:
        """Ask the client for its roots (``roots/list``).

        Args:
            key: Modern era: the ``inputRequests`` key (see
                [`sample()`][trio_mcp.testing.ToolContext.sample]).

        Returns:
            The client's ``ListRootsResult``, decoded.

        Raises:
            ClientRequestError: (legacy) the client answered with an error.
        """
        return await self._single("roots/list", None, key)

    async def input_many(self, requests: Mapping[str, Mapping[str, Any]]) -> dict[str, JSONDict]:
        """Ask for several inputs at once, under keys of your choosing.

        Args:
            requests: Maps each key to a request object ``{"method": ..., "params": ...}``.
                Don't use keys of the form ``input-N``: those name single requests.

        Returns:
            The client's result for each key. In the modern era, every missing key is
            requested in one ``input_required`` round. In the legacy era, the requests are
            sent to the client concurrently.

        Raises:
            ClientRequestError: (legacy) the client answered one of them with an error.
        """
        wanted: dict[str, JSONDict] = {}
        for key, request in requests.items():
            wanted[key] = dict(request)
        if self._task is not None:
            return await self._task_inputs(wanted)
        if self._era == "legacy":
            results: dict[str, JSONDict] = {}

            async def one(key: str, request: JSONDict) -> None:
                params = as_dict(request.get("params"))
                results[key] = await self._connection.client_request(
                    str(request.get("method")), params
                )

            async with trio.open_nursery() as nursery:
                for key, request in wanted.items():
                    nursery.start_soon(one, key, request)
            return results
        return self._modern_inputs(wanted)

    async def _task_inputs(self, requests: dict[str, JSONDict]) -> dict[str, JSONDict]:
        """Input for a task: ``input_required`` until the client answers."""
        task = self._task
        assert task is not None
        task.set_status("input_required", "waiting for input")
        await self._connection.task_status_changed(task)
        results: dict[str, JSONDict] = {}
        if task.era == "legacy":
            for key, request in requests.items():
                params = dict(as_dict(request.get("params")) or {})
                meta = dict(as_dict(params.get("_meta")) or {})
                meta[RELATED_TASK] = {"taskId": task.task_id}
                params["_meta"] = meta
                results[key] = await self._connection.client_request(
                    str(request.get("method")), params
                )
        else:
            task.input_requests = dict(requests)
            while not all(key in task.responses for key in requests):
                task.answered = trio.Event()
                await task.answered.wait()
            for key in requests:
                results[key] = as_dict(task.responses.pop(key)) or {}
            task.input_requests = {}
        task.set_status("working")
        await self._connection.task_status_changed(task)
        return results

    async def _single(
        self, method: str, params: Mapping[str, Any] | None, key: str | None
    ) -> JSONDict:
        if self._task is not None:
            if key is None:
                self._inputs.counter += 1
                key = f"input-{self._inputs.counter}"
            wanted: JSONDict = {"method": method}
            if params is not None:
                wanted["params"] = dict(params)
            return (await self._task_inputs({key: wanted}))[key]
        if self._era == "legacy":
            return await self._connection.client_request(
                method, dict(params) if params is not None else None
            )
        if key is None:
            self._inputs.counter += 1
            key = f"input-{self._inputs.counter}"
        request: JSONDict = {"method": method}
        if params is not None:
            request["params"] = dict(params)
        return self._modern_inputs({key: request})[key]

    def _modern_inputs(self, requests: dict[str, JSONDict]) -> dict[str, JSONDict]:
        capabilities = as_dict(self._meta.get(CLIENT_CAPABILITIES)) or {}
        for request in requests.values():
            capability = INPUT_CAPABILITIES.get(str(request.get("method")))
            if capability is not None and capability not in capabilities:
                raise RpcError(
                    -32021,
                    f"Server requires the {capability} capability for this request",
                    {"requiredCapabilities": {capability: {}}},
                )
        results: dict[str, JSONDict] = {}
        missing: dict[str, JSONDict] = {}
        for key, request in requests.items():
            response = as_dict(self._inputs.responses.get(key))
            if response is None:
                missing[key] = request
            else:
                results[key] = response
        if missing:
            self._inputs.missing.update(missing)
            raise InputRequired
        return results
