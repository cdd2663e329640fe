"""One client connection to a [`MockServer`][trio_mcp.testing.MockServer]: both protocol eras.

The engine reads whole JSON-RPC messages from a server stream and answers them:

* **legacy** (``initialize`` handshake, 2025-11-25 and earlier): connection state (log level,
  resource subscriptions), server-to-client requests with server-generated ids;
* **modern** (2026-07-28, per-request ``_meta``): stateless requests, ``resultType``,
  cache hints, multi round-trip requests (MRTR) that re-execute the handler on every round,
  and ``subscriptions/listen`` streams.

Cheap requests (lists, discovery, ping) are answered inline by the reader, in order; tool
calls, prompt and resource handlers and completions each run in their own task and cancel
scope, so many run at once and ``notifications/cancelled`` cancels exactly one of them.

This module is the JSON-RPC connection and its dispatch by era; the rest of the engine
lives beside it: ``_wire`` (shared names and errors), ``_methods`` (the handlers of each
area), ``_results`` (result shaping), ``_context`` (``ToolContext``), ``_mrtr``
(input rounds), ``_task_requests`` (tasks) and ``_subscriptions`` (who gets which
change notification).
"""

from __future__ import annotations

import contextlib
from typing import Any, cast

import msgspec
import trio

from .._exceptions import MCPError, ServerError, ToolError
from ._context import ToolContext
from ._methods import LIST_KEYS, execute, list_page
from ._mrtr import Inputs, check_round, input_required_result
from ._registry import JSONDict, ServerState
from ._results import (
    text_block,
)
from ._server_base import MockServerBase
from ._subscriptions import (
    end_subscriptions,
    listen,
    notify_list_changed,
    notify_listeners,
    notify_resource_updated,
)
from ._task_requests import new_task, run_task, task_request, task_result, task_wire
from ._tasks import TASKS_EXTENSION, MockTask
from ._wire import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LEVEL_RANK,
    LOG_LEVEL,
    PROTOCOL_VERSION,
    SERVER_INFO,
    ClientRequestError,
    Era,
    RequestId,
    RpcError,
    ServerCrash,
    ServerStream,
    as_dict,
    exception_leaves,
    maybe_await,
)

__all__ = ["Connection", "serve_connection"]


CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
"""Results that carry ``ttlMs``/``cacheScope`` in the modern era."""
_HANDLER_METHODS = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})
_MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_LEGACY_METHODS = frozenset(
    {
        "ping",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "logging/setLevel",
        "completion/complete",
    }
)
_MODERN_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "subscriptions/listen",
        "completion/complete",
    }
)

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


class _Pending:
    """A server-to-client request waiting for the client's response."""

    __slots__ = ("error", "event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: JSONDict = {}
        self.error: JSONDict | None = None


async def serve_connection(server: MockServerBase, stream: ServerStream) -> None:
    """Serve one connection of ``server`` until the client ends ``stream`` or it crashes."""
    await Connection(server, server._state, stream).run()


class Connection:
    """The protocol engine for one connection (one stream) of a
    [`MockServer`][trio_mcp.testing.MockServer]."""

    def __init__(self, server: MockServerBase, state: ServerState, stream: ServerStream) -> None:
        self.server = server
        self.state = state
        self.stream = stream
        self.legacy: bool = False
        """Set by ``initialize``: the rest of the connection is served in the legacy era."""
        self.log_level: str | None = None
        self.resource_subscriptions: set[str] = set()
        self.subscriptions: dict[RequestId, JSONDict] = {}
        """Active ``subscriptions/listen`` streams: listen request id -> honoured filter."""
        self.inflight: dict[RequestId, trio.CancelScope] = {}
        self.pending: dict[RequestId, _Pending] = {}
        self.crashed: bool = False
        self.closing: bool = False
        self._next_id: int = 0
        self._send_lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self._stream_closed: bool = False

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the stream until the client ends it or the server crashes."""
        self.state.connections.append(self)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                while True:
                    try:
                        data = await self.stream.receive()
                    except (
                        trio.EndOfChannel,
                        trio.BrokenResourceError,
                        trio.ClosedResourceError,
                        MCPError,
                    ):
                        break
                    try:
                        await self._handle(data)
                    finally:
                        self.state.wake()
                nursery.cancel_scope.cancel()
        finally:
            self.closing = True
            if self in self.state.connections:
                self.state.connections.remove(self)
            await self._close_stream()
            self.state.wake()

    async def _close_stream(self) -> None:
        if self._stream_closed:
            return
        self._stream_closed = True
        with trio.move_on_after(5, shield=True):
            with contextlib.suppress(
                trio.BrokenResourceError, trio.ClosedResourceError, MCPError, OSError
            ):
                await self.stream.aclose()

    async def crash(self, exit_code: int | None = None, stderr: str = "") -> None:
        """End the connection abruptly: close the stream, abandon every request."""
        if self.crashed:
            return
        mark_crashed: Any = getattr(self.stream, "mark_crashed", None)
        if mark_crashed is not None:
            mark_crashed(exit_code, stderr)
        self.crashed = True
        self.closing = True
        self.server.crash_count += 1
        await self._close_stream()
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    # -- sending ---------------------------------------------------------------------------

    async def send(self, message: JSONDict) -> None:
        """Send one message; silently dropped once the client is gone."""
        if self.closing:
            return
        data = _encoder.encode(message)
        async with self._send_lock:
            with contextlib.suppress(
                trio.BrokenResourceError, trio.ClosedResourceError, MCPError, OSError
            ):
                await self.stream.send(data)

    async def send_result(self, request_id: RequestId, result: JSONDict) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def send_error(
        self, request_id: RequestId | None, code: int, message: str, data: Any = None
    ) -> None:
        error: JSONDict = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def server_info(self) -> JSONDict:
        """The ``serverInfo`` this server reports."""
        return {"name": self.server.name, "version": self.server.version}

    def capabilities(self) -> JSONDict:
        """The capabilities this connection advertises (tasks differ by era)."""
        override = self.server.capabilities
        if override is not None:
            return dict(override)
        capabilities = self.state.capabilities()
        if any(entry.task is not None for entry in self.state.tools.values()):
            if self.legacy:
                capabilities["tasks"] = {
                    "list": {},
                    "cancel": {},
                    "requests": {"tools": {"call": {}}},
                }
            else:
                capabilities["extensions"] = {TASKS_EXTENSION: {}}
        return capabilities

    def _advertised_versions(self) -> list[str]:
        """The versions named in DiscoverResult and UnsupportedProtocolVersionError."""
        server = self.server
        if server.eras == "legacy":
            return list(server.legacy_versions)
        if server.eras == "modern":
            return list(server.supported_versions)
        return [*server.supported_versions, *server.legacy_versions]

    def complete(self, method: str, body: JSONDict) -> JSONDict:
        """Decorate a modern result: ``resultType``, ``serverInfo``, cache hints."""
        body["resultType"] = "complete"
        meta = dict(as_dict(body.get("_meta")) or {})
        meta[SERVER_INFO] = self.server_info()
        body["_meta"] = meta
        if method in CACHEABLE_METHODS:
            ttl_ms, scope = self.server.cache_hints.get(method, (0, "public"))
            body["ttlMs"] = ttl_ms
            body["cacheScope"] = scope
        return body

    async def client_request(self, method: str, params: JSONDict | None) -> JSONDict:
        """Send a server-to-client request (legacy era) and wait for the client's answer."""
        self._next_id += 1
        request_id = self._next_id
        pending = _Pending()
        self.pending[request_id] = pending
        message: JSONDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.send(message)
            await pending.event.wait()
        except trio.Cancelled:
            if not pending.event.is_set() and not self.closing:
                with trio.move_on_after(5, shield=True):
                    await self.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": request_id, "reason": "request cancelled"},
                        }
                    )
            raise
        finally:
            self.pending.pop(request_id, None)
        if pending.error is not None:
            raise ClientRequestError(
                int(pending.error.get("code", -32603)),
                str(pending.error.get("message", "")),
                pending.error.get("data"),
            )
        return pending.result

    # -- notifications pushed by the server -----------------------------------------------

    async def notify_list_changed(self, kind: str) -> None:
        """Send ``notifications/<kind>/list_changed`` where the client asked for it."""
        await notify_list_changed(self, kind)

    async def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to clients subscribed to ``uri``."""
        await notify_resource_updated(self, uri)

    async def end_subscriptions(self) -> None:
        """Close every listen stream gracefully with its completion result."""
        await end_subscriptions(self)

    @property
    def listen_filters(self) -> frozenset[str]:
        """Extension filter fields of ``subscriptions/listen`` the server honours."""
        return frozenset(self.server.listen_filters)

    async def notify_listeners(self, key: str, method: str, params: JSONDict, match: Any) -> None:
        """Send ``method`` on the listen streams that honour the filter field ``key``."""
        await notify_listeners(self, key, method, params, match)

    # -- receiving -------------------------------------------------------------------------

    async def _handle(self, data: bytes) -> None:
        try:
            decoded: Any = _decoder.decode(data)
        except msgspec.DecodeError:
            await self.send_error(None, -32700, "Parse error")
            return
        message = as_dict(decoded)
        if message is None:
            await self.send_error(None, -32600, "Invalid request: expected one JSON object")
            return
        try:
            await self._dispatch(message)
        finally:
            # Recorded once handled, so a wait_for_message() waiter sees its effects.
            self.server.received.append(message)

    async def _dispatch(self, message: JSONDict) -> None:
        method = message.get("method")
        if method is None:
            if "id" in message and ("result" in message or "error" in message):
                self._on_response(message)
            else:
                await self.send_error(None, -32600, "Invalid request: no method")
            return
        request_id = message.get("id")
        if not isinstance(method, str) or (
            "id" in message
            and (isinstance(request_id, bool) or not isinstance(request_id, (int, str)))
        ):
            await self.send_error(None, -32600, "Invalid request")
            return
        raw_params = message.get("params")
        params = {} if raw_params is None else as_dict(raw_params)
        if request_id is None:
            await self._on_notification(method, params or {})
            return
        request_id = cast(RequestId, request_id)
        try:
            if params is None:
                raise RpcError(-32602, "Invalid params: params must be an object")
            await self._on_request(request_id, method, params)
        except RpcError as error:
            await self.send_error(request_id, error.code, error.message, error.data)

    def _on_response(self, message: JSONDict) -> None:
        request_id = message.get("id")
        if not isinstance(request_id, (int, str)):
            return
        pending = self.pending.get(request_id)
        if pending is None or pending.event.is_set():
            return
        error = as_dict(message.get("error"))
        if error is not None:
            pending.error = error
        else:
            pending.result = as_dict(message.get("result")) or {}
        pending.event.set()

    async def _on_notification(self, method: str, params: JSONDict) -> None:
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            if isinstance(request_id, (int, str)):
                # Ending a subscriptions/listen stream is bookkeeping of its own: a test
                # counting cancelled requests must not see the session's listen stream.
                if self.subscriptions.pop(request_id, None) is not None:
                    self.server.subscriptions_ended.append(request_id)
                    return
                self.server.cancelled.append(request_id)
                scope = self.inflight.get(request_id)
                if scope is not None:
                    scope.cancel()

    def _era_for(self, method: str, params: JSONDict) -> Era:
        if self.legacy or self.server.eras == "legacy":
            return "legacy"
        if self.server.eras == "modern":
            return "modern"
        if method == "initialize":
            return "legacy"
        meta = as_dict(params.get("_meta"))
        if (meta is not None and PROTOCOL_VERSION in meta) or method == "server/discover":
            return "modern"
        return "legacy"

    async def _on_request(self, request_id: RequestId, method: str, params: JSONDict) -> None:
        if self._era_for(method, params) == "legacy":
            await self._legacy_request(request_id, method, params)
        else:
            await self._modern_request(request_id, method, params)

    # -- legacy era ------------------------------------------------------------------------

    async def _legacy_request(self, request_id: RequestId, method: str, params: JSONDict) -> None:
        if method == "initialize":
            await self._initialize(request_id, params)
            return
        if not self.legacy and method != "ping":
            if method == "server/discover":
                await self._scripted_discover(request_id, params)
                return
            raise RpcError(-32600, f"Invalid request: {method} received before initialize")
        if method in self.server.methods:
            answer = await maybe_await(self.server.methods[method](params))
            await self.send_result(request_id, dict(answer))
            return
        if method in ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel"):
            if method == "tasks/result":
                assert self._nursery is not None
                self._nursery.start_soon(task_result, self, request_id, params)
                return
            await self.send_result(request_id, task_request(self, "legacy", method, params))
            return
        if method not in _LEGACY_METHODS:
            raise RpcError(-32601, f"Method not found: {method}")
        if method in _HANDLER_METHODS:
            self._spawn(request_id, "legacy", method, params)
            return
        if method == "ping":
            result: JSONDict = {}
        elif method in LIST_KEYS:
            result = list_page(self.state, self.server.page_size, method, params)
        elif method == "logging/setLevel":
            level = params.get("level")
            if not isinstance(level, str) or level not in LEVEL_RANK:
                raise RpcError(-32602, f"Invalid params: unknown log level {level!r}")
            self.log_level = level
            result = {}
        else:  # resources/subscribe, resources/unsubscribe
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise RpcError(-32602, "Invalid params: uri must be a string")
            if method == "resources/subscribe":
                self.resource_subscriptions.add(uri)
            else:
                self.resource_subscriptions.discard(uri)
            result = {}
        await self.send_result(request_id, result)

    async def _initialize(self, request_id: RequestId, params: JSONDict) -> None:
        server = self.server
        if self.legacy:
            raise RpcError(-32600, "Invalid request: initialize was already received")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RpcError(-32602, "Invalid params: initialize needs a protocolVersion")
        version = requested if requested in server.legacy_versions else server.legacy_versions[0]
        server.protocol_version = version
        server.client_info = as_dict(params.get("clientInfo"))
        server.client_capabilities = as_dict(params.get("capabilities")) or {}
        self.legacy = True
        result: JSONDict = {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        }
        if server.instructions is not None:
            result["instructions"] = server.instructions
        await self.send_result(request_id, result)

    # -- modern era ------------------------------------------------------------------------

    async def _modern_request(self, request_id: RequestId, method: str, params: JSONDict) -> None:
        server = self.server
        if method == "initialize":
            supported = ", ".join(server.supported_versions)
            raise RpcError(
                -32601,
                "Method not found: initialize. This server only speaks modern MCP "
                f"(protocol versions {supported}); send per-request _meta instead.",
                {"supported": self._advertised_versions()},
            )
        if method == "server/discover" and server.respond_to_discover != "result":
            await self._scripted_discover(request_id, params)
            return
        meta = as_dict(params.get("_meta"))
        if meta is None:
            raise RpcError(
                -32602,
                f"Invalid params: {method} has no _meta; modern requests must carry "
                f"{PROTOCOL_VERSION} and {CLIENT_CAPABILITIES}",
            )
        version = meta.get(PROTOCOL_VERSION)
        if not isinstance(version, str):
            raise RpcError(-32602, f"Invalid params: _meta lacks {PROTOCOL_VERSION}")
        capabilities = as_dict(meta.get(CLIENT_CAPABILITIES))
        if capabilities is None:
            raise RpcError(-32602, f"Invalid params: _meta lacks {CLIENT_CAPABILITIES}")
        if version not in server.supported_versions:
            raise RpcError(
                -32022,
                "Unsupported protocol version",
                {"supported": self._advertised_versions(), "requested": version},
            )
        level = meta.get(LOG_LEVEL)
        if level is not None and level not in LEVEL_RANK:
            raise RpcError(-32602, f"Invalid params: unknown log level {level!r}")
        server.protocol_version = version
        server.client_capabilities = capabilities
        client_info = as_dict(meta.get(CLIENT_INFO))
        if client_info is not None:
            server.client_info = client_info
        if method in server.methods:
            result = dict(await maybe_await(server.methods[method](params)))
            kind = result.get("resultType", "complete")
            result = self.complete(method, result)
            result["resultType"] = kind
            await self.send_result(request_id, result)
            return
        if method in ("tasks/get", "tasks/update", "tasks/cancel"):
            if TASKS_EXTENSION not in (as_dict(capabilities.get("extensions")) or {}):
                raise RpcError(
                    -32021,
                    f"Server requires the {TASKS_EXTENSION} extension for {method}",
                    {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
                )
            result = task_request(self, "modern", method, params)
            await self.send_result(request_id, self.complete(method, result))
            return
        if method not in _MODERN_METHODS:
            raise RpcError(-32601, f"Method not found: {method}")
        if method in _HANDLER_METHODS:
            self._spawn(request_id, "modern", method, params)
            return
        if method == "subscriptions/listen":
            await listen(self, request_id, params)
            return
        if method == "server/discover":
            result = self._discover_result()
        else:
            result = list_page(self.state, self.server.page_size, method, params)
        await self.send_result(request_id, self.complete(method, result))

    def _discover_result(self) -> JSONDict:
        result: JSONDict = {
            "supportedVersions": self._advertised_versions(),
            "capabilities": self.capabilities(),
        }
        if self.server.instructions is not None:
            result["instructions"] = self.server.instructions
        return result

    async def _scripted_discover(self, request_id: RequestId, params: JSONDict) -> None:
        mode = self.server.respond_to_discover
        if mode == "silent":
            return
        if mode == "result":
            result = self.complete("server/discover", self._discover_result())
            await self.send_result(request_id, result)
            return
        if mode == "unsupported_version":
            meta = as_dict(params.get("_meta")) or {}
            requested = meta.get(PROTOCOL_VERSION)
            raise RpcError(
                -32022,
                "Unsupported protocol version",
                {
                    "supported": self._advertised_versions(),
                    "requested": requested if isinstance(requested, str) else "",
                },
            )
        if mode == "invalid_params":
            raise RpcError(-32602, "Invalid params")
        if mode == "invalid_request":
            raise RpcError(-32600, "Invalid request: server/discover received before initialize")
        raise RpcError(-32601, "Method not found: server/discover")

    def _spawn(self, request_id: RequestId, era: Era, method: str, params: JSONDict) -> None:
        assert self._nursery is not None
        scope = trio.CancelScope()
        self.inflight[request_id] = scope
        self._nursery.start_soon(self._run_handler, request_id, era, method, params, scope)

    async def _run_handler(
        self,
        request_id: RequestId,
        era: Era,
        method: str,
        params: JSONDict,
        scope: trio.CancelScope,
    ) -> None:
        try:
            with scope:
                try:
                    modern = era == "modern" and method in _MRTR_METHODS
                    round_number, earlier = (
                        check_round(self.state, self.server.request_states_seen, method, params)
                        if modern
                        else (0, {})
                    )
                except RpcError as error:
                    await self.send_error(request_id, error.code, error.message, error.data)
                    return
                if method == "tools/call":
                    task = new_task(self, era, params)
                    if task is not None:
                        del self.inflight[request_id]
                        await run_task(self, task, request_id, params)
                        return
                inputs = Inputs(params, round_number, earlier)
                ctx = ToolContext(
                    self,
                    request_id=request_id,
                    method=method,
                    params=params,
                    era=era,
                    scope=scope,
                    inputs=inputs,
                )
                try:
                    result = await execute(self.state, ctx, method, params)
                except BaseException as exc:
                    await self._failed(ctx, inputs, exc)
                    return
                if inputs.missing:
                    await self._send_input_required(ctx, inputs)
                    return
                if era == "modern":
                    result = self.complete(method, result)
                await self.send_result(request_id, result)
        finally:
            if self.inflight.get(request_id) is scope:
                del self.inflight[request_id]

    async def task_status_changed(self, task: MockTask) -> None:
        """2025-11-25: ``notifications/tasks/status`` with the whole task; 2026-07-28:
        ``notifications/tasks`` on the listen streams whose ``taskIds`` name it."""
        if task.era == "modern":
            wire = task_wire(self, task)
            await notify_listeners(self, "taskIds", "notifications/tasks", wire, task.task_id)
        if task.era == "legacy":
            await self.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/tasks/status",
                    "params": task_wire(self, task),
                }
            )

    async def _failed(self, ctx: ToolContext, inputs: Inputs, exc: BaseException) -> None:
        """Answer a request whose handler raised ``exc`` (or re-raise it)."""
        leaves = exception_leaves(exc)
        if all(isinstance(leaf, trio.Cancelled) for leaf in leaves):
            raise exc
        crashes = [leaf for leaf in leaves if isinstance(leaf, ServerCrash)]
        if crashes:
            await self.crash(crashes[0].exit_code, crashes[0].stderr)
            return
        if inputs.missing and ctx.era == "modern":
            await self._send_input_required(ctx, inputs)
            return
        errors = [leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)]
        if len(errors) == 1 and isinstance(errors[0], RpcError):
            error = errors[0]
            await self.send_error(ctx.request_id, error.code, error.message, error.data)
            return
        if len(errors) == 1 and isinstance(errors[0], ServerError):
            chosen = errors[0]  # a JSON-RPC error the script chose, sent as it is
            await self.send_error(ctx.request_id, chosen.code, chosen.message, chosen.data)
            return
        if len(errors) == 1 and isinstance(errors[0], ToolError) and ctx.method == "tools/call":
            await self._send_tool_error(ctx, errors[0])
            return
        if not isinstance(exc, Exception):
            raise exc
        await self.send_error(
            ctx.request_id, -32603, f"Internal error: {type(exc).__name__}: {exc}"
        )

    async def _send_tool_error(self, ctx: ToolContext, error: ToolError) -> None:
        custom = as_dict(error.result)
        result: JSONDict | None = (
            dict(custom) if custom is not None and "content" in custom else None
        )
        if result is None:
            result = {"content": [text_block(str(error))]}
        result["isError"] = True
        if ctx.era == "modern":
            result = self.complete(ctx.method, result)
        await self.send_result(ctx.request_id, result)

    async def _send_input_required(self, ctx: ToolContext, inputs: Inputs) -> None:
        result = input_required_result(
            self.state, ctx.method, ctx.params, ctx.round, inputs, self.server_info()
        )
        await self.send_result(ctx.request_id, result)
