"""Notifications: route each one the server sends, to channels, callbacks and waiters.

One `Notifications` per session owns everything notification-shaped: the subscriber
channels (``notifications()``, ``listen()``), the callbacks (``add_notification_handler``
and the typed ``on_*`` helpers), the ``elicitation/complete`` waiters, and the routing of
each notification the reader hands over (in the reader: quick, and total), which also
drops the cached results and tool listing a change notification makes stale. ``listen``
itself lives here too: ``subscriptions/listen`` for modern servers, a client-side filter
plus ``resources/subscribe`` for legacy ones.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, cast

import msgspec
import trio

from . import types as t
from ._droplog import DropLog
from ._exceptions import (
    CircuitOpenError,
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    TransportError,
    fresh_copy,
)
from ._jsonrpc import decode_json
from ._resilience import Backoff
from ._result_cache import MAX_CACHE_ENTRIES, ResultCache
from ._rpc import RPCConnection

__all__ = [
    "LISTEN_BACKOFF",
    "LISTEN_MAX_DELAY",
    "LOG_LEVELS",
    "ListKind",
    "Notification",
    "Notifications",
    "Subscriber",
]

logger = logging.getLogger("trio_mcp")
server_logger = logging.getLogger("trio_mcp.server")

T = TypeVar("T")
ListKind = Literal["tools", "prompts", "resources"]

_META_SUBSCRIPTION: Final = t.META_SUBSCRIPTION_ID
LISTEN_BACKOFF: Final = Backoff(initial=1.0, multiplier=2.0, maximum=30.0, jitter=0.1)
"""The schedule of re-opening a broken ``subscriptions/listen`` stream (capped below)."""
LISTEN_MAX_DELAY: Final = 5.0
"""The longest wait between attempts to re-open it while the server is down."""
_MAX_CALLBACK_TASKS: Final = 64
LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_INVALIDATES: Final = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

_LISTENED: Final = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}
"""The ``subscriptions/listen`` keys of the list_changed notifications they ask for."""


def _call_with_kind(callback: Callable[[ListKind], Any], kind: ListKind, _note: Any) -> Any:
    return callback(kind)


class Notification(msgspec.Struct, frozen=True):
    """A notification from the server, as delivered to subscribers.

    Attributes:
        method: The notification method, e.g. ``notifications/tools/list_changed``.
        params: The decoded params (a dict; empty when the server sent none).
    """

    method: str
    params: dict[str, Any] = {}


@dataclass(eq=False)
class Subscriber:
    """One channel's filter: methods, a ``subscriptions/listen`` id, resource URIs."""

    methods: frozenset[str] | None
    send: trio.MemorySendChannel[Notification]
    subscription_id: int | str | None = None
    uris: frozenset[str] | None = None
    acknowledged: trio.Event = field(default_factory=trio.Event)
    granted: Mapping[str, Any] | None = None
    task_ids: frozenset[str] | None = None  # legacy listen: notifications/tasks/status of these
    drops: DropLog = field(
        default_factory=lambda: DropLog("notification subscriber is full; dropped")
    )
    listened: frozenset[str] = frozenset()
    """the list_changed methods a ``subscriptions/listen`` stream asked for (what a gap in the
    notifications re-sends it); channels without a subscription id use ``methods``"""


class Notifications:
    """One session's notifications: routing, subscriber channels, callbacks, listen."""

    __slots__ = (
        "_buffer",
        "_cache",
        "_callback_drops",
        "_cancel_notice_timeout",
        "_elicitation_waiters",
        "_elicitations_done",
        "_forget_listing",
        "_listen_ack_timeout",
        "_subscribed",
        "callback_tasks",
        "handlers",
        "rpc",
        "subscriber_drops",
        "subscribers",
    )

    rpc: RPCConnection  # set by the session right after it made the connection

    def __init__(
        self,
        cache: ResultCache,
        forget_listing: Callable[[], None],
        *,
        buffer: int,
        cancel_notice_timeout: float,
        listen_ack_timeout: float,
    ) -> None:
        self._cache = cache
        self._forget_listing = forget_listing
        self._buffer = buffer
        self._cancel_notice_timeout = cancel_notice_timeout
        self._listen_ack_timeout = listen_ack_timeout
        self.subscribers: list[Subscriber] = []
        self.handlers: dict[str, list[Callable[[Notification], Any]]] = {}
        self.callback_tasks = 0
        self.subscriber_drops = 0  #: notifications dropped by full channels, in all
        self._callback_drops: DropLog | None = None  # from the first drop on
        # notifications/elicitation/complete: waiters, and recently completed ids (bounded);
        # both made when first needed (most sessions never see one)
        self._elicitation_waiters: dict[str, trio.Event] | None = None
        self._elicitations_done: dict[str, None] | None = None
        # resources/subscribe URIs in force (legacy), in order; made on the first one
        self._subscribed: dict[str, None] | None = None

    def drop_counts(self) -> dict[str, int]:
        """For ``statistics()``: notifications dropped here, by why (only what happened)."""
        counts: dict[str, int] = {}
        if self.subscriber_drops:
            counts["subscriber_full"] = self.subscriber_drops
        if self._callback_drops is not None and self._callback_drops.total:
            counts["callbacks_busy"] = self._callback_drops.total
        return counts

    @property
    def callback_drops(self) -> DropLog:
        """The drops of async callbacks (too many running)."""
        drops = self._callback_drops
        if drops is None:
            drops = self._callback_drops = DropLog("dropping the async notification callback for")
        return drops

    def close(self) -> None:
        """The session stopped: every channel ends, every waiter wakes."""
        for sub in self.subscribers:
            sub.send.close()
        for event in (self._elicitation_waiters or {}).values():
            event.set()

    # -- elicitation/complete ------------------------------------------------------------

    def _elicitation_completed(self, elicitation_id: object) -> None:
        if not isinstance(elicitation_id, str):
            return
        done = self._elicitations_done
        if done is None:
            done = self._elicitations_done = {}
        done[elicitation_id] = None
        while len(done) > MAX_CACHE_ENTRIES:
            del done[next(iter(done))]
        event = (self._elicitation_waiters or {}).pop(elicitation_id, None)
        if event is not None:
            event.set()

    async def wait_elicitation_complete(self, elicitation_id: str, timeout: float | None) -> None:
        """See
        [`ClientSession.wait_elicitation_complete()`][trio_mcp.ClientSession.wait_elicitation_complete]."""
        self.rpc.check_usable()
        if elicitation_id in (self._elicitations_done or ()):
            await trio.lowlevel.checkpoint()
            return
        waiters = self._elicitation_waiters
        if waiters is None:
            waiters = self._elicitation_waiters = {}
        event = waiters.setdefault(elicitation_id, trio.Event())
        with trio.fail_after(timeout if timeout is not None else float("inf")):
            await event.wait()
        if elicitation_id not in (self._elicitations_done or ()):
            self.rpc.check_usable()

    # -- gaps: lists gone stale, subscriptions to set up again ---------------------------

    @property
    def subscribed(self) -> list[str]:
        """The resource URIs subscribed with ``resources/subscribe`` (legacy), in order."""
        return list(self._subscribed or ())

    def subscription_made(self, uri: str) -> None:
        """``resources/subscribe`` of ``uri`` succeeded: set it up again after a renewal."""
        subscribed = self._subscribed
        if subscribed is None:
            subscribed = self._subscribed = {}
        subscribed[uri] = None

    def subscription_ended(self, uri: str) -> None:
        """``uri`` was unsubscribed (the server holds a set: one unsubscribe ends it)."""
        if self._subscribed is not None:
            self._subscribed.pop(uri, None)

    def lists_stale(self) -> None:
        """Notifications may have been missed: act as if every list changed.

        Drops the cached listings (and the tool listing), and delivers a
        ``notifications/{tools,prompts,resources}/list_changed`` to every channel and
        callback that would get the server's own (a ``subscriptions/listen`` stream only
        the kinds it asked for), so catalogues re-list and list-changed handlers run.
        Synchronous and quick, like `route()`.
        """
        self._cache.entries.clear()  # reads too: resources may have changed
        for method in _INVALIDATES:
            if method == "notifications/tools/list_changed":
                self._forget_listing()
            note = Notification(method, {})
            for sub in self.subscribers:
                if sub.subscription_id is not None:
                    if method not in sub.listened:
                        continue
                elif sub.methods is not None and method not in sub.methods:
                    continue
                self._put(sub, note)
            for key in (method, "*"):
                for callback in tuple(self.handlers.get(key, ())):
                    self._run_callback(callback, note)

    def _put(self, sub: Subscriber, note: Notification) -> None:
        try:
            sub.send.send_nowait(note)
        except trio.WouldBlock:
            self.subscriber_drops += 1
            sub.drops.dropped(note.method)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    # -- routing -------------------------------------------------------------------------

    def route(self, method: str, raw: msgspec.Raw) -> None:
        """Route one notification (in the reader: quick, and total)."""
        try:
            decoded: object = decode_json(raw, f"params of {method}")
        except ProtocolError as exc:
            logger.debug("dropping a notification with undecodable params: %s", exc)
            return
        params = cast("dict[str, Any]", decoded) if isinstance(decoded, dict) else {}
        if method == "notifications/cancelled":
            cancelled = params.get("requestId")
            for sub in self.subscribers:  # the server tore down a subscriptions/listen stream
                if sub.subscription_id is not None and sub.subscription_id == cancelled:
                    sub.send.close()
        elif method == "notifications/message":
            level = LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            server_logger.log(level, "%s: %s", params.get("logger", "server"), params.get("data"))
        for prefix in _INVALIDATES.get(method, ()):
            self._cache.invalidate(prefix)
        if method == "notifications/tools/list_changed":
            self._forget_listing()
        elif method == "notifications/elicitation/complete":
            self._elicitation_completed(params.get("elicitationId"))
        uri: object = params.get("uri")
        if method == "notifications/resources/updated" and isinstance(uri, str):
            self._cache.forget("resources/read", uri)
        note = Notification(method, params)
        subscription_id: object = None
        meta: object = params.get("_meta")
        if isinstance(meta, dict):
            subscription_id = cast("dict[str, Any]", meta).get(_META_SUBSCRIPTION)
        for sub in self.subscribers:
            if sub.methods is not None and method not in sub.methods:
                continue
            if sub.subscription_id is not None:
                if subscription_id != sub.subscription_id:
                    continue
                if method == "notifications/subscriptions/acknowledged":
                    granted = params.get("notifications")
                    sub.granted = (
                        cast("dict[str, Any]", granted) if isinstance(granted, dict) else {}
                    )
                    sub.acknowledged.set()
                    continue
            if (
                sub.uris is not None
                and method == "notifications/resources/updated"
                and (not isinstance(uri, str) or uri not in sub.uris)
            ):
                continue
            if (
                sub.task_ids is not None
                and method == "notifications/tasks/status"
                and params.get("taskId") not in sub.task_ids
            ):
                continue
            self._put(sub, note)
        for key in (method, "*"):
            for callback in tuple(self.handlers.get(key, ())):
                self._run_callback(callback, note)

    def _run_callback(self, callback: Callable[[Notification], Any], note: Notification) -> None:
        try:
            outcome = callback(note)
        except Exception:
            logger.exception("notification callback for %s raised", note.method)
            return
        if not inspect.isawaitable(outcome):
            return
        if self.callback_tasks >= _MAX_CALLBACK_TASKS:
            self.callback_drops.dropped(f"{note.method} ({self.callback_tasks} are running)")
            if inspect.iscoroutine(outcome):
                outcome.close()
            return
        self.callback_tasks += 1
        if not self.rpc.spawn(self._await_callback, outcome, note, name="trio_mcp callback"):
            self.callback_tasks -= 1
            if inspect.iscoroutine(outcome):
                outcome.close()

    async def _await_callback(self, outcome: Awaitable[Any], note: Notification) -> None:
        try:
            await outcome
        except Exception:
            logger.exception("notification callback for %s raised", note.method)
        finally:
            self.callback_tasks -= 1

    # -- callbacks -----------------------------------------------------------------------

    def add_handler(
        self, method: str, callback: Callable[[Notification], Any]
    ) -> Callable[[], None]:
        """See
        [`ClientSession.add_notification_handler()`][trio_mcp.ClientSession.add_notification_handler]."""
        self.handlers.setdefault(method, []).append(callback)

        def remove() -> None:
            handlers = self.handlers.get(method, [])
            if callback in handlers:
                handlers.remove(callback)

        return remove

    def typed_handler(
        self, methods: Iterable[str], tp: type[T], callback: Callable[[T], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each notification of ``methods``, its params as ``tp``."""

        def deliver(note: Notification) -> Any:
            try:
                value = msgspec.convert(note.params, tp)
            except msgspec.ValidationError as exc:
                logger.debug("dropping a malformed %s: %s", note.method, exc)
                return None
            return callback(value)

        removers = [self.add_handler(method, deliver) for method in methods]

        def remove() -> None:
            for remover in removers:
                remover()

        return remove

    def on_list_changed(
        self, callback: Callable[[ListKind], Any], kinds: tuple[ListKind, ...]
    ) -> Callable[[], None]:
        """See [`ClientSession.on_list_changed()`][trio_mcp.ClientSession.on_list_changed]."""
        wanted = kinds or ("tools", "prompts", "resources")
        for kind in wanted:
            if kind not in ("tools", "prompts", "resources"):
                raise ValueError(f"unknown list kind {kind!r}: use tools, prompts or resources")
        removers = [
            self.add_handler(
                f"notifications/{kind}/list_changed",
                functools.partial(_call_with_kind, callback, kind),
            )
            for kind in wanted
        ]

        def remove() -> None:
            for remover in removers:
                remover()

        return remove

    # -- channels ------------------------------------------------------------------------

    @asynccontextmanager
    async def subscribe(
        self,
        methods: frozenset[str] | None,
        buffer: int | None,
        subscription_id: int | str | None = None,
        uris: frozenset[str] | None = None,
    ) -> AsyncGenerator[tuple[trio.MemoryReceiveChannel[Notification], Subscriber], None]:
        """A channel of the notifications that pass the filter, while the block runs."""
        send, receive = trio.open_memory_channel[Notification](
            self._buffer if buffer is None else buffer
        )
        sub = Subscriber(methods, send, subscription_id, uris)
        self.subscribers.append(sub)
        if not self.rpc.usable:
            send.close()
        try:
            async with receive:
                yield receive, sub
        finally:
            self.subscribers.remove(sub)
            send.close()
            sub.drops.flush()

    @asynccontextmanager
    async def listen_legacy(
        self,
        methods: frozenset[str],
        uris: frozenset[str],
        buffer: int | None,
        subscribe: Callable[[str], Awaitable[None]],
        unsubscribe: Callable[[str], Awaitable[None]],
        task_ids: frozenset[str] = frozenset(),
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:
        """``listen`` for a legacy server: filter here, ``resources/subscribe`` the URIs."""
        async with self.subscribe(methods, buffer, uris=uris) as (channel, sub):
            sub.task_ids = task_ids or None
            subscribed: list[str] = []
            try:
                for uri in sorted(uris):
                    await subscribe(uri)
                    subscribed.append(uri)
                yield channel
            finally:
                with trio.move_on_after(self._cancel_notice_timeout, shield=True):
                    for uri in subscribed:
                        if not self.rpc.usable:
                            break
                        try:
                            await unsubscribe(uri)
                        except (MCPError, trio.ClosedResourceError) as exc:
                            logger.debug("unsubscribe %s failed: %r", uri, exc)

    @asynccontextmanager
    async def listen_modern(
        self,
        wanted: dict[str, Any],
        meta: Callable[[], Any],
        buffer: int | None,
        granted_to: list[Mapping[str, Any]] | None = None,
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:
        """``listen`` for a modern server: one long-lived ``subscriptions/listen``.

        With ``granted_to``, the acknowledged filter is appended to it (and what the server
        left out is not logged: the caller handles it).
        """
        rpc = self.rpc
        request_id = rpc.new_id()  # its notifications carry this id
        scope = trio.CancelScope()
        failures: list[MCPError] = []
        async with self.subscribe(None, buffer, subscription_id=request_id) as (channel, sub):
            sub.listened = frozenset(
                method for key, method in _LISTENED.items() if wanted.get(key) is True
            )

            async def hold_request() -> None:
                # Runs in the session's nursery, so the caller's block never sits inside a
                # nursery of ours (its exceptions stay bare, never an ExceptionGroup).
                with scope:
                    await self._hold_listen(request_id, wanted, meta, sub, failures)
                sub.acknowledged.set()
                sub.send.close()

            if not rpc.spawn(hold_request, name="trio_mcp subscriptions/listen"):
                rpc.check_usable()
            try:
                with trio.move_on_after(self._listen_ack_timeout):
                    await sub.acknowledged.wait()
                if failures and not isinstance(failures[0], ConnectionClosed):
                    raise fresh_copy(failures[0])
                if not rpc.usable:
                    raise rpc.error_for_caller()
                if not sub.acknowledged.is_set():
                    logger.warning(
                        "no acknowledgement of subscriptions/listen within %s s; listening anyway",
                        self._listen_ack_timeout,
                    )
                elif sub.granted is not None and granted_to is not None:
                    granted_to.append(sub.granted)
                elif sub.granted is not None:
                    _check_acknowledged(wanted, sub.granted)
                yield channel
            finally:
                scope.cancel()

    async def _hold_listen(
        self,
        request_id: int | str,
        wanted: dict[str, Any],
        meta: Callable[[], Any],
        sub: Subscriber,
        failures: list[MCPError],
    ) -> None:
        """Hold a ``subscriptions/listen`` request; re-open it when it breaks.

        A stream the server acknowledged that then breaks (the connection, the server
        going down) is re-opened with the same subscription id, with backoff capped at
        `LISTEN_MAX_DELAY`, until the block ends or the session stops; once the
        server acknowledges it again, the session hears of the gap (lists may have
        changed meanwhile). A stream that fails before its acknowledgement, or that the
        server ends or refuses, is not re-opened.
        """
        rpc = self.rpc
        attempt = 0
        since: float | None = None
        established = False
        while True:
            try:
                await rpc.request(
                    "subscriptions/listen",
                    {**meta(), "notifications": wanted},
                    request_id=request_id,
                )  # long-lived by design: no default timeout
                return
            except MCPError as exc:
                established = established or sub.acknowledged.is_set()
                if not (established and rpc.usable and _broken(exc)):
                    failures.append(exc)
                    logger.debug("subscriptions/listen ended: %r", exc)
                    return
                error = exc
            except trio.ClosedResourceError:
                logger.debug("subscriptions/listen ended: the session was closed")
                return
            if since is not None and sub.acknowledged.is_set():
                attempt, since = 0, None  # the re-opened stream was up: a new outage
            attempt += 1
            delay = min(LISTEN_BACKOFF.delay(attempt), LISTEN_MAX_DELAY)
            if since is None:
                since = trio.current_time()
                logger.warning(
                    "the subscriptions/listen stream broke (%s); re-opening it in %.1f s, "
                    "and with backoff until the server is back",
                    error,
                    delay,
                )
            else:
                logger.debug("re-opening subscriptions/listen in %.1f s: %s", delay, error)
            await trio.sleep(delay)
            acknowledged = sub.acknowledged = trio.Event()
            if not rpc.spawn(
                self._reopened, acknowledged, since, name="trio_mcp subscriptions/listen gap"
            ):
                return

    async def _reopened(self, acknowledged: trio.Event, since: float) -> None:
        """Report the gap once a re-opened listen stream is acknowledged (bounded wait)."""
        with trio.move_on_after(self._listen_ack_timeout):
            await acknowledged.wait()
        if not acknowledged.is_set() or not self.rpc.usable:
            return
        logger.info(
            "the subscriptions/listen stream is open again after %.1f s",
            trio.current_time() - since,
        )
        self.rpc.transport.notification_gap()


def _broken(error: MCPError) -> bool:
    """Whether ``error`` says the stream broke or the server is down (not that it said no)."""
    if isinstance(error, HTTPStatusError):
        return error.status_code >= 500 or error.status_code in (408, 429)
    return isinstance(error, (TransportError, CircuitOpenError))


LISTEN_KEYWORDS: Final = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
    "resourceSubscriptions": "resource_uris",
    "taskIds": "task_ids",
}
"""The filter fields of ``subscriptions/listen`` that ``listen()`` spells as keywords."""


def listen_wanted(
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: list[str],
    task_ids: list[str] | None = None,
    filters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``notifications`` param of ``subscriptions/listen``.

    ``task_ids`` is the tasks extension's ``taskIds``; ``filters`` are other extensions'
    fields, passed through as given.

    Raises:
        ValueError: ``filters`` spells a field that has a keyword of its own.
    """
    wanted: dict[str, Any] = {}
    for key in filters or {}:
        if key in LISTEN_KEYWORDS:
            raise ValueError(f"listen(): give {key} as {LISTEN_KEYWORDS[key]}=, not in filters")
    wanted.update(filters or {})
    if tools:
        wanted["toolsListChanged"] = True
    if prompts:
        wanted["promptsListChanged"] = True
    if resources:
        wanted["resourcesListChanged"] = True
    if uris:
        wanted["resourceSubscriptions"] = uris
    if task_ids:
        wanted["taskIds"] = task_ids
    return wanted


def legacy_methods(
    tools: bool, prompts: bool, resources: bool, uris: frozenset[str], task_ids: bool = False
) -> frozenset[str]:
    """The notification methods ``listen`` passes on from a legacy server."""
    methods: set[str] = set()
    if tools:
        methods.add("notifications/tools/list_changed")
    if prompts:
        methods.add("notifications/prompts/list_changed")
    if resources:
        methods.add("notifications/resources/list_changed")
    if uris:
        methods.add("notifications/resources/updated")
    if task_ids:  # 2025-11-25 servers push these unasked
        methods.add("notifications/tasks/status")
    return frozenset(methods)


def _check_acknowledged(wanted: Mapping[str, Any], granted: Mapping[str, Any]) -> None:
    for key, value in wanted.items():
        got = granted.get(key)
        if got != value:
            logger.warning("the server did not acknowledge %s=%r (got %r)", key, value, got)
