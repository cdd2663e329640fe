"""The session's notifications API: handlers, typed callbacks, channels, subscriptions.

`NotificationsAPI` is a mixin of [`ClientSession`][trio_mcp.ClientSession]: the public
signatures and docstrings of the methods that receive what the server sends unasked, each a
thin layer over `Notifications` (routing, subscriber
channels, callbacks, ``subscriptions/listen``) and the request path
(`RequestPath`, which declares the session's attributes it uses):
notification handlers and typed ``on_*`` callbacks, `notifications()` and
[`listen()`][trio_mcp.ClientSession.listen] channels, resource subscriptions, the live
[`catalogue()`][trio_mcp.ClientSession.catalogue], and the wait for a URL elicitation's completion.
The blocking and asyncio bridges are generated from it (``scripts/gen_bridges.py``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import msgspec
import trio

from . import types as t
from ._catalogue import Catalogue, Lister, run_catalogue
from ._exceptions import ProtocolError
from ._requests import RequestPath
from ._subscriptions import ListKind, Notification, legacy_methods, listen_wanted
from ._tasks import TaskState, decode_task

__all__ = ["NotificationsAPI"]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")


class NotificationsAPI(RequestPath):
    """Notifications, subscriptions and the live catalogue: the part of
    [`ClientSession`][trio_mcp.ClientSession] that receives what the server sends unasked."""

    __slots__ = ()

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
            callback: Called with each [`Notification`][trio_mcp.Notification].

        Returns:
            A function that removes the handler again.
        """
        return self._notes.add_handler(method, callback)

    def on_notification(
        self, method: str, params_type: type[T], callback: Callable[[T], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with the params of each ``method`` notification, as ``params_type``.

        For an extension's notifications, typed: those a server sends unasked, and those
        selected by an extension's filter fields on [`listen`][trio_mcp.ClientSession.listen].
        ``params_type`` describes the params object: a ``msgspec.Struct`` (unknown fields
        are ignored), a dataclass, a ``TypedDict`` or ``dict``. A notification whose params
        do not fit is dropped, logged at DEBUG on the ``trio_mcp`` logger; the raw
        notification still reaches channels and the callbacks of
        [`add_notification_handler`][trio_mcp.ClientSession.add_notification_handler].
        Plain and async callbacks run as for those.

        Args:
            method: The notification method, e.g. ``"notifications/com.example/alert"``.
            params_type: The type to decode its params to.
            callback: Called (or awaited) with the decoded params.

        Returns:
            A function that removes the callback again.

        Raises:
            TypeError: msgspec cannot decode to ``params_type``.
        """
        try:
            msgspec.convert({}, params_type)
        except msgspec.ValidationError:
            pass  # a type with required fields: fine
        except TypeError as exc:
            raise TypeError(
                f"on_notification(): msgspec cannot decode to {params_type!r}: {exc}"
            ) from exc
        return self._notes.typed_handler((method,), params_type, callback)

    def on_log(
        self, callback: Callable[[t.LoggingMessageNotificationParams], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` with each log message (``notifications/message``), typed.

        Messages are also logged to the ``trio_mcp.server`` logger, with or without
        callbacks. A plain function runs in the reader task and must be quick; an async one
        runs in its own task (see
        [`add_notification_handler()`][trio_mcp.ClientSession.add_notification_handler]).

        Args:
            callback: Called with a
                [`LoggingMessageNotificationParams`][trio_mcp.types.LoggingMessageNotificationParams].

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
            callback: Called with a
                [`ProgressNotificationParams`][trio_mcp.types.ProgressNotificationParams].

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
        [`listen()`][trio_mcp.ClientSession.listen] (or
        [`catalogue()`][trio_mcp.ClientSession.catalogue]), so open one of those as well.

        After a gap in what the server told the session (it restarted and a new session
        began, a notification stream was re-opened), ``callback`` is called for every kind
        it watches, as if the server had said each list changed: notifications may have been
        missed.

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

        Subscribe first ([`subscribe_resource()`][trio_mcp.ClientSession.subscribe_resource] on
        legacy servers, or [`listen()`][trio_mcp.ClientSession.listen] with ``resource_uris=`` in
        either era).

        Args:
            callback: Called with a
                [`ResourceUpdatedNotificationParams`][trio_mcp.types.ResourceUpdatedNotificationParams].

        Returns:
            A function that removes the callback again.
        """
        return self._notes.typed_handler(
            ("notifications/resources/updated",), t.ResourceUpdatedNotificationParams, callback
        )

    def on_task_status(self, callback: Callable[[TaskState], Any]) -> Callable[[], None]:
        """Call ``callback`` with each task status the server pushes, typed, in both eras.

        ``notifications/tasks`` (the tasks extension, 2026-07-28: ask for them with
        [`listen()`][trio_mcp.ClientSession.listen] and ``task_ids=``) and
        ``notifications/tasks/status`` (2025-11-25) both become a
        [`TaskState`][trio_mcp.tasks.TaskState]; a malformed one is dropped (logged at DEBUG).

        Args:
            callback: Called (or awaited) with the task's state.

        Returns:
            A function that removes the callback again.
        """

        def deliver(note: Notification) -> Any:
            try:
                state = decode_task(note.params, note.method)
            except ProtocolError as exc:
                logger.debug("dropping a malformed %s: %s", note.method, exc)
                return None
            return callback(state)

        removers = [
            self._notes.add_handler(method, deliver)
            for method in ("notifications/tasks", "notifications/tasks/status")
        ]

        def remove() -> None:
            for remover in removers:
                remover()

        return remove

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
            A `trio.MemoryReceiveChannel` of [`Notification`][trio_mcp.Notification]; it ends when
                the
            session closes.
        """
        self._rpc.check_usable()
        async with self._notes.subscribe(frozenset(methods) if methods else None, buffer) as (
            channel,
            _sub,
        ):
            yield channel

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
        task_ids: Iterable[str] = (),
        filters: Mapping[str, Any] | None = None,
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
            task_ids: Deliver the status of these tasks: ``notifications/tasks`` (the tasks
                extension's ``taskIds`` filter, 2026-07-28), or from a 2025-11-25 server the
                ``notifications/tasks/status`` it sends anyway, filtered here.
            filters: Other extensions' filter fields, sent as given in the modern era (the
                notifications they select arrive on the channel and reach
                [`add_notification_handler`][trio_mcp.ClientSession.add_notification_handler]
                callbacks); a legacy server has no ``subscriptions/listen``, so they are
                not sent.
            buffer: How many notifications may wait unread.

        A modern stream that breaks after the server acknowledged it (the server went
        down) is re-opened with backoff (capped at 5 s) until the block ends; the channel
        then gets a list_changed for each kind asked for, since changes may have been
        missed. A legacy server that starts a new session gets ``resources/subscribe``
        again for ``resource_uris``.

        Yields:
            A channel of [`Notification`][trio_mcp.Notification]; it ends if the server ends the
                subscription
            or the session stops.

        Raises:
            ServerError: The server rejected the subscription.
            ValueError: ``filters`` names a field that has a keyword here (``taskIds``...).
        """
        self._rpc.check_usable()
        uris = frozenset(resource_uris)
        tasks = frozenset(task_ids)
        if self._era == "modern":
            wanted = listen_wanted(tools, prompts, resources, sorted(uris), sorted(tasks), filters)
            meta = functools.partial(self._with_meta, "subscriptions/listen", None)
            async with self._notes.listen_modern(wanted, meta, buffer) as channel:
                yield channel
            return
        listen_wanted(tools, prompts, resources, [], None, filters)  # (the same checks)
        methods = legacy_methods(tools, prompts, resources, uris, bool(tasks))
        async with self._notes.listen_legacy(
            methods, uris, buffer, self.subscribe_resource, self.unsubscribe_resource, tasks
        ) as channel:
            yield channel

    async def subscribe_resource(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (legacy servers).

        Modern (2026-07-28) servers have no ``resources/subscribe``: nothing is sent; use
        [`listen()`][trio_mcp.ClientSession.listen] with ``resource_uris=[uri]`` instead, which
        works in both eras.

        The subscription lasts until
        [`unsubscribe_resource()`][trio_mcp.ClientSession.unsubscribe_resource]: when the server
        loses the session (it restarted) and a new one is started, it is sent again.

        Args:
            uri: The resource's URI.
        """
        self._rpc.check_usable()
        if self._era == "modern":
            logger.debug("subscribe_resource is a no-op in the modern era; use listen()")
            await trio.lowlevel.checkpoint()
            return
        await self._call("resources/subscribe", {"uri": uri})
        self._notes.subscription_made(uri)  # sent again to a new server session

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop ``notifications/resources/updated`` about ``uri`` (no-op on modern servers).

        Args:
            uri: The resource's URI.
        """
        self._rpc.check_usable()
        if self._era == "modern":
            await trio.lowlevel.checkpoint()
            return
        self._notes.subscription_ended(uri)
        await self._call("resources/unsubscribe", {"uri": uri})

    async def wait_elicitation_complete(
        self, elicitation_id: str, *, timeout: float | None = None
    ) -> None:
        """Wait for ``notifications/elicitation/complete`` naming ``elicitation_id``.

        The out-of-band step of a URL-mode elicitation is done (2025-11-25): retry the
        request that raised [`URLElicitationRequiredError`][trio_mcp.URLElicitationRequiredError].
        Returns at once when the notification has already arrived (the last 1024 ids are
        remembered).

        Args:
            elicitation_id: The ``elicitationId`` of the elicitation.
            timeout: Seconds before `trio.TooSlowError` (default: wait forever,
                bounded by your cancel scope).

        Raises:
            trio.TooSlowError: The timeout expired.
            ConnectionClosed: The session stopped working while waiting.
        """
        await self._notes.wait_elicitation_complete(elicitation_id, timeout)

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
        [`listen()`][trio_mcp.ClientSession.listen], so in both eras), waiting ``debounce`` seconds
        of trio's clock after a change for more changes, so that a burst costs one refresh. The
        refresher runs in the session's nursery and stops when the block ends.

        After a gap in the server's notifications (a restart, a re-opened stream) every
        kept kind is listed again, so a tool the restarted server added shows up.

        Args:
            tools: Keep the tools (default).
            prompts: Keep the prompts.
            resources: Keep the resources.
            debounce: Seconds to wait for further changes before refreshing.

        Yields:
            The [`Catalogue`][trio_mcp.Catalogue].

        Raises:
            ValueError: ``debounce`` is negative or nothing is kept.
        """
        if debounce < 0 or not (tools or prompts or resources):
            raise ValueError("catalogue(): debounce must be >= 0 and something must be kept")
        # the listings are the session's other mixins' (ToolsAPI, FeaturesAPI)
        lister = cast(Lister, self)
        catalogue = Catalogue._create(lister, tools=tools, prompts=prompts, resources=resources)  # pyright: ignore[reportPrivateUsage]
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
