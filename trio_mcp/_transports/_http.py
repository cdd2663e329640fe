"""Streamable HTTP, in both protocol eras, over httpx on trio.

Every message the client sends is its own HTTP POST to the MCP endpoint; the answer to a
request is a JSON body or a Server-Sent Events stream scoped to that request. Each POST of
a request runs in its own task (in the nursery the transport was opened with) and feeds
what it receives into the one ``receive`` side; a failure that belongs to a request goes
to the session's callback ([`attach()`][trio_mcp.transports.Transport.attach]) and never escapes the
task. The shared machinery is in ``_http_base.py`` (the incoming queue, the tasks), on
``_http_sender.py`` (sending: retries, the circuit breaker, ``_redirects.py``,
``_http_errors.py``) and ``_http_client.py`` (the client); message routing is in
``_jsonpeek.py``, the SSE parser in ``_eventstream.py``.

The session tells the transport which era it speaks
([`negotiated()`][trio_mcp.transports.Transport.negotiated]):

* modern (2026-07-28): ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and the
  ``Mcp-Param-*`` headers on every POST; no session id; a request is cancelled by closing
  its response stream (`StreamableHTTPTransport.cancel_request()` returns True). A
  method name that is not a plain header value fails its request with
  [`ProtocolError`][trio_mcp.ProtocolError] (the spec gives ``Mcp-Method`` no encoding).
* legacy (2025-03-26 .. 2025-11-25): the ``Mcp-Session-Id`` from the ``initialize``
  response is sent on every request; after ``notifications/initialized`` a GET stream
  carries server-initiated messages; SSE streams resume with ``Last-Event-ID`` (honouring
  the server's ``retry``); an expired session (HTTP 404) is re-initialized and the
  request replayed once, while every other request waits for the new session id; the
  session is ended with DELETE on close.

`StreamableHTTPTransport.fallback()` switches an open transport to the deprecated
2024-11-05 HTTP+SSE transport (``_sse.py``) for servers that speak only that.

Redirects: only same-origin ones are followed (``307``/``308`` for a POST); a redirect to
another origin fails with a [`TransportError`][trio_mcp.TransportError] naming both origins, so that
headers, the session id and credentials never leave the origin the caller named (see
``_redirects.py``).

httpx is imported only when a transport is opened, so ``import trio_mcp`` stays light.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import msgspec
import trio
from msgspec import UNSET

from .._exceptions import (
    CircuitOpenError,
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    TransportError,
)
from .._jsonrpc import Envelope
from .._redact import display_url, redacted_repr
from ._base import MessageInfo, Transport
from ._eventstream import ServerSentEvent, SSEDecoder
from ._headers import (
    NAME_PARAMS,
    echo_problem,
    encode_header_value,
    is_plain_header_value,
    request_name,
)
from ._http_base import (
    ACCEPT_BOTH,
    ACCEPT_SSE,
    DEFAULT_RECONNECT_POLICY,
    HTTPCore,
    Sink,
    StreamState,
    core_for,
)
from ._http_client import DEFAULT_MAX_MESSAGE_SIZE, HTTPOptions
from ._http_errors import session_lost
from ._http_sender import close_response, content_type
from ._jsonpeek import infer_info, routed, same_id, split_batch
from ._link import LinkState
from ._redirects import origin_of

if TYPE_CHECKING:
    import httpx

    from .._statistics import PoolStatistics
    from ._sse import LegacySSEConnection

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "DEFAULT_RECONNECT_POLICY",
    "GET_STREAM_MAX_DELAY",
    "GET_STREAM_WAIT",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamableHTTPParameters",
    "StreamableHTTPTransport",
    "origin_of",
    "split_batch",
]

logger = logging.getLogger("trio_mcp.http")

RequestId: TypeAlias = "int | str"

GET_STREAM_WAIT: Final = 1.0
"""How long ``notifications/initialized`` waits for the legacy GET stream to be answered (at most),
so that it is open before the next request; messages the server sends later still arrive on it."""

GET_STREAM_MAX_DELAY: Final = 5.0
"""The longest wait between attempts to re-open the legacy GET stream while the server is down (the
retry policy's backoff, capped here), so notifications flow again soon after the server is back. A
request that reaches the server again re-opens it at once."""

_INITIALIZED: Final = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def _down(error: MCPError) -> bool:
    """Whether ``error`` says the server cannot be reached (not that it answered no)."""
    if isinstance(error, HTTPStatusError):
        return error.status_code >= 500 or error.status_code in (408, 429)
    return isinstance(error, (TransportError, CircuitOpenError))


class _Outage:
    """One stretch of time the legacy GET stream could not be kept open: logged once.

    A stream that broke and opens again at the first attempt (a proxy cut it) is an info
    line; one that cannot be re-opened (the server is down) one warning, whatever the
    number of attempts.
    """

    __slots__ = ("attempts", "session_id", "since", "woken")

    def __init__(self, since: float, session_id: str | None) -> None:
        self.since = since
        self.session_id = session_id
        self.attempts = 0
        self.woken = False  # a request that reached the server cut a wait short

    def log(self, url: str, error: MCPError, delay: float) -> None:
        self.attempts += 1
        if self.attempts == 1:
            logger.info(
                "the stream for server-initiated messages from %s broke (%s); "
                "re-opening it in %.1f s",
                url,
                error,
                delay,
            )
        elif self.attempts == 2:
            logger.warning(
                "the stream for server-initiated messages from %s cannot be re-opened (%s); "
                "trying again in %.1f s, and with backoff until the server is back",
                url,
                error,
                delay,
            )
        else:
            logger.debug("re-opening the stream from %s in %.1f s: %s", url, delay, error)

    def over(self, url: str, session_id: str | None) -> bool:
        """Log the end of the outage; whether the session must still hear of the gap."""
        logger.info(
            "the stream for server-initiated messages from %s is open again after %.1f s",
            url,
            trio.current_time() - self.since,
        )
        return session_id == self.session_id  # (a new session told the session already)


def _check_resumable(request_id: RequestId, state: StreamState, cause: MCPError | None) -> None:
    """Fail the request at once when its ended stream cannot be resumed (legacy era).

    Raises:
        TransportError: The server's last event id cannot be sent back as ``Last-Event-ID``.
    """
    if state.unsendable_id is not None:
        raise TransportError(
            f"the response stream of request {request_id!r} ended before the response and "
            f"cannot be resumed: {state.unsendable_id}"
        ) from cause


class _WithParams(msgspec.Struct):
    params: dict[str, Any] | None = None


_params_decoder: Final = msgspec.json.Decoder(_WithParams)


@dataclass(frozen=True, eq=False)
class StreamableHTTPParameters(HTTPOptions):
    """How to reach an MCP server over Streamable HTTP (both eras, with HTTP+SSE fallback).

    Args:
        url: The MCP endpoint, e.g. ``https://example.com/mcp``.
        headers: Extra headers sent with every HTTP request (e.g. an API key).
        auth: Any `httpx.Auth` (OAuth support is planned).
        client: An `httpx.AsyncClient` to use (for TLS ``verify``, proxies,
            transports, ...). The caller owns it: it is not closed with the transport.
            By default a client is created, and closed with the transport.
        timeout: Seconds to connect, to write a request, and to get a pooled connection;
            also to get the answer to a notification. Reading a response stream has no
            httpx time limit: bound requests with the session's timeouts.
        max_message_size: The largest message accepted from the server, in bytes; a
            larger one fails its request with
            [`MessageTooLargeError`][trio_mcp.MessageTooLargeError].
        retry: Retries of failed connection attempts (and of 5xx answers to idempotent
            requests), and the schedule for re-opening broken SSE streams. ``None``: no
            retries of requests, and `DEFAULT_RECONNECT_POLICY` for streams.
        breaker: A circuit breaker every HTTP request goes through.
        ssl_context: The TLS settings of ``https://`` connections (not with ``client``).
        sse_fallback: Whether the session may fall back to the deprecated HTTP+SSE
            transport (2024-11-05) when the server rejects ``initialize``.
    """

    _: KW_ONLY
    sse_fallback: bool = True

    def __repr__(self) -> str:
        return redacted_repr(self, ("headers",))  # header values are often credentials

    def open_transport(
        self, nursery: trio.Nursery
    ) -> AbstractAsyncContextManager[StreamableHTTPTransport]:
        """Open the transport. Nothing is sent until the session sends its first message.

        Args:
            nursery: Where each request's stream (and the legacy GET stream) runs as a task.

        Returns:
            An async context manager yielding the transport; leaving it closes the
            transport (ending a legacy session with DELETE).

        Raises:
            TransportError: The URL is malformed.
        """
        return _open_streamable(self, nursery)


@asynccontextmanager
async def _open_streamable(
    params: StreamableHTTPParameters, nursery: trio.Nursery
) -> AsyncGenerator[StreamableHTTPTransport, None]:
    core = core_for(params, nursery)
    transport = StreamableHTTPTransport(params, core)
    try:
        yield transport
    finally:
        await transport.aclose()


class StreamableHTTPTransport(Transport):
    """A connection to an MCP server over Streamable HTTP. Open it with
    [`StreamableHTTPParameters.open_transport()`][trio_mcp.transports.StreamableHTTPParameters.open_transport].

    Attributes:
        modern: True for 2026-07-28 (per-request headers), False for the legacy
            (``initialize``) era; set through
            [`negotiated()`][trio_mcp.transports.Transport.negotiated].
        protocol_version: Sent as ``MCP-Protocol-Version``; set through
            [`negotiated()`][trio_mcp.transports.Transport.negotiated].
    """

    def __init__(self, params: StreamableHTTPParameters, core: HTTPCore) -> None:
        self.modern = False
        self.protocol_version = None
        self._params = params
        self._core = core
        self._url = params.url
        self._origin = origin_of(params.url)
        self._session_id: str | None = None
        self._initialize: tuple[bytes, MessageInfo] | None = None
        self._renewal: trio.Event | None = None  # set while a new legacy session starts
        self._get_stream_started = False
        self._get_stream_ready = trio.Event()  # the first GET was answered (or failed)
        self._sse: LegacySSEConnection | None = None
        core.fail_request = self._report_failure

    def _report_failure(self, request_id: RequestId, error: MCPError) -> None:
        self._fail_request(request_id, error)

    @property
    def routed_bytes(self) -> int:
        """Bytes of the messages handed to the session decoded (see the base class)."""
        return self._core.routed_bytes

    def pool_statistics(self) -> PoolStatistics | None:
        """A snapshot of trio_mcp's HTTP pool under this transport (None: a client of yours)."""
        from ._h11pool import H11Transport  # (it imports httpx: loaded by now if in use)

        pool: object = getattr(self._core.client, "_transport", None)
        if not self._core.own_client or not isinstance(pool, H11Transport):
            return None
        return pool.statistics()

    @property
    def era_key(self) -> str:
        """``scheme://host:port`` of the endpoint: the key the session caches eras under."""
        return self._origin

    @property
    def origin(self) -> str:
        """The same as [`era_key`][trio_mcp.transports.Transport.era_key]."""
        return self._origin

    @property
    def session_id(self) -> str | None:
        """The legacy ``Mcp-Session-Id`` the server assigned, if any."""
        return self._session_id

    @property
    def wants_param_headers(self) -> bool:
        """Whether tool calls need ``Mcp-Param-*`` headers (modern Streamable HTTP)."""
        return self.modern and self._sse is None

    @property
    def using_sse(self) -> bool:
        """Whether [`fallback()`][trio_mcp.transports.Transport.fallback] switched this transport to
        HTTP+SSE."""
        return self._sse is not None

    def negotiated(self, *, modern: bool, protocol_version: str | None) -> None:
        """Learn the era and protocol version the session speaks from now on.

        After a fallback to HTTP+SSE the transport stays in the legacy era.

        Args:
            modern: True for the stateless 2026-07-28 era, False for the handshake era.
            protocol_version: The revision in use, or None while negotiating.
        """
        super().negotiated(modern=modern and self._sse is None, protocol_version=protocol_version)

    # -- sending ---------------------------------------------------------------------------

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Send one message as an HTTP POST.

        A request's POST runs as a task: its answer arrives through `receive()`, a
        failure through the session's callback. A notification or response is posted
        before this returns.

        Args:
            data: The encoded message.
            info: What the message is (inferred from ``data`` when missing).

        Raises:
            trio.ClosedResourceError: The transport was closed.
            HTTPStatusError: The server rejected a notification or response.
            TransportError: A notification or response could not be delivered.
        """
        if info is None:
            info = infer_info(data)
        if info.method is not None and info.request_id is not None:
            await trio.lowlevel.checkpoint()
        self._core.check_open()
        if self._sse is not None:
            await self._sse.send(data, info)
            return
        if info.method is not None and info.request_id is not None:
            self._start_post(data, info)
            return
        await self._post_message(data, info)
        if (
            info.method == "notifications/initialized"
            and not self.modern
            and not self._get_stream_started
        ):
            self._get_stream_started = True
            self._core.spawn(None, self._get_stream, name="trio_mcp GET stream")
            # Servers drop server-initiated messages while no GET stream is connected (and
            # may take a late GET for a reconnection): give it a moment to be answered.
            with trio.move_on_after(min(GET_STREAM_WAIT, self._params.timeout)):
                await self._get_stream_ready.wait()

    def queue_request_nowait(self, data: bytes, info: MessageInfo | None) -> bool:
        """Start a request's POST without waiting (the wait for its answer is the checkpoint).

        Args:
            data: The encoded request.
            info: What it is; anything but a request (or a transport that cannot take it
                now) returns False, and the session awaits `send()`.
        """
        if info is None or info.method is None or info.request_id is None:
            return False
        if self._sse is not None or self._core.closed or self._core.ended is not None:
            return False
        try:
            self._start_post(data, info)
        except trio.ClosedResourceError:
            return False  # (send says why)
        return True

    def _start_post(self, data: bytes, info: MessageInfo) -> None:
        assert info.method is not None and info.request_id is not None
        if info.method == "initialize" and not self.modern:
            self._initialize = (data, info)
        self._core.spawn(
            info.request_id,
            self._post_request,
            data,
            info,
            method=info.method,
            name=f"trio_mcp POST {info.method}",
        )

    def _headers(self, info: MessageInfo, session_id: str | None) -> dict[str, str]:
        headers = dict(self._core.headers)
        headers["Accept"] = ACCEPT_BOTH
        headers["Content-Type"] = "application/json"
        legacy_initialize = not self.modern and info.method == "initialize"
        if self.protocol_version and not legacy_initialize:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.modern:
            if info.method is not None:
                if not is_plain_header_value(info.method):
                    raise ProtocolError(
                        f"the method name {info.method!r} cannot be sent in the Mcp-Method "
                        "header, which the 2026-07-28 Streamable HTTP transport requires: the "
                        "spec defines no encoding for it, so it must be visible ASCII"
                    )
                headers["Mcp-Method"] = info.method
            if info.name is not None:
                headers["Mcp-Name"] = encode_header_value(info.name)
        elif session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        headers.update(info.headers)
        return headers

    def _stream_headers(self, session_id: str | None, last_event_id: str | None) -> dict[str, str]:
        headers = dict(self._core.headers)
        headers["Accept"] = ACCEPT_SSE
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return headers

    def _fill_name(self, data: bytes, info: MessageInfo) -> MessageInfo:
        """Add the ``Mcp-Name`` value from the body when the session did not give it."""
        method = info.method
        if not self.modern or info.name is not None or method is None or method not in NAME_PARAMS:
            return info
        try:
            params = _params_decoder.decode(data).params
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return info
        name = request_name(method, params)
        if name is None:
            return info
        return MessageInfo(info.method, info.request_id, name, info.headers, info.idempotent)

    async def _current_session(self) -> str | None:
        """The legacy session id to send, once any renewal of the session has finished."""
        if self.modern:
            return None
        while self._renewal is not None:
            await self._renewal.wait()
        return self._session_id

    async def _post(
        self, data: bytes, info: MessageInfo, session_id: str | None, *, read_timeout: bool
    ) -> httpx.Response:
        return await self._core.open(
            "POST",
            self._url,
            headers=self._headers(info, session_id),
            content=data,
            idempotent=info.idempotent,
            read_timeout=read_timeout,
        )

    async def _open_post(
        self, data: bytes, info: MessageInfo, *, read_timeout: bool = False
    ) -> httpx.Response:
        """POST a message; after the server lost the legacy session, renew it and replay once.

        The server lost the session when it answers 404, or 400 in the words real servers
        use for an unknown session (`session_lost()`); the request never ran, so it is
        replayed in the new session. A server that refuses the new session too is an error.
        """
        session_id = await self._current_session()
        try:
            response = await self._post(data, info, session_id, read_timeout=read_timeout)
        except MCPError as exc:
            if not self._session_expired(exc, session_id, info):
                self._link_failed(exc)
                raise
            assert session_id is not None
            lost = exc
        else:
            self._link_up()
            return response
        await self._reinitialize(session_id, lost)
        renewed = self._session_id
        try:
            response = await self._post(data, info, renewed, read_timeout=read_timeout)
        except MCPError as again:
            if not self._session_expired(again, renewed, info):
                self._link_failed(again)
                raise
            raise TransportError(
                f"the server at {display_url(self._url)} refused the new MCP session "
                f"{renewed!r} right after "
                f"it was started (HTTP {getattr(again, 'status_code', '?')}): it keeps losing "
                "sessions, so the request is not retried again"
            ) from again
        self._link_up()
        return response

    def _link_failed(self, exc: MCPError) -> None:
        """Record a failure to reach the server (not an HTTP 4xx: the server answered)."""
        if isinstance(exc, HTTPStatusError) and exc.status_code < 500:
            return
        if isinstance(exc, TransportError):
            self.link.failed(exc)

    def _link_up(self) -> None:
        """A request reached the server: a link that was failing is up again.

        In the modern (stateless) era the server may be a new process now, with other
        tools: the session hears of the gap (it re-discovers and re-lists).
        """
        link = self._link  # (none is made on the hot path)
        if link is not None and link.state is LinkState.RECONNECTING:
            link.restored()
            if self.modern:
                self.notification_gap()

    async def _post_request(self, data: bytes, info: MessageInfo) -> None:
        """POST a request and feed its answer into the incoming queue (runs as a task)."""
        request_id = info.request_id
        assert request_id is not None
        info = self._fill_name(data, info)
        response = await self._open_post(data, info)
        try:
            if info.method == "initialize" and not self.modern:
                self._session_id = self._new_session_id(response) or self._session_id
            await self._read_answer(response, request_id, self._core.deliver)
        except ConnectionClosed as exc:
            self.link.failed(exc)
            raise
        finally:
            await close_response(response)

    async def _post_message(self, data: bytes, info: MessageInfo) -> None:
        """POST a notification or response; the server answers 202 Accepted."""
        response = await self._open_post(data, info, read_timeout=True)
        await close_response(response)

    def _session_expired(self, exc: MCPError, session_id: str | None, info: MessageInfo) -> bool:
        return (
            session_id is not None
            and not self.modern
            and info.method != "initialize"
            and session_lost(exc)
        )

    def _new_session_id(self, response: httpx.Response) -> str | None:
        session_id: str | None = response.headers.get("mcp-session-id")
        if session_id is None:
            return None
        problem = echo_problem(session_id)
        if problem is not None:
            raise TransportError(
                f"{display_url(self._url)} answered initialize with an Mcp-Session-Id that "
                f"cannot be sent back: the id {session_id[:40]!r} {problem}"
            )
        return session_id

    async def _read_answer(
        self, response: httpx.Response, request_id: RequestId, sink: Sink
    ) -> None:
        """Read the answer to a request: a JSON body or an SSE stream ending in the response.

        Raises:
            TransportError: No response came (202, an unknown content type, a stream that
                ended or broke and could not be resumed).
            MessageTooLargeError: The response was too large.
        """
        kind = content_type(response)
        if response.status_code == 202:
            raise TransportError(
                f"the server accepted request {request_id!r} (HTTP 202) without answering it"
            )
        if kind == "text/event-stream":
            await self._read_sse_answer(response, request_id, sink)
            return
        if kind == "application/json":
            body = await self._core.read_body(response)
            answered = False
            for message in split_batch(body):
                envelope, answers = routed(message)
                await sink(message, envelope, answers)
                answered = answered or same_id(answers, request_id)
            if not answered:
                shown = body[:200].decode("utf-8", "replace")
                raise TransportError(
                    f"the JSON answer to request {request_id!r} is not its response: {shown!r}"
                )
            return
        raise TransportError(
            f"unexpected Content-Type {kind or '(none)'!r} in the answer to request "
            f"{request_id!r} (HTTP {response.status_code}); expected JSON or an event stream"
        )

    async def _read_sse_answer(
        self, response: httpx.Response, request_id: RequestId, sink: Sink
    ) -> None:
        state = StreamState()
        broken: ConnectionClosed | None = None
        try:
            if await self._core.pump_sse(response, state, sink, request_id):
                return
        except ConnectionClosed as exc:
            broken = exc
        await close_response(response)
        if not self.modern:
            _check_resumable(request_id, state, broken)
        if not self.modern and state.last_event_id is not None:
            await self._resume(request_id, state, sink, broken)
            return
        if broken is not None:
            raise ConnectionClosed(
                f"the connection broke before the response to request {request_id!r} arrived"
                f" ({broken})"
            ) from broken
        raise TransportError(
            f"the response stream ended before the response to request {request_id!r} arrived"
        )

    def _reconnect_delay(self, state: StreamState, attempt: int) -> float:
        if state.retry_ms is not None:
            return state.retry_ms / 1000
        return self._core.reconnect.backoff.delay(attempt)

    async def _resume(
        self, request_id: RequestId, state: StreamState, sink: Sink, cause: MCPError | None
    ) -> None:
        """Resume a request's broken SSE stream with GET + ``Last-Event-ID`` (legacy)."""
        policy = self._core.reconnect
        attempt = 0
        last_error = cause
        while True:
            attempt += 1
            if attempt > policy.max_attempts:
                error = TransportError(
                    f"the response stream of request {request_id!r} ended before the response "
                    f"and {policy.max_attempts} attempts to resume it failed"
                )
                raise error from last_error
            await trio.sleep(self._reconnect_delay(state, attempt))
            progress = state.progress
            try:
                response = await self._core.open(
                    "GET",
                    self._url,
                    headers=self._stream_headers(
                        await self._current_session(), state.last_event_id
                    ),
                    retry=False,
                )
            except HTTPStatusError as exc:
                if exc.status_code in (400, 404, 405):
                    raise TransportError(
                        f"the response stream of request {request_id!r} ended before the "
                        f"response and the server refused to resume it (HTTP {exc.status_code})"
                    ) from exc
                last_error = exc
                continue
            except TransportError as exc:
                last_error = exc
                continue
            try:
                if content_type(response) != "text/event-stream":
                    raise TransportError(
                        f"resuming the stream of request {request_id!r} returned "
                        f"{content_type(response) or 'no content type'}, not an event stream"
                    )
                if await self._core.pump_sse(response, state, sink, request_id):
                    return
                last_error = None
            except ConnectionClosed as exc:
                last_error = exc
            finally:
                await close_response(response)
            _check_resumable(request_id, state, last_error)
            if state.progress > progress:
                attempt = 0

    async def _get_stream(self) -> None:
        """Keep the legacy GET stream for server-initiated messages open (runs as a task).

        A stream that ends cleanly is re-opened (resuming with ``Last-Event-ID``), up to the
        retry policy's ``max_attempts`` in a row without an event. A stream that breaks or
        cannot be opened (the server is down) is re-opened with backoff, capped at
        `GET_STREAM_MAX_DELAY` (and at once when a request reached the server again),
        until the transport closes; once it is open again the session hears of the gap. A
        lost session is started anew (`_reinitialize()`).
        """
        policy = self._core.reconnect
        state = StreamState()
        state_session = self._session_id
        attempt = 0
        outage: _Outage | None = None
        renewed_here: str | None = None  # a session this loop started, not yet streamed
        while True:
            session_id = self._session_id
            if session_id != state_session:
                state, state_session = StreamState(), session_id
            progress = state.progress
            error: MCPError | None = None
            try:
                try:
                    response = await self._core.open(
                        "GET",
                        self._url,
                        headers=self._stream_headers(session_id, state.last_event_id),
                        retry=False,
                    )
                finally:
                    self._get_stream_ready.set()
            except HTTPStatusError as exc:
                if exc.status_code == 405:
                    logger.debug("%s offers no GET stream (HTTP 405)", display_url(self._url))
                    return
                if session_id is not None and session_lost(exc):
                    if session_id == renewed_here:
                        logger.warning(
                            "%s refused the GET stream of the MCP session it just started "
                            "(HTTP %d); not listening for server messages",
                            display_url(self._url),
                            exc.status_code,
                        )
                        return
                    try:
                        await self._reinitialize(session_id, exc)
                    except MCPError as failed:
                        error = failed
                    else:
                        renewed_here = self._session_id
                        continue
                else:
                    error = exc
            except MCPError as exc:
                error = exc
            else:
                self._link_up()
                renewed_here = None
                if outage is not None:
                    if outage.over(display_url(self._url), session_id):
                        self.notification_gap()
                    outage = None
                try:
                    if content_type(response) != "text/event-stream":
                        logger.info(
                            "%s answered the GET for server messages with %s; not listening",
                            display_url(self._url),
                            content_type(response) or "no content type",
                        )
                        return
                    await self._core.pump_sse(response, state, self._core.deliver)
                except ConnectionClosed as exc:
                    error = exc
                finally:
                    await close_response(response)
            if error is not None and _down(error):
                self._link_failed(error)
                if outage is None:
                    outage = _Outage(trio.current_time(), self._session_id)
                    attempt = 0
                attempt += 1
                delay = min(policy.backoff.delay(attempt), GET_STREAM_MAX_DELAY)
                outage.log(display_url(self._url), error, delay)
                if outage.woken:  # once per outage: a server failing only GETs is no loop
                    await trio.sleep(delay)
                else:
                    outage.woken = await self._wait_to_reopen(delay)
                continue
            if state.progress > progress:
                attempt = 0
            attempt += 1
            retryable = error is None or policy.should_retry(error)
            if attempt >= policy.max_attempts or not retryable:
                logger.warning(
                    "the stream for server-initiated messages from %s closed and is not "
                    "re-opened after %d attempt(s)%s",
                    display_url(self._url),
                    attempt,
                    f": {error}" if error is not None else "",
                )
                return
            await trio.sleep(self._reconnect_delay(state, attempt))

    async def _wait_to_reopen(self, delay: float) -> bool:
        """Sleep ``delay`` seconds, or less once a request reached the server again.

        Returns:
            Whether a request reaching the server cut the wait short.
        """
        link = self.link
        seen = link.version
        with trio.move_on_after(delay):
            while True:
                seen = await link.wait_changed(seen)
                if link.state is LinkState.UP:
                    return True
        return False

    async def _reinitialize(self, expired: str, cause: MCPError) -> None:
        """Start a new legacy session after the server lost ``expired`` (``cause`` says how).

        Replays the ``initialize`` request the session sent (its answer is consumed here)
        and ``notifications/initialized``, then tells the session
        ([`renewed()`][trio_mcp.transports.Transport.renewed]), which sets up again what the
        application had set up. The old id stays until the new one arrives; meanwhile every other
        POST waits (`_current_session()`), and concurrent renewals wait for this one.

        Raises:
            TransportError: No new session could be started (the cause is chained).
        """
        if self._renewal is not None:
            await self._renewal.wait()
            if self._session_id == expired:
                raise TransportError(
                    f"the server at {display_url(self._url)} lost MCP session {expired!r} and "
                    "starting a "
                    "new one failed"
                ) from cause
            return
        if self._session_id != expired:
            return  # another task already started a new session
        status = getattr(cause, "status_code", "?")
        if self._initialize is None:
            raise TransportError(
                f"the server ended session {expired!r} (HTTP {status}) and no initialize "
                "request is known to start a new one"
            ) from cause
        self.link.failed(cause)
        renewal = self._renewal = trio.Event()
        try:
            logger.warning(
                "the server at %s lost MCP session %r (HTTP %s); starting a new session",
                display_url(self._url),
                expired,
                status,
            )
            try:
                await self._start_session()
            except MCPError as exc:
                raise TransportError(
                    f"the server at {display_url(self._url)} lost MCP session {expired!r} "
                    f"(HTTP {status}) "
                    f"and starting a new one failed: {exc}"
                ) from exc
        finally:
            self._renewal = None
            renewal.set()
        self.renewed()

    async def _start_session(self) -> None:
        """Replay ``initialize`` and ``notifications/initialized``; keep the new session id."""
        assert self._initialize is not None
        data, info = self._initialize
        assert info.request_id is not None
        response = await self._post(data, info, None, read_timeout=False)
        answers: list[tuple[bytes, Envelope | None, RequestId | None]] = []

        async def collect(
            message: bytes, envelope: Envelope | None, answered: RequestId | None
        ) -> None:
            answers.append((message, envelope, answered))

        try:
            session_id = self._new_session_id(response)
            await self._read_answer(response, info.request_id, collect)
        finally:
            await close_response(response)
        for answer, envelope, answered in answers:
            failed = envelope is None or envelope.error is not UNSET
            if same_id(answered, info.request_id) and failed:
                shown = answer[:300].decode("utf-8", "replace")
                raise TransportError(f"the server refused initialize: {shown}")
        self._session_id = session_id
        initialized = MessageInfo("notifications/initialized")
        response = await self._post(_INITIALIZED, initialized, session_id, read_timeout=True)
        await close_response(response)

    # -- receiving, cancelling, closing --------------------------------------------------

    async def receive(self) -> bytes:
        """Receive the next message from any response stream.

        Raises:
            trio.EndOfChannel: The HTTP+SSE event stream (after a fallback) ended cleanly.
            ConnectionClosed: The HTTP+SSE event stream broke.
            trio.ClosedResourceError: The transport was closed.
        """
        return await self._core.receive()

    async def receive_message(self) -> bytes | Envelope:
        """The next message, as decoded for routing; see `receive()`."""
        return await self._core.receive_message()

    def attach_reader(self, dispatch: Callable[[bytes | Envelope], None]) -> None:
        """Hand messages straight to the session while its reader is idle."""
        self._core.dispatch = dispatch

    def cancel_request(self, request_id: RequestId) -> bool:
        """Cancel a request by closing its response stream.

        In the modern era the closed stream is the cancellation signal. In the legacy era
        a closed stream means nothing to the server, so the stream is closed only to free
        the connection, and the session must still send ``notifications/cancelled``.
        Either way the request reports no failure afterwards.

        Args:
            request_id: The request to cancel.

        Returns:
            True in the modern era, False in the legacy era and over HTTP+SSE.
        """
        if self._sse is not None:
            self._sse.forget(request_id)
            return False
        self._core.cancel(request_id)
        return self.modern

    async def fallback(self) -> bool:
        """Switch to the deprecated HTTP+SSE transport (2024-11-05) if the server speaks it.

        Opens the event stream with a GET to the URL and waits (up to ``timeout``) for
        the ``endpoint`` event; from then on messages are POSTed to that endpoint and
        every answer arrives on the event stream. Call it after a legacy ``initialize``
        failed with an HTTP 4xx, then send ``initialize`` again.

        Returns:
            True if the transport now speaks HTTP+SSE, False if the server does not (or
            ``sse_fallback`` is off); the transport is unchanged then.
        """
        if self._sse is not None:
            return True
        if not self._params.sse_fallback or self._core.closed:
            return False
        from ._sse import LegacySSEConnection  # (import cost: loaded only when needed)

        connection = LegacySSEConnection(self._core, self._url)
        connection.bind(self)  # it reconnects by itself (a restarted server), reporting here
        try:
            await connection.connect()
        except MCPError as exc:
            logger.info(
                "%s does not speak the HTTP+SSE transport either: %s", display_url(self._url), exc
            )
            return False
        logger.info("%s speaks the deprecated HTTP+SSE transport; using it", display_url(self._url))
        self._sse = connection
        self.modern = False
        return True

    def closed_error(self) -> MCPError:
        """Why the connection ended (for the requests still pending)."""
        return self._core.closed_error()

    async def aclose(self) -> None:
        """Close: cancel every stream, end a legacy session with DELETE, close our client.

        Idempotent; completes (within bounded, shielded steps) even when cancelled.
        """
        try:
            await self._core.aclose(self._delete_session)
        finally:
            self.link.closed()

    async def _delete_session(self) -> None:
        session_id = self._session_id
        if session_id is None or self.modern or self._sse is not None:
            return
        headers = self._stream_headers(session_id, None)
        del headers["Accept"]
        try:
            response = await self._core.open(
                "DELETE", self._url, headers=headers, retry=False, read_timeout=True
            )
            await close_response(response)
        except MCPError as exc:
            logger.debug("ending session %r with DELETE failed: %s", session_id, exc)
        else:
            logger.debug("ended session %r with DELETE", session_id)
