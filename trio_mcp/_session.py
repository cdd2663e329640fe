"""The session engine: one reader task, per-request channels, both protocol eras.

How a request travels: the caller encodes it, registers a per-request trio memory channel
in the pending table and hands the bytes to the transport (which coalesces writes). The one
reader task decodes every incoming message's envelope exactly once and routes it: a
response (or a progress notification for the request) goes into the waiting caller's
channel; a server request goes to a handler task; a notification goes to subscribers.
The caller's own cancel scope is the timeout: when it fires, the pending entry is removed,
the server is told (``notifications/cancelled``, shielded and bounded, or the transport's
native cancellation) and a late response is dropped.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, cast

import msgspec
import trio
from msgspec import UNSET, UnsetType

from . import _types as t
from ._eras import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    ProbeVerdict,
    classify_probe,
    era_cache,
)
from ._exceptions import (
    ConnectionClosed,
    InputRequestError,
    MCPError,
    ProtocolError,
    ServerError,
    TransportError,
    UnsupportedProtocolVersionError,
    server_error_from_wire,
)
from ._handlers import (
    ElicitationHandler,
    HandlerError,
    RequestContext,
    RootsHandler,
    SamplingHandler,
    ServerRequestHandlers,
)
from ._jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    Envelope,
    decode_envelope,
    encode_error_response,
    encode_notification,
    encode_request,
    encode_response,
)
from ._transports._base import MessageInfo, RequestFailed, Transport, TransportFactory

__all__ = ["ClientSession", "Notification", "open_mcp_session"]

logger = logging.getLogger("trio_mcp")
server_logger = logging.getLogger("trio_mcp.server")

T = TypeVar("T")
Era = Literal["legacy", "modern"]

_META_VERSION: Final = t.META_PROTOCOL_VERSION
_META_CAPS: Final = t.META_CLIENT_CAPABILITIES
_META_CLIENT: Final = t.META_CLIENT_INFO
_META_LOG: Final = t.META_LOG_LEVEL
_META_SUBSCRIPTION: Final = t.META_SUBSCRIPTION_ID
_META_SERVER: Final = t.META_SERVER_INFO

_INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_LOG_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_INVALIDATES: Final = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

ProgressCallback = Callable[[t.ProgressNotificationParams], "Awaitable[None] | None"]


class Notification(msgspec.Struct, frozen=True):
    """A notification from the server, as delivered to subscribers.

    Attributes:
        method: The notification method, e.g. ``notifications/tools/list_changed``.
        params: The decoded params (a dict; empty when the server sent none).
    """

    method: str
    params: dict[str, Any] = {}


class _ResultHead(msgspec.Struct, rename="camel"):
    result_type: str | UnsetType = UNSET
    input_requests: dict[str, msgspec.Raw] | UnsetType = UNSET
    request_state: msgspec.Raw | UnsetType = UNSET


class _InputRequest(msgspec.Struct):
    method: str
    params: msgspec.Raw = msgspec.Raw(b"{}")


_result_head_decoder: Final = msgspec.json.Decoder(_ResultHead)
_input_request_decoder: Final = msgspec.json.Decoder(_InputRequest)
_any_decoder: Final = msgspec.json.Decoder()


_CHANNEL_POOL_SIZE: Final = 1024
_NO_SCOPE: Final = nullcontext()
_NO_HEADERS: Final[Mapping[str, str]] = {}
_Channels = tuple["trio.MemorySendChannel[Any]", "trio.MemoryReceiveChannel[Any]"]
_open_channel: Final = cast(
    "Callable[[float], _Channels]", trio.open_memory_channel
)  # unsubscripted: no typing work per call


@dataclass
class _Subscriber:
    methods: frozenset[str] | None
    send: trio.MemorySendChannel[Notification]
    subscription_id: int | str | None = None
    uris: frozenset[str] | None = None
    acknowledged: trio.Event = field(default_factory=trio.Event)
    granted: Mapping[str, Any] | None = None


class ClientSession:
    """A session with one MCP server. Create it with :func:`open_mcp_session`.

    All methods may be called concurrently from many tasks. Every method that talks to the
    server accepts the caller's cancel scope as its timeout (``trio.fail_after``), and most
    also a ``timeout=`` in seconds raising :class:`trio.TooSlowError`. After the session is
    closed every method raises :class:`trio.ClosedResourceError`.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        transport: Transport,
        *,
        client_info: t.Implementation | None = None,
        protocol: str = "auto",
        handlers: ServerRequestHandlers | None = None,
        default_timeout: float | None = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        probe_timeout: float = 3.0,
        init_timeout: float | None = 60.0,
        cancel_notice_timeout: float = 1.0,
        cache: bool = True,
        max_input_rounds: int = 10,
        max_pages: int = 1000,
        tolerate_invalid_messages: bool = False,
        notification_buffer: int = 1000,
        listen_ack_timeout: float = 10.0,
    ) -> None:
        if protocol not in ("auto", "legacy") and protocol not in MODERN_VERSIONS:
            raise ValueError(
                f"protocol must be 'auto', 'legacy' or one of {list(MODERN_VERSIONS)}, "
                f"not {protocol!r}"
            )
        self._nursery = nursery
        self._transport = transport
        self._client_info = client_info or t.Implementation(name="trio-mcp", version=_version())
        self._protocol_option = protocol
        self._handlers = handlers or ServerRequestHandlers()
        self._default_timeout = default_timeout
        self._progress_resets = progress_resets_timeout
        self._max_timeout = max_timeout
        self._probe_timeout = probe_timeout
        self._init_timeout = init_timeout
        self._cancel_notice_timeout = cancel_notice_timeout
        self._cache_enabled = cache
        self._max_rounds = max_input_rounds
        self._max_pages = max_pages
        self._tolerate_invalid = tolerate_invalid_messages
        self._notification_buffer = notification_buffer
        self._listen_ack_timeout = listen_ack_timeout

        self._next_id = 1
        self._pending: dict[int | str, trio.MemorySendChannel[Any]] = {}  # id -> response channel
        self._channel_pool: list[_Channels] = []
        self._incoming: dict[int | str, trio.CancelScope] = {}
        self._subscribers: list[_Subscriber] = []
        self._notification_handlers: dict[str, list[Callable[[Notification], Any]]] = {}
        self._cache: dict[tuple[str, str], tuple[float, Any]] = {}
        self._reader_scope = trio.CancelScope()
        self._closed = False
        self._broken: MCPError | None = None

        self._era: Era | None = None
        self._protocol_version: str | None = None
        self._server_info: t.Implementation | None = None
        self._server_capabilities: t.ServerCapabilities | None = None
        self._instructions: str | None = None
        self._log_level: str | None = None
        self._meta_full: dict[str, Any] = {}
        self._meta_plain: dict[str, Any] = {}
        self._tool_wire: dict[str, dict[str, Any]] = {}  # for Mcp-Param-* headers

    # -- public properties ---------------------------------------------------------------

    @property
    def era(self) -> Era | None:
        """``"legacy"`` (initialize handshake) or ``"modern"`` (2026-07-28, stateless)."""
        return self._era

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision in use, e.g. ``"2025-11-25"`` or ``"2026-07-28"``."""
        return self._protocol_version

    @property
    def server_info(self) -> t.Implementation | None:
        """The server's self-reported name and version."""
        return self._server_info

    @property
    def server_capabilities(self) -> t.ServerCapabilities:
        """What the server said it supports."""
        return self._server_capabilities or t.ServerCapabilities()

    @property
    def instructions(self) -> str | None:
        """The server's natural-language instructions, if it sent any."""
        return self._instructions

    @property
    def transport(self) -> Transport:
        """The transport the session runs on."""
        return self._transport

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` has been called."""
        return self._closed

    # -- start-up: era negotiation -------------------------------------------------------

    async def _start(self) -> None:
        self._nursery.start_soon(self._reader, name="trio_mcp reader")
        option = self._protocol_option
        if option == "legacy":
            await self._initialize()
            return
        if option != "auto":
            await self._discover(option, probe=False)
            return
        key = getattr(self._transport, "origin", None)
        cached = era_cache.get(key) if key else None
        if key and cached == "legacy":
            try:
                await self._initialize()
                return
            except ServerError:
                era_cache.pop(key, None)  # the cached assumption failed: probe again
        await self._discover(MODERN_VERSIONS[0], probe=True)

    async def _discover(self, version: str, *, probe: bool) -> None:
        """Send ``server/discover``; go modern, retry at another version, or fall back."""
        key = getattr(self._transport, "origin", None)
        for _attempt in range(2):
            self._set_modern(version)
            try:
                result = await self._roundtrip(
                    "server/discover",
                    {"_meta": self._meta_plain},
                    timeout=self._probe_timeout if probe else self._init_timeout,
                    announce_cancel=not probe,
                    unwrap=False,
                )
                error: BaseException | None = None
                try:
                    discovered = self._decode(result.result, t.DiscoverResult, "server/discover")
                except ProtocolError as exc:  # e.g. a legacy server's ``{}`` for any method
                    discovered, error = None, exc
            except (ServerError, trio.TooSlowError, TransportError, RequestFailedError) as exc:
                if isinstance(exc, TransportError):  # the connection itself failed
                    raise
                discovered, error = None, exc
            verdict = classify_probe(discovered, error, MODERN_VERSIONS, LEGACY_VERSIONS)
            if verdict.kind == ProbeVerdict.MODERN:
                assert discovered is not None and verdict.version is not None
                self._adopt_discover(discovered, verdict.version)
                if key:
                    era_cache[key] = "modern"
                return
            if verdict.kind == ProbeVerdict.RETRY:
                assert verdict.version is not None
                version = verdict.version
                continue
            if verdict.kind == ProbeVerdict.FAIL or not probe:
                if isinstance(error, RequestFailedError):
                    raise error.error from None
                if error is not None:
                    raise error
                raise ProtocolError(verdict.reason)
            logger.debug("server/discover probe: %s; falling back to initialize", verdict.reason)
            await self._initialize()
            if key:
                era_cache[key] = "legacy"
            return
        raise ProtocolError("the server rejected every mutually supported protocol version")

    def _adopt_discover(self, discovered: t.DiscoverResult, version: str) -> None:
        self._set_modern(version)
        self._server_capabilities = discovered.capabilities
        if discovered.instructions is not UNSET:
            self._instructions = discovered.instructions
        meta = discovered.meta if discovered.meta is not UNSET else {}
        info: object = meta.get(_META_SERVER)
        if isinstance(info, dict):
            try:
                self._server_info = msgspec.convert(info, t.Implementation)  # pyright: ignore[reportUnknownArgumentType]
            except msgspec.ValidationError:
                logger.debug("ignoring malformed serverInfo %r", info)  # pyright: ignore[reportUnknownArgumentType]

    def _set_modern(self, version: str) -> None:
        self._era = "modern"
        self._protocol_version = version
        self._transport.modern = True
        self._transport.protocol_version = version
        self._rebuild_meta()

    def _rebuild_meta(self) -> None:
        info = t.to_builtins(self._client_info)
        plain: dict[str, Any] = {
            _META_VERSION: self._protocol_version,
            _META_CLIENT: info,
            _META_CAPS: {},
        }
        if self._log_level is not None:
            plain[_META_LOG] = self._log_level
        full = dict(plain)
        full[_META_CAPS] = self._handlers.capabilities()
        self._meta_plain = plain
        self._meta_full = full

    async def _initialize(self) -> None:
        self._era = "legacy"
        self._transport.modern = False
        params = {
            "protocolVersion": LATEST_LEGACY_VERSION,
            "capabilities": self._handlers.capabilities(),
            "clientInfo": t.to_builtins(self._client_info),
        }
        fallback = getattr(self._transport, "fallback_to_sse", None)
        try:
            response = await self._roundtrip(
                "initialize",
                params,
                timeout=self._init_timeout,
                announce_cancel=False,
                unwrap=False,
            )
        except RequestFailedError as exc:
            if fallback is None or not await fallback():
                raise exc.error from exc
            response = await self._roundtrip(
                "initialize", params, timeout=self._init_timeout, announce_cancel=False
            )
        init = self._decode(response.result, t.InitializeResult, "initialize")
        if init.protocol_version not in LEGACY_VERSIONS:
            raise ProtocolError(
                f"the server answered initialize with protocol version "
                f"{init.protocol_version!r}, which trio_mcp does not speak "
                f"(it speaks {', '.join(LEGACY_VERSIONS + MODERN_VERSIONS)})"
            )
        self._protocol_version = init.protocol_version
        self._transport.protocol_version = init.protocol_version
        self._server_info = init.server_info
        self._server_capabilities = init.capabilities
        if init.instructions is not UNSET:
            self._instructions = init.instructions
        await self.notify("notifications/initialized")

    # -- the request path ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError("the MCP session is closed")
        if self._broken is not None:
            raise self._broken

    async def _roundtrip(
        self,
        method: str,
        params: Any,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        announce_cancel: bool = True,
        idempotent: bool = False,
        unwrap: bool = True,
        request_id: int | None = None,
    ) -> Envelope:
        """Send one request and wait for its response envelope (error responses raise).

        This is the hot path: one coroutine, a pooled per-request memory channel, and the
        caller's cancel scope (or ``timeout``) as the only timer. A transport failure of this
        request raises the transport's error, or the internal :class:`RequestFailedError`
        carrier when ``unwrap`` is false.
        """
        if self._closed or self._broken is not None:
            self._check_open()
        if timeout is None:
            timeout = self._default_timeout
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        scope: trio.CancelScope | None = None
        started = 0.0
        if timeout is not None:
            started = trio.current_time()
            scope = trio.CancelScope(deadline=started + timeout)
        if on_progress is not None or (self._progress_resets and scope is not None):
            params = dict(params) if params else {}
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = request_id
            params["_meta"] = meta
        pool = self._channel_pool
        send, receive = pool.pop() if pool else _open_channel(math.inf)
        pending = self._pending
        pending[request_id] = send
        data = encode_request(request_id, method, params)
        transport = self._transport
        answered = False
        try:
            with scope if scope is not None else _NO_SCOPE:
                if len(pending) > 1 or not transport.try_send_now(data):
                    info = (
                        MessageInfo(method, request_id, name, headers or _NO_HEADERS, idempotent)
                        if transport.needs_info
                        else None
                    )
                    await transport.send(data, info)
                while True:
                    item = await receive.receive()
                    if type(item) is Envelope:
                        answered = True
                        if len(pool) < _CHANNEL_POOL_SIZE:
                            pool.append((send, receive))
                        if item.error is not UNSET:
                            error = item.error
                            raise server_error_from_wire(
                                error.code,
                                error.message,
                                error.data,
                                method=method,
                                modern=self._era == "modern",
                            )
                        return item
                    if isinstance(item, BaseException):
                        answered = True
                        if unwrap and isinstance(item, RequestFailedError):
                            raise item.error
                        raise item
                    # a progress notification for this request
                    if scope is not None and self._progress_resets:
                        self._bump_deadline(scope, started, timeout)
                    if on_progress is not None:
                        outcome = on_progress(item)
                        if inspect.isawaitable(outcome):
                            await outcome
        finally:
            if not answered:
                pending.pop(request_id, None)
                if announce_cancel and self._broken is None and not self._closed:
                    await self._announce_cancel(request_id)
        raise trio.TooSlowError(f"{method} timed out after {timeout} s")

    def _bump_deadline(
        self, scope: trio.CancelScope, started: float, timeout: float | None
    ) -> None:
        if timeout is None:
            return
        new_deadline = trio.current_time() + timeout
        if self._max_timeout is not None:
            new_deadline = min(new_deadline, started + self._max_timeout)
        scope.deadline = max(scope.deadline, new_deadline)

    async def _announce_cancel(self, request_id: int | str) -> None:
        if self._transport.cancel_request(request_id):
            return
        with trio.move_on_after(self._cancel_notice_timeout) as cancel_scope:
            cancel_scope.shield = True
            try:
                await self._transport.send(
                    encode_notification(
                        "notifications/cancelled",
                        {"requestId": request_id, "reason": "cancelled by the client"},
                    ),
                    MessageInfo("notifications/cancelled"),
                )
            except (MCPError, trio.ClosedResourceError, trio.BrokenResourceError):
                pass

    def _decode(self, raw: msgspec.Raw, tp: type[T], method: str) -> T:
        try:
            return t.decoder_for(tp).decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise ProtocolError(f"invalid result for {method}: {exc}") from exc

    def _with_meta(self, method: str, params: Mapping[str, Any] | None) -> dict[str, Any] | Any:
        if self._era != "modern":
            return params
        base = self._meta_full if method in _INPUT_METHODS else self._meta_plain
        merged: dict[str, Any] = dict(params) if params else {}
        given = merged.get("_meta")
        merged["_meta"] = {**given, **base} if given else base
        return merged

    async def _call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
    ) -> msgspec.Raw:
        """One logical call in either era: ``_meta``, version retry, multi-round-trip."""
        if self._era != "modern":
            envelope = await self._roundtrip(
                method, params, timeout=timeout, on_progress=on_progress, name=name,
                headers=headers, idempotent=idempotent,
            )  # fmt: skip
            return envelope.result
        if timeout is None:
            return await self._modern_call(method, params, on_progress, name, headers, idempotent)
        with trio.fail_after(timeout):
            return await self._modern_call(method, params, on_progress, name, headers, idempotent)

    async def _modern_call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        on_progress: ProgressCallback | None,
        name: str | None,
        headers: Mapping[str, str] | None,
        idempotent: bool,
    ) -> msgspec.Raw:
        extra: dict[str, Any] = {}
        version_retried = False
        stream_retried = False
        rounds = 0
        while True:
            merged = self._with_meta(method, params)
            if extra:
                merged = {**merged, **extra}
            try:
                envelope = await self._roundtrip(
                    method, merged, on_progress=on_progress, name=name, headers=headers,
                    idempotent=idempotent, unwrap=False,
                )  # fmt: skip
            except UnsupportedProtocolVersionError as exc:
                mutual = [v for v in MODERN_VERSIONS if v in exc.supported]
                if version_retried or not mutual or mutual[0] == self._protocol_version:
                    raise
                version_retried = True
                self._set_modern(mutual[0])
                continue
            except RequestFailedError as exc:
                retryable = isinstance(exc.error, TransportError) and not hasattr(
                    exc.error, "status_code"
                )
                if idempotent and retryable and not stream_retried:
                    stream_retried = True
                    logger.debug("re-issuing %s after a broken stream: %s", method, exc.error)
                    continue
                raise exc.error from exc
            head = _result_head_decoder.decode(envelope.result)
            kind = head.result_type
            if kind is UNSET or kind == "complete":
                return envelope.result
            if kind != "input_required" or method not in _INPUT_METHODS:
                raise ProtocolError(f"unexpected resultType {kind!r} in the result of {method}")
            rounds += 1
            if rounds > self._max_rounds:
                raise InputRequestError(
                    f"{method} still required input after {self._max_rounds} rounds; "
                    "giving up (raise max_input_rounds to allow more)"
                )
            extra = {}
            if head.input_requests is not UNSET and head.input_requests:
                extra["inputResponses"] = await self._gather_inputs(head.input_requests)
            if head.request_state is not UNSET:
                extra["requestState"] = head.request_state

    async def _gather_inputs(self, requests: Mapping[str, msgspec.Raw]) -> dict[str, Any]:
        responses: dict[str, Any] = {}
        failures: list[str] = []

        async def one(key: str, raw: msgspec.Raw) -> None:
            try:
                request = _input_request_decoder.decode(raw)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                failures.append(f"{key}: malformed input request ({exc})")
                return
            if not self._handlers.can_handle(request.method):
                failures.append(f"{key}: no handler for {request.method}")
                return
            ctx = self._context(request.method, key, None)
            try:
                result = await self._handlers.handle(request.method, request.params, ctx)
            except HandlerError as exc:
                failures.append(f"{key}: {request.method} failed: {exc.message}")
                return
            responses[key] = result

        async with trio.open_nursery() as nursery:
            for key, raw in requests.items():
                nursery.start_soon(one, key, raw)
        if failures:
            raise InputRequestError(
                "the server asked for input that could not be given: " + "; ".join(failures)
            )
        return responses

    def _context(self, method: str, request_id: int | str, meta: Any) -> RequestContext:
        name = self._server_info.name if self._server_info is not None else None
        return RequestContext(self, method, request_id, name, meta)

    # -- the reader task -----------------------------------------------------------------

    async def _reader(self) -> None:
        error: MCPError
        with self._reader_scope:
            try:
                transport = self._transport
                while True:
                    item = await transport.receive()
                    if type(item) is bytes:
                        self._dispatch(item)
                    elif isinstance(item, RequestFailed):
                        self._fail_one(item)
                    else:
                        self._dispatch(bytes(item))
            except trio.EndOfChannel:
                error = self._transport.closed_error()
            except MCPError as exc:
                error = exc
            except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
                error = ConnectionClosed(f"the connection to the server broke: {exc!r}")
            except Exception as exc:  # a bug: never let it escape into the user's nursery
                logger.exception("trio_mcp reader task failed")
                error = ConnectionClosed(f"the session's reader failed: {exc!r}")
            else:  # pragma: no cover
                error = ConnectionClosed()
            self._fail_all(error)
        if self._reader_scope.cancelled_caught:
            self._fail_all(ConnectionClosed("the session was closed"))

    def _fail_all(self, error: MCPError) -> None:
        if self._broken is None:
            self._broken = error
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            entry.send_nowait(error)
        for scope in self._incoming.values():
            scope.cancel()
        for sub in self._subscribers:
            sub.send.close()

    def _fail_one(self, failure: RequestFailed) -> None:
        entry = self._pending.pop(failure.request_id, None)
        answer = _error_in_http_body(failure.error)
        if entry is not None and answer is not None:
            # A 4xx whose body is the JSON-RPC error response: the server did answer.
            entry.send_nowait(answer)
            return
        if entry is None:
            logger.warning(
                "transport failure for unknown request %r: %s", failure.request_id, failure.error
            )
            return
        entry.send_nowait(RequestFailedError(failure.error))

    def _dispatch(self, data: bytes) -> None:
        try:
            message = decode_envelope(data)
        except ProtocolError:
            if self._tolerate_invalid:
                logger.warning("dropping an invalid message from the server: %r", data[:200])
                return
            raise
        method = message.method
        if method is UNSET:
            entry = self._pending.pop(cast(int | str, message.id), None)
            if entry is None:
                logger.debug("dropping a response for unknown or cancelled request %r", message.id)
                return
            entry.send_nowait(message)
            return
        if message.id is UNSET or message.id is None:
            self._on_notification(method, message.params)
        else:
            self._on_request(message.id, method, message.params)

    def _on_notification(self, method: str, raw: msgspec.Raw) -> None:
        try:
            decoded: object = _any_decoder.decode(raw) if raw else {}
        except msgspec.DecodeError:
            logger.debug("dropping a notification with undecodable params: %s", method)
            return
        params = cast(dict[str, Any], decoded) if isinstance(decoded, dict) else {}
        if method == "notifications/progress":
            try:
                progress = msgspec.convert(params, t.ProgressNotificationParams)
            except msgspec.ValidationError:
                logger.debug("dropping a malformed progress notification")
                return
            entry = self._pending.get(progress.progress_token)
            if entry is not None:
                entry.send_nowait(progress)
        if method == "notifications/cancelled":
            cancelled_id = params.get("requestId")
            scope = self._incoming.get(cancelled_id)  # type: ignore[arg-type]
            if scope is not None:
                scope.cancel()
            for sub in self._subscribers:  # the server tore down a subscriptions/listen stream
                if sub.subscription_id is not None and sub.subscription_id == cancelled_id:
                    sub.send.close()
        elif method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            server_logger.log(level, "%s: %s", params.get("logger", "server"), params.get("data"))
        for prefix in _INVALIDATES.get(method, ()):
            self._invalidate(prefix)
        if method == "notifications/resources/updated":
            self._cache.pop(("resources/read", str(params.get("uri"))), None)
        note = Notification(method, params)
        subscription_id = None
        meta = params.get("_meta")
        if isinstance(meta, dict):
            subscription_id = cast(dict[str, Any], meta).get(_META_SUBSCRIPTION)
        for sub in self._subscribers:
            if sub.methods is not None and method not in sub.methods:
                continue
            if sub.subscription_id is not None:
                if subscription_id != sub.subscription_id:
                    continue
                if method == "notifications/subscriptions/acknowledged":
                    granted = params.get("notifications")
                    sub.granted = cast(dict[str, Any], granted) if isinstance(granted, dict) else {}
                    sub.acknowledged.set()
                    continue
            if (
                sub.uris is not None
                and method == "notifications/resources/updated"
                and params.get("uri") not in sub.uris
            ):
                continue
            try:
                sub.send.send_nowait(note)
            except trio.WouldBlock:
                logger.warning("notification subscriber is full; dropped %s", method)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        for key in (method, "*"):
            for callback in self._notification_handlers.get(key, ()):
                self._run_callback(callback, note)

    def _run_callback(self, callback: Callable[[Notification], Any], note: Notification) -> None:
        if inspect.iscoroutinefunction(callback):
            self._nursery.start_soon(self._run_async_callback, callback, note)
            return
        try:
            callback(note)
        except Exception:
            logger.exception("notification callback for %s raised", note.method)

    async def _run_async_callback(
        self, callback: Callable[[Notification], Any], note: Notification
    ) -> None:
        try:
            await callback(note)
        except Exception:
            logger.exception("notification callback for %s raised", note.method)

    def _on_request(self, request_id: int | str, method: str, raw: msgspec.Raw) -> None:
        if method == "ping":
            self._nursery.start_soon(self._send_quietly, encode_response(request_id, {}))
            return
        if not self._handlers.can_handle(method):
            self._nursery.start_soon(
                self._send_quietly,
                encode_error_response(
                    request_id, METHOD_NOT_FOUND, f"the client does not support {method}"
                ),
            )
            return
        scope = trio.CancelScope()
        self._incoming[request_id] = scope
        self._nursery.start_soon(self._serve_request, request_id, method, raw, scope)

    async def _serve_request(
        self, request_id: int | str, method: str, raw: msgspec.Raw, scope: trio.CancelScope
    ) -> None:
        response: bytes | None = None
        with scope:
            ctx = self._context(method, request_id, None)
            try:
                result = await self._handlers.handle(method, raw, ctx)
                response = encode_response(request_id, result if result is not None else {})
            except HandlerError as exc:
                response = encode_error_response(request_id, exc.code, exc.message, exc.data)
            except Exception as exc:
                logger.warning("handler for %s raised %r", method, exc, exc_info=True)
                response = encode_error_response(
                    request_id, INTERNAL_ERROR, f"{method} failed: {exc}"
                )
        self._incoming.pop(request_id, None)
        if scope.cancelled_caught:
            logger.debug("server cancelled its request %r (%s)", request_id, method)
            return
        if response is not None:
            await self._send_quietly(response)

    async def _send_quietly(self, data: bytes) -> None:
        if self._closed or self._broken is not None:
            return
        try:
            await self._transport.send(data, MessageInfo(None))
        except (MCPError, trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            logger.debug("could not send a response to the server: %r", exc)

    # -- caching (modern ttlMs hints) ----------------------------------------------------

    def _invalidate(self, method: str) -> None:
        for key in [key for key in self._cache if key[0] == method]:
            del self._cache[key]

    def _cache_get(self, method: str, key: str) -> Any:
        entry = self._cache.get((method, key))
        if entry is None:
            return None
        expires, value = entry
        if trio.current_time() >= expires:
            del self._cache[(method, key)]
            return None
        return value

    def _cache_put(self, method: str, key: str, value: Any) -> None:
        ttl = getattr(value, "ttl_ms", UNSET)
        if not self._cache_enabled or ttl is UNSET or not isinstance(ttl, (int, float)) or ttl <= 0:
            return
        self._cache[(method, key)] = (trio.current_time() + ttl / 1000.0, value)

    # -- low-level public API ------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        result_type: type[T] | None = None,
    ) -> Any:
        """Send any request and return its result.

        In the modern era the ``_meta`` fields are added and multi-round-trip input is
        gathered for you, exactly as for the typed methods.

        Args:
            method: The JSON-RPC method.
            params: The params, in wire form (camelCase keys).
            timeout: Seconds before :class:`trio.TooSlowError` (default: the session's).
            on_progress: Called (or awaited) with each progress notification for this request.
            result_type: Decode the result into this type (a msgspec Struct or any type
                msgspec understands); by default the decoded JSON is returned.

        Raises:
            ServerError: The server answered with a JSON-RPC error.
            ConnectionClosed: The server went away.
            trio.TooSlowError: The timeout expired.
        """
        raw = await self._call(method, params, timeout=timeout, on_progress=on_progress)
        if result_type is None:
            return _any_decoder.decode(raw)
        return self._decode(raw, result_type, method)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification to the server.

        Args:
            method: The notification method.
            params: The params in wire form, or None.
        """
        self._check_open()
        await self._transport.send(encode_notification(method, params), MessageInfo(method))

    def set_request_handler(
        self, method: str, handler: Callable[[Any, RequestContext], Awaitable[Any]] | None
    ) -> None:
        """Serve server-to-client requests of ``method`` with ``handler``.

        The handler receives the decoded params and a :class:`RequestContext` and returns the
        result (a dict or Struct); raising :class:`HandlerError` answers with that error.

        Args:
            method: The request method, e.g. ``"x-vendor/thing"``.
            handler: The async handler, or None to remove the current one.
        """
        if handler is None:
            self._handlers.extra.pop(method, None)
        else:
            self._handlers.extra[method] = handler

    def add_notification_handler(
        self, method: str, callback: Callable[[Notification], Any]
    ) -> Callable[[], None]:
        """Call ``callback`` for each notification of ``method`` (``"*"`` for all).

        A plain function runs in the reader task and must be quick; an ``async def`` runs in
        its own task in the session's nursery.

        Args:
            method: The notification method, or ``"*"`` for every notification.
            callback: Called with each :class:`Notification`.

        Returns:
            A function that removes the handler again.
        """
        self._notification_handlers.setdefault(method, []).append(callback)

        def remove() -> None:
            handlers = self._notification_handlers.get(method, [])
            if callback in handlers:
                handlers.remove(callback)

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
            A :class:`trio.MemoryReceiveChannel` of :class:`Notification`; it ends when the
            session closes.
        """
        self._check_open()
        async with self._subscribe(frozenset(methods) if methods else None, buffer) as channel:
            yield channel

    @asynccontextmanager
    async def _subscribe(
        self,
        methods: frozenset[str] | None,
        buffer: int | None,
        subscription_id: int | str | None = None,
        uris: frozenset[str] | None = None,
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:
        send, receive = trio.open_memory_channel[Notification](
            self._notification_buffer if buffer is None else buffer
        )
        sub = _Subscriber(methods, send, subscription_id, uris)
        self._subscribers.append(sub)
        try:
            async with receive:
                yield receive
        finally:
            self._subscribers.remove(sub)
            send.close()

    # -- typed API -----------------------------------------------------------------------

    async def _page(
        self, method: str, tp: type[T], cursor: str | None, *, cache: bool = True,
        timeout: float | None = None,
    ) -> T:  # fmt: skip
        key = cursor or ""
        if cache and self._cache:
            hit = self._cache_get(method, key)
            if hit is not None:
                return cast(T, hit)
        params = {"cursor": cursor} if cursor else None
        raw = await self._call(method, params, timeout=timeout, idempotent=True)
        page = self._decode(raw, tp, method)
        if self._era == "modern":
            self._cache_put(method, key, page)
        return page

    async def _all_pages(
        self, method: str, tp: type[Any], attr: str, *, cache: bool, timeout: float | None
    ) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(self._max_pages):
            page = await self._page(method, tp, cursor, cache=cache, timeout=timeout)
            items.extend(getattr(page, attr))
            next_cursor = page.next_cursor
            if next_cursor is UNSET or next_cursor is None or next_cursor == "":
                return items
            if next_cursor in seen:
                raise ProtocolError(
                    f"{method}: the server repeated cursor {next_cursor!r}; stopping"
                )
            seen.add(next_cursor)
            cursor = next_cursor
        raise ProtocolError(
            f"{method}: more than {self._max_pages} pages; use the *_page method to page by hand "
            "or raise max_pages"
        )

    async def list_tools(self, *, cache: bool = True, timeout: float | None = None) -> list[t.Tool]:
        """List every tool the server offers, following every ``nextCursor``.

        Args:
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds for each page request.
        """
        tools: list[t.Tool] = await self._all_pages(
            "tools/list", t.ListToolsResult, "tools", cache=cache, timeout=timeout
        )
        if not getattr(self._transport, "wants_param_headers", False):
            return tools
        return self._check_tool_headers(tools)

    def _check_tool_headers(self, tools: list[t.Tool]) -> list[t.Tool]:
        """Drop tools with invalid x-mcp-header annotations; keep the rest in wire form."""
        from ._transports._headers import validate_tool_headers

        kept: list[t.Tool] = []
        self._tool_wire = {}
        for tool in tools:
            wire: dict[str, Any] = t.to_builtins(tool)
            reason = validate_tool_headers(wire)
            if reason is None:
                kept.append(tool)
                self._tool_wire[tool.name] = wire
            else:
                logger.warning(
                    "dropping tool %r: invalid x-mcp-header annotation: %s", tool.name, reason
                )
        return kept

    async def list_tools_page(
        self, cursor: str | None = None, *, cache: bool = True
    ) -> t.ListToolsResult:
        """Fetch one page of tools.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while the server's ``ttlMs`` hint says it is fresh.
        """
        return await self._page("tools/list", t.ListToolsResult, cursor, cache=cache)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> t.CallToolResult:
        """Call a tool and return its result.

        A result with ``is_error`` set is returned, not raised: call
        :meth:`CallToolResult.raise_for_error` to turn it into a :class:`ToolError`.

        Args:
            name: The tool's name.
            arguments: The tool's arguments (JSON-compatible values).
            timeout: Seconds before :class:`trio.TooSlowError` and cancellation.
            on_progress: Called (or awaited) with each progress notification of this call.
        """
        args: Mapping[str, Any] = arguments if arguments is not None else {}
        params = {"name": name, "arguments": args}
        headers: Mapping[str, str] | None = None
        if getattr(self._transport, "wants_param_headers", False):
            headers = self._param_headers(name, args)
        raw = await self._call(
            "tools/call",
            params,
            timeout=timeout,
            on_progress=on_progress,
            name=name,
            headers=headers,
        )
        return self._decode(raw, t.CallToolResult, "tools/call")

    def _param_headers(self, name: str, arguments: Mapping[str, Any]) -> Mapping[str, str] | None:
        tool = self._tool_wire.get(name)
        if tool is None:
            return None
        from ._transports._headers import param_headers

        return param_headers(tool, dict(arguments))

    async def list_resources(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Resource]:
        """List every resource, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "resources/list", t.ListResourcesResult, "resources", cache=cache, timeout=timeout
        )

    async def list_resources_page(
        self, cursor: str | None = None, *, cache: bool = True
    ) -> t.ListResourcesResult:
        """Fetch one page of resources.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
        """
        return await self._page("resources/list", t.ListResourcesResult, cursor, cache=cache)

    async def list_resource_templates(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.ResourceTemplate]:
        """List every resource template, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "resources/templates/list", t.ListResourceTemplatesResult, "resource_templates",
            cache=cache, timeout=timeout,
        )  # fmt: skip

    async def list_resource_templates_page(
        self, cursor: str | None = None, *, cache: bool = True
    ) -> t.ListResourceTemplatesResult:
        """Fetch one page of resource templates.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
        """
        return await self._page(
            "resources/templates/list", t.ListResourceTemplatesResult, cursor, cache=cache
        )

    async def read_resource(
        self, uri: str, *, cache: bool = True, timeout: float | None = None
    ) -> t.ReadResourceResult:
        """Read a resource.

        Args:
            uri: The resource's URI.
            cache: Use a cached result while the server's ``ttlMs`` hint says it is fresh.
            timeout: Seconds before :class:`trio.TooSlowError`.

        Raises:
            ResourceNotFoundError: The server has no such resource.
        """
        if cache and self._cache:
            hit = self._cache_get("resources/read", uri)
            if hit is not None:
                return cast(t.ReadResourceResult, hit)
        raw = await self._call(
            "resources/read", {"uri": uri}, timeout=timeout, name=uri, idempotent=True
        )
        result = self._decode(raw, t.ReadResourceResult, "resources/read")
        if self._era == "modern":
            self._cache_put("resources/read", uri, result)
        return result

    async def subscribe_resource(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (legacy servers).

        Modern (2026-07-28) servers have no ``resources/subscribe``: nothing is sent; use
        :meth:`listen` with ``resource_uris=[uri]`` instead, which works in both eras.

        Args:
            uri: The resource's URI.
        """
        self._check_open()
        if self._era == "modern":
            logger.debug("subscribe_resource is a no-op in the modern era; use listen()")
            return
        await self._call("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop ``notifications/resources/updated`` about ``uri`` (no-op on modern servers).

        Args:
            uri: The resource's URI.
        """
        self._check_open()
        if self._era == "modern":
            return
        await self._call("resources/unsubscribe", {"uri": uri})

    async def list_prompts(
        self, *, cache: bool = True, timeout: float | None = None
    ) -> list[t.Prompt]:
        """List every prompt, following every ``nextCursor``.

        Args:
            cache: Use cached pages while the server's ``ttlMs`` hint says they are fresh.
            timeout: Seconds for each page request.
        """
        return await self._all_pages(
            "prompts/list", t.ListPromptsResult, "prompts", cache=cache, timeout=timeout
        )

    async def list_prompts_page(
        self, cursor: str | None = None, *, cache: bool = True
    ) -> t.ListPromptsResult:
        """Fetch one page of prompts.

        Args:
            cursor: The previous page's ``next_cursor``, or None for the first page.
            cache: Use a cached page while it is fresh.
        """
        return await self._page("prompts/list", t.ListPromptsResult, cursor, cache=cache)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> t.GetPromptResult:
        """Get a prompt, filled in with ``arguments``.

        Args:
            name: The prompt's name.
            arguments: Values for the prompt's arguments.
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        raw = await self._call("prompts/get", params, timeout=timeout, name=name)
        return self._decode(raw, t.GetPromptResult, "prompts/get")

    async def complete(
        self,
        ref: t.PromptReference | t.ResourceTemplateReference | Mapping[str, Any],
        argument_name: str,
        argument_value: str,
        *,
        context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> t.CompleteResult:
        """Ask the server to complete an argument of a prompt or resource template.

        Args:
            ref: ``PromptReference(name=...)``, ``ResourceTemplateReference(uri=...)`` or the
                same as a dict (``{"type": "ref/prompt", "name": ...}``).
            argument_name: The argument being completed.
            argument_value: What the user typed so far.
            context_arguments: Values of other, already chosen arguments.
        """
        params: dict[str, Any] = {
            "ref": t.to_builtins(ref) if isinstance(ref, msgspec.Struct) else dict(ref),
            "argument": {"name": argument_name, "value": argument_value},
        }
        if context_arguments:
            params["context"] = {"arguments": dict(context_arguments)}
        raw = await self._call("completion/complete", params, timeout=timeout)
        return self._decode(raw, t.CompleteResult, "completion/complete")

    async def set_logging_level(self, level: str) -> None:
        """Set the minimum level of log messages the server sends.

        Legacy servers get ``logging/setLevel``; in the modern era the level rides in every
        request's ``_meta`` from now on (nothing is sent now).

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``, ``critical``,
                ``alert`` or ``emergency``.
        """
        if level not in _LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {sorted(_LOG_LEVELS)}")
        self._check_open()
        self._log_level = level
        if self._era == "modern":
            self._rebuild_meta()
            return
        await self._call("logging/setLevel", {"level": level})

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers.

        Legacy servers get ``ping``; modern servers (which have no ``ping``) get a
        ``server/discover``, which every modern server must answer.

        Args:
            timeout: Seconds before :class:`trio.TooSlowError`.
        """
        if self._era == "modern":
            await self._call("server/discover", None, timeout=timeout)
            return
        await self._roundtrip("ping", None, timeout=timeout)

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
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
            buffer: How many notifications may wait unread.

        Yields:
            A channel of :class:`Notification`; it ends if the server ends the subscription.

        Raises:
            ServerError: The server rejected the subscription.
        """
        self._check_open()
        uris = frozenset(resource_uris)
        if self._era == "modern":
            async with self._listen_modern(tools, prompts, resources, sorted(uris), buffer) as rx:
                yield rx
            return
        methods: set[str] = set()
        if tools:
            methods.add("notifications/tools/list_changed")
        if prompts:
            methods.add("notifications/prompts/list_changed")
        if resources:
            methods.add("notifications/resources/list_changed")
        if uris:
            methods.add("notifications/resources/updated")
        async with self._subscribe(frozenset(methods), buffer, uris=uris) as channel:
            subscribed: list[str] = []
            try:
                for uri in sorted(uris):
                    await self.subscribe_resource(uri)
                    subscribed.append(uri)
                yield channel
            finally:
                with trio.move_on_after(self._cancel_notice_timeout, shield=True):
                    for uri in subscribed:
                        if self._broken is not None or self._closed:
                            break
                        try:
                            await self.unsubscribe_resource(uri)
                        except MCPError as exc:
                            logger.debug("unsubscribe %s failed: %r", uri, exc)

    @asynccontextmanager
    async def _listen_modern(
        self, tools: bool, prompts: bool, resources: bool, uris: list[str], buffer: int | None
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[Notification], None]:
        wanted: dict[str, Any] = {}
        if tools:
            wanted["toolsListChanged"] = True
        if prompts:
            wanted["promptsListChanged"] = True
        if resources:
            wanted["resourcesListChanged"] = True
        if uris:
            wanted["resourceSubscriptions"] = uris
        request_id = self._next_id  # its notifications carry this id
        self._next_id += 1
        scope = trio.CancelScope()
        failure: list[MCPError] = []
        async with self._subscribe(None, buffer, subscription_id=request_id) as channel:
            sub = self._subscribers[-1]

            async def hold_request() -> None:
                # Runs in the session's nursery, so the caller's block never sits inside a
                # nursery of ours (its exceptions stay bare, never an ExceptionGroup).
                with scope:
                    try:
                        await self._roundtrip(
                            "subscriptions/listen",
                            {
                                **self._with_meta("subscriptions/listen", None),
                                "notifications": wanted,
                            },
                            request_id=request_id,
                            timeout=math.inf,  # long-lived by design: no default timeout
                        )
                    except MCPError as exc:
                        failure.append(exc)
                        logger.debug("subscriptions/listen ended: %r", exc)
                sub.acknowledged.set()
                sub.send.close()

            self._nursery.start_soon(hold_request, name="trio_mcp subscriptions/listen")
            try:
                with trio.move_on_after(self._listen_ack_timeout):
                    await sub.acknowledged.wait()
                if failure and not isinstance(failure[0], ConnectionClosed):
                    raise failure[0]
                if not sub.acknowledged.is_set():
                    logger.warning(
                        "no acknowledgement of subscriptions/listen within %s s; listening anyway",
                        self._listen_ack_timeout,
                    )
                elif sub.granted is not None:
                    self._check_acknowledged(wanted, sub.granted)
                yield channel
            finally:
                scope.cancel()

    @staticmethod
    def _check_acknowledged(wanted: Mapping[str, Any], granted: Mapping[str, Any]) -> None:
        for key, value in wanted.items():
            got = granted.get(key)
            if got != value:
                logger.warning("the server did not acknowledge %s=%r (got %r)", key, value, got)

    # -- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the session and its transport. Idempotent; completes even when cancelled.

        Pending requests fail with :class:`ConnectionClosed`; handler tasks are cancelled;
        for stdio the server process is shut down (stdin closed, then SIGTERM, then SIGKILL).
        """
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            for scope in list(self._incoming.values()):
                scope.cancel()
            await self._transport.aclose()
            self._reader_scope.cancel()
            self._fail_all(ConnectionClosed("the session was closed"))

    async def __aenter__(self) -> ClientSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _error_in_http_body(error: MCPError) -> Envelope | None:
    """The JSON-RPC error response carried in the body of an HTTP 4xx, if there is one."""
    status = getattr(error, "status_code", None)
    body = getattr(error, "body", None)
    if not isinstance(status, int) or not 400 <= status < 500 or status in (401, 403):
        return None
    if not isinstance(body, str) or not body.lstrip().startswith("{"):
        return None
    try:
        message = decode_envelope(body.encode())
    except ProtocolError:
        return None
    return message if message.error is not UNSET else None


class RequestFailedError(MCPError):
    """Internal carrier: a transport-level failure of one request (unwrapped before callers)."""

    def __init__(self, error: MCPError):
        self.error = error
        super().__init__(str(error))


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("trio-mcp")
    except Exception:
        return "0.0.0"


Target = TransportFactory | Transport | Sequence[str] | str


def _resolve_target(target: Target, options: dict[str, Any]) -> TransportFactory | Transport:
    if isinstance(target, Transport):
        return target
    if isinstance(target, TransportFactory) and not isinstance(target, (str, bytes)):
        return target
    if isinstance(target, str):
        lowered = target.lower()
        if lowered.startswith(("http://", "https://")):
            from ._transports._http import StreamableHTTPParameters

            return StreamableHTTPParameters(target, **options)
        if lowered.startswith(("ws://", "wss://")):
            from ._transports._websocket import WebSocketParameters

            return WebSocketParameters(target, **options)
    from ._transports._stdio import StdioParameters

    argv: Any = target
    if isinstance(argv, str) or (
        isinstance(argv, Sequence) and all(isinstance(part, str) for part in argv)  # pyright: ignore[reportUnknownVariableType]
    ):
        return StdioParameters(cast("Sequence[str] | str", argv), **options)
    raise TypeError(
        f"cannot connect to {target!r}: give an argv list, a command line, a URL or parameters"
    )


_SESSION_OPTIONS: Final = frozenset(inspect.signature(ClientSession.__init__).parameters) - {
    "self",
    "nursery",
    "transport",
    "handlers",
}


@asynccontextmanager
async def open_mcp_session(
    nursery: trio.Nursery,
    target: Target,
    *,
    sampling: SamplingHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: RootsHandler | None = None,
    **options: Any,
) -> AsyncGenerator[ClientSession, None]:
    """Connect to an MCP server and yield a ready :class:`ClientSession`.

    The session's reader task, the tasks serving server-to-client requests and any transport
    tasks run in ``nursery``; leaving the block closes the session and its transport
    (shielded, bounded graceful steps, then force), also when the block is cancelled.

    Args:
        nursery: The nursery that owns the session's tasks.
        target: What to connect to: an argv list (a stdio server process), a command line
            string (split like a POSIX shell does, no shell runs), an ``http(s)://`` URL
            (Streamable HTTP, with legacy HTTP+SSE fallback), a ``ws(s)://`` URL (WebSocket),
            or a parameters object such as :class:`StdioParameters` or
            ``trio_mcp.testing.MockServer``.
        sampling: Handles ``sampling/createMessage`` requests from the server.
        elicitation: Handles ``elicitation/create`` requests from the server.
        roots: Handles ``roots/list``: an async callable, or a static list of roots/URIs.
        **options: Session options (``protocol``, ``default_timeout``, ``client_info``,
            ``probe_timeout``, ``cache``, ...; see the docs) and transport options for a
            plain target (``env``, ``cwd``, ``max_message_size``, ``headers``, ...).

    Yields:
        The session, with the era negotiated and the handshake (if any) done.

    Raises:
        ConnectionClosed: The server could not be started or went away during start-up.
        ProtocolError: The server speaks no protocol revision trio_mcp supports.
    """
    session_options = {key: options.pop(key) for key in list(options) if key in _SESSION_OPTIONS}
    resolved = _resolve_target(target, options)
    handlers = ServerRequestHandlers(sampling=sampling, elicitation=elicitation, roots=roots)
    if isinstance(resolved, Transport):
        if options:
            raise TypeError(f"unexpected options for an open transport: {sorted(options)}")
        session = ClientSession(nursery, resolved, handlers=handlers, **session_options)
        async with session:
            await session._start()
            yield session
        return
    async with resolved.open_transport(nursery) as transport:
        session = ClientSession(nursery, transport, handlers=handlers, **session_options)
        async with session:
            await session._start()
            yield session
