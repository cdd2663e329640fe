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
  session is ended with DELETE on close. That part (the session's renewal, the GET stream,
  resuming) is in ``_http_session.py``, the base class of the transport.

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

from .._exceptions import (
    ConnectionClosed,
    MCPError,
    ProtocolError,
    TransportError,
)
from .._jsonrpc import Envelope
from .._redact import display_url, redacted_repr
from ._base import MessageInfo
from ._eventstream import ServerSentEvent, SSEDecoder
from ._headers import (
    NAME_PARAMS,
    encode_header_value,
    is_plain_header_value,
    request_name,
)
from ._http_base import (
    ACCEPT_BOTH,
    DEFAULT_RECONNECT_POLICY,
    HTTPCore,
    Sink,
    core_for,
)
from ._http_client import DEFAULT_MAX_MESSAGE_SIZE, HTTPOptions
from ._http_sender import close_response, content_type
from ._http_session import GET_STREAM_MAX_DELAY, LegacySessionTransport
from ._jsonpeek import infer_info, routed, same_id, split_batch
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


class StreamableHTTPTransport(LegacySessionTransport):
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
