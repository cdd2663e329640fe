"""One request waiting for its answer: the memory channel per request and its pool.

A request's answer (or its failure, or its progress) reaches the caller through a trio
memory channel of its own, opened for the request and recycled through one pool per trio
run. `PendingCall` is the caller's handle: `wait()` collects the
answer, `abandon()` forgets it. The engine (``_rpc``) makes them and feeds
their channels; it is known here only as the small `CallOwner` protocol.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, cast

import msgspec
import trio
from msgspec import UNSET

from . import types as t
from ._jsonrpc import Envelope, RequestId, server_error_from_wire

__all__ = [
    "CHANNEL_POOL_SIZE",
    "CallOwner",
    "Channels",
    "PendingCall",
    "ProgressCallback",
    "open_channel",
    "run_channel_pool",
]

ProgressCallback = Callable[[t.ProgressNotificationParams], Awaitable[None] | None]
"""Called with each progress notification of a request (a plain or an async function)."""
CHANNEL_POOL_SIZE: Final = 1024  # idle response channels kept, per trio run


class CallOwner(Protocol):
    """What a `PendingCall` needs of its connection (``RPCConnection``)."""

    def _recycle(self, channels: Channels) -> None: ...
    def _forget(self, request_id: RequestId) -> None: ...


Channels = tuple["trio.MemorySendChannel[Any]", "trio.MemoryReceiveChannel[Any]"]


def _direct_opener() -> Callable[[float], Channels] | None:
    """``trio.open_memory_channel`` without its typing work, or None where that is unsafe.

    trio's own function builds the pair with ``MemorySendChannel[T]._create(state)``: two
    typing aliases per call, whose attribute lookups cost about 2 µs of the 6-8 µs a pair
    costs, paid for every channel the first burst of a run opens (issue 35). This makes the
    same objects from the same (trio-internal) parts, unsubscripted; it is used only when
    those parts exist and a pair made with it passes a check of what the library relies on
    (one buffered item crosses, closing the sender ends the receiver), so another trio
    version falls back to the public function, never to something different.
    """
    try:
        from trio._channel import MemoryChannelState

        new_state = cast("Callable[[float], object]", MemoryChannelState)
        new_send = cast(
            "Callable[[object], trio.MemorySendChannel[Any]]", trio.MemorySendChannel._create
        )
        new_receive = cast(
            "Callable[[object], trio.MemoryReceiveChannel[Any]]", trio.MemoryReceiveChannel._create
        )

        def opener(max_buffer_size: float) -> Channels:
            state = new_state(max_buffer_size)
            return new_send(state), new_receive(state)

        send, receive = opener(math.inf)
        if (
            type(send) is not trio.MemorySendChannel
            or type(receive) is not trio.MemoryReceiveChannel
        ):
            return None
        send.send_nowait(1)
        send.close()
        if receive.receive_nowait() != 1:
            return None
        try:
            receive.receive_nowait()
        except trio.EndOfChannel:
            return opener
        return None
    except Exception:  # any trio whose internals differ: the public function
        return None


open_channel: Final[Callable[[float], Channels]] = _direct_opener() or cast(
    "Callable[[float], Channels]", trio.open_memory_channel
)
"""opens one response channel pair, unbounded (``open_channel(math.inf)``)"""
_channel_pool: Final = trio.lowlevel.RunVar["list[Channels]"]("trio_mcp response channels")


def run_channel_pool() -> list[Channels]:
    """The idle response channels of this trio run, shared by all its connections.

    Creating a channel costs about 3 µs and an idle one 2.4 KiB: one pool per run (not per
    connection) lets a burst reuse the channels of earlier ones, while many sessions of one
    application (a server group) keep one pool between them, freed when the run ends.
    """
    try:
        return _channel_pool.get()
    except LookupError:
        pool: list[Channels] = []
        _channel_pool.set(pool)
        return pool


class PendingCall:
    """One request on the wire whose answer has not been collected yet.

    Made by `RPCConnection.start_request()`. `wait()` collects the answer; a call
    that is no longer wanted is dropped with `abandon()` (or announced as cancelled with
    `RPCConnection.cancel()`).
    """

    __slots__ = ("_channels", "_conn", "_on_progress", "done", "method", "request_id")

    def __init__(
        self,
        conn: CallOwner,
        request_id: RequestId,
        method: str,
        channels: Channels,
        on_progress: ProgressCallback | None,
    ) -> None:
        self._conn = conn
        self.request_id = request_id
        self.method = method
        self._channels = channels
        self._on_progress = on_progress
        self.done = False

    def _finish(self, item: Envelope) -> msgspec.Raw:
        self.done = True
        self._conn._recycle(self._channels)  # pyright: ignore[reportPrivateUsage]
        if item.error is not UNSET:
            error = item.error
            raise server_error_from_wire(error.code, error.message, error.data, method=self.method)
        return item.result

    async def wait(self) -> msgspec.Raw:
        """Wait for the answer; return its raw ``result``.

        Cancelling the wait leaves the request pending (see `abandon()`).

        Raises:
            ServerError: The server answered with an error.
            ProtocolError: The answer could not be decoded.
            ConnectionClosed: The connection ended first.
            trio.ClosedResourceError: The session was closed by its owner.
        """
        receive = self._channels[1]
        while True:
            item = await receive.receive()
            if type(item) is Envelope:
                return self._finish(item)
            if isinstance(item, BaseException):
                self.done = True
                raise item
            callback = self._on_progress
            if callback is not None:
                outcome = callback(item)
                if inspect.isawaitable(outcome):
                    await outcome

    def poll(self) -> msgspec.Raw | None:
        """The answer if it has arrived (progress is skipped), else None. Never blocks.

        Raises:
            The same as `wait()`, when the answer has arrived and is a failure.
        """
        receive = self._channels[1]
        while True:
            try:
                item = receive.receive_nowait()
            except trio.WouldBlock:
                return None
            if type(item) is Envelope:
                return self._finish(item)
            if isinstance(item, BaseException):
                self.done = True
                raise item

    def abandon(self) -> None:
        """Forget the request: a late answer is dropped; the transport may close its stream.

        No ``notifications/cancelled`` is sent (use `RPCConnection.cancel()` for that).
        """
        if not self.done:
            self.done = True
            self._conn._forget(self.request_id)  # pyright: ignore[reportPrivateUsage]
