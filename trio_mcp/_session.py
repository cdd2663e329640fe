"""The session: [`ClientSession`][trio_mcp.ClientSession], a thin typed API over the parts that do
the work.

The public API is split by area into mixins, each in the module named for it; this module
keeps the class itself and what is about the session as a whole: opening state
(``__init__``), the properties, the low-level [`request()`][trio_mcp.ClientSession.request],
[`notify()`][trio_mcp.ClientSession.notify] and request-handler registration, result-type claims,
[`ping()`][trio_mcp.ClientSession.ping], [`keep_alive()`][trio_mcp.ClientSession.keep_alive] and
closing; plus [`RequestContext`][trio_mcp.handlers.RequestContext] and the handler types, which name
the session's own type.

* `trio_mcp._session_tools` (``ToolsAPI``): tools and tool tasks.
* `trio_mcp._session_features` (``FeaturesAPI``): resources, prompts, completion, the
  logging level.
* `trio_mcp._session_notifications` (``NotificationsAPI``): notification handlers,
  typed callbacks, channels, ``listen``, resource subscriptions, the live catalogue.

Every public method (signature, docstring) is defined in one of those classes; the bridges
(``_blocking_api*.py``, ``_asyncio_api*.py``) are generated from them, split the same way,
by ``scripts/gen_bridges.py``. The methods delegate to the part whose job it is:

* `trio_mcp._rpc`: the JSON-RPC engine (ids, the pending table, the reader, dispatch,
  cancellation notices, server-request tasks, the one decode boundary).
* `trio_mcp._negotiation` (mixin ``EraNegotiation``): ``initialize`` for legacy
  servers, ``server/discover`` for modern ones, the ``auto`` probe.
* `trio_mcp._requests` (mixin ``RequestPath``, the base of the API mixins): the request
  path, with one meaning of ``timeout=`` and the multi-round-trip loop; paging; tool-call
  params and tool tasks; server-to-client requests. It declares the session attributes the
  mixins use (annotations only), so no lower module imports this one.
* `trio_mcp._subscriptions` (``Notifications``): routing every notification,
  subscriber channels, callbacks, ``listen``.
* `trio_mcp._tools` (``ToolBook``): the x-mcp-header rules, output schemas and their
  validation, tools' task support.
* `trio_mcp._result_cache` (``ResultCache``): results kept for their ``ttlMs``.
* `trio_mcp._options` (``_Options``): the session options, checked once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, NoReturn, TypeAlias, TypeVar

import msgspec
import trio

from . import types as t
from ._construction import NoPublicConstructor
from ._eras import Era, era_cache
from ._exceptions import ConnectionClosed, MCPError
from ._handlers import Roots, RootsValue, ServerRequestHandlers, listen_to_roots
from ._jsonrpc import RequestId, decode_json
from ._options import _Options
from ._recovery import Recovery
from ._requests import ProgressCallback, ResultClaimHandler, request_meta
from ._result_cache import ResultCache
from ._rpc import RPCConnection
from ._session_features import FeaturesAPI
from ._session_notifications import NotificationsAPI
from ._session_tools import ToolsAPI
from ._statistics import SessionStatistics
from ._subscriptions import Notification, Notifications
from ._tasks import TASKS_EXTENSION, TaskReceiver
from ._tools import ToolBook
from ._transports._base import Transport
from ._version import __version__

__all__ = [
    "ClientSession",
    "ElicitationHandler",
    "Era",
    "Notification",
    "RequestContext",
    "RootsHandler",
    "SamplingHandler",
]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")

_DROP_REASONS: Final = {"reply": "reply_queue_full"}
"""The engine's kinds of dropped message, as statistics() names them."""

_NO_META: Final[dict[str, Any]] = {}
"""The ``_meta`` of a session that is not modern: shared, never changed."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a server-to-client request handler knows about the request it serves.

    Attributes:
        session: The session the request arrived on.
        method: The request's method (``sampling/createMessage``, ...).
        request_id: The JSON-RPC id (legacy) or the ``inputRequests`` key (modern).
        server_name: The server's self-reported name, when known.
        meta: The request's ``_meta``, if any.
    """

    session: ClientSession
    method: str
    request_id: int | str
    server_name: str | None = None
    meta: Mapping[str, Any] | None = None


SamplingHandler: TypeAlias = Callable[
    [t.CreateMessageRequestParams, RequestContext],
    Awaitable[t.CreateMessageResult | Mapping[str, Any]],
]
"""The ``sampling=`` handler: awaited with the server's ``sampling/createMessage`` params and
the [`RequestContext`][trio_mcp.handlers.RequestContext]; returns the model's
[`CreateMessageResult`][trio_mcp.types.CreateMessageResult] (or its dict)."""
ElicitationHandler: TypeAlias = Callable[
    [t.ElicitRequestFormParams | t.ElicitRequestURLParams, RequestContext],
    Awaitable[t.ElicitResult | Mapping[str, Any]],
]
"""The ``elicitation=`` handler: awaited with the server's ``elicitation/create`` params
(form or URL mode) and the [`RequestContext`][trio_mcp.handlers.RequestContext]; returns the
user's [`ElicitResult`][trio_mcp.types.ElicitResult] (or its dict)."""
RootsHandler: TypeAlias = (
    Callable[[RequestContext], Awaitable[RootsValue]] | Sequence[t.Root | str] | Roots
)
"""The ``roots=`` option: a fixed list of roots (URIs or
[`Root`][trio_mcp.types.Root]s), a [`Roots`][trio_mcp.handlers.Roots] that can change, or an
async function of the [`RequestContext`][trio_mcp.handlers.RequestContext] returning them."""


class SessionView:
    """The read-only state of a [`ClientSession`][trio_mcp.ClientSession], shared by the wrappers
    that drive one from another world (the blocking session and the asyncio session)."""

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


class ClientSession(ToolsAPI, FeaturesAPI, NotificationsAPI, metaclass=NoPublicConstructor):
    """A session with one MCP server. Open it with
    [`open_mcp_session()`][trio_mcp.open_mcp_session].

    All methods may be called concurrently from many tasks, and every one is a checkpoint.
    Every method that talks to the server takes the caller's cancel scope as its timeout
    (``trio.fail_after``), and most also a ``timeout=`` in seconds raising
    `trio.TooSlowError`. After the session is closed every method raises
    `trio.ClosedResourceError`; after the connection broke, a fresh
    [`ConnectionClosed`][trio_mcp.ConnectionClosed] telling why.
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
        "_recovery",
        "_rpc",
        "_server_capabilities",
        "_server_info",
        "_stop_roots",
        "_task_pushes",
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
        self._recovery: Recovery | None = None  # made on the first new server session
        transport.attach_gap(self._gap)

        self._era: Era | None = None
        self._protocol_version: str | None = None
        self._server_info: t.Implementation | None = None
        self._server_capabilities: t.ServerCapabilities | None = None
        self._instructions: str | None = None
        self._log_level: str | None = None
        self._meta_full: dict[str, Any] = _NO_META  # replaced (never changed) once modern
        self._meta_plain: dict[str, Any] = _NO_META
        self._stop_roots: Callable[[], None] | None = None
        self._task_pushes = None  # the listen stream for task pushes, from the first task
        # SEP-2133: extensions advertised under capabilities.extensions; resultTypes claimed
        self._extensions: dict[str, dict[str, Any]] = {
            name: dict(settings) for name, settings in (options.extensions or {}).items()
        }
        if options.tasks:
            self._extensions.setdefault(TASKS_EXTENSION, {})
        if options.apps:
            self._extensions.setdefault(t.APPS_EXTENSION, {"mimeTypes": [t.APP_MIME_TYPE]})
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
        """Whether [`aclose()`][trio_mcp.ClientSession.aclose] has been called."""
        return self._rpc.closed

    @property
    def failure(self) -> MCPError | None:
        """Why the session stopped working (the server went away, ...), or None."""
        return None if self._rpc.closed else self._rpc.failure

    def statistics(self) -> SessionStatistics:
        """A frozen snapshot of the session: requests, bytes, drops, the link, the HTTP pool.

        Made from counters the session keeps anyway (nothing is kept per request for it),
        so it is cheap enough to call every second; see
        [`SessionStatistics`][trio_mcp.SessionStatistics] for each figure.

        Returns:
            The snapshot; it does not change afterwards.
        """
        rpc = self._rpc
        sent, answered, running, bytes_out, bytes_in, drops = rpc.counters()
        dropped = {_DROP_REASONS.get(kind, kind): count for kind, count in drops.items() if count}
        dropped.update(self._notes.drop_counts())
        link = self._transport.link
        failure = link.last_failure
        last_error = rpc.failure if rpc.failure is not None and not rpc.closed else None
        return SessionStatistics(
            era=self._era,
            protocol_version=self._protocol_version,
            pending_requests=rpc.pending_count,
            requests_sent=sent,
            requests_answered=answered,
            server_requests_running=running,
            bytes_sent=bytes_out,
            bytes_received=bytes_in,
            dropped=dropped,
            link_state=link.state.value,
            reconnects=link.reconnects,
            last_error=last_error or (failure.error if failure is not None else None),
            last_error_at=None if last_error is not None or failure is None else failure.at,
            http_pool=self._transport.pool_statistics(),
        )

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

    # -- low-level public API, ping, keep-alive -----------------------------------------

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
            timeout: Seconds before `trio.TooSlowError` (default: the session's).
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

        The handler receives the decoded params and a
        [`RequestContext`][trio_mcp.handlers.RequestContext] and returns the result (a dict or
        Struct); raising [`HandlerError`][trio_mcp.handlers.HandlerError] answers with that error.

        Args:
            method: The request method, e.g. ``"x-vendor/thing"``.
            handler: The async handler, or None to remove the current one.
        """
        if handler is None:
            self._handlers.extra.pop(method, None)
        else:
            self._handlers.extra[method] = handler

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers.

        Legacy servers get ``ping``; modern servers (which have no ``ping``) get a
        ``server/discover``, which every modern server must answer.

        Args:
            timeout: Seconds before `trio.TooSlowError`.
        """
        if self._era == "modern":
            await self._call("server/discover", None, timeout=timeout)
            return
        await self._call("ping", None, timeout=timeout)

    async def keep_alive(
        self, interval: float, *, max_failures: int = 3, timeout: float | None = None
    ) -> NoReturn:
        """Ping the server every ``interval`` seconds until it stops answering.

        Run it in a nursery of yours (``nursery.start_soon(session.keep_alive, 30)``) and
        cancel that when done. Each ping waits ``timeout`` seconds (default: ``interval``);
        a success resets the count of failures. A ping fails when it times out, the server
        answers it with an error, or it cannot reach the server (connection refused or
        broken, an HTTP error status: a remote server that is down or restarting), while
        the session itself still works. Time is trio's clock.

        Args:
            interval: Seconds between pings (from the end of one to the start of the next).
            max_failures: Consecutive failed pings that end the keep-alive.
            timeout: Seconds each ping may take.

        Raises:
            ConnectionClosed: ``max_failures`` pings in a row failed (the last failure is
                the cause), or the session stopped working (at once; its failure is the
                cause).
            trio.ClosedResourceError: The session was closed.
            ValueError: ``interval``, ``timeout`` or ``max_failures`` is not positive.
        """
        if not interval > 0 or (timeout is not None and not timeout > 0) or max_failures < 1:
            raise ValueError("keep_alive(): interval, timeout and max_failures must be positive")
        failures = 0
        while True:
            await trio.sleep(interval)
            try:
                await self.ping(timeout=timeout if timeout is not None else interval)
            except (trio.TooSlowError, MCPError) as exc:
                if self.failure is not None:  # the session itself ended: no ping can help
                    raise ConnectionClosed(
                        f"keep-alive: the MCP session stopped working: {self.failure}"
                    ) from exc
                failures += 1
                logger.warning("keep-alive ping %d/%d failed: %r", failures, max_failures, exc)
                if failures >= max_failures:
                    raise ConnectionClosed(
                        f"the server did not answer {failures} keep-alive pings in a row"
                    ) from exc
            else:
                failures = 0

    # -- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the session and its transport. Idempotent; completes even when cancelled.

        Calls still pending fail with `trio.ClosedResourceError`; handler tasks are
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

    # -- gaps and new server sessions (issue 33) -----------------------------------------

    def _gap(self, renewed: bool) -> None:
        """The transport's report: notifications may be missed, or a new server session began.

        Every cached list goes stale at once (catalogues re-list, list-changed handlers
        run); after a new server session a task sets up again what the application set up
        (`_resetup()`). Synchronous, quick and total: transports call it from their
        own tasks.
        """
        if self._rpc.closed or self._protocol_version is None:
            return
        self._notes.lists_stale()
        if renewed or self._era == "modern":
            recovery = self._recovery
            if recovery is None:
                recovery = self._recovery = Recovery()
            recovery.start(self._rpc.spawn, self._resetup)

    async def _resetup(self) -> None:
        """Send the new server session what the old one had: the log level, subscriptions.

        Only legacy sessions hold such state (a modern request carries its log level); a
        modern server that may have changed (it came back after a failure) is discovered
        again instead: its capabilities, instructions and identity. Each request's failure
        is logged, never raised (this runs in the session's nursery).
        """
        if self._era == "modern":
            await self._rediscover()
            return
        level = self._log_level
        if level is not None:
            await self._resend("logging/setLevel", {"level": level})
        for uri in self._notes.subscribed:
            await self._resend("resources/subscribe", {"uri": uri})

    async def _rediscover(self) -> None:
        """``server/discover`` again, and adopt what the (maybe restarted) server says."""
        try:
            self._adopt_rediscovered(await self._call("server/discover", None))
        except (MCPError, trio.ClosedResourceError) as exc:
            logger.warning("could not discover the server again after a gap: %r", exc)

    async def _resend(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self._call(method, params)
        except (MCPError, trio.ClosedResourceError) as exc:
            logger.warning("could not send %s to the new server session again: %r", method, exc)

    def _context(self, method: str, request_id: RequestId, params: msgspec.Raw) -> RequestContext:
        name = self._server_info.name if self._server_info is not None else None
        return RequestContext(self, method, request_id, name, request_meta(params))

    async def __aenter__(self) -> ClientSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@functools.cache
def _default_client_info() -> t.Implementation:
    """trio-mcp's name and version, sent when the application gives none (made once)."""
    return t.Implementation(name="trio-mcp", version=__version__)
