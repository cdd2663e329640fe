"""The machinery both HTTP transports share: the incoming queue, the tasks, the failures.

`HTTPCore` is the base under
[`StreamableHTTPParameters`][trio_mcp.transports.StreamableHTTPParameters]' transport (``_http.py``)
and the deprecated HTTP+SSE transport (``_sse.py``); it is an `HTTPSender`, so it also sends their
requests:

* every HTTP request goes through `HTTPCore.open()` (``_http_sender.py``): retries,
  the circuit breaker, same-origin redirects (``_redirects.py``) and the conversion of
  httpx's exceptions (and ``OSError``, ``ValueError``) into trio_mcp's own, at one
  boundary (``_http_errors.py``); the client it goes through is made in
  ``_http_client.py`` (`core_for()`);
* every message read from any response is queued with `HTTPCore.deliver()` into one
  bounded channel that the transport's ``receive`` reads; a full queue makes the reading
  task wait (backpressure, down to TCP);
* every exchange runs as a task in the transport's nursery (`HTTPCore.spawn()`,
  `HTTPCore.start()`), cancelled and awaited, bounded, by `HTTPCore.aclose()`;
* a failure that belongs to one request is reported with `HTTPCore.fail()` through the
  callback the session registered ([`attach()`][trio_mcp.transports.Transport.attach]), unless that
  request's response was already delivered: a request gets its response or one failure,
  never both. An HTTP 4xx whose body is a JSON-RPC error response is the server's answer
  and fails the request with the matching [`ServerError`][trio_mcp.ServerError];
* `HTTPCore.pump_sse()` reads an event stream into the queue (``_eventstream.py``
  parses it, ``_jsonpeek.py`` routes its messages).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import trio

from .._droplog import DropLog
from .._exceptions import (
    ConnectionClosed,
    MCPError,
    MessageTooLargeError,
    TransportError,
    fresh_copy,
)
from .._jsonrpc import Envelope
from .._redact import display_url
from .._resilience import Backoff, CircuitBreaker, RetryPolicy
from ._base import RequestFailure
from ._eventstream import ServerSentEvent, SSEDecoder
from ._headers import echo_problem
from ._http_client import HTTPOptions, make_client
from ._http_errors import answer_in_body
from ._http_sender import HTTPSender
from ._jsonpeek import oversized_response_id, routed, same_id, split_batch
from ._redirects import origin_of

if TYPE_CHECKING:
    import httpx

    from ._h11pool import H11Transport

__all__ = [
    "ACCEPT_BOTH",
    "ACCEPT_SSE",
    "CLOSE_TIMEOUT",
    "DEFAULT_RECONNECT_POLICY",
    "INCOMING_QUEUE_SIZE",
    "HTTPCore",
    "Sink",
    "StreamState",
    "core_for",
]

logger = logging.getLogger("trio_mcp.http")

RequestId: TypeAlias = "int | str"

Sink: TypeAlias = "Callable[[bytes, Envelope | None, RequestId | None], Awaitable[None]]"
"""Where a reader hands each message it read: the message, and the id of the request it answers
(``None`` unless it is a response)."""

DEFAULT_RECONNECT_POLICY: Final = RetryPolicy(
    max_attempts=3, backoff=Backoff(initial=1.0, multiplier=2.0, maximum=30.0, jitter=0.1)
)
"""How SSE streams are re-opened when no ``retry`` policy is given: three attempts in a row without
progress, 1 s apart and doubling (a server's ``retry`` field overrides the delay)."""

ACCEPT_BOTH: Final = "application/json, text/event-stream"
ACCEPT_SSE: Final = "text/event-stream"
CLOSE_TIMEOUT: Final = 5.0
"""How long each graceful closing step (waiting for tasks, DELETE, closing the client) may take."""
INCOMING_QUEUE_SIZE: Final = 16
"""How many incoming messages wait for ``receive`` before the readers wait too."""
DIRECT_DISPATCH_MAX: Final = 64 * 1024
"""The largest message a transport task routes itself while the session's reader is idle (see
`HTTPCore.deliver()`); larger ones go through the reader, as before."""
# How many answered request ids are remembered (request ids are never reused).
_ANSWERED_MEMORY: Final = 1024


@dataclass(slots=True)
class StreamState:
    """What a reader knows about an SSE stream, for resuming it.

    ``last_event_id`` is the server's last event id, checked once as it arrives: an id
    that cannot be sent back as ``Last-Event-ID`` (``echo_problem``) is kept out of it
    and ``unsendable_id`` says why, so the stream cannot be resumed.
    """

    last_event_id: str | None = None
    retry_ms: int | None = None
    progress: int = 0
    unsendable_id: str | None = None

    def saw_id(self, event_id: str | None) -> None:
        """Record the server's latest event id (``None``: the id was reset)."""
        problem = None if event_id is None else echo_problem(event_id)
        if problem is not None:
            shown = event_id[:40] if event_id is not None else ""
            self.last_event_id, self.unsendable_id = None, f"its event id {shown!r} {problem}"
        else:
            self.last_event_id, self.unsendable_id = event_id, None


@dataclass(slots=True, eq=False)
class _Request:
    """A request whose HTTP exchange runs as a task."""

    scope: trio.CancelScope
    method: str | None
    cancelled: bool = False  # the session cancelled it


def _drop_failure(request_id: RequestId, error: MCPError) -> None:
    logger.debug("no session to tell that request %r failed: %s", request_id, error)


class HTTPCore(HTTPSender):
    """What every HTTP transport shares: the client, the incoming queue, the tasks.

    `StreamableHTTPTransport` and the HTTP+SSE transport
    are built on it. The transport sets `fail_request` to reach its session.

    Args:
        client: The httpx client every request goes through.
        own_client: Whether `aclose()` closes ``client``.
        direct: The pool under ``client`` that requests go to directly, if they may.
        headers: Extra headers for every request.
        auth: The httpx auth flow for every request.
        timeout: Seconds to connect, write and get a pooled connection.
        max_message_size: The largest incoming message, in bytes.
        retry: The retry policy of requests (``None``: no retries).
        breaker: The circuit breaker every request goes through.
        nursery: Where the tasks run.
    """

    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        own_client: bool,
        direct: H11Transport | None = None,
        headers: Mapping[str, str] | None,
        auth: httpx.Auth | None,
        timeout: float,
        max_message_size: int,
        retry: RetryPolicy | None,
        breaker: CircuitBreaker | None,
        nursery: trio.Nursery,
    ) -> None:
        super().__init__(
            client=client,
            own_client=own_client,
            direct=direct,
            headers=headers,
            auth=auth,
            timeout=timeout,
            max_message_size=max_message_size,
            retry=retry,
            breaker=breaker,
        )
        self.reconnect = retry or DEFAULT_RECONNECT_POLICY
        self.nursery = nursery
        self.fail_request: RequestFailure = _drop_failure
        """Called with a request id and the error that ends it (the session's callback)."""
        self.dispatch: Callable[[bytes | Envelope], None] | None = None
        """The session's message router, called directly while its reader is idle."""
        self._oversized_drops = DropLog("dropped a message from the server's event stream:")
        self._send, self._receive = trio.open_memory_channel[tuple[bytes, Envelope | None]](
            INCOMING_QUEUE_SIZE
        )
        # the ids of the latest responses delivered: a later failure of those is dropped
        self._answered: OrderedDict[RequestId, None] = OrderedDict()
        self.requests: dict[RequestId, _Request] = {}
        self._scopes: set[trio.CancelScope] = set()
        self._running = 0
        self._idle: trio.Event | None = None
        self.closed = False
        self.ended: MCPError | None = None  # why the server ended the connection
        self._end_error: MCPError | None = None  # None: it ended the stream cleanly
        self.routed_bytes = 0  #: bytes of the messages delivered decoded (statistics)

    # incoming side

    async def deliver(
        self, message: bytes, envelope: Envelope | None = None, answers: RequestId | None = None
    ) -> None:
        """Queue a message for `receive()`; wait while the queue is full.

        Args:
            message: One whole JSON-RPC message.
            envelope: The message decoded (see `routed()`), None if it does not decode.
            answers: The id of the request it answers, if it is a response.
        """
        if self.closed or self.ended is not None:
            return
        if envelope is not None:  # routed decoded: the session never sees these bytes
            self.routed_bytes += len(message)
        if answers is not None:
            self._answered[answers] = None
            self._answered.move_to_end(answers)
            if len(self._answered) > _ANSWERED_MEMORY:
                self._answered.popitem(last=False)
        await trio.lowlevel.checkpoint_if_cancelled()  # (no yield: the state stays as seen)
        dispatch = self.dispatch
        if dispatch is not None and len(message) <= DIRECT_DISPATCH_MAX:
            queue = self._receive.statistics()
            if queue.tasks_waiting_receive and not queue.current_buffer_used:
                # The reader waits on an empty queue: nothing is ahead of this message, so
                # route it here, in this task (the reader would do just that, a switch
                # later). Large messages go through the reader: the switch saved is noise
                # next to their bytes, and measured, routing them here made 1 MiB answers
                # about 20 % slower (the previous answer's memory goes back to the OS
                # sooner, so the next one's pages fault in again).
                dispatch(message if envelope is None else envelope)
                return
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            item = (message, envelope)
            try:  # room in the queue (the usual case): no trip through the scheduler
                self._send.send_nowait(item)
            except trio.WouldBlock:
                await self._send.send(item)  # (closed or ended meanwhile: nobody reads it)

    def fail(self, request_id: RequestId, error: MCPError) -> None:
        """Fail one request through `fail_request`, unless it is already settled.

        Nothing happens when a response to the request was delivered (whether or not the
        session has read it yet), when the session cancelled it, or when the transport is
        closed.

        Args:
            request_id: The request that failed.
            error: Why it failed.
        """
        if self.closed or request_id in self._answered:
            return
        request = self.requests.get(request_id)
        if request is not None and request.cancelled:
            return
        self.fail_request(request_id, error)

    def cancel(self, request_id: RequestId) -> None:
        """Stop a request's task (closing its response stream); it reports no failure.

        Args:
            request_id: The request to stop.
        """
        request = self.requests.get(request_id)
        if request is not None:
            request.cancelled = True
            request.scope.cancel()

    def end(self, error: MCPError | None) -> None:
        """The server ended the connection: `receive()` raises after queued messages.

        Args:
            error: Why (``None``: the server ended the stream cleanly).
        """
        if self.closed or self.ended is not None:
            return
        self.ended = error if error is not None else ConnectionClosed("the server ended the stream")
        self._end_error = error
        self._send.close()

    async def receive(self) -> bytes:
        """The next message; see [`receive()`][trio_mcp.transports.Transport.receive]."""
        return (await self._next())[0]

    async def receive_message(self) -> bytes | Envelope:
        """The next message, decoded; see
        [`receive_message()`][trio_mcp.transports.Transport.receive_message]."""
        message, envelope = await self._next()
        return message if envelope is None else envelope

    async def _next(self) -> tuple[bytes, Envelope | None]:
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            if self._end_error is not None:
                raise fresh_copy(self._end_error) from None
            raise

    def closed_error(self) -> MCPError:
        """Why the connection ended."""
        if self.ended is not None:
            return fresh_copy(self.ended)
        return ConnectionClosed("the HTTP transport was closed")

    def check_open(self) -> None:
        """Raise if messages can no longer be sent."""
        if self.closed:
            raise trio.ClosedResourceError("the transport is closed")
        if self.ended is not None:
            raise ConnectionClosed(f"the server ended the connection: {self.ended}")

    # tasks

    def spawn(
        self,
        request_id: RequestId | None,
        fn: Callable[..., Awaitable[None]],
        *args: Any,
        method: str | None = None,
        name: str = "trio_mcp http",
    ) -> None:
        """Run ``fn(*args)`` in the nursery; its failure fails ``request_id`` (or is logged).

        Args:
            request_id: The request the task exchanges, if any.
            fn: The task.
            *args: Its arguments.
            method: The request's method (for the error a JSON-RPC error body becomes).
            name: The task's name.
        """
        scope = trio.CancelScope()
        request = _Request(scope, method) if request_id is not None else None
        try:
            self.nursery.start_soon(self._run, scope, request_id, request, fn, args, name=name)
        except RuntimeError as exc:  # the nursery is closed
            raise trio.ClosedResourceError(
                "the nursery this transport was opened with has exited"
            ) from exc
        if request_id is not None and request is not None:
            self.requests[request_id] = request
        self._scopes.add(scope)
        self._running += 1

    async def _run(
        self,
        scope: trio.CancelScope,
        request_id: RequestId | None,
        request: _Request | None,
        fn: Callable[..., Awaitable[None]],
        args: tuple[Any, ...],
    ) -> None:
        try:
            with scope:
                try:
                    await fn(*args)
                except MCPError as exc:
                    if request_id is not None and request is not None:
                        self.fail(request_id, answer_in_body(exc, request.method))
                    else:
                        logger.warning("HTTP background task failed: %s", exc)
                except Exception as exc:  # a bug: never let it into the user's nursery
                    logger.exception("trio_mcp HTTP task failed")
                    if request_id is not None:
                        error = TransportError(f"internal error in the HTTP transport: {exc!r}")
                        error.__cause__ = exc
                        self.fail(request_id, error)
        finally:
            if request_id is not None and self.requests.get(request_id) is request:
                del self.requests[request_id]
            self._scopes.discard(scope)
            self._task_done()

    async def start(self, fn: Callable[[trio.TaskStatus[Any]], Awaitable[None]]) -> Any:
        """Start ``fn`` in the nursery like `trio.Nursery.start()`, tracked for closing.

        ``fn`` must call ``task_status.started`` before it returns, and must not raise
        after that.

        Args:
            fn: The task.

        Returns:
            What ``fn`` passed to ``task_status.started``.
        """
        scope = trio.CancelScope()
        self._scopes.add(scope)
        self._running += 1
        return await self.nursery.start(self._run_started, scope, fn)

    async def _run_started(
        self,
        scope: trio.CancelScope,
        fn: Callable[[trio.TaskStatus[Any]], Awaitable[None]],
        task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            with scope:
                await fn(task_status)
        finally:
            self._scopes.discard(scope)
            self._task_done()

    def _task_done(self) -> None:
        self._running -= 1
        if self._running == 0 and self._idle is not None:
            self._idle.set()

    async def pump_sse(
        self,
        response: httpx.Response,
        state: StreamState,
        sink: Sink,
        request_id: RequestId | None = None,
        on_event: Callable[[ServerSentEvent], bool] | None = None,
    ) -> bool:
        """Read an SSE stream, handing each JSON-RPC message to ``sink``.

        Only ``message`` events with data carry messages (priming events with empty data
        are skipped; other event types go to ``on_event``, which returns True to stop
        reading). Event ids and ``retry`` go into ``state``. An oversized event fails
        ``request_id`` with [`MessageTooLargeError`][trio_mcp.MessageTooLargeError] as soon as it is
        seen; on a stream of no request, the request it answered (if recognisable) is
        failed, otherwise it is logged and dropped.

        Args:
            response: The streaming response.
            state: The stream's resumption state, updated as events arrive.
            sink: Where messages go.
            request_id: The request whose answer this stream carries, if any.
            on_event: Called with events of other types than ``message``.

        Returns:
            True once the response to ``request_id`` (or ``on_event``) ended the reading,
            False when the stream ended.

        Raises:
            MessageTooLargeError: An event of ``request_id``'s stream was too large.
            ConnectionClosed: The connection broke.
        """
        decoder = SSEDecoder(self.max_message_size, last_event_id=state.last_event_id)
        seen_id = state.last_event_id

        async def on_chunk(chunk: bytes) -> bool:
            return await on_events(decoder.feed(chunk))

        async def on_events(events: list[ServerSentEvent]) -> bool:
            nonlocal seen_id
            done = False
            try:
                for event in events:
                    state.progress += 1
                    if event.too_large is not None:
                        self._oversized(event, request_id)
                    elif event.event != "message":
                        done = (on_event is not None and on_event(event)) or done
                    elif event.data:  # (empty data: a priming event, only its id matters)
                        for message in split_batch(event.data):
                            envelope, answers = routed(message)
                            await sink(message, envelope, answers)
                            if request_id is not None and same_id(answers, request_id):
                                done = True
            finally:
                last_event_id = decoder.last_event_id or None
                if last_event_id != seen_id:
                    seen_id = last_event_id
                    state.saw_id(last_event_id)
                    state.progress += 1
                if decoder.retry is not None:
                    state.retry_ms = decoder.retry
            return done

        if await self.consume(response, on_chunk, "reading the event stream from"):
            return True
        # the body ended: a final CR held back as a possible CRLF half ends its line now
        return await on_events(decoder.end())

    def _oversized(self, event: ServerSentEvent, request_id: RequestId | None) -> None:
        assert event.too_large is not None
        error = MessageTooLargeError(event.too_large, self.max_message_size)
        if request_id is not None:
            raise error
        answered = oversized_response_id(event.data)
        if answered is not None:
            self.fail(answered, error)
        else:
            self._oversized_drops.dropped(str(error))

    async def aclose(self, before_client_close: Callable[[], Awaitable[None]] | None) -> None:
        """Cancel every task, run the graceful step, close the client. Idempotent.

        Args:
            before_client_close: A last exchange with the server (e.g. DELETE), bounded.
        """
        if self.closed:
            return
        self.closed = True
        for scope in list(self._scopes):
            scope.cancel()
        with trio.CancelScope(shield=True):
            if self._running:
                self._idle = trio.Event()
                with trio.move_on_after(CLOSE_TIMEOUT):
                    await self._idle.wait()
            if before_client_close is not None:
                with trio.move_on_after(CLOSE_TIMEOUT):
                    await before_client_close()
            if self.own_client:
                with trio.move_on_after(CLOSE_TIMEOUT):
                    await self.client.aclose()
        self._send.close()
        self._receive.close()


def core_for(options: HTTPOptions, nursery: trio.Nursery) -> HTTPCore:
    """The shared HTTP machinery for a parameters object (Streamable HTTP or HTTP+SSE).

    Args:
        options: The transport's parameters.
        nursery: Where its tasks run.

    Raises:
        TransportError: The URL is malformed.
    """
    try:
        origin_of(options.url)
    except ValueError as exc:
        raise TransportError(f"invalid MCP server URL {display_url(options.url)!r}: {exc}") from exc
    client, own, direct = make_client(options)
    return HTTPCore(
        client=client,
        own_client=own,
        direct=direct,
        headers=options.headers,
        auth=options.auth,
        timeout=options.timeout,
        max_message_size=options.max_message_size,
        retry=options.retry,
        breaker=options.breaker,
        nursery=nursery,
    )
