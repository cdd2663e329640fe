"""The deprecated HTTP+SSE transport of protocol version 2024-11-05.

The client opens a Server-Sent Events stream with a GET; the server's first event,
``endpoint``, names the URL to POST messages to (it must be on the same origin). Every
message from the server, responses included, arrives as a ``message`` event on that one
stream, which lives as long as the server's session. When it breaks or ends (a restarted
server), the transport reconnects: a new stream, a new endpoint, the session's
``initialize`` replayed (see `LegacySSEConnection`; ``_reconnect.py``).

It is deprecated since 2025-03-26; trio_mcp speaks it for old servers, either explicitly
([`SSEParameters`][trio_mcp.transports.SSEParameters], never probed for the 2026-07-28 era) or as
the fallback of Streamable HTTP (`fallback()`).
Redirects are handled as for Streamable HTTP: same origin only (see ``_redirects.py``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import KW_ONLY, dataclass
from typing import TypeAlias
from urllib.parse import urljoin

import trio

from .._exceptions import ConnectionClosed, HTTPStatusError, MCPError, ProtocolError, TransportError
from .._jsonrpc import Envelope
from .._redact import display_url, redacted_repr
from .._resilience import Backoff
from ._base import MessageInfo, Transport
from ._eventstream import ServerSentEvent
from ._http_base import (
    ACCEPT_BOTH,
    ACCEPT_SSE,
    HTTPCore,
    StreamState,
    core_for,
)
from ._http_client import HTTPOptions
from ._http_sender import close_response, content_type
from ._jsonpeek import infer_info, same_id
from ._reconnect import (
    DEFAULT_RECONNECT_BACKOFF,
    INITIALIZED,
    Outstanding,
    Refused,
    reconnecting_error,
    refusal,
    renew_until_done,
)
from ._redirects import origin_of

__all__ = ["LegacySSEConnection", "SSEParameters", "SSETransport"]

logger = logging.getLogger("trio_mcp.sse")

RequestId: TypeAlias = "int | str"


class _Stream:
    """One event stream the connection opened: its reader's scope and how it ended."""

    __slots__ = ("ended", "error", "scope")

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.ended = False
        self.error: MCPError | None = None  # None: ended cleanly (or not yet)


class _Replay:
    """The replayed ``initialize`` of a reconnection, waiting for its answer."""

    __slots__ = ("answer", "done", "request_id", "stream")

    def __init__(self, request_id: RequestId, stream: _Stream) -> None:
        self.request_id = request_id
        self.stream = stream
        self.done = trio.Event()
        self.answer: tuple[bytes, Envelope | None] | MCPError | None = None

    def settle(self, answer: tuple[bytes, Envelope | None] | MCPError) -> None:
        if not self.done.is_set():
            self.answer = answer
            self.done.set()


def _session_lost(exc: HTTPStatusError) -> bool:
    """Whether a POST's error status says the server no longer knows the session.

    404 (the official Python SDK's "Could not find session"), or 400 whose body speaks of
    the session (its "Invalid session ID", the TypeScript SDK's "No valid session ID").
    """
    if exc.status_code == 404:
        return True
    return exc.status_code == 400 and "session" in exc.body.lower()


class LegacySSEConnection:
    """One HTTP+SSE connection: the event stream and the endpoint messages are POSTed to.

    Its reader task runs in the transport's nursery and feeds the transport's incoming
    queue. When the stream breaks or ends, or a POST is answered with a lost session (404,
    or 400 naming the session), the connection reconnects (once `bind()` named its
    transport, and unless ``reconnect`` is None): it re-opens the stream on the
    ``reconnect`` schedule until it succeeds or the transport closes, replays the session's
    ``initialize`` (consuming its answer) and ``notifications/initialized``, and calls the
    transport's [`renewed()`][trio_mcp.transports.Transport.renewed]. Requests waiting for an
    answer when the stream broke fail at once with [`ConnectionClosed`][trio_mcp.ConnectionClosed]
    (their answers would have come on the dead stream); messages sent while it reconnects
    fail fast with one. A server that refuses the new ``initialize`` ends the connection:
    ``receive`` raises [`ConnectionClosed`][trio_mcp.ConnectionClosed] saying so.

    Args:
        core: The HTTP machinery of the transport.
        url: The URL of the event stream.
        reconnect: The schedule of reconnection attempts (None: never reconnect; a broken
            stream ends the connection).
    """

    def __init__(
        self, core: HTTPCore, url: str, *, reconnect: Backoff | None = DEFAULT_RECONNECT_BACKOFF
    ) -> None:
        self._core = core
        self._url = url
        self._backoff = reconnect
        self._owner: Transport | None = None
        self.endpoint: str | None = None
        """The URL messages are POSTed to, once the ``endpoint`` event arrived."""
        self._live: _Stream | None = None  # the stream in use
        self._reconnecting = False
        self._initialize: tuple[bytes, RequestId] | None = None  # the session's, to replay
        self._initialized = False  # notifications/initialized was sent
        self._outstanding = Outstanding()
        self._replay: _Replay | None = None

    def bind(self, owner: Transport) -> None:
        """Name the transport this connection reports to (its link,
        [`renewed()`][trio_mcp.transports.Transport.renewed]).

        Args:
            owner: The transport.
        """
        self._owner = owner

    @property
    def reconnecting(self) -> bool:
        """Whether the connection is being re-established now."""
        return self._reconnecting

    async def connect(self) -> None:
        """Open the event stream and wait (up to the timeout) for the ``endpoint`` event.

        Raises:
            HTTPStatusError: The GET was refused.
            ProtocolError: The ``endpoint`` event is not a URL.
            TransportError: No event stream, no ``endpoint`` event in time, or an endpoint
                on another origin.
        """
        self.endpoint, self._live = await self._open()

    async def _open(self) -> tuple[str, _Stream]:
        """Open an event stream; its endpoint once announced (see `connect()`)."""
        stream = _Stream()
        result: str | MCPError | None = None
        with trio.move_on_after(self._core.timeout):
            result = await self._core.start(functools.partial(self._read_events, stream))
        if result is None:
            stream.scope.cancel()
            raise TransportError(
                f"{display_url(self._url)} sent no endpoint event within {self._core.timeout}s"
            )
        if isinstance(result, MCPError):
            raise result
        return result, stream

    def _endpoint(self, base: str, event: ServerSentEvent) -> str | MCPError:
        """The URL an ``endpoint`` event names, or why it cannot be used."""
        named = event.data.decode("utf-8", "replace").strip()
        try:
            endpoint = urljoin(base, named)
            same_origin = origin_of(endpoint) == origin_of(self._url)
        except ValueError as exc:
            return ProtocolError(
                f"the server at {display_url(self._url)} named a malformed endpoint "
                f"{named!r}: {exc}"
            )
        if not same_origin:
            return TransportError(
                f"the server at {display_url(self._url)} named an endpoint on another origin "
                f"({endpoint}); refusing to send messages there"
            )
        return endpoint

    async def _sink(
        self, message: bytes, envelope: Envelope | None, answers: RequestId | None
    ) -> None:
        """Where the event stream's messages go: the replay's answer here, the rest on."""
        if answers is not None:
            replay = self._replay
            if replay is not None and same_id(answers, replay.request_id):
                replay.settle((message, envelope))
                return
            self._outstanding.discard(answers)
        await self._core.deliver(message, envelope, answers)

    async def _read_events(
        self, stream: _Stream, task_status: trio.TaskStatus[str | MCPError]
    ) -> None:
        report = False
        with stream.scope:
            report = await self._read_stream(stream, task_status)
        stream.ended = True
        if stream.scope.cancel_called or not report:
            return
        replay = self._replay
        if replay is not None and replay.stream is stream:
            replay.settle(stream.error or TransportError("the new event stream ended"))
        self._lost(stream, stream.error)

    async def _read_stream(
        self, stream: _Stream, task_status: trio.TaskStatus[str | MCPError]
    ) -> bool:
        """Read one event stream; whether its end is to be reported (it was in use)."""
        core = self._core
        headers = dict(core.headers)
        headers["Accept"] = ACCEPT_SSE
        headers["Cache-Control"] = "no-store"
        try:
            response = await core.open("GET", self._url, headers=headers, idempotent=True)
        except MCPError as exc:  # (not a lost stream: it never started)
            task_status.started(exc)
            return False
        base = str(response.url)  # relative endpoints resolve against the stream's URL
        started = False
        refused = False

        def on_event(event: ServerSentEvent) -> bool:
            nonlocal started, refused
            if event.event != "endpoint":
                logger.debug("ignoring an SSE event of type %r", event.event)
                return False
            if started:
                logger.debug("ignoring a repeated endpoint event")
                return False
            started = True
            endpoint = self._endpoint(base, event)
            task_status.started(endpoint)
            refused = isinstance(endpoint, MCPError)
            return refused

        error: MCPError | None = None
        try:
            kind = content_type(response)
            if kind != ACCEPT_SSE:
                error = TransportError(
                    f"{display_url(self._url)} answered the GET with {kind or 'no content type'}, "
                    "not an event stream"
                )
            else:
                await core.pump_sse(response, StreamState(), self._sink, on_event=on_event)
        except MCPError as exc:
            error = exc
        finally:
            await close_response(response)
        if not started:
            task_status.started(
                error
                or TransportError(
                    f"the event stream of {display_url(self._url)} ended before the endpoint event"
                )
            )
            return False
        stream.error = error
        return not refused

    def _lost(self, stream: _Stream, error: MCPError | None) -> None:
        """The event stream ``stream`` ended (``error``: it broke) or lost its session."""
        core = self._core
        if stream is not self._live or core.closed or core.ended is not None:
            return
        if self._backoff is None or self._owner is None:
            if error is None:
                logger.info(
                    "the server ended the HTTP+SSE event stream of %s", display_url(self._url)
                )
                core.end(None)
            else:
                broke = f"the HTTP+SSE event stream of {display_url(self._url)} broke: {error}"
                core.end(ConnectionClosed(broke))
            self._link_closed()
            return
        self._live = None
        stream.scope.cancel()
        self._reconnecting = True
        why = "ended" if error is None else f"broke ({error})"
        failure = ConnectionClosed(f"the HTTP+SSE event stream of {display_url(self._url)} {why}")
        self._owner.link.failed(failure)
        for request_id in self._outstanding.take():
            core.fail(
                request_id,
                ConnectionClosed(
                    f"the HTTP+SSE event stream of {display_url(self._url)} {why} before the "
                    "answer to "
                    f"request {request_id!r} came"
                ),
            )
        logger.warning("%s; reconnecting", failure)
        try:
            core.spawn(None, self._reconnect, name="trio_mcp HTTP+SSE reconnect")
        except trio.ClosedResourceError:
            self._give_up(ConnectionClosed(f"{failure} and the transport's nursery has exited"))

    def _give_up(self, error: ConnectionClosed) -> None:
        self._reconnecting = False
        self._core.end(error)
        self._link_closed()

    def _link_closed(self) -> None:
        if self._owner is not None:
            self._owner.link.closed()

    async def _reconnect(self) -> None:
        """Re-open the event stream until it works or the transport closes (a task)."""
        try:
            await self._reconnect_until_done()
        finally:
            if self._reconnecting:  # a bug, or the nursery cancelled: never a silent hang
                self._give_up(
                    ConnectionClosed(
                        f"reconnecting to {display_url(self._url)} stopped: the transport was "
                        "closed, or "
                        "the nursery it was opened with was cancelled"
                    )
                )

    async def _reconnect_until_done(self) -> None:
        assert self._backoff is not None and self._owner is not None
        where = display_url(self._url)
        try:
            _, attempt = await renew_until_done(self._backoff, self._renew, where, logger)
        except Refused as exc:
            self._give_up(exc.error)
            return
        self._reconnecting = False
        logger.warning("reconnected to %s after %d attempt(s)", display_url(self._url), attempt)
        if self._initialize is not None:
            self._owner.renewed()
        else:
            self._owner.link.restored()

    async def _renew(self) -> None:
        """One attempt: a new stream, ``initialize`` and ``initialized`` replayed.

        Raises:
            Refused: The server refused the new ``initialize``.
            MCPError: The attempt failed (the server may not be back yet).
        """
        try:
            endpoint, stream = await self._open()
        except HTTPStatusError as exc:
            status = exc.status_code
            if 400 <= status < 500 and status not in (404, 408, 429):
                raise Refused(
                    ConnectionClosed(
                        f"the server at {display_url(self._url)} came back but refused the "
                        "event stream "
                        f"(HTTP {status}): {exc.body[:300]}"
                    )
                ) from exc
            raise
        try:
            known = self._initialize
            if known is not None:
                data, request_id = known
                self._replay = replay = _Replay(request_id, stream)
                try:
                    await self._post_to(endpoint, data, "initialize")
                    with trio.move_on_after(self._core.timeout):
                        await replay.done.wait()
                finally:
                    self._replay = None
                answer = replay.answer
                if answer is None:
                    raise TransportError(
                        f"no answer to the replayed initialize within {self._core.timeout}s"
                    )
                if isinstance(answer, MCPError):
                    raise answer
                reason = refusal(*answer)
                if reason is not None:
                    raise Refused(
                        ConnectionClosed(
                            f"the server at {display_url(self._url)} came back but refused to "
                            "start a new "
                            f"session: {reason}"
                        )
                    )
                if self._initialized:
                    await self._post_to(endpoint, INITIALIZED, "notifications/initialized")
            if stream.ended:
                raise TransportError("the new event stream ended at once")
        except BaseException:
            stream.scope.cancel()
            raise
        self.endpoint, self._live = endpoint, stream

    async def _post_to(self, endpoint: str, data: bytes, method: str) -> None:
        """POST a replayed message; a 4xx other than a lost session is a refusal."""
        try:
            await self._post_once(endpoint, data, idempotent=False)
        except HTTPStatusError as exc:
            status = exc.status_code
            if 400 <= status < 500 and status not in (408, 429) and not _session_lost(exc):
                raise Refused(
                    ConnectionClosed(
                        f"the server at {display_url(self._url)} came back but refused the "
                        "replayed "
                        f"{method} (HTTP {status}): {exc.body[:300]}"
                    )
                ) from exc
            raise

    async def send(self, data: bytes, info: MessageInfo) -> None:
        """POST one message to the endpoint; a request's POST runs as a task.

        Args:
            data: The encoded message.
            info: What the message is.

        Raises:
            ConnectionClosed: The connection is being re-established (nothing is sent).
        """
        if self._reconnecting:
            await trio.lowlevel.checkpoint()
            raise reconnecting_error(self._url)
        if info.method == "initialize" and info.request_id is not None:
            self._initialize = (data, info.request_id)
        elif info.method == "notifications/initialized":
            self._initialized = True
        if info.method is not None and info.request_id is not None:
            await trio.lowlevel.checkpoint()
            self._core.check_open()
            name = f"trio_mcp POST {info.method}"
            self._outstanding.add(info.request_id)
            self._core.spawn(info.request_id, self._post, data, info, method=info.method, name=name)
        else:
            await self._post(data, info)

    def forget(self, request_id: RequestId) -> None:
        """The session no longer waits for ``request_id`` (cancelled, abandoned).

        Args:
            request_id: The request.
        """
        self._outstanding.discard(request_id)

    async def _post(self, data: bytes, info: MessageInfo) -> None:
        endpoint, stream = self.endpoint, self._live
        assert endpoint is not None
        try:
            await self._post_once(endpoint, data, idempotent=info.idempotent)
        except HTTPStatusError as exc:
            self._outstanding.discard(info.request_id)
            if stream is None or not _session_lost(exc):
                raise
            then = "; reconnecting" if self._backoff is not None and self._owner else ""
            lost = ConnectionClosed(
                f"the server at {display_url(self._url)} no longer knows the HTTP+SSE session "
                f"(HTTP {exc.status_code}){then}"
            )
            self._lost(stream, lost)
            raise lost from exc
        except MCPError:
            self._outstanding.discard(info.request_id)
            raise

    async def _post_once(self, endpoint: str, data: bytes, *, idempotent: bool) -> None:
        headers = dict(self._core.headers)
        headers["Accept"] = ACCEPT_BOTH
        headers["Content-Type"] = "application/json"
        response = await self._core.open(
            "POST",
            endpoint,
            headers=headers,
            content=data,
            idempotent=idempotent,
            read_timeout=True,
        )
        await close_response(response)  # the answer arrives on the event stream


@dataclass(frozen=True, eq=False)
class SSEParameters(HTTPOptions):
    """How to reach an MCP server over the deprecated HTTP+SSE transport (2024-11-05).

    Prefer [`StreamableHTTPParameters`][trio_mcp.transports.StreamableHTTPParameters], which falls
    back to HTTP+SSE by itself; use this only for a server known to speak nothing else.

    Args:
        url: The SSE endpoint (the URL the event stream is opened at).
        headers: Extra headers sent with every HTTP request.
        auth: Any `httpx.Auth`.
        client: An `httpx.AsyncClient` to use; the caller owns (and closes) it.
        timeout: Seconds to connect, to send each POST, and to wait for the ``endpoint``
            event. The event stream itself has no read time limit.
        max_message_size: The largest message accepted from the server, in bytes.
        retry: Retries of failed connection attempts.
        breaker: A circuit breaker every HTTP request goes through.
        ssl_context: The TLS settings of ``https://`` connections (not with ``client``).
        reconnect: When the event stream breaks or ends, or the server no longer knows the
            session (a restarted server), re-open it on this schedule until it works or
            the transport closes, and start a new server session by replaying
            ``initialize``; see the transport's docs. ``None``: never reconnect, a broken
            stream ends the connection. The default tries 0.25 s after the break, then 0.5 s
            later, then every second.
    """

    _: KW_ONLY
    reconnect: Backoff | None = DEFAULT_RECONNECT_BACKOFF

    def __repr__(self) -> str:
        return redacted_repr(self, ("headers",))  # header values are often credentials

    def open_transport(self, nursery: trio.Nursery) -> AbstractAsyncContextManager[SSETransport]:
        """Open the event stream and wait for the ``endpoint`` event.

        Args:
            nursery: Where the event stream's reader and each request's POST run as tasks.

        Returns:
            An async context manager yielding the transport; leaving it closes the event
            stream, which ends the connection.

        Raises:
            HTTPStatusError: The server refused the GET.
            ProtocolError: The server named a malformed endpoint.
            TransportError: The server does not speak HTTP+SSE, or the URL is malformed.
        """
        return _open_sse(self, nursery)


@asynccontextmanager
async def _open_sse(
    params: SSEParameters, nursery: trio.Nursery
) -> AsyncGenerator[SSETransport, None]:
    core = core_for(params, nursery)
    connection = LegacySSEConnection(core, params.url, reconnect=params.reconnect)
    transport = SSETransport(params.url, core, connection)
    try:
        await transport.connect()
        yield transport
    finally:
        await transport.aclose()


class SSETransport(Transport):
    """A connection over the deprecated HTTP+SSE transport. Open it with
    [`SSEParameters.open_transport()`][trio_mcp.transports.SSEParameters.open_transport].

    Args:
        url: The URL of the event stream.
        core: The HTTP machinery.
        connection: The connection to speak through.
    """

    can_probe = False
    """Servers that speak only HTTP+SSE predate the 2026-07-28 era: never probe them."""

    def __init__(self, url: str, core: HTTPCore, connection: LegacySSEConnection) -> None:
        self.modern = False
        self.protocol_version = None
        self._url = url
        self._core = core
        self._connection = connection
        self._origin = origin_of(url)
        core.fail_request = self._report_failure
        connection.bind(self)

    def _report_failure(self, request_id: RequestId, error: MCPError) -> None:
        self._fail_request(request_id, error)

    @property
    def era_key(self) -> str:
        """``scheme://host:port`` of the server: the key the session caches eras under."""
        return self._origin

    @property
    def origin(self) -> str:
        """The same as [`era_key`][trio_mcp.transports.Transport.era_key]."""
        return self._origin

    @property
    def endpoint(self) -> str | None:
        """The URL messages are POSTed to."""
        return self._connection.endpoint

    def negotiated(self, *, modern: bool, protocol_version: str | None) -> None:
        """Learn the protocol version; HTTP+SSE always stays in the legacy era.

        Args:
            modern: Ignored: HTTP+SSE servers are legacy.
            protocol_version: The revision in use, or None while negotiating.
        """
        del modern
        super().negotiated(modern=False, protocol_version=protocol_version)

    async def connect(self) -> None:
        """Open the event stream and wait for the ``endpoint`` event."""
        await self._connection.connect()

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """POST one message to the endpoint; answers arrive on the event stream.

        Args:
            data: The encoded message.
            info: What the message is (inferred from ``data`` when missing).

        Raises:
            trio.ClosedResourceError: The transport was closed.
            ConnectionClosed: The event stream ended for good, or it is being
                re-established (nothing was sent; the transport's ``link`` is
                RECONNECTING), or the server no longer knows the session.
            HTTPStatusError: The server rejected a notification or response.
        """
        self._core.check_open()
        await self._connection.send(data, info if info is not None else infer_info(data))

    async def receive(self) -> bytes:
        """Receive the next message from the event stream.

        Waits across reconnections (the reconnection's own ``initialize`` answer never
        arrives here).

        Raises:
            trio.EndOfChannel: The server ended the event stream (without ``reconnect``).
            ConnectionClosed: The event stream broke (without ``reconnect``), or the
                server refused a new session after a reconnection.
        """
        return await self._core.receive()

    async def receive_message(self) -> bytes | Envelope:
        """The next message, as decoded for routing; see `receive()`."""
        return await self._core.receive_message()

    def attach_reader(self, dispatch: Callable[[bytes | Envelope], None]) -> None:
        """Hand messages straight to the session while its reader is idle."""
        self._core.dispatch = dispatch

    def cancel_request(self, request_id: RequestId) -> bool:
        """Forget a request the session no longer waits for.

        Args:
            request_id: The request.

        Returns:
            False: HTTP+SSE cannot cancel natively (send ``notifications/cancelled``).
        """
        self._connection.forget(request_id)
        return False

    def closed_error(self) -> MCPError:
        """Why the connection ended."""
        return self._core.closed_error()

    async def aclose(self) -> None:
        """Close the event stream and the client (if ours). Idempotent."""
        self.link.closed()
        await self._core.aclose(None)
