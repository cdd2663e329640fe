"""The request path of a session: one meaning of ``timeout=``, and the multi-round-trip loop.

`RequestPath` is a mixin of [`ClientSession`][trio_mcp.ClientSession] (the session sets the
attributes it reads in its ``__init__``; a mixin, not a component, so that the hot path
stays one method call from ``call_tool`` to the connection). It holds, for requests in
both directions:

* **One meaning of** ``timeout=``: the whole call, in both eras (every round of a
  multi-round-trip call and the handlers answering its input requests included), extended
  by progress when ``progress_resets_timeout`` is set, never past ``max_timeout`` (by
  default ten times the timeout).
* **The multi-round-trip loop** (modern era): ``_meta`` added, protocol-version retry,
  idempotent re-issue after a broken stream, ``input_required`` rounds answered through
  the session's handlers, tasks driven to their end, claimed ``resultType`` values.
* **Server-to-client requests**: their [`RequestContext`][trio_mcp.handlers.RequestContext], and the
  task receiver.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, overload

import msgspec
import trio
from msgspec import UNSET, UnsetType

from . import _tracing
from . import types as t
from ._eras import MODERN_VERSIONS
from ._exceptions import (
    ConnectionClosed,
    InputRequestError,
    ProtocolError,
    UnsupportedProtocolVersionError,
)
from ._handlers import HandlerError
from ._jsonrpc import RequestId, decode_json, decode_payload
from ._negotiation import EraNegotiation
from ._pending import ProgressCallback
from ._taskpushes import TaskPushes
from ._tasks import RECEIVER_METHODS, TaskDriver, TaskState, ToolTask, decode_task

if TYPE_CHECKING:
    from ._result_cache import ResultCache
    from ._subscriptions import Notifications
    from ._tools import ToolBook

__all__ = [
    "ProgressCallback",
    "RequestPath",
    "ResultClaimHandler",
    "ResultHead",
    "T",
    "request_meta",
]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")
R = TypeVar("R", bound=t.Result)

_INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
PROGRESS_LIMIT_FACTOR: Final = 10
"""With ``progress_resets_timeout`` and no ``max_timeout``: progress may extend a call to at most
this many times its timeout (docs/cancellation.md says why there is always a limit)."""
ResultClaimHandler = Callable[[str, dict[str, Any]], Awaitable[Mapping[str, Any]]]
RawTap = Callable[["msgspec.Raw | None"], None]
"""Sees the bytes a result was decoded from (None: bytes not seen, e.g. a cached page)."""


class ResultHead(msgspec.Struct, rename="camel"):
    """The fields of a 2026-07-28 result that say whether it is complete (multi-round-trip)."""

    result_type: str | UnsetType = UNSET
    input_requests: dict[str, msgspec.Raw] | UnsetType = UNSET
    request_state: msgspec.Raw | UnsetType = UNSET


def _complete_as(raw: msgspec.Raw, tp: type[R]) -> R | None:
    """``raw`` decoded as ``tp`` if it is one and complete, else None (no error raised)."""
    try:
        result = decode_payload(raw, tp, "result")
    except ProtocolError:  # not a tp: an incomplete result, or an invalid one (said later)
        return None
    kind = result.result_type
    return result if kind is UNSET or kind == "complete" else None


class _InputRequest(msgspec.Struct):
    method: str
    params: msgspec.Raw = msgspec.Raw(b"{}")


def request_meta(params: msgspec.Raw) -> Mapping[str, Any] | None:
    """The ``_meta`` of a server-to-client request's params, if it has one."""
    try:
        decoded: object = decode_json(params, "params")
    except ProtocolError:
        return None
    if isinstance(decoded, dict):
        found: object = cast("dict[str, Any]", decoded).get("_meta")
        if isinstance(found, dict):
            return cast("dict[str, Any]", found)
    return None


class RequestPath(EraNegotiation):
    """The request path of [`ClientSession`][trio_mcp.ClientSession] (a mixin: the session sets the
    attributes declared here in its ``__init__``)."""

    if not TYPE_CHECKING:  # (type checkers would refuse the mixin's own assignments)
        __slots__ = ()  # the session's __slots__ hold the attributes

    _claims: dict[str, tuple[frozenset[str] | None, ResultClaimHandler]]
    _notes: Notifications
    _cache: ResultCache
    _tools: ToolBook
    _task_pushes: TaskPushes | None  # made for the first modern task a handle waits on

    # -- the request path ----------------------------------------------------------------

    def _decode(self, raw: msgspec.Raw, tp: type[T], method: str) -> T:
        return decode_payload(raw, tp, f"result of {method}")

    def _with_meta(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any] | Any:
        if self._era != "modern":
            return params
        base = self._meta_full if method in _INPUT_METHODS else self._meta_plain
        merged: dict[str, Any] = dict(params) if params else {}
        given = merged.get("_meta")
        merged["_meta"] = {**given, **base} if isinstance(given, Mapping) and given else base
        return merged

    @overload
    async def _call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
        keep_task: bool = False,
        tp: None = None,
        on_raw: RawTap | None = None,
    ) -> msgspec.Raw: ...

    @overload
    async def _call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
        keep_task: bool = False,
        tp: type[R],
        on_raw: RawTap | None = None,
    ) -> R: ...

    async def _call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
        keep_task: bool = False,
        tp: type[R] | None = None,
        on_raw: RawTap | None = None,
    ) -> msgspec.Raw | R:
        """One logical call in either era, with one meaning of ``timeout``: the whole call.

        A task the server makes of a ``tools/call`` is driven to its end within that
        timeout, unless ``keep_task`` asks for the task itself. With ``tp`` the result comes
        decoded as that type (in the modern era the one decode also tells its
        ``resultType``); without, raw. ``on_raw`` sees the bytes of the result right before
        they are decoded as ``tp`` (every time they are: the last call's are the result's).
        """
        if _tracing.active():
            with _tracing.traced(method, name, params) as params:
                out = await self._timed(
                    method, params, timeout, on_progress, name, headers, idempotent, keep_task, tp,
                    on_raw,
                )  # fmt: skip
        elif timeout is None and self._opts.default_timeout is None:
            if self._era != "modern" and (params is None or "task" not in params):
                # The common case, one round trip with nothing around it: straight to the
                # connection (one coroutine frame per pending request instead of four).
                out = await self._rpc.request(
                    method, params, on_progress=on_progress, name=name, headers=headers,
                    idempotent=idempotent,
                )  # fmt: skip
            else:
                out = await self._rounds(
                    method, params, on_progress, name, headers, idempotent, keep_task, tp, on_raw
                )
        else:
            out = await self._timed(
                method, params, timeout, on_progress, name, headers, idempotent, keep_task, tp,
                on_raw,
            )  # fmt: skip
        if tp is None:
            return cast(msgspec.Raw, out)
        if isinstance(out, tp):
            return out
        if on_raw is not None:
            on_raw(cast(msgspec.Raw, out))
        return self._decode(cast(msgspec.Raw, out), tp, method)

    async def _timed(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        name: str | None,
        headers: Mapping[str, str] | None,
        idempotent: bool,
        keep_task: bool,
        tp: type[t.Result] | None,
        on_raw: RawTap | None = None,
    ) -> msgspec.Raw | t.Result:
        if timeout is None:
            timeout = self._opts.default_timeout
        if timeout is None:
            return await self._rounds(
                method, params, on_progress, name, headers, idempotent, keep_task, tp, on_raw
            )
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        started = trio.current_time()
        scope = trio.CancelScope(deadline=started + timeout)
        if self._opts.progress_resets_timeout:
            on_progress = self._deadline_bumper(scope, started, timeout, on_progress)
        with scope:
            return await self._rounds(
                method, params, on_progress, name, headers, idempotent, keep_task, tp, on_raw
            )
        raise trio.TooSlowError(f"{method} timed out after {timeout} s")

    def _deadline_bumper(
        self,
        scope: trio.CancelScope,
        started: float,
        timeout: float,
        on_progress: ProgressCallback | None,
    ) -> ProgressCallback:
        """A progress callback that extends ``scope`` (never past ``max_timeout``).

        Without ``max_timeout`` the limit is ``PROGRESS_LIMIT_FACTOR`` times the call's
        timeout: a server that reports progress forever never holds a call forever.
        """
        limit = self._opts.max_timeout
        hard_limit = limit if limit is not None else timeout * PROGRESS_LIMIT_FACTOR

        def bump(progress: t.ProgressNotificationParams) -> Awaitable[None] | None:
            deadline = min(trio.current_time() + timeout, started + hard_limit)
            scope.deadline = max(scope.deadline, deadline)
            return on_progress(progress) if on_progress is not None else None

        return bump

    async def _rounds(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        on_progress: ProgressCallback | None,
        name: str | None,
        headers: Mapping[str, str] | None,
        idempotent: bool,
        keep_task: bool = False,
        tp: type[t.Result] | None = None,
        on_raw: RawTap | None = None,
    ) -> msgspec.Raw | t.Result:
        """Version retry, idempotent re-issue, the multi-round-trip loop, claimed results.

        A modern result is returned decoded as ``tp`` when it decodes as one and is
        complete (one decode instead of two: the ``resultType`` comes with it); otherwise
        raw, after its ``resultType`` was dealt with.
        """
        rpc = self._rpc
        if self._era != "modern":
            raw = await rpc.request(
                method, params, on_progress=on_progress, name=name, headers=headers,
                idempotent=idempotent,
            )  # fmt: skip
            if method == "tools/call" and isinstance(params, Mapping) and "task" in params:
                driver = self._legacy_task(raw)
                if driver is not None and not keep_task:
                    return await driver.run()
            return raw
        extra: dict[str, Any] = {}
        version_retried = False
        stream_retried = False
        rounds = 0
        while True:
            merged = self._with_meta(method, params)
            if extra:
                merged = {**merged, **extra}
            try:
                raw = await rpc.request(
                    method, merged, on_progress=on_progress, name=name, headers=headers,
                    idempotent=idempotent,
                )  # fmt: skip
            except UnsupportedProtocolVersionError as exc:
                mutual = [v for v in MODERN_VERSIONS if v in exc.supported]
                if version_retried or not mutual or mutual[0] == self._protocol_version:
                    raise
                version_retried = True
                self._set_modern(mutual[0])
                continue
            except ConnectionClosed as exc:
                if not (idempotent and rpc.usable and not stream_retried):
                    raise
                stream_retried = True  # only this request's stream broke: re-issue it once
                logger.debug("re-issuing %s after a broken stream: %s", method, exc)
                continue
            if tp is not None:
                if on_raw is not None:
                    on_raw(raw)
                complete = _complete_as(raw, tp)
                if complete is not None:
                    return complete
            head = decode_payload(raw, ResultHead, f"result of {method}")
            kind = head.result_type
            if kind is UNSET or kind == "complete":
                return raw
            if kind == "task" and method == "tools/call":
                return raw if keep_task else await self._modern_task(raw).run()
            claim = self._claims.get(kind)
            if claim is not None and (claim[0] is None or method in claim[0]):
                return await self._resolve_claim(kind, claim[1], method, raw)
            if kind != "input_required" or method not in _INPUT_METHODS:
                raise ProtocolError(f"unexpected resultType {kind!r} in the result of {method}")
            rounds += 1
            if rounds > self._opts.max_input_rounds:
                raise InputRequestError(
                    f"{method} still required input after {self._opts.max_input_rounds} "
                    "rounds; giving up (raise max_input_rounds to allow more)"
                )
            extra = {}
            if head.input_requests is not UNSET and head.input_requests:
                extra["inputResponses"] = await self._gather_inputs(head.input_requests)
            if head.request_state is not UNSET:
                # echoed byte for byte, so it must be valid JSON (UTF-8 included) first
                decode_json(head.request_state, f"requestState of {method}")
                extra["requestState"] = head.request_state

    # -- tasks and claimed result types (SEP-2663, SEP-1686, SEP-2133) ------------------

    def _pushes(self) -> TaskPushes:
        """The session's one listen stream for task status pushes (made on first use)."""
        pushes = self._task_pushes
        if pushes is None:
            pushes = self._task_pushes = TaskPushes(self._listen_to_tasks, self._rpc.spawn)
        return pushes

    def _listen_to_tasks(
        self, task_ids: frozenset[str], granted_to: list[Mapping[str, Any]]
    ) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[Any]]:
        meta = functools.partial(self._with_meta, "subscriptions/listen", None)
        wanted = {"taskIds": sorted(task_ids)}
        return self._notes.listen_modern(wanted, meta, None, granted_to)

    def _driver(self, state: TaskState, body: dict[str, Any], *, legacy: bool) -> TaskDriver:
        return TaskDriver(
            pushes=None if legacy else self._pushes(),
            state=state,
            legacy=legacy,
            call=self._call,
            gather=self._gather_inputs,
            add_handler=self._notes.add_handler,
            cancel_notice_timeout=self._opts.cancel_notice_timeout,
            max_input_rounds=self._opts.max_input_rounds,
            body=body,
        )

    def _modern_task(self, raw: msgspec.Raw) -> TaskDriver:
        body = decode_json(raw, "result of tools/call")
        if not isinstance(body, dict):
            raise ProtocolError("the task result of tools/call is not an object")
        wire = cast("dict[str, Any]", body)
        return self._driver(decode_task(wire, "result of tools/call"), wire, legacy=False)

    def _legacy_task(self, raw: msgspec.Raw) -> TaskDriver | None:
        """A 2025-11-25 ``CreateTaskResult``'s driver; None for an ordinary result."""
        body = decode_json(raw, "result of tools/call")
        if not isinstance(body, dict):
            return None
        task: object = cast("dict[str, Any]", body).get("task")
        if not isinstance(task, dict) or "content" in body:
            return None
        wire = cast("dict[str, Any]", task)
        return self._driver(decode_task(wire, "CreateTaskResult"), wire, legacy=True)

    async def _resolve_claim(
        self, kind: str, handler: ResultClaimHandler, method: str, raw: msgspec.Raw
    ) -> msgspec.Raw:
        body = decode_json(raw, f"result of {method}")
        if not isinstance(body, dict):
            raise ProtocolError(f"the {kind!r} result of {method} is not an object")
        final = await handler(method, cast("dict[str, Any]", body))
        try:
            return msgspec.Raw(msgspec.json.encode(final))
        except (TypeError, msgspec.EncodeError) as exc:
            raise ProtocolError(
                f"the handler of resultType {kind!r} returned no JSON value: {exc}"
            ) from exc

    async def _gather_inputs(self, requests: Mapping[str, msgspec.Raw]) -> dict[str, Any]:
        """Answer a round's input requests concurrently, through the session's handlers."""
        responses: dict[str, Any] = {}
        failures: list[str] = []

        async def one(key: str, raw: msgspec.Raw) -> None:
            try:
                request = decode_payload(raw, _InputRequest, f"input request {key!r}")
                if not self._handlers.can_handle(request.method):
                    failures.append(f"{key}: no handler for {request.method}")
                    return
                ctx = self._context(request.method, key, request.params)
                responses[key] = await self._handlers.handle(request.method, request.params, ctx)
            except HandlerError as exc:
                failures.append(f"{key}: failed: {exc.message}")
            except Exception as exc:  # never an ExceptionGroup for the caller
                failures.append(f"{key}: {exc}")

        async with trio.open_nursery() as nursery:
            for key, raw in requests.items():
                nursery.start_soon(one, key, raw)
        if failures:
            raise InputRequestError(
                "the server asked for input that could not be given: " + "; ".join(failures)
            )
        return responses

    def _context(self, method: str, request_id: RequestId, params: msgspec.Raw) -> Any:
        """The [`RequestContext`][trio_mcp.handlers.RequestContext] a handler of this request gets
        (ClientSession's: the context names the session's own type, so it is made above this
        module)."""
        raise NotImplementedError  # pragma: no cover - ClientSession overrides it

    def _can_handle(self, method: str) -> bool:
        if method in RECEIVER_METHODS:
            return self._receiver is not None
        return self._handlers.can_handle(method)

    async def _handle_request(self, request_id: RequestId, method: str, params: msgspec.Raw) -> Any:
        receiver = self._receiver
        if receiver is not None:
            if method in RECEIVER_METHODS:
                return await receiver.serve(method, params)
            task = receiver.wants_task(method, params)
            if task is not None:
                await trio.lowlevel.checkpoint()
                ctx = self._context(method, request_id, params)
                return receiver.create(method, params, ctx, task)
        return await self._handlers.handle(
            method, params, self._context(method, request_id, params)
        )

    # -- paged listings ----------------------------------------------------------------

    async def _page(
        self, method: str, tp: type[R], cursor: str | None, *, cache: bool = True,
        timeout: float | None = None, on_raw: RawTap | None = None,
    ) -> R:  # fmt: skip
        """One page; ``on_raw`` then sees the bytes it was decoded from (None when they were
        not seen: a page from the cache)."""
        key = cursor or ""
        if cache and self._cache.entries:
            hit = self._cache.get(method, key)
            if hit is not None:
                if on_raw is not None:
                    on_raw(None)
                return cast(R, hit)
        params = {"cursor": cursor} if cursor else None
        if on_raw is None:
            page = await self._call(method, params, timeout=timeout, idempotent=True, tp=tp)
        else:
            seen: list[msgspec.Raw | None] = []
            page = await self._call(
                method, params, timeout=timeout, idempotent=True, tp=tp, on_raw=seen.append
            )
            for raw in seen or [None]:  # (a page whose bytes went unseen: as if cached)
                on_raw(raw)
        if self._era == "modern":
            self._cache.put(method, key, page)
        return page

    async def _all_pages(
        self, method: str, tp: type[Any], attr: str, *, cache: bool, timeout: float | None,
        on_raw: RawTap | None = None,
    ) -> list[Any]:  # fmt: skip
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(self._opts.max_pages):
            page = await self._page(method, tp, cursor, cache=cache, timeout=timeout, on_raw=on_raw)
            items.extend(getattr(page, attr))
            next_cursor = page.next_cursor
            if next_cursor is UNSET or next_cursor is None or next_cursor == "":
                return items
            if next_cursor in seen:
                raise ProtocolError(
                    f"{method}: the server repeated cursor {next_cursor!r}; stopping"
                )
            seen.add(next_cursor)
            cursor = next_cursor
        raise ProtocolError(
            f"{method}: more than {self._opts.max_pages} pages; use the *_page method to page "
            "by hand or raise max_pages"
        )

    # -- tool calls and their tasks ------------------------------------------------------

    def _wants_legacy_task(self, name: str) -> bool:
        """2025-11-25: does this tool call go out task-augmented (``task: {}``)?"""
        if self._era != "legacy" or self._protocol_version != "2025-11-25":
            return False
        tasks = (self._server_capabilities or t.ServerCapabilities()).tasks
        requests: object = tasks.get("requests") if isinstance(tasks, dict) else None
        tools: object = (
            cast("dict[str, Any]", requests).get("tools") if isinstance(requests, dict) else None
        )
        if not isinstance(tools, dict) or "call" not in tools:
            return False
        tool = self._tools.known.get(name)
        execution = tool.execution if tool is not None else UNSET
        support = execution.task_support if execution is not UNSET else None
        return support == "required" or (support == "optional" and self._opts.tasks)

    def _tool_call(
        self, name: str, args: Mapping[str, Any]
    ) -> tuple[dict[str, Any], Mapping[str, str] | None]:
        """The params of a ``tools/call`` and its ``Mcp-Param-*`` headers (if any)."""
        params: dict[str, Any] = {"name": name, "arguments": args}
        if self._wants_legacy_task(name):
            params["task"] = {}
        headers: Mapping[str, str] | None = None
        if self._transport.wants_param_headers:
            headers = self._tools.param_headers(name, args)
        return params, headers

    def _tool_result(self, name: str, raw: msgspec.Raw) -> t.CallToolResult:
        """Decode a tool result and check it against the tool's ``outputSchema``."""
        return self._tools.checked(name, self._decode(raw, t.CallToolResult, "tools/call"))

    @asynccontextmanager
    async def _tool_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
    ) -> AsyncGenerator[ToolTask, None]:
        """[`ClientSession.start_tool_task()`][trio_mcp.ClientSession.start_tool_task]: the call,
        and the task it became."""
        args: Mapping[str, Any] = arguments if arguments is not None else {}
        params, headers = self._tool_call(name, args)
        await self._tools.prepare_output_schema(name)  # (the result is checked synchronously)
        raw = await self._call(
            "tools/call",
            params,
            timeout=timeout,
            on_progress=on_progress,
            name=name,
            headers=headers,
            keep_task=True,
        )
        driver: TaskDriver | None
        if self._era == "modern":
            head = decode_payload(raw, ResultHead, "result of tools/call")
            driver = self._modern_task(raw) if head.result_type == "task" else None
        else:
            driver = self._legacy_task(raw)
        task = ToolTask(
            driver, functools.partial(self._tool_result, name), raw if driver is None else None
        )
        try:
            yield task
        finally:
            await task._close()  # pyright: ignore[reportPrivateUsage]

    async def _task_states(self, timeout: float | None) -> list[TaskState]:
        """[`ClientSession.list_tasks()`][trio_mcp.ClientSession.list_tasks]: every page of
        ``tasks/list``."""
        states: list[TaskState] = []
        cursor: str | None = None
        for _ in range(self._opts.max_pages):
            raw = await self._call(
                "tasks/list", {"cursor": cursor} if cursor else None, timeout=timeout,
                idempotent=True,
            )  # fmt: skip
            page = decode_json(raw, "result of tasks/list")
            body = cast("dict[str, Any]", page) if isinstance(page, dict) else {}
            items: object = body.get("tasks")
            if not isinstance(items, list):
                raise ProtocolError("the result of tasks/list has no tasks array")
            for item in cast("list[object]", items):
                if not isinstance(item, dict):
                    raise ProtocolError("tasks/list: a task is not an object")
                states.append(decode_task(cast("dict[str, Any]", item), "tasks/list"))
            next_cursor: object = body.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return states
            cursor = next_cursor
        raise ProtocolError(f"tasks/list: more than {self._opts.max_pages} pages")
