"""Streamable HTTP, in both protocol eras, over httpx on trio.

Every message the client sends is its own HTTP POST to the MCP endpoint; the answer to a
request is a JSON body or a Server-Sent Events stream scoped to that request. Each POST of
a request runs in its own task (in the nursery the transport was opened with) and feeds
what it receives into the one ``receive`` side; a failure that belongs to a request
becomes a :class:`~trio_mcp.RequestFailed` for it and never escapes the task.

The session tells the transport which era it speaks (``modern`` / ``protocol_version``):

* modern (2026-07-28): ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and the
  ``Mcp-Param-*`` headers on every POST; no session id; a request is cancelled by closing
  its response stream (:meth:`StreamableHTTPTransport.cancel_request` returns True).
* legacy (2025-03-26 .. 2025-11-25): the ``Mcp-Session-Id`` from the ``initialize``
  response is sent on every request; after ``notifications/initialized`` a GET stream
  carries server-initiated messages; SSE streams resume with ``Last-Event-ID`` (honouring
  the server's ``retry``); an expired session (HTTP 404) is re-initialized and the
  request replayed once; the session is ended with DELETE on close.

:meth:`StreamableHTTPTransport.fallback_to_sse` switches an open transport to the
deprecated 2024-11-05 HTTP+SSE transport (``_sse.py``) for servers that speak only that.

httpx is imported only when a transport is opened, so ``import trio_mcp`` stays light.
"""

from __future__ import annotations

import email.utils
import logging
import math
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import (
    AbstractAsyncContextManager,
    asynccontextmanager,
    nullcontext,
    suppress,
)
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias
from urllib.parse import urlsplit

import msgspec
import trio

from .._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    MessageTooLargeError,
    TransportError,
)
from .._resilience import Backoff, CircuitBreaker, RetryPolicy
from ._base import MessageInfo, RequestFailed, Transport
from ._headers import NAME_PARAMS, encode_header_value, request_name

if TYPE_CHECKING:
    import httpx

    from ._sse import LegacySSEConnection

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "DEFAULT_RECONNECT_POLICY",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamableHTTPParameters",
    "StreamableHTTPTransport",
]

logger = logging.getLogger("trio_mcp.http")

RequestId: TypeAlias = "int | str"

#: The default maximum size of one incoming message (64 MiB).
DEFAULT_MAX_MESSAGE_SIZE: Final = 64 * 1024 * 1024

#: How SSE streams are re-opened when no ``retry`` policy is given: three attempts in a
#: row without progress, 1 s apart and doubling (a server's ``retry`` field overrides the
#: delay).
DEFAULT_RECONNECT_POLICY: Final = RetryPolicy(
    max_attempts=3, backoff=Backoff(initial=1.0, multiplier=2.0, maximum=30.0, jitter=0.1)
)

ACCEPT_BOTH: Final = "application/json, text/event-stream"
ACCEPT_SSE: Final = "text/event-stream"
#: How much of an HTTP error body is kept in :class:`~trio_mcp.HTTPStatusError`.
ERROR_BODY_LIMIT: Final = 64 * 1024
#: How long each graceful closing step (waiting for tasks, DELETE, closing the client) may take.
CLOSE_TIMEOUT: Final = 5.0

_INITIALIZED: Final = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
_EOL: Final = re.compile(rb"\r\n|\r|\n")
_BOM: Final = b"\xef\xbb\xbf"
# Bytes of an oversized SSE event kept to find which request it answered.
_OVERSIZED_PREFIX: Final = 4096


# -- Server-Sent Events --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event of a ``text/event-stream``.

    Attributes:
        event: The event type (``"message"`` unless the server named another).
        data: The event's data lines joined with ``\\n``, as UTF-8 bytes.
        id: The last event id at the time of this event (``None`` if none was set).
        too_large: When the data exceeded the decoder's limit, its size in bytes (then
            ``data`` holds only the first few KiB); ``None`` otherwise.
    """

    event: str = "message"
    data: bytes = b""
    id: str | None = None
    too_large: int | None = None


class SSEDecoder:
    """An incremental ``text/event-stream`` parser (WHATWG HTML, section 9.2.6) with a size cap.

    Feed it byte chunks as they arrive; it returns the events completed by each chunk.
    Lines may end in CRLF, CR or LF; comment lines (``:``, used for keep-alive) are
    ignored; ``id`` (without NUL) sets :attr:`last_event_id`; ``retry`` (ASCII digits only)
    sets :attr:`retry`. An event whose data grows past ``max_event_size`` is not
    buffered: it is reported with :attr:`ServerSentEvent.too_large` set. An incomplete
    event at the end of the stream is discarded, as the standard says.

    Args:
        max_event_size: The largest event data accepted, in bytes.
        last_event_id: The last event id seen before (when a stream is resumed).
    """

    def __init__(
        self, max_event_size: int = DEFAULT_MAX_MESSAGE_SIZE, *, last_event_id: str | None = None
    ) -> None:
        self.max_event_size = max_event_size
        #: The id of the last dispatched event (``id`` lines persist across events).
        self.last_event_id: str | None = last_event_id
        #: The reconnection time the server asked for, in milliseconds.
        self.retry: int | None = None
        self._buffer = bytearray()
        self._scanned = 0
        self._at_start = True
        self._skipping_line = False
        self._event = ""
        self._data = bytearray()
        self._has_data = False
        self._id_buffer: str | None = last_event_id
        self._too_large: int | None = None
        self._line_limit = max_event_size + 64

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Parse the next chunk of the stream.

        Args:
            chunk: Bytes exactly as received (any split is fine).

        Returns:
            The events completed by this chunk, in order.
        """
        buffer = self._buffer
        buffer += chunk
        if self._at_start:
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                return []
            if buffer.startswith(_BOM):
                del buffer[: len(_BOM)]
            self._at_start = False
        events: list[ServerSentEvent] = []
        line_start = 0
        scan = self._scanned
        while True:
            match = _EOL.search(buffer, scan)
            if match is None:
                scan = len(buffer)
                break
            if match.end() == len(buffer) and match.group() == b"\r":
                scan = match.start()  # a CR at the end may be the first half of CRLF
                break
            if self._skipping_line:
                self._skipping_line = False
            else:
                event = self._line(bytes(buffer[line_start : match.start()]))
                if event is not None:
                    events.append(event)
            line_start = scan = match.end()
        del buffer[:line_start]
        self._scanned = scan - line_start
        if len(buffer) > self._line_limit:
            # An endless line: drop it (and the event, unless it is a comment) unbuffered.
            if not buffer.startswith(b":"):
                self._mark_too_large(len(buffer), bytes(buffer[:_OVERSIZED_PREFIX]))
            buffer.clear()
            self._scanned = 0
            self._skipping_line = True
        return events

    def _mark_too_large(self, size: int, prefix: bytes) -> None:
        if self._too_large is None:
            self._too_large = len(self._data) + size
            kept = self._data[:_OVERSIZED_PREFIX]
            if len(kept) < _OVERSIZED_PREFIX:
                value = prefix.partition(b":")[2]
                if self._has_data:
                    kept += b"\n"
                kept += value[1:] if value.startswith(b" ") else value
            self._data = bytearray(kept[:_OVERSIZED_PREFIX])
        else:
            self._too_large += size

    def _line(self, line: bytes) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            return None
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            if self._too_large is not None:
                self._too_large += len(value) + 1
                return None
            size = len(self._data) + len(value) + (1 if self._has_data else 0)
            if size > self.max_event_size:
                self._mark_too_large(size - len(self._data), b"data:" + value)
                return None
            if self._has_data:
                self._data += b"\n"
            self._data += value
            self._has_data = True
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id_buffer = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self.retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        self.last_event_id = self._id_buffer
        event_id = self._id_buffer or None
        event_type = self._event or "message"
        result: ServerSentEvent | None = None
        if self._too_large is not None:
            result = ServerSentEvent(event_type, bytes(self._data), event_id, self._too_large)
        elif self._has_data:
            result = ServerSentEvent(event_type, bytes(self._data), event_id)
        self._event = ""
        self._data = bytearray()
        self._has_data = False
        self._too_large = None
        return result


# -- message helpers -------------------------------------------------------------------------


class _Peek(msgspec.Struct):
    """The members of a JSON-RPC message that routing needs."""

    id: Any = None
    method: Any = None
    error: Any = None


class _WithParams(msgspec.Struct):
    params: dict[str, Any] | None = None


_peek_decoder: Final = msgspec.json.Decoder(_Peek)
_params_decoder: Final = msgspec.json.Decoder(_WithParams)
_batch_decoder: Final = msgspec.json.Decoder(list[msgspec.Raw])


def split_batch(data: bytes) -> list[bytes]:
    """Split a JSON-RPC batch (a JSON array, 2025-03-26) into single messages."""
    stripped = data.lstrip()
    if not stripped:
        return []
    if stripped[:1] != b"[":
        return [data]
    try:
        return [bytes(raw) for raw in _batch_decoder.decode(data)]
    except msgspec.DecodeError:
        return [data]  # let the session report the undecodable message


def peek(data: bytes) -> _Peek:
    """Decode the routing members of one message (all ``None`` if it is not JSON)."""
    try:
        return _peek_decoder.decode(data)
    except msgspec.DecodeError:
        return _Peek()


def is_response_to(data: bytes, request_id: RequestId) -> bool:
    """Whether ``data`` is the response (result or error) to ``request_id``."""
    message = peek(data)
    return message.method is None and _same_id(message.id, request_id)


def _same_id(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


_JSON_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"')
_JSON_SCALAR: Final = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_JSON_SPACE: Final = re.compile(rb"[ \t\r\n]*")


def _skip_json_value(text: bytes, pos: int) -> int | None:
    """Return the end of the JSON value at ``pos``, or None if ``text`` ends first."""
    if text[pos : pos + 1] == b'"':
        match = _JSON_STRING.match(text, pos)
        return match.end() if match else None
    if text[pos : pos + 1] not in (b"{", b"["):
        match = _JSON_SCALAR.match(text, pos)
        return match.end() if match else None
    depth = 0
    while pos < len(text):
        char = text[pos : pos + 1]
        if char == b'"':
            match = _JSON_STRING.match(text, pos)
            if match is None:
                return None
            pos = match.end()
            continue
        if char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    return None


def oversized_response_id(prefix: bytes) -> RequestId | None:
    """Find which request an oversized message answers, from its first bytes.

    Scans the top-level members of the (truncated) JSON object: it is a response when a
    ``result`` or ``error`` member starts before the prefix ends and there is no
    ``method``; its ``id`` must come before the prefix ends too.

    Returns:
        The id of the request the message answers, or ``None`` if that is not known.
    """
    found: list[RequestId] = []
    is_response = False
    pos = _JSON_SPACE.match(prefix, 0).end()  # type: ignore[union-attr]
    if prefix[pos : pos + 1] != b"{":
        return None
    pos += 1
    while True:
        pos = _JSON_SPACE.match(prefix, pos).end()  # type: ignore[union-attr]
        key_match = _JSON_STRING.match(prefix, pos)
        if key_match is None:
            break
        key = key_match.group()[1:-1]
        pos = _JSON_SPACE.match(prefix, key_match.end()).end()  # type: ignore[union-attr]
        if prefix[pos : pos + 1] != b":":
            break
        pos = _JSON_SPACE.match(prefix, pos + 1).end()  # type: ignore[union-attr]
        if key == b"method":
            return None
        if key in (b"result", b"error"):
            is_response = True
        end = _skip_json_value(prefix, pos)
        if end is None:
            break
        if key == b"id":
            value: object = msgspec.json.decode(prefix[pos:end])
            if isinstance(value, (int, str)) and not isinstance(value, bool):
                found.append(value)
        pos = _JSON_SPACE.match(prefix, end).end()  # type: ignore[union-attr]
        if prefix[pos : pos + 1] != b",":
            break
        pos += 1
    return found[0] if is_response and found else None


def origin_of(url: str) -> str:
    """The era-cache key of a URL: ``scheme://host:port`` with the default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(scheme, 0)
    return f"{scheme}://{host}:{port}"


def content_type(response: httpx.Response) -> str:
    """The media type of a response, lowercase, without parameters."""
    value: str = response.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


def parse_retry_after(value: str | None) -> float | None:
    """Parse a ``Retry-After`` header (delay seconds or an HTTP date) into seconds."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def status_error(response: httpx.Response, body: bytes) -> HTTPStatusError:
    """Build the :class:`~trio_mcp.HTTPStatusError` for a failed response.

    The error gets a ``retry_after`` attribute: the server's ``Retry-After`` in seconds, or
    ``None``; :class:`~trio_mcp.RetryPolicy` honours it.
    """
    error = HTTPStatusError(
        response.status_code, body.decode("utf-8", "replace"), str(response.request.url)
    )
    error.retry_after = parse_retry_after(response.headers.get("retry-after"))
    return error


def convert_httpx_error(exc: Exception, url: str, doing: str) -> MCPError:
    """Turn an httpx exception into the library's own (the caller raises it ``from exc``)."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return TransportError(f"timed out {doing} {url}: {type(exc).__name__}")
    if isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return TransportError(f"could not connect to {url}: {exc}")
    return ConnectionClosed(f"the connection to {url} broke while {doing} it: {exc!r}")


def httpx_errors() -> tuple[type[Exception], ...]:
    """The exceptions a request or a response stream may raise for a network failure."""
    import httpx

    return (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, OSError)


def _not_delivered(exc: MCPError) -> bool:
    """Whether a failed attempt surely did not reach the server (so any request may retry)."""
    import httpx

    if isinstance(exc, HTTPStatusError):
        return exc.status_code in (429, 503)
    cause = exc.__cause__
    return isinstance(cause, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


# -- the shared plumbing -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _End:
    error: MCPError | None  # None: the server ended the stream cleanly


_Item: TypeAlias = "bytes | RequestFailed | _End"


@dataclass(slots=True)
class StreamState:
    """What a reader knows about an SSE stream, for resuming it."""

    last_event_id: str | None = None
    retry_ms: int | None = None
    progress: int = 0


class HTTPCore:
    """What every HTTP transport shares: the client, the incoming channel, the tasks.

    :class:`StreamableHTTPTransport` and the HTTP+SSE transport are built on it.
    """

    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        own_client: bool,
        headers: Mapping[str, str] | None,
        auth: httpx.Auth | None,
        timeout: float,
        max_message_size: int,
        retry: RetryPolicy | None,
        breaker: CircuitBreaker | None,
        nursery: trio.Nursery,
    ) -> None:
        import httpx

        self.client = client
        self.own_client = own_client
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.max_message_size = max_message_size
        self.retry = retry
        self.reconnect = retry or DEFAULT_RECONNECT_POLICY
        self.breaker = breaker
        self.nursery = nursery
        self._auth_kwargs: dict[str, Any] = {"auth": auth} if auth is not None else {}
        self._stream_timeout = httpx.Timeout(timeout, read=None)
        self._short_timeout = httpx.Timeout(timeout)
        self._send, self._receive = trio.open_memory_channel[_Item](math.inf)
        self.request_scopes: dict[RequestId, trio.CancelScope] = {}
        self._scopes: set[trio.CancelScope] = set()
        self._running = 0
        self._idle: trio.Event | None = None
        self.closed = False
        self.ended: MCPError | None = None  # why the server ended the connection
        self._end: _End | None = None

    # incoming side

    def deliver(self, item: bytes | RequestFailed) -> None:
        """Queue a message (or a request's failure) for :meth:`receive`."""
        if self.closed or self._end is not None:
            return
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            self._send.send_nowait(item)

    def fail(self, request_id: RequestId, error: MCPError) -> None:
        """Fail one request: :meth:`receive` returns a :class:`RequestFailed` for it."""
        self.deliver(RequestFailed(request_id, error))

    def end(self, error: MCPError | None) -> None:
        """The server ended the connection: :meth:`receive` raises after queued messages."""
        if self.closed or self.ended is not None:
            return
        self.ended = error if error is not None else ConnectionClosed("the server ended the stream")
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            self._send.send_nowait(_End(error))

    async def receive(self) -> bytes | RequestFailed:
        """The next message or request failure; see :meth:`Transport.receive`."""
        if self._end is None:
            item = await self._receive.receive()
            if not isinstance(item, _End):
                return item
            self._end = item
        if self._end.error is None:
            raise trio.EndOfChannel
        raise self._end.error

    def closed_error(self) -> MCPError:
        """Why the connection ended."""
        if self.ended is not None:
            return self.ended
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
        name: str = "trio_mcp http",
    ) -> None:
        """Run ``fn(*args)`` in the nursery; its failure fails ``request_id`` (or is logged)."""
        scope = trio.CancelScope()
        try:
            self.nursery.start_soon(self._run, scope, request_id, fn, args, name=name)
        except RuntimeError as exc:  # the nursery is closed
            raise trio.ClosedResourceError(
                "the nursery this transport was opened with has exited"
            ) from exc
        if request_id is not None:
            self.request_scopes[request_id] = scope
        self._scopes.add(scope)
        self._running += 1

    async def _run(
        self,
        scope: trio.CancelScope,
        request_id: RequestId | None,
        fn: Callable[..., Awaitable[None]],
        args: tuple[Any, ...],
    ) -> None:
        try:
            with scope:
                try:
                    await fn(*args)
                except MCPError as exc:
                    if request_id is not None:
                        self.fail(request_id, exc)
                    else:
                        logger.warning("HTTP background task failed: %s", exc)
                except Exception as exc:  # a bug: never let it into the user's nursery
                    logger.exception("trio_mcp HTTP task failed")
                    if request_id is not None:
                        error = TransportError(f"internal error in the HTTP transport: {exc!r}")
                        error.__cause__ = exc
                        self.fail(request_id, error)
        finally:
            if request_id is not None and self.request_scopes.get(request_id) is scope:
                del self.request_scopes[request_id]
            self._scopes.discard(scope)
            self._task_done()

    async def start(self, fn: Callable[[trio.TaskStatus[Any]], Awaitable[None]]) -> Any:
        """Start ``fn`` in the nursery like :meth:`trio.Nursery.start`, tracked for closing.

        ``fn`` must call ``task_status.started`` before it returns, and must not raise
        after that.
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

    # HTTP

    async def open(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        content: bytes | None = None,
        idempotent: bool = False,
        retry: bool = True,
        read_timeout: bool = False,
    ) -> httpx.Response:
        """Send one HTTP request and return the streaming response (the caller closes it).

        Connection failures are retried per the retry policy (any request: nothing
        reached the server); HTTP 5xx/408/429 only for idempotent requests (and 429/503
        for any). Each attempt goes through the circuit breaker, where connection
        failures and 5xx/408/429 count as failures.

        Raises:
            HTTPStatusError: The final status was 400 or more (the body is read, truncated).
            TransportError: The request could not be made.
            CircuitOpenError: The circuit breaker refused the request.
        """
        policy = self.retry if retry else None
        attempt = 0
        while True:
            attempt += 1
            delay: float | None = None
            try:
                return await self._open_once(method, url, headers, content, read_timeout)
            except MCPError as exc:
                if policy is not None and (idempotent or _not_delivered(exc)):
                    delay = policy.next_delay(attempt, exc)
                if delay is None:
                    raise
            logger.debug("retrying %s %s in %.3fs (attempt %d)", method, url, delay, attempt + 1)
            await trio.sleep(delay)

    async def _open_once(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None,
        read_timeout: bool,
    ) -> httpx.Response:
        guard = self.breaker.guard() if self.breaker is not None else nullcontext()
        with guard:
            request = self.client.build_request(
                method,
                url,
                headers=headers,
                content=content,
                timeout=self._short_timeout if read_timeout else self._stream_timeout,
            )
            try:
                response = await self.client.send(request, stream=True, **self._auth_kwargs)
            except MCPError:
                raise  # e.g. from an auth flow
            except httpx_errors() as exc:
                raise convert_httpx_error(exc, url, f"sending {method} to") from exc
            except Exception as exc:  # a custom transport or auth flow failed
                raise TransportError(f"sending {method} to {url} failed: {exc!r}") from exc
            status = response.status_code
            if status >= 500 or status in (408, 429):
                raise await self._status_error(response)  # counts against the breaker
        if status >= 300:
            raise await self._status_error(response)
        return response

    async def _status_error(self, response: httpx.Response) -> HTTPStatusError:
        try:
            body = await self.read_body(response, ERROR_BODY_LIMIT, truncate=True)
        except MCPError:
            body = b""
        finally:
            await response.aclose()
        return status_error(response, body)

    async def consume(
        self, response: httpx.Response, on_chunk: Callable[[bytes], bool], doing: str
    ) -> bool:
        """Feed a response's body to ``on_chunk`` until it returns True or the body ends.

        To stop early, a cancel scope around the iteration is cancelled, so the
        cancellation unwinds httpx's chain of async generators from the innermost one and
        none is left unfinished. An :class:`~trio_mcp.MCPError` from ``on_chunk`` stops
        the reading the same way and is re-raised.

        Returns:
            True if ``on_chunk`` stopped the reading, False if the body ended.

        Raises:
            ConnectionClosed: The connection broke while reading.
        """
        url = str(response.request.url)
        stop = False
        failure: MCPError | None = None
        with trio.CancelScope() as scope:
            try:
                async for chunk in response.aiter_bytes():
                    if stop:
                        continue  # until the cancellation lands
                    try:
                        stop = on_chunk(chunk)
                    except MCPError as exc:
                        failure, stop = exc, True
                    if stop:
                        scope.cancel()
            except httpx_errors() as exc:
                raise convert_httpx_error(exc, url, doing) from exc
        if failure is not None:
            raise failure
        return stop

    async def read_body(
        self, response: httpx.Response, limit: int | None = None, *, truncate: bool = False
    ) -> bytes:
        """Read a response body, at most ``limit`` bytes (default: the message size limit).

        Raises:
            MessageTooLargeError: The body is larger than the limit (unless ``truncate``).
            ConnectionClosed: The connection broke while reading.
        """
        cap = self.max_message_size if limit is None else limit
        declared = response.headers.get("content-length", "")
        if not truncate and declared.isdigit() and int(declared) > cap:
            raise MessageTooLargeError(int(declared), cap)
        body = bytearray()

        def on_chunk(chunk: bytes) -> bool:
            body.extend(chunk)
            if len(body) <= cap:
                return False
            if truncate:
                del body[cap:]
                return True
            raise MessageTooLargeError(len(body), cap)

        await self.consume(response, on_chunk, "reading the response from")
        return bytes(body)

    async def pump_sse(
        self,
        response: httpx.Response,
        state: StreamState,
        sink: Callable[[bytes], None],
        request_id: RequestId | None = None,
        on_event: Callable[[ServerSentEvent], bool] | None = None,
    ) -> bool:
        """Read an SSE stream, handing each JSON-RPC message to ``sink``.

        Only ``message`` events with data carry messages (priming events with empty data
        are skipped; other event types go to ``on_event``, which returns True to stop
        reading). Event ids and ``retry`` go into ``state``. An oversized event fails
        ``request_id`` with :class:`~trio_mcp.MessageTooLargeError`; on a stream of no
        request, the request it answered (if recognisable) is failed, otherwise it is
        logged and dropped.

        Returns:
            True once the response to ``request_id`` (or ``on_event``) ended the reading,
            False when the stream ended.

        Raises:
            MessageTooLargeError: An event of ``request_id``'s stream was too large.
            ConnectionClosed: The connection broke.
        """
        decoder = SSEDecoder(self.max_message_size, last_event_id=state.last_event_id)

        def on_chunk(chunk: bytes) -> bool:
            done = False
            try:
                for event in decoder.feed(chunk):
                    state.progress += 1
                    if event.too_large is not None:
                        self._oversized(event, request_id)
                    elif event.event != "message":
                        done = (on_event is not None and on_event(event)) or done
                    elif event.data:  # (empty data: a priming event, only its id matters)
                        for message in split_batch(event.data):
                            sink(message)
                            if request_id is not None and is_response_to(message, request_id):
                                done = True
            finally:
                last_event_id = decoder.last_event_id or None
                if last_event_id != state.last_event_id:
                    state.last_event_id = last_event_id
                    state.progress += 1
                if decoder.retry is not None:
                    state.retry_ms = decoder.retry
            return done

        return await self.consume(response, on_chunk, "reading the event stream from")

    def _oversized(self, event: ServerSentEvent, request_id: RequestId | None) -> None:
        assert event.too_large is not None
        error = MessageTooLargeError(event.too_large, self.max_message_size)
        if request_id is not None:
            raise error
        answered = oversized_response_id(event.data)
        if answered is not None:
            self.fail(answered, error)
        else:
            logger.warning("dropped a message from the server's event stream: %s", error)

    async def aclose(self, before_client_close: Callable[[], Awaitable[None]] | None) -> None:
        """Cancel every task, run the graceful step, close the client. Idempotent."""
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


def make_client(client: httpx.AsyncClient | None, timeout: float) -> tuple[httpx.AsyncClient, bool]:
    """The user's client (not ours to close), or a new one (ours)."""
    if client is not None:
        return client, False
    import httpx

    return httpx.AsyncClient(timeout=httpx.Timeout(timeout, read=None), follow_redirects=True), True


class _CoreSettings(Protocol):
    """What :func:`core_for` reads: the fields every HTTP parameters object shares."""

    @property
    def client(self) -> httpx.AsyncClient | None: ...
    @property
    def headers(self) -> Mapping[str, str] | None: ...
    @property
    def auth(self) -> httpx.Auth | None: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_message_size(self) -> int: ...
    @property
    def retry(self) -> RetryPolicy | None: ...
    @property
    def breaker(self) -> CircuitBreaker | None: ...


def core_for(params: _CoreSettings, nursery: trio.Nursery) -> HTTPCore:
    """The shared HTTP machinery for a parameters object (Streamable HTTP or HTTP+SSE)."""
    client, own = make_client(params.client, params.timeout)
    return HTTPCore(
        client=client,
        own_client=own,
        headers=params.headers,
        auth=params.auth,
        timeout=params.timeout,
        max_message_size=params.max_message_size,
        retry=params.retry,
        breaker=params.breaker,
        nursery=nursery,
    )


def infer_info(data: bytes) -> MessageInfo:
    """Describe a message the session sent without a :class:`MessageInfo`."""
    message = peek(data)
    method = message.method if isinstance(message.method, str) else None
    request_id = message.id if isinstance(message.id, (int, str)) else None
    if method is None:
        return MessageInfo(None)
    return MessageInfo(method, request_id)


# -- Streamable HTTP -----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StreamableHTTPParameters:
    """How to reach an MCP server over Streamable HTTP (both eras, with HTTP+SSE fallback).

    Args:
        url: The MCP endpoint, e.g. ``https://example.com/mcp``.
        headers: Extra headers sent with every HTTP request (e.g. an API key).
        auth: Any :class:`httpx.Auth` (OAuth support is planned).
        client: An :class:`httpx.AsyncClient` to use (for TLS ``verify``, proxies,
            transports, ...). The caller owns it: it is not closed with the transport.
            By default a client is created, and closed with the transport.
        timeout: Seconds to connect, to write a request, and to get a pooled connection;
            also to get the answer to a notification. Reading a response stream has no
            httpx time limit: bound requests with the session's timeouts.
        max_message_size: The largest message accepted from the server, in bytes; a
            larger one fails its request with :class:`~trio_mcp.MessageTooLargeError`.
        retry: Retries of failed connection attempts (and of 5xx answers to idempotent
            requests), and the schedule for re-opening broken SSE streams. ``None``: no
            retries of requests, and :data:`DEFAULT_RECONNECT_POLICY` for streams.
        breaker: A circuit breaker every HTTP request goes through.
        sse_fallback: Whether the session may fall back to the deprecated HTTP+SSE
            transport (2024-11-05) when the server rejects ``initialize``.
    """

    url: str
    _: KW_ONLY
    headers: Mapping[str, str] | None = None
    auth: httpx.Auth | None = None
    client: httpx.AsyncClient | None = None
    timeout: float = 30.0
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    retry: RetryPolicy | None = None
    breaker: CircuitBreaker | None = field(default=None, repr=False)
    sse_fallback: bool = True

    def open_transport(
        self, nursery: trio.Nursery
    ) -> AbstractAsyncContextManager[StreamableHTTPTransport]:
        """Open the transport. Nothing is sent until the session sends its first message.

        Args:
            nursery: Where each request's stream (and the legacy GET stream) runs as a task.

        Returns:
            An async context manager yielding the transport; leaving it closes the
            transport (ending a legacy session with DELETE).
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
    :meth:`StreamableHTTPParameters.open_transport`.

    Attributes:
        modern: Set by the session: True for 2026-07-28 (per-request headers), False for
            the legacy (``initialize``) era.
        protocol_version: Set by the session; sent as ``MCP-Protocol-Version``.
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
        self._reinit_lock = trio.Lock()
        self._get_stream_started = False
        self._get_stream_ready = trio.Event()  # the first GET was answered (or failed)
        self._sse: LegacySSEConnection | None = None

    @property
    def origin(self) -> str:
        """``scheme://host:port`` of the endpoint: the key the session caches eras under."""
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
        """Whether :meth:`fallback_to_sse` switched this transport to HTTP+SSE."""
        return self._sse is not None

    # -- sending ---------------------------------------------------------------------------

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Send one message as an HTTP POST.

        A request's POST runs as a task: its answer (or a :class:`RequestFailed`) arrives
        through :meth:`receive`. A notification or response is posted before this
        returns.

        Raises:
            trio.ClosedResourceError: The transport was closed.
            HTTPStatusError: The server rejected a notification or response.
            TransportError: A notification or response could not be delivered.
        """
        self._core.check_open()
        if info is None:
            info = infer_info(data)
        if self._sse is not None:
            await self._sse.send(data, info)
            return
        if info.method is not None and info.request_id is not None:
            if info.method == "initialize" and not self.modern:
                self._initialize = (data, info)
            self._core.spawn(
                info.request_id, self._post_request, data, info, name=f"trio_mcp POST {info.method}"
            )
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
            # may take a late GET for a reconnection): let it be answered before going on.
            with trio.move_on_after(self._params.timeout):
                await self._get_stream_ready.wait()

    def _headers(self, info: MessageInfo, session_id: str | None) -> dict[str, str]:
        headers = dict(self._core.headers)
        headers["Accept"] = ACCEPT_BOTH
        headers["Content-Type"] = "application/json"
        legacy_initialize = not self.modern and info.method == "initialize"
        if self.protocol_version and not legacy_initialize:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.modern:
            if info.method is not None:
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
        except (msgspec.DecodeError, msgspec.ValidationError):
            return info
        name = request_name(method, params)
        if name is None:
            return info
        return MessageInfo(info.method, info.request_id, name, info.headers, info.idempotent)

    async def _post_request(self, data: bytes, info: MessageInfo, replayed: bool = False) -> None:
        """POST a request and feed its answer into the incoming channel (runs as a task)."""
        request_id = info.request_id
        assert request_id is not None
        info = self._fill_name(data, info)
        session_id = None if self.modern else self._session_id
        try:
            response = await self._core.open(
                "POST",
                self._url,
                headers=self._headers(info, session_id),
                content=data,
                idempotent=info.idempotent,
            )
        except HTTPStatusError as exc:
            if self._session_expired(exc, session_id, info, replayed):
                assert session_id is not None
                await self._reinitialize(session_id)
                await self._post_request(data, info, replayed=True)
                return
            raise
        try:
            if info.method == "initialize" and not self.modern:
                self._take_session_id(response)
            await self._read_answer(response, request_id, self._core.deliver)
        finally:
            await response.aclose()

    async def _post_message(self, data: bytes, info: MessageInfo, replayed: bool = False) -> None:
        """POST a notification or response; the server answers 202 Accepted."""
        session_id = None if self.modern else self._session_id
        try:
            response = await self._core.open(
                "POST",
                self._url,
                headers=self._headers(info, session_id),
                content=data,
                read_timeout=True,
            )
        except HTTPStatusError as exc:
            if self._session_expired(exc, session_id, info, replayed):
                assert session_id is not None
                await self._reinitialize(session_id)
                await self._post_message(data, info, replayed=True)
                return
            raise
        await response.aclose()

    def _session_expired(
        self, exc: HTTPStatusError, session_id: str | None, info: MessageInfo, replayed: bool
    ) -> bool:
        return (
            exc.status_code == 404
            and session_id is not None
            and not replayed
            and not self.modern
            and info.method != "initialize"
        )

    def _take_session_id(self, response: httpx.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id is None:
            return
        if not session_id or not all(0x21 <= ord(c) <= 0x7E for c in session_id):
            logger.warning("ignoring a malformed Mcp-Session-Id from %s", self._url)
            return
        self._session_id = session_id

    async def _read_answer(
        self, response: httpx.Response, request_id: RequestId, sink: Callable[[bytes], None]
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
            messages = split_batch(body)
            for message in messages:
                sink(message)
            if not any(is_response_to(message, request_id) for message in messages):
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
        self, response: httpx.Response, request_id: RequestId, sink: Callable[[bytes], None]
    ) -> None:
        state = StreamState()
        broken: ConnectionClosed | None = None
        try:
            if await self._core.pump_sse(response, state, sink, request_id):
                return
        except ConnectionClosed as exc:
            broken = exc
        await response.aclose()
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
        self,
        request_id: RequestId,
        state: StreamState,
        sink: Callable[[bytes], None],
        cause: MCPError | None,
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
                    headers=self._stream_headers(self._session_id, state.last_event_id),
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
                await response.aclose()
            if state.progress > progress:
                attempt = 0

    async def _get_stream(self) -> None:
        """Keep the legacy GET stream for server-initiated messages open (runs as a task)."""
        policy = self._core.reconnect
        state = StreamState()
        state_session = self._session_id
        attempt = 0
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
                    logger.debug("%s offers no GET stream (HTTP 405)", self._url)
                    return
                if exc.status_code == 404 and session_id is not None:
                    await self._reinitialize(session_id)
                else:
                    error = exc
            except TransportError as exc:
                error = exc
            else:
                try:
                    if content_type(response) != "text/event-stream":
                        logger.info(
                            "%s answered the GET for server messages with %s; not listening",
                            self._url,
                            content_type(response) or "no content type",
                        )
                        return
                    await self._core.pump_sse(response, state, self._core.deliver)
                except ConnectionClosed as exc:
                    error = exc
                finally:
                    await response.aclose()
            if state.progress > progress:
                attempt = 0
            attempt += 1
            retryable = error is None or policy.should_retry(error)
            if attempt >= policy.max_attempts or not retryable:
                logger.warning(
                    "the stream for server-initiated messages from %s closed and is not "
                    "re-opened after %d attempt(s)%s",
                    self._url,
                    attempt,
                    f": {error}" if error is not None else "",
                )
                return
            await trio.sleep(self._reconnect_delay(state, attempt))

    async def _reinitialize(self, expired: str) -> None:
        """Start a new legacy session after the server answered 404 to ``expired``.

        Replays the ``initialize`` request the session sent (its answer is consumed here)
        and ``notifications/initialized``; concurrent callers wait for one renewal.
        """
        async with self._reinit_lock:
            if self._session_id != expired:
                return  # another task already started a new session
            if self._initialize is None:
                raise TransportError(
                    f"the server ended session {expired!r} (HTTP 404) and no initialize "
                    "request is known to start a new one"
                )
            logger.warning(
                "the server at %s ended MCP session %r (HTTP 404); starting a new session",
                self._url,
                expired,
            )
            self._session_id = None
            data, info = self._initialize
            assert info.request_id is not None
            response = await self._core.open(
                "POST", self._url, headers=self._headers(info, None), content=data
            )
            answers: list[bytes] = []
            try:
                self._take_session_id(response)
                await self._read_answer(response, info.request_id, answers.append)
            finally:
                await response.aclose()
            for answer in answers:
                message = peek(answer)
                if _same_id(message.id, info.request_id) and message.error is not None:
                    shown = answer[:300].decode("utf-8", "replace")
                    raise TransportError(f"starting a new session failed: {shown}")
            await self._post_message(
                _INITIALIZED, MessageInfo("notifications/initialized"), replayed=True
            )

    # -- receiving, cancelling, closing --------------------------------------------------

    async def receive(self) -> bytes | RequestFailed:
        """Receive the next message from any response stream, or a request's failure.

        Raises:
            trio.EndOfChannel: The HTTP+SSE event stream (after a fallback) ended cleanly.
            ConnectionClosed: The HTTP+SSE event stream broke.
            trio.ClosedResourceError: The transport was closed.
        """
        return await self._core.receive()

    def cancel_request(self, request_id: RequestId) -> bool:
        """Cancel a request by closing its response stream.

        In the modern era the closed stream is the cancellation signal. In the legacy era
        a closed stream means nothing to the server, so the stream is closed only to free
        the connection, and the session must still send ``notifications/cancelled``.

        Returns:
            True in the modern era, False in the legacy era and over HTTP+SSE.
        """
        if self._sse is not None:
            return False
        scope = self._core.request_scopes.get(request_id)
        if scope is not None:
            scope.cancel()
        return self.modern

    async def fallback_to_sse(self) -> bool:
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
        from ._sse import LegacySSEConnection

        connection = LegacySSEConnection(self._core, self._url)
        try:
            await connection.connect()
        except MCPError as exc:
            logger.info("%s does not speak the HTTP+SSE transport either: %s", self._url, exc)
            return False
        logger.info("%s speaks the deprecated HTTP+SSE transport; using it", self._url)
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
        await self._core.aclose(self._delete_session)

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
            await response.aclose()
        except MCPError as exc:
            logger.debug("ending session %r with DELETE failed: %s", session_id, exc)
        else:
            logger.debug("ended session %r with DELETE", session_id)
