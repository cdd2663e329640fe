"""The JSON-RPC engine under every session: ids, the pending table, the reader, dispatch.

`RPCConnection` owns one transport and keeps three invariants:

1. **One trust boundary.** Every byte the peer sends goes through ``_jsonrpc``'s decode
   functions, which return a message or raise [`ProtocolError`][trio_mcp.ProtocolError]. A message
   that cannot be decoded is dropped and logged; when it can be told to be the answer to a
   pending request, that request (and only that one) fails with ``ProtocolError``. Routing
   is total: peer values are type-checked before they are used as keys. JSON-RPC batches
   are split here, for every transport, when the negotiated revision allows them.
2. **Background tasks never raise into the owner's nursery.** Every task started here runs
   under `RPCConnection.spawn()`'s guard, which logs and records an unexpected failure
   instead of raising it. The reader ends in ``finally: fail_all(...)``: whatever stops it
   (end of stream, a broken connection, a bug, the nursery being cancelled), every pending
   caller is failed and the reason is kept in `RPCConnection.failure`.
3. **Per-request transport failures** reach exactly that request, as typed exceptions,
   through `RPCConnection.fail_request()` (the transport's ``attach`` callback).

Every caller gets an exception object of its own (`fresh_copy()`).
Work started by the server is bounded: at most ``max_server_requests`` handler tasks, a
bounded queue of quick replies (``ping``, method not found), bounded progress per request.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, cast

import msgspec
import trio
from msgspec import UNSET

from . import types as t
from ._droplog import DropLog
from ._exceptions import (
    ConnectionClosed,
    MCPError,
    ProtocolError,
    fresh_copy,
)
from ._jsonrpc import (
    INVALID_REQUEST,
    Envelope,
    RequestId,
    decode_envelope,
    decode_payload,
    encode_error_response,
    encode_notification,
    encode_request,
    is_batch,
    salvage_head,
    split_batch,
)
from ._pending import (
    CHANNEL_POOL_SIZE,
    Channels,
    PendingCall,
    ProgressCallback,
    open_channel,
    run_channel_pool,
)
from ._serving import RequestHandler, ServerRequests
from ._transports._base import MessageInfo, Transport

__all__ = ["RPCConnection", "RequestHandler"]

logger = logging.getLogger("trio_mcp")

_MAX_QUEUED_PROGRESS: Final = 64
_NO_HEADERS: Final[Mapping[str, str]] = {}
_DROPS: Final = {
    "invalid": "dropping an invalid message from the server:",
    "reply": "dropping a reply to the server",
    "batch": "dropping a JSON-RPC batch",
    "reused_id": "dropping a server request that reuses the id",
}
"""What each kind of dropped message is logged as (its DropLog is made at the first drop)."""


async def _guard(fn: Callable[..., Awaitable[object]], args: tuple[Any, ...], name: str) -> None:
    """Run a background task of the engine: log an exception, never raise it."""
    try:
        await fn(*args)
    except Exception as exc:
        logger.error("%s failed (a bug in trio_mcp): %r", name, exc, exc_info=True)
    else:
        logger.debug("%s ended", name)


def _cancelled() -> bool:
    """Whether the calling task is in a cancelled scope (then its deadline is -inf)."""
    return trio.current_effective_deadline() == -math.inf


def _with_progress_token(params: Any, request_id: RequestId) -> dict[str, Any]:
    """``params`` with ``_meta.progressToken`` set to ``request_id`` (copies, never edits)."""
    copy: dict[str, Any] = dict(params) if params else {}
    copy["_meta"] = {**(copy.get("_meta") or {}), "progressToken": request_id}
    return copy


class RPCConnection(ServerRequests):
    """JSON-RPC 2.0 over one transport, for the client side of MCP.

    Args:
        transport: The connection to the server; its per-request failures are routed here.
        nursery: Where the reader and every other task runs (the session owner's nursery).
        on_notification: Called in the reader for each notification other than progress
            (``method``, raw params); must be quick and must not raise (it is guarded).
        handle_request: Serves a server-to-client request (in a task of its own).
        can_handle: Whether ``handle_request`` serves a method (else ``-32601``).
        on_failure: Called once when the connection stops working, with the reason.
        batches_allowed: Whether JSON-RPC batches are valid now (revision 2025-03-26).
        cancel_notice_timeout: Bound on sending ``notifications/cancelled``.
        max_server_requests: How many server-to-client requests may run at once; more are
            answered with an error at once.
    """

    __slots__ = (
        "_answered",
        "_batches_allowed",
        "_bytes_in",
        "_bytes_out",
        "_cancel_notice_timeout",
        "_drop_logs",
        "_next_id",
        "_on_failure",
        "_on_notification",
        "_pending",
        "_pool",
        "_reader_scope",
        "_sent",
        "closed",
        "failure",
        "nursery",
        "transport",
    )

    def __init__(
        self,
        transport: Transport,
        nursery: trio.Nursery,
        *,
        on_notification: Callable[[str, msgspec.Raw], None],
        handle_request: RequestHandler,
        can_handle: Callable[[str], bool],
        on_failure: Callable[[], None],
        batches_allowed: Callable[[], bool],
        cancel_notice_timeout: float = 1.0,
        max_server_requests: int = 32,
    ) -> None:
        super().__init__(handle_request, can_handle, max_server_requests)
        self.transport = transport
        self.nursery = nursery
        self._on_notification = on_notification
        self._on_failure = on_failure
        self._batches_allowed = batches_allowed
        self._cancel_notice_timeout = cancel_notice_timeout
        self._next_id = 1
        # statistics(): cheap counters, nothing allocated per request
        self._sent = self._answered = self._bytes_in = self._bytes_out = 0
        self._pending: dict[RequestId, trio.MemorySendChannel[Any]] = {}
        self._pool = run_channel_pool()
        self._drop_logs: dict[str, DropLog] | None = None  # from the first drop on
        self._reader_scope = trio.CancelScope()
        self.failure: MCPError | None = None  #: why the connection stopped working
        self.closed = False  #: whether the owner closed it
        transport.attach(self.fail_request)

    # -- state ---------------------------------------------------------------------------

    def _dropped(self, kind: str, detail: str) -> None:
        """Count a dropped message of ``kind`` (see ``_DROPS``) in its DropLog."""
        logs = self._drop_logs
        if logs is None:
            logs = self._drop_logs = {}
        log = logs.get(kind)
        if log is None:
            log = logs[kind] = DropLog(_DROPS[kind])
        log.dropped(detail)

    @property
    def usable(self) -> bool:
        """Whether requests can still be sent."""
        return not self.closed and self.failure is None

    def error_for_caller(self) -> BaseException:
        """A fresh exception telling one caller why the connection is not usable."""
        if self.closed:
            return trio.ClosedResourceError("the MCP session is closed")
        assert self.failure is not None
        return fresh_copy(self.failure)

    def check_usable(self) -> None:
        """Raise `error_for_caller()` unless the connection is usable."""
        if not self.usable:
            raise self.error_for_caller()

    @property
    def pending_count(self) -> int:
        """How many requests wait for an answer."""
        return len(self._pending)

    def counters(self) -> tuple[int, int, int, int, int, dict[str, int]]:
        """For ``statistics()``: requests sent and answered, server requests running, bytes
        sent and received (the transport's routed bytes included), drops by kind."""
        drops = {kind: log.total for kind, log in (self._drop_logs or {}).items()}
        received = self._bytes_in + self.transport.routed_bytes
        running = len(self._incoming)
        return self._sent, self._answered, running, self._bytes_out, received, drops

    # -- tasks ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the reader in the nursery (the reply writer starts with the first reply).

        The reader is its own guard (it catches everything and ends in ``fail_all``), so
        it runs without `spawn()`'s wrapper: one coroutine frame less per session.
        """
        try:
            self.nursery.start_soon(self._reader, name="trio_mcp reader")
        except RuntimeError as exc:  # the nursery is closed to new tasks
            self._nursery_gone(exc)

    def spawn(self, fn: Callable[..., Awaitable[object]], *args: Any, name: str) -> bool:
        """Start ``fn(*args)`` in the nursery under the guard; False if that is impossible.

        The guard logs and records any exception instead of letting it into the nursery.
        If the nursery no longer takes tasks, the connection fails (its owner is gone).
        """
        try:
            self.nursery.start_soon(_guard, fn, args, name, name=name)
        except RuntimeError as exc:  # the nursery is closed to new tasks
            self._nursery_gone(exc)
            return False
        return True

    def _nursery_gone(self, exc: RuntimeError) -> None:
        error = ConnectionClosed(
            "the nursery that owns the MCP session has exited; open the session in a "
            "nursery that outlives it"
        )
        error.__cause__ = exc
        self.fail_all(error)

    # -- the request path ----------------------------------------------------------------

    def new_id(self) -> int:
        """Allocate the next request id."""
        request_id = self._next_id
        self._next_id += 1
        return request_id

    async def start_request(
        self,
        method: str,
        params: Any,
        *,
        request_id: RequestId | None = None,
        on_progress: ProgressCallback | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
    ) -> PendingCall:
        """Send a request and return its `PendingCall` (the answer is not awaited).

        This is a checkpoint only when it has to wait for the transport
        (`PendingCall.wait()` always is one). ``params`` gets ``_meta.progressToken``
        (the request id) when ``on_progress`` is given. The request is registered only once
        it is encoded, and unregistered if the send fails or is cancelled before the
        message was handed over.

        Called in a cancelled scope it raises ``Cancelled`` and sends nothing: a cancelled
        operation did not happen (trio's rule), so the server never sees it.

        Raises:
            TypeError: ``params`` cannot be encoded as JSON.
            trio.ClosedResourceError: The session was closed.
            ConnectionClosed: The connection is broken.
        """
        if not self.usable or _cancelled():
            await trio.lowlevel.checkpoint()  # raises Cancelled when cancelled
            raise self.error_for_caller()
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        if on_progress is not None:
            params = _with_progress_token(params, request_id)
        data = encode_request(request_id, method, params)  # TypeError before any state
        pool = self._pool
        channels = pool.pop() if pool else open_channel(math.inf)
        pending = self._pending
        pending[request_id] = channels[0]
        call = PendingCall(self, request_id, method, channels, on_progress)
        transport = self.transport
        sent = False
        try:
            # A lone request is written at once; concurrent ones are queued for the writer,
            # which coalesces them. Neither yields: the wait for the answer is the checkpoint.
            info = (
                MessageInfo(method, request_id, name, headers or _NO_HEADERS, idempotent)
                if transport.needs_info
                else None
            )
            taken = transport.try_send_now(data) if len(pending) == 1 else False
            if not (taken or transport.queue_request_nowait(data, info)):
                await transport.send(data, info)
            sent = True
            self._sent += 1
            self._bytes_out += len(data)
        except MCPError:
            call.done = True
            pending.pop(request_id, None)
            raise
        except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            call.done = True
            pending.pop(request_id, None)
            if self.usable:
                self.fail_all(ConnectionClosed(f"the connection to the server broke: {exc!r}"))
            raise self.error_for_caller() from exc
        finally:
            if not sent and not call.done:
                call.done = True
                pending.pop(request_id, None)
        return call

    async def request(
        self,
        method: str,
        params: Any,
        *,
        request_id: RequestId | None = None,
        on_progress: ProgressCallback | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
        announce_cancel: bool = True,
    ) -> msgspec.Raw:
        """Send a request and wait for its raw ``result``.

        When the wait is cancelled (the caller's scope), the request is removed from the
        pending table and the server is told (``notifications/cancelled``, shielded and
        bounded, or the transport's native cancellation); with ``announce_cancel`` false
        (``initialize``, the era probe) only the transport's stream is closed.

        Raises:
            ServerError: The server answered with an error.
            ProtocolError: The answer could not be decoded.
            ConnectionClosed: The connection ended first.
            TransportError: The transport failed this request.
            trio.ClosedResourceError: The session was closed by its owner.
        """
        call = await self.start_request(
            method, params, request_id=request_id, on_progress=on_progress, name=name,
            headers=headers, idempotent=idempotent,
        )  # fmt: skip
        try:
            return await call.wait()
        finally:
            if not call.done:
                if announce_cancel:
                    await self.cancel(call)
                else:
                    call.abandon()

    async def cancel(self, call: PendingCall) -> None:
        """Forget ``call`` and tell the server it was cancelled (shielded, bounded)."""
        if call.done:
            await trio.lowlevel.checkpoint()
            return
        call.done = True
        request_id = call.request_id
        self._pending.pop(request_id, None)
        if not self.usable or self.transport.cancel_request(request_id):
            return
        with trio.move_on_after(self._cancel_notice_timeout, shield=True):
            await self._send_quietly(
                encode_notification(
                    "notifications/cancelled",
                    {"requestId": request_id, "reason": "cancelled by the client"},
                ),
                "notifications/cancelled",
            )

    def _forget(self, request_id: RequestId) -> None:
        self._pending.pop(request_id, None)
        if self.usable:
            self.transport.cancel_request(request_id)

    def _recycle(self, channels: Channels) -> None:
        if len(self._pool) < CHANNEL_POOL_SIZE:
            self._pool.append(channels)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification.

        Raises:
            TypeError: ``params`` cannot be encoded as JSON.
            trio.ClosedResourceError: The session was closed.
            ConnectionClosed: The connection is broken.
        """
        data = encode_notification(method, params)
        if not self.usable or _cancelled():
            await trio.lowlevel.checkpoint()  # raises Cancelled when cancelled
            raise self.error_for_caller()
        try:
            await self.transport.send(data, MessageInfo(method))
            self._bytes_out += len(data)
        except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            if self.usable:
                self.fail_all(ConnectionClosed(f"the connection to the server broke: {exc!r}"))
            raise self.error_for_caller() from exc

    async def _send_quietly(self, data: bytes, method: str | None = None) -> None:
        if not self.usable:
            await trio.lowlevel.checkpoint()
            return
        try:
            await self.transport.send(data, MessageInfo(method))
            self._bytes_out += len(data)
        except (MCPError, trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            logger.debug("could not send %s to the server: %r", method or "a response", exc)

    # -- failing requests ----------------------------------------------------------------

    def fail_request(self, request_id: RequestId, error: MCPError) -> None:
        """Fail one pending request with ``error`` (the transport's callback).

        A failure for a request that is no longer pending is logged and dropped.
        """
        key = cast("object", request_id)  # transports are code too: check anyway
        if isinstance(key, bool) or not isinstance(key, (int, str)):
            logger.warning("transport failure for an invalid request id %r: %s", key, error)
            return
        entry = self._pending.pop(key, None)
        if entry is None:
            logger.debug("transport failure for unknown request %r: %s", request_id, error)
            return
        entry.send_nowait(error)

    def fail_all(self, reason: MCPError) -> None:
        """Stop: fail every pending request (each with its own exception), cancel handlers.

        The first reason is kept in [`failure`][trio_mcp.ClientSession.failure]; later calls only
        fail what is pending.
        """
        first = self.failure is None and not self.closed
        if self.failure is None:
            self.failure = reason
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            entry.send_nowait(self.error_for_caller())
        self._stop_serving()
        if first:
            try:
                self._on_failure()
            except Exception:  # pragma: no cover - the session's callback is total
                logger.exception("trio_mcp on_failure callback raised")

    # -- the reader ----------------------------------------------------------------------

    async def _reader(self) -> None:
        reason: MCPError | None = None
        transport = self.transport
        # (a partial, not a closure: a third of the memory, kept as long as the session)
        run = cast("Callable[..., None]", trio.lowlevel.current_task().context.run)
        route: Callable[[bytes | Envelope], None] = functools.partial(run, self._dispatch)

        try:
            with self._reader_scope:
                # A transport may route a message itself while this task waits (see
                # attach_reader): in this task's context, so handlers see one context.
                transport.attach_reader(route)
                # (a transport that does not decode to route is read directly: no extra frame)
                receive = (
                    transport.receive
                    if type(transport).receive_message is Transport.receive_message
                    else transport.receive_message
                )
                while True:
                    data = await receive()
                    self._dispatch(data)
        except trio.EndOfChannel:
            reason = transport.closed_error()
        except MCPError as exc:
            reason = exc
        except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            reason = ConnectionClosed(f"the connection to the server broke: {exc!r}")
            reason.__cause__ = exc
        except Exception as exc:  # a bug in a transport: never let it into the nursery
            logger.error("the trio_mcp reader failed: %r", exc, exc_info=True)
            reason = ConnectionClosed(f"the session's reader failed: {exc!r}")
            reason.__cause__ = exc
        finally:
            if reason is None:
                reason = ConnectionClosed(
                    "the MCP session stopped: the nursery that runs its tasks was cancelled"
                    if not self.closed
                    else "the MCP session was closed"
                )
            try:
                self.fail_all(reason)
            except Exception as exc:  # pragma: no cover - fail_all is total; never raise
                logger.error("the trio_mcp reader failed: %r", exc, exc_info=True)

    def _dispatch(self, data: bytes | Envelope) -> None:
        """Route one transport message; total: nothing raised here stops the reader."""
        try:
            if type(data) is Envelope:  # decoded by the transport, to route it
                self._route(data)
                return
            data = cast(bytes, data)
            self._bytes_in += len(data)
            if is_batch(data):
                if not self._batches_allowed():
                    self._dropped("batch", "(the negotiated revision does not allow them)")
                    return
                for part in split_batch(data):
                    self._dispatch_one(part)
                return
            self._dispatch_one(data)
        except ProtocolError as exc:
            self._dropped("invalid", str(exc))
        except Exception:
            logger.exception("trio_mcp failed to route a message (a bug); dropped it")

    def _dispatch_one(self, data: bytes) -> None:
        try:
            message = decode_envelope(data)
        except ProtocolError as exc:
            self._on_malformed(data, exc)
            return
        self._route(message)

    def _route(self, message: Envelope) -> None:
        method = message.method
        if method is UNSET:
            request_id = message.id
            entry = (
                self._pending.pop(request_id, None) if isinstance(request_id, (int, str)) else None
            )
            if entry is None:
                logger.debug("dropping a response for unknown or cancelled request %r", request_id)
                return
            self._answered += 1
            entry.send_nowait(message)
            return
        request_id = message.id
        if request_id is UNSET or request_id is None:
            self._on_any_notification(method, message.params)
        else:
            self._on_request(request_id, method, message.params)

    def _on_malformed(self, data: bytes, exc: ProtocolError) -> None:
        request_id, method = salvage_head(data)
        if request_id is not None and method is None:
            entry = self._pending.pop(request_id, None)
            if entry is not None:
                error = ProtocolError(f"the server's answer could not be decoded: {exc}")
                error.__cause__ = exc
                entry.send_nowait(error)
                return
        if request_id is not None and method:
            self._reply(
                encode_error_response(request_id, INVALID_REQUEST, f"invalid request: {exc}")
            )
            return
        self._dropped("invalid", str(exc))

    # -- notifications (the server's requests: ServerRequests, in _serving) ---------------

    def _on_any_notification(self, method: str, params: msgspec.Raw) -> None:
        if method == "notifications/progress":
            self._on_progress(params)
        elif method == "notifications/cancelled":
            self._on_cancelled(params)
        self._on_notification(method, params)

    def _on_progress(self, params: msgspec.Raw) -> None:
        try:
            progress = decode_payload(params, t.ProgressNotificationParams, "progress params")
        except ProtocolError as exc:
            logger.debug("dropping a malformed progress notification: %s", exc)
            return
        token = progress.progress_token  # an int or a str: decode_payload checked it
        entry = self._pending.get(token)
        if entry is None:
            return
        if entry.statistics().current_buffer_used >= _MAX_QUEUED_PROGRESS:
            logger.debug("progress for request %r arrives faster than it is handled", token)
            return
        entry.send_nowait(progress)

    # -- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close: fail pending callers with ``ClosedResourceError``, close the transport.

        Idempotent; shielded, so it completes even when cancelled.
        """
        if self.closed:
            await trio.lowlevel.checkpoint()
            return
        self.closed = True
        with trio.CancelScope(shield=True):
            self._stop_serving()
            self.fail_all(ConnectionClosed("the MCP session was closed"))
            self._reader_scope.cancel()
            await self.transport.aclose()
            for drops in (self._drop_logs or {}).values():
                drops.flush()
