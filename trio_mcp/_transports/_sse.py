"""The deprecated HTTP+SSE transport of protocol version 2024-11-05.

The client opens a Server-Sent Events stream with a GET; the server's first event,
``endpoint``, names the URL to POST messages to (it must be on the same origin). Every
message from the server, responses included, arrives as a ``message`` event on that one
stream, which lives as long as the connection: when it ends, the connection is over.

It is deprecated since 2025-03-26; trio_mcp speaks it for old servers, either explicitly
(:class:`SSEParameters`, never probed for the 2026-07-28 era) or as the fallback of
Streamable HTTP (:meth:`~trio_mcp._transports._http.StreamableHTTPTransport.fallback`).
Redirects are handled as for Streamable HTTP: same origin only (see ``_redirects.py``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TypeAlias
from urllib.parse import urljoin

import trio

from .._exceptions import ConnectionClosed, MCPError, ProtocolError, TransportError
from .._jsonrpc import Envelope
from .._redact import display_url, redacted_repr
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
from ._jsonpeek import infer_info
from ._redirects import origin_of

__all__ = ["LegacySSEConnection", "SSEParameters", "SSETransport"]

logger = logging.getLogger("trio_mcp.sse")

RequestId: TypeAlias = "int | str"


class LegacySSEConnection:
    """One HTTP+SSE connection: the event stream and the endpoint messages are POSTed to.

    Its reader task runs in the transport's nursery and feeds the transport's incoming
    queue; when the stream ends, the transport's ``receive`` raises.

    Args:
        core: The HTTP machinery of the transport.
        url: The URL of the event stream.
    """

    def __init__(self, core: HTTPCore, url: str) -> None:
        self._core = core
        self._url = url
        #: The URL messages are POSTed to, once the ``endpoint`` event arrived.
        self.endpoint: str | None = None

    async def connect(self) -> None:
        """Open the event stream and wait (up to the timeout) for the ``endpoint`` event.

        Raises:
            HTTPStatusError: The GET was refused.
            ProtocolError: The ``endpoint`` event is not a URL.
            TransportError: No event stream, no ``endpoint`` event in time, or an endpoint
                on another origin.
        """
        result: str | MCPError | None = None
        with trio.move_on_after(self._core.timeout):
            result = await self._core.start(self._read_events)
        if result is None:
            raise TransportError(
                f"{display_url(self._url)} sent no endpoint event within {self._core.timeout}s"
            )
        if isinstance(result, MCPError):
            raise result
        self.endpoint = result

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

    async def _read_events(self, task_status: trio.TaskStatus[str | MCPError]) -> None:
        core = self._core
        headers = dict(core.headers)
        headers["Accept"] = ACCEPT_SSE
        headers["Cache-Control"] = "no-store"
        try:
            response = await core.open("GET", self._url, headers=headers, idempotent=True)
        except MCPError as exc:
            task_status.started(exc)
            return
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
                await core.pump_sse(response, StreamState(), core.deliver, on_event=on_event)
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
            return
        if refused:
            return
        if error is None:
            logger.info("the server ended the HTTP+SSE event stream of %s", display_url(self._url))
            core.end(None)
        else:
            core.end(
                ConnectionClosed(
                    f"the HTTP+SSE event stream of {display_url(self._url)} broke: {error}"
                )
            )

    async def send(self, data: bytes, info: MessageInfo) -> None:
        """POST one message to the endpoint; a request's POST runs as a task.

        Args:
            data: The encoded message.
            info: What the message is.
        """
        if info.method is not None and info.request_id is not None:
            await trio.lowlevel.checkpoint()
            self._core.check_open()
            name = f"trio_mcp POST {info.method}"
            self._core.spawn(info.request_id, self._post, data, info, method=info.method, name=name)
        else:
            await self._post(data, info)

    async def _post(self, data: bytes, info: MessageInfo) -> None:
        assert self.endpoint is not None
        headers = dict(self._core.headers)
        headers["Accept"] = ACCEPT_BOTH
        headers["Content-Type"] = "application/json"
        response = await self._core.open(
            "POST",
            self.endpoint,
            headers=headers,
            content=data,
            idempotent=info.idempotent,
            read_timeout=True,
        )
        await close_response(response)  # the answer arrives on the event stream


@dataclass(frozen=True, eq=False)
class SSEParameters(HTTPOptions):
    """How to reach an MCP server over the deprecated HTTP+SSE transport (2024-11-05).

    Prefer :class:`~trio_mcp.StreamableHTTPParameters`, which falls back to HTTP+SSE by
    itself; use this only for a server known to speak nothing else.

    Args:
        url: The SSE endpoint (the URL the event stream is opened at).
        headers: Extra headers sent with every HTTP request.
        auth: Any :class:`httpx.Auth`.
        client: An :class:`httpx.AsyncClient` to use; the caller owns (and closes) it.
        timeout: Seconds to connect, to send each POST, and to wait for the ``endpoint``
            event. The event stream itself has no read time limit.
        max_message_size: The largest message accepted from the server, in bytes.
        retry: Retries of failed connection attempts.
        breaker: A circuit breaker every HTTP request goes through.
        ssl_context: The TLS settings of ``https://`` connections (not with ``client``).
    """

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
    transport = SSETransport(params.url, core, LegacySSEConnection(core, params.url))
    try:
        await transport.connect()
        yield transport
    finally:
        await transport.aclose()


class SSETransport(Transport):
    """A connection over the deprecated HTTP+SSE transport. Open it with
    :meth:`SSEParameters.open_transport`.

    Args:
        url: The URL of the event stream.
        core: The HTTP machinery.
        connection: The connection to speak through.
    """

    #: Servers that speak only HTTP+SSE predate the 2026-07-28 era: never probe them.
    can_probe = False

    def __init__(self, url: str, core: HTTPCore, connection: LegacySSEConnection) -> None:
        self.modern = False
        self.protocol_version = None
        self._url = url
        self._core = core
        self._connection = connection
        self._origin = origin_of(url)
        core.fail_request = self._report_failure

    def _report_failure(self, request_id: RequestId, error: MCPError) -> None:
        self._fail_request(request_id, error)

    @property
    def era_key(self) -> str:
        """``scheme://host:port`` of the server: the key the session caches eras under."""
        return self._origin

    @property
    def origin(self) -> str:
        """The same as :attr:`era_key`."""
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
            ConnectionClosed: The event stream ended.
            HTTPStatusError: The server rejected a notification or response.
        """
        self._core.check_open()
        await self._connection.send(data, info if info is not None else infer_info(data))

    async def receive(self) -> bytes:
        """Receive the next message from the event stream.

        Raises:
            trio.EndOfChannel: The server ended the event stream.
            ConnectionClosed: The event stream broke.
        """
        return await self._core.receive()

    async def receive_message(self) -> bytes | Envelope:
        """The next message, as decoded for routing; see :meth:`receive`."""
        return await self._core.receive_message()

    def attach_reader(self, dispatch: Callable[[bytes | Envelope], None]) -> None:
        """Hand messages straight to the session while its reader is idle."""
        self._core.dispatch = dispatch

    def closed_error(self) -> MCPError:
        """Why the connection ended."""
        return self._core.closed_error()

    async def aclose(self) -> None:
        """Close the event stream and the client (if ours). Idempotent."""
        await self._core.aclose(None)
