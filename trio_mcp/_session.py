"""The session: the typed API, a thin layer over the parts that do the work.

:class:`ClientSession` defines every public method (signature, docstring; the bridges in
``_blocking_api.py`` and ``_asyncio_api.py`` are generated from them by
``scripts/gen_bridges.py``) and delegates to the part whose job it is:

* :mod:`trio_mcp._rpc`: the JSON-RPC engine (ids, the pending table, the reader, dispatch,
  cancellation notices, server-request tasks, the one decode boundary).
* :mod:`trio_mcp._negotiation` (mixin ``EraNegotiation``): ``initialize`` for legacy
  servers, ``server/discover`` for modern ones, the ``auto`` probe.
* :mod:`trio_mcp._requests` (mixin ``RequestPath``): the request path, with one meaning of
  ``timeout=`` and the multi-round-trip loop; paging; tool-call params and tool tasks;
  server-to-client requests. A mixin so that ``call_tool`` reaches the connection with no
  extra hop.
* :mod:`trio_mcp._subscriptions` (``Notifications``): routing every notification,
  subscriber channels, callbacks, ``listen``.
* :mod:`trio_mcp._tools` (``ToolBook``): the x-mcp-header rules, output schemas and their
  validation, tools' task support.
* :mod:`trio_mcp._result_cache` (``ResultCache``): results kept for their ``ttlMs``.
* :mod:`trio_mcp._options` (``_Options``): the session options, checked once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Final, Literal, NoReturn, TypeVar, cast, overload

import msgspec
import trio

from . import types as t
from ._catalogue import Catalogue, run_catalogue
from ._construction import NoPublicConstructor
from ._eras import era_cache
from ._exceptions import ConnectionClosed, HTTPStatusError, MCPError, ProtocolError, ServerError
from ._handlers import RequestContext, Roots, ServerRequestHandlers, listen_to_roots
from ._jsonrpc import decode_json
from ._options import _Options
from ._requests import ProgressCallback, RequestPath, ResultClaimHandler
from ._result_cache import ResultCache
from ._rpc import RPCConnection
from ._subscriptions import (
    LOG_LEVELS,
    ListKind,
    Notification,
    Notifications,
    legacy_methods,
    listen_wanted,
)
from ._tasks import TASKS_EXTENSION, TaskReceiver, TaskState, ToolTask
from ._tools import ToolBook
from ._transports._base import Transport
from ._validation import decode_structured

__all__ = ["ClientSession", "Notification"]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")
Era = Literal["legacy", "modern"]

#: The ``_meta`` of a session that is not modern: shared, never changed.
_NO_META: Final[dict[str, Any]] = {}


class SessionView:
    """The read-only state of a :class:`ClientSession`, shared by the wrappers that drive one
    from another world (the blocking session and the asyncio session)."""

    @property
    def _session(self) -> ClientSession:
        raise NotImplementedError  # pragma: no cover - every wrapper overrides it

    @property
    def era(self) -> Era | None:
        """``"legacy"`` (initialize handshake) or ``"modern"`` (2026-07-28, stateless)."""
        return self._session.era

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision in use, e.g. ``"2025-11-25"`` or ``"2026-07-28"``."""
        return self._session.protocol_version

    @property
    def server_info(self) -> t.Implementation | None:
        """The server's self-reported name and version."""
        return self._session.server_info

    @property
    def server_capabilities(self) -> t.ServerCapabilities:
        """What the server said it supports."""
        return self._session.server_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's natural-language instructions, if it sent any."""
        return self._session.instructions

    @property
    def failure(self) -> MCPError | None:
        """Why the session stopped working (the server went away, ...), or None."""
        return self._session.failure


class ClientSession(RequestPath, metaclass=NoPublicConstructor):
    """A session with one MCP server. Open it with :func:`open_mcp_session`.

    All methods may be called concurrently from many tasks, and every one is a checkpoint.
    Every method that talks to the server takes the caller's cancel scope as its timeout
    (``trio.fail_after``), and most also a ``timeout=`` in seconds raising
    :class:`trio.TooSlowError`. After the session is closed every method raises
    :class:`trio.ClosedResourceError`; after the connection broke, a fresh
    :class:`ConnectionClosed` telling why.
    """

    _open_with: ClassVar[str] = "trio_mcp.open_mcp_session(...)"

    # Slots, not a __dict__: one session object per open session (issue 27). A mixin base of
    # ClientSession must declare ``__slots__ = ()`` too, or every session gets a __dict__.
    __slots__ = (
        "_cache",
        "_claims",
        "_client_info",
        "_era",
        "_era_cache",
        "_extensions",
        "_handlers",
        "_instructions",
        "_log_level",
        "_meta_full",
        "_meta_plain",
        "_notes",
        "_opts",
        "_protocol_version",
        "_receiver",
        "_rpc",
        "_server_capabilities",
        "_server_info",
        "_stop_roots",
        "_tools",
        "_transport",
    )

    def __init__(
        self,
        nursery: trio.Nursery,
        transport: Transport,
        options: _Options,
        handlers: ServerRequestHandlers,
    ) -> None:
        self._transport = transport
        self._opts = options
        self._client_info = options.client_info or _default_client_info()
        self._handlers = handlers
        # 2025-11-25: task-augmented sampling/elicitation from the server (tasks=True)
        self._receiver: TaskReceiver | None = None
        if options.tasks:
            self._receiver = TaskReceiver(nursery, handlers.handle, handlers.can_handle)
        self._era_cache = options.era_cache if options.era_cache is not None else era_cache
        self._cache = ResultCache(enabled=options.cache)
        self._tools = ToolBook(options.output_validation)
        self._notes = Notifications(
            self._cache,
            self._tools.forget_listing,
            buffer=options.notification_buffer,
            cancel_notice_timeout=options.cancel_notice_timeout,
            listen_ack_timeout=options.listen_ack_timeout,
        )
        self._rpc = RPCConnection(
            transport,
            nursery,
            on_notification=self._notes.route,
            handle_request=self._handle_request,
            can_handle=self._can_handle,
            on_failure=self._notes.close,
            batches_allowed=self._batches_allowed,
            cancel_notice_timeout=options.cancel_notice_timeout,
            max_server_requests=options.max_server_requests,
        )
        self._notes.rpc = self._rpc

        self._era: Era | None = None
        self._protocol_version: str | None = None
        self._server_info: t.Implementation | None = None
        self._server_capabilities: t.ServerCapabilities | None = None
        self._instructions: str | None = None
        self._log_level: str | None = None
        self._meta_full: dict[str, Any] = _NO_META  # replaced (never changed) once modern
        self._meta_plain: dict[str, Any] = _NO_META
        self._stop_roots: Callable[[], None] | None = None
        # SEP-2133: extensions advertised under capabilities.extensions; resultTypes claimed
        self._extensions: dict[str, dict[str, Any]] = {
            name: dict(settings) for name, settings in (options.extensions or {}).items()
        }
        if options.tasks:
            self._extensions.setdefault(TASKS_EXTENSION, {})
        self._claims: dict[str, tuple[frozenset[str] | None, ResultClaimHandler]] = {}
        if isinstance(handlers.roots, Roots):
            self._stop_roots = listen_to_roots(handlers.roots, self._roots_changed)

    # -- public properties ---------------------------------------------------------------

    @property
    def era(self) -> Era | None:
        """``"legacy"`` (initialize handshake) or ``"modern"`` (2026-07-28, stateless)."""
        return self._era

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision in use, e.g. ``"2025-11-25"`` or ``"2026-07-28"``."""
        return self._protocol_version

    @property
    def server_info(self) -> t.Implementation | None:
        """The server's self-reported name and version."""
        return self._server_info

    @property
    def server_capabilities(self) -> t.ServerCapabilities:
        """What the server said it supports."""
        return self._server_capabilities or t.ServerCapabilities()

    @property
    def instructions(self) -> str | None:
        """The server's natural-language instructions, if it sent any."""
        return self._instructions

    @property
    def transport(self) -> Transport:
        """The transport the session runs on."""
        return self._transport

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` has been called."""
        return self._rpc.closed

    @property
    def failure(self) -> MCPError | None:
        """Why the session stopped working (the server went away, ...), or None."""
        return None if self._rpc.closed else self._rpc.failure

    def claim_result_type(
        self,
        result_type: str,
        handler: ResultClaimHandler,
        *,
        methods: Iterable[str] | None = None,
    ) -> Callable[[], None]:
        """Handle results of a new ``resultType`` (an extension's, SEP-2133) yourself.

        When a result of ``methods`` (default: any) carries ``resultType: result_type``,
        ``await handler(method, result)`` is called with the decoded result (wire form) in
        the caller's task and cancel scope, and must return the final result in wire
        form, which the typed method then decodes (e.g. a ``CallToolResult`` dict).
        ``complete``, ``input_required`` and ``task`` are the library's own.

        Args:
            result_type: The ``resultType`` value to claim.
            handler: ``async def handler(method, result) -> Mapping``.
            methods: Only results of these methods.

        Returns:
            A function that removes the claim again.

        Raises:
            ValueError: ``result_type`` is one of the library's own.
        """
        if result_type in ("complete", "input_required", "task"):
            raise ValueError(f"resultType {result_type!r} is handled by trio_mcp itself")
        entry = (None if methods is None else frozenset(methods), handler)
        self._claims[result_type] = entry

        def remove() -> None:
            if self._claims.get(result_type) is entry:
                del self._claims[result_type]

        return remove

    # -- notifications -------------------------------------------------------------------

    async def wait_elicitation_complete(
        self, elicitation_id: str, *, timeout: float | None = None
    ) -> None:
        """Wait for ``notifications/elicitation/complete`` naming ``elicitation_id``.

        The out-of-band step of a URL-mode elicitation is done (2025-11-25): retry the
        request that raised :class:`URLElicitationRequiredError`. Returns at once when the
        notification has already arrived (the last 1024 ids are remembered).

        Args:
            elicitation_id: The ``elicitationId`` of the elicitation.
            timeout: Seconds before :class:`trio.TooSlowError` (default: wait forever,
                bounded by your cancel scope).

        Raises:
            trio.TooSlowError: The timeout expired.
            ConnectionClosed: The session stopped working while waiting.
        """
        await self._notes.wait_elicitation_complete(elicitation_id, timeout)

    # -- low-level public API ------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T] | None = None,
    ) -> Any:
        """Send any request and return its result.

        In the modern era the ``_meta`` fields are added and multi-round-trip input is
        gathered for you, exactly as for the typed methods.

        Args:
            method: The JSON-RPC method.
            params: The params, in wire form (camelCase keys).
            timeout: Seconds before :class:`trio.TooSlowError` (default: the session's).
            on_progress: Called (or awaited) with each progress notification for this request.
            result_type: Decode the result into this type (a msgspec Struct or any type
                msgspec understands); by default the decoded JSON is returned.

        Raises:
            ServerError: The server answered with a JSON-RPC error.
            ConnectionClosed: The server went away.
            trio.TooSlowError: The timeout expired.
        """
        raw = await self._call(method, params, timeout=timeout, on_progress=on_progress)
        if result_type is None:
            return decode_json(raw, f"result of {method}", empty=b"null")
        return self._decode(raw, result_type, method)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification to the server.

        Args:
            method: The notification method.
            params: The params in wire form, or None.
        """
        await self._rpc.notify(method, params)

    def set_request_handler(
        self, method: str, handler: Callable[[Any, RequestContext], Awaitable[Any]] | None
    ) -> None:
        """Serve server-to-client requests of ``method`` with ``handler``.

        The handler receives the decoded params and a :class:`RequestContext` and returns the
        result (a dict or Struct); raising :class:`HandlerError` answers with that error.

        Args:
            method: The request method, e.g. ``"x-vendor/thing"``.
            handler: The async handler, or None to remove the current one.
        """
        if handler is None:
            self._handlers.extra.pop(method, None)
        else:
            self._handlers.extra[method] = handler

    def add_notification_handler(
        self, method: str, callback: Callable[[Notification], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` for each notification of ``method`` (``"*"`` for all).

        A plain function is called as the message is routed (by the reader task, or by the
        transport task that received it while the reader was idle; always in the reader's
        context) and must be quick; an ``async def``
        function (or any callable returning an awaitable) runs in its own task in the
        session's nursery (at most 64 at once; more are dropped with a warning). Exceptions
        from callbacks are logged, never raised into the nursery.

        Args:
            method: The notification method, or ``"*"`` for every notification.
            callback: Called with each :class:`Notification`.

        Returns:
            A function that removes the handler again.
        """
        return self._notes.add_handler(method, callback)

    def on_log(
        self, callback: Callable[[t.LoggingMessageNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each log message (``notifications/message``), typed.

        Messages are also logged to the ``trio_mcp.server`` logger, with or without
        callbacks. A plain function runs in the reader task and must be quick; an async one
        runs in its own task (see :meth:`add_notification_handler`).

        Args:
            callback: Called with a :class:`LoggingMessageNotificationParams`.

        Returns:
            A function that removes the callback again.
        """
        return self._notes.typed_handler(
            ("notifications/message",), t.LoggingMessageNotificationParams, callback
        )

    def on_progress(
        self, callback: Callable[[t.ProgressNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with every progress notification, of any request, typed.

        For the progress of one call use that call's ``on_progress=`` instead.

        Args:
            callback: Called with a :class:`ProgressNotificationParams`.

        Returns:
            A function that removes the callback again.
        """
        return self._notes.typed_handler(
            ("notifications/progress",), t.ProgressNotificationParams, callback
        )

    def on_list_changed(
        self, callback: Callable[[ListKind], Any], *kinds: ListKind
    ) -> Callable[[], None]:
        """Call ``callback`` with ``"tools"``, ``"prompts"`` or ``"resources"`` on list changes.

        Legacy servers send list_changed notifications unasked; modern servers only inside
        :meth:`listen` (or :meth:`catalogue`), so open one of those as well.

        Args:
            callback: Called with the kind of list that changed.
            *kinds: Only these kinds (default: all three).

        Returns:
            A function that removes the callback again.

        Raises:
            ValueError: An unknown kind.
        """
        return self._notes.on_list_changed(callback, kinds)

    def on_resource_updated(
        self, callback: Callable[[t.ResourceUpdatedNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each ``notifications/resources/updated``, typed.

        Subscribe first (:meth:`subscribe_resource` on legacy servers, or :meth:`listen`
        with ``resource_uris=`` in either era).

        Args:
            callback: Called with a :class:`ResourceUpdatedNotificationParams`.

        Returns:
            A function that removes the callback again.
        """
        return self._notes.typed_handler(
            ("notifications/resources/updated",), t.ResourceUpdatedNotificationParams, callback
        )

    @asynccontextmanager
    async def catalogue(
        self,
        *,
        tools: bool = True,
        prompts: bool = False,
        resources: bool = False,
        debounce: float = 0.1,
    ) -> AsyncGenerator[Catalogue, None]:
        """Keep a live catalogue of the server's tools, prompts and resources.

        Lists them now, then re-lists a kind whenever the server says it changed (through
        :meth:`listen`, so in both eras), waiting ``debounce`` seconds of trio's clock
        after a change for more changes, so that a burst costs one refresh. The refresher
        runs in the session's nursery and stops when the block ends.

        Args:
            tools: Keep the tools (default).
            prompts: Keep the prompts.
            resources: Keep the resources.
            debounce: Seconds to wait for further changes before refreshing.

        Yields:
            The :class:`Catalogue`.

        Raises:
            ValueError: ``debounce`` is negative or nothing is kept.
        """
        if debounce < 0 or not (tools or prompts or resources):
            raise ValueError("catalogue(): debounce must be >= 0 and something must be kept")
        catalogue = Catalogue._create(self, tools=tools, prompts=prompts, resources=resources)  # pyright: ignore[reportPrivateUsage]
        await catalogue.refresh()
        scope = trio.CancelScope()
        async with self.listen(tools=tools, prompts=prompts, resources=resources) as channel:
            if not self._rpc.spawn(
                run_catalogue, catalogue, channel, debounce, scope, name="trio_mcp catalogue"
            ):
                self._rpc.check_usable()
            try:
                yield catalogue
            finally:
                scope.cancel()

    async def keep_alive(
        self, interval: float, *, max_failures: int = 3, timeout: float | None = None
    ) -> NoReturn:
        """Ping the server every ``interval`` seconds until it stops answering.

        Run it in a nursery of yours (``nursery.start_soon(session.keep_alive, 30)``) and
        cancel that when done. Each ping waits ``timeout`` seconds (default: ``interval``);
        a success resets the count of failures. Time is trio's clock.

        Args:
            interval: Seconds between pings (from the end of one to the start of the next).
            max_failures: Consecutive failed pings that end the keep-alive.
            timeout: Seconds each ping may take.

        Raises:
            ConnectionClosed: ``max_failures`` pings in a row failed (the last failure is
                the cause), or the session stopped working.
            ValueError: ``interval``, ``timeout`` or ``max_failures`` is not positive.
        """
        if not interval > 0 or (timeout is not None and not timeout > 0) or max_failures < 1:
            raise ValueError("keep_alive(): interval, timeout and max_failures must be positive")
        failures = 0
        while True:
            await trio.sleep(interval)
            try:
                await self.ping(timeout=timeout if timeout is not None else interval)
            except (trio.TooSlowError, ServerError, ProtocolError, HTTPStatusError) as exc:
                failures += 1
                logger.warning("keep-alive ping %d/%d failed: %r", failures, max_failures, exc)
                if failures >= max_failures:
                    raise ConnectionClosed(
                        f"the server did not answer {failures} keep-alive pings in a row"
                    ) from exc
            else:
                failures = 0

    @asynccontextmanager
    async def notifications(
        self, *methods: str, buffer: int | None = None
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:
        """Receive the server's notifications on a channel while the block runs.

        Args:
            *methods: Only these methods (all notifications when none are given).
            buffer: How many notifications may wait unread before newer ones are dropped
                (with a warning). Default: the session's ``notification_buffer``.

        Yields:
            A :class:`trio.MemoryReceiveChannel` of :class:`Notification`; it ends when the
            session closes.
        """
        self._rpc.check_usable()
        async with self._notes.subscribe(frozenset(methods) if methods else None, buffer) as (
            channel,
            _sub,
        ):
            yield channel

    # -- typed API -----------------------------------------------------------------------

    async def list_tools(self, *, cache: bool = True, timeout: float | None = None) -> list[t.Tool]:
        """List every tool the server offers, following every ``nextCursor``.

        Over modern Streamable HTTP a tool whose ``x-mcp-header`` annotations break the
        spec's rules is left out (and logged), as the spec requires.

        Args:
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds for each page request.
        """
        tools: list[t.Tool] = await self._all_pages(
            "tools/list", t.ListToolsResult, "tools", cache=cache, timeout=timeout
        )
        self._tools.forget_listing()
        self._tools.remember_listed(tools)
        if not self._transport.wants_param_headers:
            return tools
        return self._tools.check_tool_headers(tools)

    async def list_tools_page(
        self,
        cursor: str | None = None,
        *,
        cache: bool = True,
        timeout: float | None = None,
    ) -> t.ListToolsResult:
        """Fetch one page of tools.

        Over modern Streamable HTTP a tool whose ``x-mcp-header`` annotations break the
        spec's rules is left out of the page (and logged), as in :meth:`list_tools`; the
        tools kept get their ``Mcp-Param-*`` headers when called.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        page: t.ListToolsResult = await self._page(
            "tools/list", t.ListToolsResult, cursor, cache=cache, timeout=timeout
        )
        if cursor is None:
            self._tools.forget_listing()
        self._tools.remember_listed(page.tools)
        if not self._transport.wants_param_headers:
            return page
        return self._tools.checked_page(page, more=cursor is not None)

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
        """Call a tool and return its result.

        A result with ``is_error`` set is returned, not raised: call
        :meth:`CallToolResult.raise_for_error` to turn it into a :class:`ToolError`.

        ``structured_content`` is checked against the tool's ``outputSchema`` (known from
        the last :meth:`list_tools`; compiled once per tool) and the outcome put on
        :attr:`CallToolResult.validation`; with ``output_validation="strict"`` a mismatch
        raises instead. See ``docs/tool-results.md``.

        Args:
            name: The tool's name.
            arguments: The tool's arguments (JSON-compatible values).
            timeout: Seconds before :class:`trio.TooSlowError` and cancellation.
            on_progress: Called (or awaited) with each progress notification of this call.
            result_type: Decode ``structured_content`` into this type (a msgspec Struct,
                dataclass or TypedDict) and return that instead of the result.

        Returns:
            The :class:`CallToolResult`, or the decoded ``result_type`` value.

        Raises:
            OutputValidationError: Strict mode and the result does not match its
                ``outputSchema`` (or lacks ``structuredContent``); or ``result_type`` is
                given and the structured content is missing or does not fit it. The
                exception's ``result`` is the whole result.
            ToolError: ``result_type`` is given and the tool reported an error.
        """
        args: Mapping[str, Any] = arguments if arguments is not None else {}
        params, headers = self._tool_call(name, args)
        # before sending: a cancellation while compiling never loses an answered call
        await self._tools.prepare_output_schema(name)
        answer = await self._call(
            "tools/call",
            params,
            timeout=timeout,
            on_progress=on_progress,
            name=name,
            headers=headers,
            tp=t.CallToolResult,
        )
        result = self._tools.checked(name, answer)
        if result_type is None:
            return result
        result.raise_for_error()
        return decode_structured(result, result_type)

    @asynccontextmanager
    async def start_tool_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AsyncGenerator[ToolTask, None]:
        """Call a tool and hold the server task it becomes, to watch and wait yourself.

        :meth:`call_tool` already drives tasks transparently; use this for the task id,
        its status changes and your own waiting (see ``docs/tasks.md``). A server that
        answers at once gives a :class:`ToolTask` whose ``task_id`` is None and whose
        :meth:`ToolTask.result` returns that answer. Leaving the block before the task
        ended cancels it on the server (``tasks/cancel``, shielded and bounded).

        Args:
            name: The tool's name.
            arguments: The tool's arguments.
            timeout: Seconds for the ``tools/call`` request itself (not the task).
            on_progress: Called (or awaited) with each progress notification of the call.

        Yields:
            The :class:`ToolTask`.

        Raises:
            ProtocolError: The task the server made has an unknown status.
        """
        async with self._tool_task(name, arguments, timeout, on_progress) as task:
            yield task

    async def list_tasks(self, *, timeout: float | None = None) -> list[TaskState]:
        """List the server's tasks (2025-11-25 ``tasks/list``, every page).

        The 2026-07-28 Tasks extension has no listing: keep the ids you started.

        Args:
            timeout: Seconds for each page request.

        Returns:
            A :class:`TaskState` per task.

        Raises:
            ServerError: The server has no ``tasks/list`` (e.g. a modern server).
            ProtocolError: A task has an unknown status.
        """
        return await self._task_states(timeout)

    async def list_resources(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Resource]:
        """List every resource, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "resources/list", t.ListResourcesResult, "resources", cache=cache, timeout=timeout
        )

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
        return await self._page(
            "resources/list", t.ListResourcesResult, cursor, cache=cache, timeout=timeout
        )

    async def list_resource_templates(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.ResourceTemplate]:
        """List every resource template, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "resources/templates/list", t.ListResourceTemplatesResult, "resource_templates",
            cache=cache, timeout=timeout,
        )  # fmt: skip

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
        return await self._page(
            "resources/templates/list",
            t.ListResourceTemplatesResult,
            cursor,
            cache=cache,
            timeout=timeout,
        )

    async def read_resource(
        self, uri: str, *, cache: bool = True, timeout: float | None = None
    ) -> t.ReadResourceResult:
        """Read a resource.

        Args:
            uri: The resource's URI.
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.

        Raises:
            ResourceNotFoundError: The server has no such resource.
        """
        if cache and self._cache.entries:
            hit = self._cache.get("resources/read", uri)
            if hit is not None:
                return cast(t.ReadResourceResult, hit)
        raw = await self._call(
            "resources/read", {"uri": uri}, timeout=timeout, name=uri, idempotent=True
        )
        result = self._decode(raw, t.ReadResourceResult, "resources/read")
        if self._era == "modern":
            self._cache.put("resources/read", uri, result)
        return result

    async def subscribe_resource(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (legacy servers).

        Modern (2026-07-28) servers have no ``resources/subscribe``: nothing is sent; use
        :meth:`listen` with ``resource_uris=[uri]`` instead, which works in both eras.

        Args:
            uri: The resource's URI.
        """
        self._rpc.check_usable()
        if self._era == "modern":
            logger.debug("subscribe_resource is a no-op in the modern era; use listen()")
            await trio.lowlevel.checkpoint()
            return
        await self._call("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop ``notifications/resources/updated`` about ``uri`` (no-op on modern servers).

        Args:
            uri: The resource's URI.
        """
        self._rpc.check_usable()
        if self._era == "modern":
            await trio.lowlevel.checkpoint()
            return
        await self._call("resources/unsubscribe", {"uri": uri})

    async def list_prompts(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Prompt]:
        """List every prompt, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "prompts/list", t.ListPromptsResult, "prompts", cache=cache, timeout=timeout
        )

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
        return await self._page(
            "prompts/list", t.ListPromptsResult, cursor, cache=cache, timeout=timeout
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
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        raw = await self._call("prompts/get", params, timeout=timeout, name=name)
        return self._decode(raw, t.GetPromptResult, "prompts/get")

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
                same as a dict (``{"type": "ref/prompt", "name": ...}``).
            argument_name: The argument being completed.
            argument_value: What the user typed so far.
            context_arguments: Values of other, already chosen arguments.
        """
        params: dict[str, Any] = {
            "ref": t.to_builtins(ref) if isinstance(ref, msgspec.Struct) else dict(ref),
            "argument": {"name": argument_name, "value": argument_value},
        }
        if context_arguments:
            params["context"] = {"arguments": dict(context_arguments)}
        raw = await self._call("completion/complete", params, timeout=timeout)
        return self._decode(raw, t.CompleteResult, "completion/complete")

    async def set_logging_level(self, level: str) -> None:
        """Set the minimum level of log messages the server sends.

        Legacy servers get ``logging/setLevel``; in the modern era the level rides in every
        request's ``_meta`` from now on (nothing is sent now).

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``, ``critical``,
                ``alert`` or ``emergency``.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {sorted(LOG_LEVELS)}")
        self._rpc.check_usable()
        self._log_level = level
        if self._era == "modern":
            self._rebuild_meta()
            await trio.lowlevel.checkpoint()
            return
        await self._call("logging/setLevel", {"level": level})

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers.

        Legacy servers get ``ping``; modern servers (which have no ``ping``) get a
        ``server/discover``, which every modern server must answer.

        Args:
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        if self._era == "modern":
            await self._call("server/discover", None, timeout=timeout)
            return
        await self._call("ping", None, timeout=timeout)

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
        buffer: int | None = None,
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:
        """Receive change notifications while the block runs, in either era.

        Modern servers get a ``subscriptions/listen`` request whose notifications are
        correlated by subscription id; the block starts once the server acknowledged it, and
        the subscription is cancelled on exit. Legacy servers' list_changed notifications are
        filtered client-side, with ``resources/subscribe`` (and ``unsubscribe`` on exit) for
        ``resource_uris``.

        Args:
            tools: Deliver ``notifications/tools/list_changed``.
            prompts: Deliver ``notifications/prompts/list_changed``.
            resources: Deliver ``notifications/resources/list_changed``.
            resource_uris: Deliver ``notifications/resources/updated`` for these URIs.
            buffer: How many notifications may wait unread.

        Yields:
            A channel of :class:`Notification`; it ends if the server ends the subscription
            or the session stops.

        Raises:
            ServerError: The server rejected the subscription.
        """
        self._rpc.check_usable()
        uris = frozenset(resource_uris)
        if self._era == "modern":
            wanted = listen_wanted(tools, prompts, resources, sorted(uris))
            meta = functools.partial(self._with_meta, "subscriptions/listen", None)
            async with self._notes.listen_modern(wanted, meta, buffer) as channel:
                yield channel
            return
        methods = legacy_methods(tools, prompts, resources, uris)
        async with self._notes.listen_legacy(
            methods, uris, buffer, self.subscribe_resource, self.unsubscribe_resource
        ) as channel:
            yield channel

    # -- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the session and its transport. Idempotent; completes even when cancelled.

        Calls still pending fail with :class:`trio.ClosedResourceError`; handler tasks are
        cancelled; for stdio the server process is shut down (stdin closed, then SIGTERM,
        then SIGKILL of its process group).
        """
        if self._rpc.closed:
            await trio.lowlevel.checkpoint()
            return
        if self._stop_roots is not None:
            self._stop_roots()
        for sub in self._notes.subscribers:
            sub.send.close()
        await self._rpc.aclose()
        self._notes.callback_drops.flush()

    async def _roots_changed(self) -> None:
        """Tell a legacy server that the :class:`Roots` set changed (bounded, never raises)."""
        if self._era != "legacy" or self._protocol_version is None or not self._rpc.usable:
            return
        with trio.move_on_after(self._opts.cancel_notice_timeout) as scope:
            try:
                await self._rpc.notify("notifications/roots/list_changed")
            except (MCPError, trio.ClosedResourceError) as exc:
                logger.debug("could not send notifications/roots/list_changed: %r", exc)
        if scope.cancelled_caught:
            logger.warning("notifications/roots/list_changed could not be sent in time")

    async def __aenter__(self) -> ClientSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@functools.cache
def _default_client_info() -> t.Implementation:
    """trio-mcp's name and version, sent when the application gives none (made once)."""
    return t.Implementation(name="trio-mcp", version=_version())


@functools.cache
def _version() -> str:
    try:
        from importlib.metadata import version

        return version("trio-mcp")
    except Exception:
        return "0.0.0"
