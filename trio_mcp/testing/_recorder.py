"""Recording a real MCP session: the [`Recorder`][trio_mcp.testing.Recorder] transport factory.

It wraps the real transport, notes every message with its time on trio's clock (and how the
server ended), scrubs each line by ``_scrub``'s rule and writes the cassette
(``_cassette``'s format) when the transport closes.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import trio

from .._connect import _resolve_target
from .._exceptions import ConnectionClosed, MCPError
from .._transports._base import MessageInfo, RequestFailure, RequestId, Transport, TransportFactory
from ._cassette import write
from ._scrub import describe, env_secrets, needles, scrub_with, target_secrets

__all__ = ["Recorder"]

_decoder = msgspec.json.Decoder()


class Recorder:
    """A transport factory that records a real session to a cassette file.

    Connect through it instead of the real target; everything else is unchanged:

    ```python
    recorder = Recorder(["python", "server.py"], "tests/cassettes/server.jsonl")
    async with trio_mcp.open_mcp_session(nursery, recorder) as session:
        await session.call_tool("echo", {"text": "hi"})
    ```

    The cassette is written when the transport closes (each connection overwrites it). The
    recording transport does not share the era cache (its ``era_key`` is ``None``), so the
    era probe is always recorded and a replay sees the same opening.

    Attributes:
        path: The cassette file.
        events: The scrubbed events of the last connection (header excluded).
    """

    def __init__(
        self,
        target: Any,
        path: str | os.PathLike[str],
        *,
        secrets: Iterable[str] = (),
        scrub_env: bool = True,
        **options: Any,
    ) -> None:
        """Record sessions to ``target``.

        Args:
            target: What ``open_mcp_session`` would take: an argv list, a command line, a
                URL, a parameters object or a transport factory.
            path: Where to write the cassette (JSON Lines).
            secrets: Extra literal strings to scrub (API keys, tokens...).
            scrub_env: Also scrub the values of this process's environment variables whose
                names look secret ([`is_secret_name()`][trio_mcp.testing.is_secret_name]) and the
                userinfo of URLs in any of them. The secret values of the target's own ``env=`` and
                ``headers=`` are always scrubbed (and only their names are written to the header).
            **options: Transport options, as ``open_mcp_session`` takes them (``env=``,
                ``headers=``...).
        """
        self._factory = _resolve_target(target, dict(options))
        self.path: Path = Path(path)
        self._needles = needles(
            [*secrets, *target_secrets(self._factory), *(env_secrets() if scrub_env else [])]
        )
        self.events: list[dict[str, Any]] = []

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        """Open the real transport, wrapped in a recorder (the ``TransportFactory`` method).

        Args:
            nursery: Where the real transport's tasks run.

        Yields:
            The recording transport.
        """
        if isinstance(self._factory, Transport):
            transport = _RecordingTransport(self._factory, self)
            try:
                yield transport
            finally:
                await transport.aclose()
                self._write(transport.events)
            return
        factory: TransportFactory = self._factory
        async with factory.open_transport(nursery) as inner:
            transport = _RecordingTransport(inner, self)
            try:
                yield transport
            finally:
                self._write(transport.events)

    def _scrub(self, value: Any) -> Any:
        return scrub_with(value, self._needles)

    def _write(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        write(self.path, self._scrub(describe(self._factory, self._needles)), events)


class _RecordingTransport(Transport):
    """Delegates to the real transport, noting every message with its time."""

    def __init__(self, inner: Transport, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder
        self._start = trio.current_time()
        self.events: list[dict[str, Any]] = []
        self.needs_info = inner.needs_info
        self.can_probe = inner.can_probe

    def _note(self, origin: str, data: bytes) -> None:
        event: dict[str, Any] = {"t": round(trio.current_time() - self._start, 6), "from": origin}
        try:
            event["message"] = self._recorder._scrub(_decoder.decode(data))
        except msgspec.DecodeError:
            event["raw"] = self._recorder._scrub(data.decode("utf-8", "replace"))
        self.events.append(event)

    @property
    def wants_param_headers(self) -> bool:
        return self._inner.wants_param_headers

    def attach(self, fail_request: RequestFailure) -> None:
        self._inner.attach(fail_request)

    def negotiated(self, *, modern: bool, protocol_version: str | None) -> None:
        super().negotiated(modern=modern, protocol_version=protocol_version)
        self._inner.negotiated(modern=modern, protocol_version=protocol_version)

    async def fallback(self) -> bool:
        return await self._inner.fallback()

    async def send(self, data: bytes, info: MessageInfo | None = None) -> None:
        self._note("client", data)
        await self._inner.send(data, info)

    async def receive(self) -> bytes:
        try:
            data = await self._inner.receive()
        except trio.EndOfChannel:
            self._note_end(self._inner.closed_error())
            raise
        except MCPError as exc:
            self._note_end(exc)
            raise
        self._note("server", data)
        return data

    def _note_end(self, error: MCPError) -> None:
        event: dict[str, Any] = {
            "t": round(trio.current_time() - self._start, 6),
            "from": "server",
            "end": True,
        }
        if isinstance(error, ConnectionClosed):
            if error.exit_code is not None:
                event["exit_code"] = error.exit_code
            if error.stderr_tail:
                event["stderr_tail"] = self._recorder._scrub(error.stderr_tail)
        self.events.append(event)

    def cancel_request(self, request_id: RequestId) -> bool:
        return self._inner.cancel_request(request_id)

    def closed_error(self) -> MCPError:
        return self._inner.closed_error()

    async def aclose(self) -> None:
        await self._inner.aclose()
