"""Reconnecting a WebSocket transport after its connection broke (a server restart, a crash).

`WebSocketReconnection` is the base of
[`WebSocketTransport`][trio_mcp.transports.WebSocketTransport] (``_websocket.py``, the
connection: opening it, sending, receiving, closing) that holds what keeps the transport up
across a broken connection:

* the close-code policy: which closes are worth reconnecting after (`reconnects_after()`),
  and the error each close gives (`WebSocketReconnection._closed_error_from()`);
* failing the requests left waiting and starting one reconnection (`_broken()`);
* re-opening the connection on the ``reconnect`` backoff until it works, the server refuses
  for good or the transport closes (`_reconnect()`);
* replaying a legacy session's ``initialize`` and ``notifications/initialized`` on the new
  connection, keeping what the server sent before the answer (`_renew()`).

The schedule, the requests left waiting and the replayed notification are shared with
HTTP+SSE (``_reconnect.py``). What the moved part needs from the transport is described by
two small Protocols (`ReconnectSettings`, `ReconnectingConnection`) and two abstract methods
(`_open()`, `_start_writer()`), so this module imports nothing of ``_websocket.py``.
"""

from __future__ import annotations

import abc
import logging
from collections import deque
from typing import TYPE_CHECKING, Generic, Protocol, TypeAlias, TypeVar

import trio

from .._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    MessageTooLargeError,
    TransportError,
)
from .._redact import display_url
from ._base import Transport
from ._jsonpeek import routed, same_id
from ._reconnect import INITIALIZED, Outstanding, Refused, refusal, renew_until_done

if TYPE_CHECKING:
    import trio_websocket

    from .._resilience import Backoff

__all__ = [
    "ReconnectSettings",
    "ReconnectingConnection",
    "WebSocketReconnection",
    "reconnects_after",
]

logger = logging.getLogger("trio_mcp.websocket")

RequestId: TypeAlias = "int | str"

_MESSAGE_TOO_BIG = 1009
_RECONNECT_CODES = frozenset({1001, 1005, 1006, 1011, 1012, 1013, 1014})
"""The closes worth reconnecting after: going away (a server shutting down), none received (a crash,
a dropped connection), internal error, service restart, try again later, bad gateway. Any other
(1000: the server ended the session; 1009: a message over our limit; a policy or protocol violation)
ends the connection as before."""
_EARLY_LIMIT = 64
"""How many messages received before the answer to a replayed ``initialize`` are kept."""


def reconnects_after(reason: trio_websocket.CloseReason | None) -> bool:
    """Whether a connection closed for ``reason`` is worth re-opening (a restart, a crash)."""
    return reason is None or reason.code in _RECONNECT_CODES


class ReconnectSettings(Protocol):
    """What reconnecting reads of
    [`WebSocketParameters`][trio_mcp.transports.WebSocketParameters]."""

    @property
    def url(self) -> str: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_message_size(self) -> int: ...
    @property
    def reconnect(self) -> Backoff | None: ...


class ReconnectingConnection(Protocol):
    """What reconnecting uses of one WebSocket connection (``_websocket._Connection``)."""

    @property
    def ws(self) -> trio_websocket.WebSocketConnection | None: ...
    async def close_stream(self) -> None: ...


ParamsT = TypeVar("ParamsT", bound=ReconnectSettings)
ConnT = TypeVar("ConnT", bound=ReconnectingConnection)


class WebSocketReconnection(Transport, Generic[ParamsT, ConnT]):
    """The reconnecting part of [`WebSocketTransport`][trio_mcp.transports.WebSocketTransport].

    The state it uses is set by the transport's ``__init__``.
    """

    _params: ParamsT
    _conn: ConnT  # the current connection
    _nursery: trio.Nursery | None
    _closed: bool
    _error: MCPError | None
    _give_up_error: ConnectionClosed | None  # reconnecting ended for good
    _reconnecting: bool
    _reconnected: trio.Event  # set when the current reconnection ends
    _reconnect_scope: trio.CancelScope | None
    _initialize: tuple[str, RequestId] | None  # the session's, to replay
    _initialized: bool
    _outstanding: Outstanding
    _early: deque[str | bytes]  # received while replaying initialize

    @abc.abstractmethod
    async def _open(self, nursery: trio.Nursery) -> ConnT:
        """A new connection, handshake done (its writer not started yet)."""

    @abc.abstractmethod
    def _start_writer(self, conn: ConnT) -> None:
        """Start the writer task of ``conn``."""

    def _broken(self, conn: ConnT, error: ConnectionClosed) -> None:
        """``conn`` broke: start one reconnection (concurrent reports share it)."""
        if (
            conn is not self._conn
            or self._reconnecting
            or self._closed
            or self._params.reconnect is None
            or self._nursery is None
        ):
            return
        self._reconnecting = True
        self._reconnected = trio.Event()
        self.link.failed(error)
        url = display_url(self._params.url)
        for request_id in self._outstanding.take():
            self._fail_request(
                request_id,
                ConnectionClosed(
                    f"the WebSocket to {url} broke before the answer to request "
                    f"{request_id!r} came: {error}"
                ),
            )
        logger.warning("%s; reconnecting", error)
        try:
            self._nursery.start_soon(self._reconnect, conn, name="trio_mcp WebSocket reconnect")
        except RuntimeError:  # the nursery is closed
            self._give_up(ConnectionClosed(f"{error}; the transport's nursery has exited"))

    def _give_up(self, error: ConnectionClosed) -> None:
        self._give_up_error = error
        self._error = error
        self._reconnecting = False
        self._reconnected.set()
        self.link.closed()

    async def _reconnect(self, old: ConnT) -> None:
        """Re-open the connection until it works or the transport closes (a task)."""
        backoff = self._params.reconnect
        assert backoff is not None
        self._reconnect_scope = scope = trio.CancelScope()
        try:
            with scope:
                await old.close_stream()
                try:
                    conn, attempt = await renew_until_done(
                        backoff, self._renew, display_url(self._params.url), logger
                    )
                except Refused as exc:
                    self._give_up(exc.error)
                    return
                self._start_writer(conn)
                self._reconnecting = False
                self._reconnected.set()
                logger.warning(
                    "reconnected to %s after %d attempt(s)", display_url(self._params.url), attempt
                )
                if self._initialize is not None and not self.modern:
                    self.renewed()
                else:
                    self.link.restored()
                    self.notification_gap()
        except Exception as exc:  # a bug: never into the user's nursery
            logger.exception(
                "the WebSocket reconnection to %s failed", display_url(self._params.url)
            )
            failed = ConnectionClosed(
                f"reconnecting to {display_url(self._params.url)} failed: {exc!r}"
            )
            failed.__cause__ = exc
            self._give_up(failed)
        finally:
            self._reconnect_scope = None
            if self._reconnecting:  # cancelled: closed, or the nursery was cancelled
                self._give_up(
                    ConnectionClosed(
                        f"the WebSocket transport to {display_url(self._params.url)} stopped while "
                        "reconnecting: it was closed, or the nursery it was opened with "
                        "was cancelled"
                    )
                )
                if self._conn is not old:
                    with trio.CancelScope(shield=True):
                        await self._conn.close_stream()

    async def _renew(self) -> ConnT:
        """One attempt: a new connection; a legacy session's handshake replayed on it.

        Raises:
            Refused: The server refused the handshake or the new ``initialize``.
            MCPError: The attempt failed (the server may not be back yet).
        """
        import trio_websocket

        assert self._nursery is not None
        try:
            conn = await self._open(self._nursery)
        except HTTPStatusError as exc:
            if 400 <= exc.status_code < 500 and exc.status_code not in (404, 408, 429):
                raise Refused(
                    ConnectionClosed(
                        f"the server at {display_url(self._params.url)} came back but refused the "
                        f"WebSocket (HTTP {exc.status_code}): {exc.body[:300]}"
                    )
                ) from exc
            raise
        ws = conn.ws
        assert ws is not None
        known = self._initialize
        if known is None or self.modern:
            return conn
        text, request_id = known
        try:
            with trio.move_on_after(self._params.timeout):
                await ws.send_message(text)
                while True:
                    message = await ws.get_message()
                    data = message.encode("utf-8") if isinstance(message, str) else message
                    envelope, answers = routed(data)
                    if same_id(answers, request_id):
                        break
                    if len(self._early) < _EARLY_LIMIT:  # (the session's, after renewal)
                        self._early.append(message)
                    else:
                        logger.warning("dropped a message sent before the new initialize")
                reason = refusal(data, envelope)
                if reason is not None:
                    raise Refused(
                        ConnectionClosed(
                            f"the server at {display_url(self._params.url)} came back but "
                            "refused to "
                            f"start a new session: {reason}"
                        )
                    )
                if self._initialized:
                    await ws.send_message(INITIALIZED.decode())
                return conn
        except trio_websocket.ConnectionClosed as exc:
            await conn.close_stream()
            self._early.clear()
            raise self._closed_error_from(exc.reason, exc) from exc
        except BaseException:
            await conn.close_stream()
            self._early.clear()
            raise
        await conn.close_stream()
        self._early.clear()
        raise TransportError(f"no answer to the replayed initialize within {self._params.timeout}s")

    def _closed_error_from(
        self, reason: trio_websocket.CloseReason | None, cause: BaseException | None
    ) -> ConnectionClosed:
        """The error for a connection closed for ``reason``, with ``__cause__`` set."""
        url = self._params.url
        if reason is None:
            closed = ConnectionClosed(f"the WebSocket to {display_url(url)} closed")
        elif reason.code == _MESSAGE_TOO_BIG:
            limit = self._params.max_message_size
            closed = ConnectionClosed(
                f"the WebSocket to {display_url(url)} closed (code 1009): a message was "
                f"larger than max_message_size={limit} bytes"
            )
            too_large = MessageTooLargeError(limit + 1, limit)
            too_large.__cause__ = cause
            closed.__cause__ = too_large
            return closed
        else:
            detail = f": {reason.reason}" if reason.reason else ""
            closed = ConnectionClosed(
                f"the WebSocket to {display_url(url)} closed with code {reason.code} "
                f"({reason.name}){detail}"
            )
        closed.__cause__ = cause
        return closed
