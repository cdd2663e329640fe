"""The legacy era's session on Streamable HTTP: its id, its renewal, the GET stream, resuming.

`LegacySessionTransport` is the base of
[`StreamableHTTPTransport`][trio_mcp.transports.StreamableHTTPTransport] (``_http.py``) that
holds what the legacy (2025-03-26 .. 2025-11-25) era adds to posting messages, and what keeps
a session alive across a server restart:

* the ``Mcp-Session-Id`` from the ``initialize`` response, checked before it is echoed;
* a lost session (HTTP 404, or 400 in the words real servers use) is started anew by
  replaying ``initialize`` and ``notifications/initialized`` (`_reinitialize()`), while every
  other POST waits for the new id (`_current_session()`);
* the GET stream for server-initiated messages (`_get_stream()`), re-opened with backoff while
  the server is down (one log line per outage), at once when a request reaches it again;
* the link's failure and restore bookkeeping (`_link_failed()`, `_link_up()`);
* resuming a request's broken SSE stream with GET + ``Last-Event-ID`` (`_resume()`);
* ending the session with DELETE on close.

What it needs from the transport (posting a message, reading the answer) are the two
abstract methods `_post()` and `_read_answer()`.
"""

from __future__ import annotations

import abc
import logging
from typing import TYPE_CHECKING, Final, TypeAlias

import trio
from msgspec import UNSET

from .._exceptions import (
    CircuitOpenError,
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    TransportError,
)
from .._jsonrpc import Envelope
from .._redact import display_url
from ._base import MessageInfo, Transport
from ._headers import echo_problem
from ._http_base import ACCEPT_SSE, HTTPCore, Sink, StreamState
from ._http_errors import session_lost
from ._http_sender import close_response, content_type
from ._jsonpeek import same_id
from ._link import LinkState

if TYPE_CHECKING:
    import httpx

    from ._sse import LegacySSEConnection

__all__ = ["GET_STREAM_MAX_DELAY", "LegacySessionTransport"]

logger = logging.getLogger("trio_mcp.http")

RequestId: TypeAlias = "int | str"

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


class LegacySessionTransport(Transport):
    """The legacy session's part of
    [`StreamableHTTPTransport`][trio_mcp.transports.StreamableHTTPTransport].

    The state it uses is set by the transport's ``__init__``.
    """

    _core: HTTPCore
    _url: str
    _session_id: str | None
    _initialize: tuple[bytes, MessageInfo] | None  # the legacy initialize, replayed to renew
    _renewal: trio.Event | None  # set while a new legacy session starts
    _get_stream_ready: trio.Event  # the first GET was answered (or failed)
    _sse: LegacySSEConnection | None

    @abc.abstractmethod
    async def _post(
        self, data: bytes, info: MessageInfo, session_id: str | None, *, read_timeout: bool
    ) -> httpx.Response:
        """POST one message with ``session_id`` (no renewal, no replay)."""

    @abc.abstractmethod
    async def _read_answer(
        self, response: httpx.Response, request_id: RequestId, sink: Sink
    ) -> None:
        """Read the answer to a request (a JSON body or an SSE stream) into ``sink``."""

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

    async def _current_session(self) -> str | None:
        """The legacy session id to send, once any renewal of the session has finished."""
        if self.modern:
            return None
        while self._renewal is not None:
            await self._renewal.wait()
        return self._session_id

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
