"""``-v``: every protocol message in and out, by wrapping the transport (no engine change)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

import trio

from .._transports._base import MessageInfo, RequestFailure, RequestId, Transport, TransportFactory

if TYPE_CHECKING:
    from .._exceptions import MCPError

__all__ = ["WireLog", "WiretapFactory"]

WireSink = Callable[[float, str, bytes], None]
"""Called with ``(seconds since start, direction, message bytes)``; direction ``">"`` or ``"<"``."""


class WireLog(Transport):
    """A transport that reports each whole message to a sink, then passes it on."""

    def __init__(self, inner: Transport, sink: WireSink) -> None:
        self._inner = inner
        self._sink = sink
        self._start = trio.current_time()
        self.needs_info = inner.needs_info
        self.can_probe = inner.can_probe
        self.protocol_version = inner.protocol_version
        self.modern = inner.modern

    def _log(self, direction: str, data: bytes) -> None:
        self._sink(trio.current_time() - self._start, direction, data)

    @property
    def era_key(self) -> str | None:
        """The inner transport's era key."""
        return self._inner.era_key

    @property
    def wants_param_headers(self) -> bool:
        """Whether the inner transport wants ``Mcp-Param-*`` headers."""
        return self._inner.wants_param_headers

    def attach(self, fail_request: RequestFailure) -> None:
        """Register the per-request failure callback on the inner transport."""
        self._inner.attach(fail_request)

    def negotiated(self, *, modern: bool, protocol_version: str | None) -> None:
        """Pass the negotiated era on."""
        super().negotiated(modern=modern, protocol_version=protocol_version)
        self._inner.negotiated(modern=modern, protocol_version=protocol_version)

    async def fallback(self) -> bool:
        """Let the inner transport fall back."""
        return await self._inner.fallback()

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        """Report, then send."""
        self._log(">", data)
        await self._inner.send(data, info)

    async def receive(self) -> bytes:
        """Receive, then report."""
        data = await self._inner.receive()
        self._log("<", data)
        return data

    def try_send_now(self, data: bytes) -> bool:
        """Report what the inner transport took."""
        taken = self._inner.try_send_now(data)
        if taken:
            self._log(">", data)
        return taken

    def queue_nowait(self, data: bytes) -> bool:
        """Report what the inner transport took."""
        taken = self._inner.queue_nowait(data)
        if taken:
            self._log(">", data)
        return taken

    def queue_request_nowait(self, data: bytes, info: MessageInfo | None) -> bool:
        """Report what the inner transport took."""
        taken = self._inner.queue_request_nowait(data, info)
        if taken:
            self._log(">", data)
        return taken

    def cancel_request(self, request_id: RequestId) -> bool:
        """Let the inner transport cancel natively."""
        return self._inner.cancel_request(request_id)

    def closed_error(self) -> MCPError:
        """The inner transport's reason."""
        return self._inner.closed_error()

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()


class WiretapFactory:
    """Open the inner factory's transport and wrap it in a `WireLog`."""

    def __init__(self, inner: TransportFactory | Transport, sink: WireSink) -> None:
        self._inner = inner
        self._sink = sink

    def open_transport(self, nursery: trio.Nursery) -> AbstractAsyncContextManager[Transport]:
        """Open the wrapped transport in ``nursery``."""
        return self._open(nursery)

    @asynccontextmanager
    async def _open(self, nursery: trio.Nursery) -> AsyncGenerator[Transport]:
        if isinstance(self._inner, Transport):
            yield WireLog(self._inner, self._sink)
            return
        async with self._inner.open_transport(nursery) as transport:
            yield WireLog(transport, self._sink)
