"""The "channel floor": the floor client with trio_mcp's delivery design.

Identical to :mod:`floor_client` (same wire types, one reader task, coalesced writes by one
writer task, msgspec typed results) except for how a response reaches its caller: each
request opens its own ``trio.open_memory_channel(1)``; the reader hands the raw payload
over with ``send_nowait`` and the caller ``await``\\ s ``receive()``. That is the delivery
trio_mcp's product owners chose (one memory channel per request), so this is the floor its
stdio targets are measured against. The Event + slot floor (:mod:`floor_client`) stays in
the tables as the limit of any sleeping Trio client. Only the delivery is written here
(:class:`ChannelFloorSession` overrides ``request``, ``_dispatch`` and ``_fail_pending``);
everything else is :class:`floor_client.FloorSession`'s.

Run through ``bench/run.py`` (or ``python bench/_worker.py channel_floor WORKLOAD``).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import floor_client
import trio
from floor_client import (
    FloorSession,
    Request,
    ServerError,
    _decode_envelope,
    _decode_error,
    _decoder,
    _encode,
    call_tool,
    codec_pair,
    list_tools,
    result_text,
    runtime,
)
from msgspec import Raw

NAME = "channel_floor"

__all__ = [
    "NAME",
    "call_tool",
    "codec_pair",
    "list_tools",
    "open_session",
    "result_text",
    "runtime",
]

T = TypeVar("T")

# What the reader hands over: (is_error, raw payload).
_Delivery = tuple[bool, Raw]
_CLOSED: _Delivery = (True, Raw(b'{"code":-32000,"message":"connection closed"}'))


class ChannelFloorSession(FloorSession):
    """A minimal MCP client session; each response travels on its own memory channel."""

    # ``_pending`` (the base's table) maps ids to each request's send channel here, so a
    # session holds exactly what the Event floor's does, for fair memory figures.
    _pending: dict[int | str, Any]

    async def request(self, method: str, params: Any, kind: type[T]) -> T:
        """Sends one request and decodes its result into ``kind``."""
        if self._closed:
            raise trio.ClosedResourceError
        rid = self._next_id
        self._next_id = rid + 1
        send, receive = trio.open_memory_channel[_Delivery](1)
        self._pending[rid] = send
        self._send.send_nowait(_encode(Request("2.0", rid, method, params)))
        try:
            with receive:
                is_error, payload = await receive.receive()
        finally:
            self._pending.pop(rid, None)
        if is_error:
            err = _decode_error(payload)
            raise ServerError(err.code, err.message)
        return _decoder(kind)(payload)

    def _fail_pending(self) -> None:
        for send in self._pending.values():
            try:
                send.send_nowait(_CLOSED)
            except (trio.WouldBlock, trio.BrokenResourceError):
                pass

    def _dispatch(self, line: bytes | bytearray) -> None:
        env = _decode_envelope(line)
        if env.method is not None:
            return  # server notification or request: the floor ignores them
        send = self._pending.pop(env.id, None) if env.id is not None else None
        if send is None:
            return
        try:
            send.send_nowait((True, env.error) if env.error else (False, env.result))
        except (trio.WouldBlock, trio.BrokenResourceError):
            pass  # the caller is gone (cancelled): drop the late answer


def open_session(command: list[str]) -> AbstractAsyncContextManager[ChannelFloorSession]:
    """Starts the server, initializes, yields the session, then closes it all."""
    return floor_client.open_session(command, ChannelFloorSession)


if __name__ == "__main__":
    from _runtime import exec_worker

    exec_worker(NAME)
