"""The server's requests to the client: the table of running handlers, their tasks, quick replies.

`ServerRequests` is the part of the JSON-RPC engine (``_rpc.RPCConnection``, its only
subclass) that serves what the server asks of us: ``ping`` is answered at once, a method the
client does not serve gets ``-32601``, every other request runs its handler in a task and
cancel scope of its own (so a slow handler never stalls the reader), and the server's
``notifications/cancelled`` cancels exactly that handler. Work the server starts is bounded:
at most ``max_server_requests`` handlers at once, and a bounded queue of quick replies whose
writer task starts with the first reply. It is a base class, not an object of its own, so a
session pays no extra object for it; it knows the rest of the engine by the four members
declared below.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from ._exceptions import ProtocolError
from ._handlers import HandlerError
from ._jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    RequestId,
    decode_payload,
    encode_error_response,
    encode_response,
)

__all__ = ["RequestHandler", "ServerRequests"]

logger = logging.getLogger("trio_mcp")

RequestHandler = Callable[[RequestId, str, msgspec.Raw], Awaitable[Any]]
"""Serves one server-to-client request: ``(request_id, method, params)`` to the result in wire form;
raising ``HandlerError`` answers with that error."""

_REPLY_QUEUE: Final = 256


class ServerRequests:
    """Serving the server's requests: the base of ``RPCConnection`` (see the module doc)."""

    __slots__ = (
        "_can_handle",
        "_handle_request",
        "_incoming",
        "_max_server_requests",
        "_replies_send",
    )

    if TYPE_CHECKING:
        # What this part uses of the engine (RPCConnection defines them).
        @property
        def usable(self) -> bool: ...
        def spawn(self, fn: Callable[..., Awaitable[object]], *args: Any, name: str) -> bool: ...
        def _dropped(self, kind: str, detail: str) -> None: ...
        async def _send_quietly(self, data: bytes, method: str | None = None) -> None: ...

    def __init__(
        self,
        handle_request: RequestHandler,
        can_handle: Callable[[str], bool],
        max_server_requests: int,
    ) -> None:
        self._handle_request = handle_request
        self._can_handle = can_handle
        self._max_server_requests = max_server_requests
        self._incoming: dict[RequestId, trio.CancelScope] = {}
        # The quick-reply queue and its writer task exist from the first reply on: most
        # sessions never get a server-to-client request, and an idle task costs memory.
        self._replies_send: trio.MemorySendChannel[bytes] | None = None

    def _stop_serving(self) -> None:
        """Cancel every running handler and close the reply queue (the engine stopped)."""
        for scope in list(self._incoming.values()):
            scope.cancel()
        if self._replies_send is not None:
            self._replies_send.close()

    def _on_cancelled(self, params: msgspec.Raw) -> None:
        try:
            decoded = decode_payload(params, dict[str, Any], "cancellation params")
        except ProtocolError:
            return
        cancelled: object = decoded.get("requestId")
        if isinstance(cancelled, bool) or not isinstance(cancelled, (int, str)):
            return
        scope = self._incoming.get(cancelled)
        if scope is not None:
            scope.cancel()

    def _on_request(self, request_id: RequestId, method: str, params: msgspec.Raw) -> None:
        if method == "ping":
            self._reply(encode_response(request_id, {}))
            return
        if not self._can_handle(method):
            self._reply(
                encode_error_response(
                    request_id, METHOD_NOT_FOUND, f"the client does not support {method}"
                )
            )
            return
        if request_id in self._incoming:
            self._dropped("reused_id", f"{request_id!r} ({method})")
            return
        if len(self._incoming) >= self._max_server_requests:
            self._reply(
                encode_error_response(
                    request_id,
                    INTERNAL_ERROR,
                    f"the client is busy: {self._max_server_requests} requests of the server "
                    "are already running",
                )
            )
            return
        scope = trio.CancelScope()
        self._incoming[request_id] = scope
        if not self.spawn(
            self._serve_request, request_id, method, params, scope, name=f"trio_mcp {method}"
        ):
            self._incoming.pop(request_id, None)

    async def _serve_request(
        self, request_id: RequestId, method: str, params: msgspec.Raw, scope: trio.CancelScope
    ) -> None:
        response: bytes | None = None
        try:
            with scope:
                try:
                    result = await self._handle_request(request_id, method, params)
                    response = encode_response(request_id, result if result is not None else {})
                except HandlerError as exc:
                    response = encode_error_response(request_id, exc.code, exc.message, exc.data)
                except Exception as exc:  # a bug of ours or the application's: no details out
                    logger.error("handler for %s raised %r", method, exc, exc_info=True)
                    response = encode_error_response(
                        request_id,
                        INTERNAL_ERROR,
                        f"internal error: the client could not handle {method}",
                    )
        finally:
            self._incoming.pop(request_id, None)
        if scope.cancelled_caught:
            logger.debug("server cancelled its request %r (%s)", request_id, method)
            return
        if response is not None:
            await self._send_quietly(response)

    def _reply(self, data: bytes) -> None:
        """Queue a quick reply without blocking the reader (dropped when the queue is full).

        The first reply starts the queue's writer task; once the connection stopped working
        nothing is queued.
        """
        send = self._replies_send
        if send is None:
            if not self.usable:
                return
            send, receive = trio.open_memory_channel[bytes](_REPLY_QUEUE)
            self._replies_send = send
            if not self.spawn(self._reply_writer, receive, name="trio_mcp replies"):
                return  # the owner's nursery is gone: spawn failed the connection
        try:
            send.send_nowait(data)
        except trio.WouldBlock:
            self._dropped("reply", "(too many replies are queued)")
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def _reply_writer(self, receive: trio.MemoryReceiveChannel[bytes]) -> None:
        async with receive:
            async for data in receive:
                await self._send_quietly(data)
