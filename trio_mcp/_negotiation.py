"""Era negotiation: the ``initialize`` handshake, ``server/discover``, and ``auto``'s probe.

`EraNegotiation` is the part of [`ClientSession`][trio_mcp.ClientSession] that runs before the
session is handed to you (``ClientSession._start``). In ``auto`` mode it sends the
``server/discover`` probe; an answer decides at once (``trio_mcp._eras.classify_probe``).
A probe that gets no answer within ``probe_timeout`` stays pending while ``initialize`` is
sent as well, and whichever the server answers first decides: a slow-starting server reads
its input in order and answers the probe first (modern), a legacy server that ignores
unknown methods answers only ``initialize``. A server that dies on the probe raises
``_ProbeCrashedError`` so ``open_mcp_session`` can start it once more with the handshake.
Verdicts are remembered per origin or command (``EraCache``) and re-probed when they fail.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio
from msgspec import UNSET

from . import types as t
from ._eras import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    Era,
    EraCache,
    ProbeVerdict,
    classify_probe,
)
from ._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    ServerError,
    TransportError,
)
from ._jsonrpc import decode_payload
from ._pending import PendingCall
from ._rpc import RPCConnection
from ._tasks import TASKS_EXTENSION, TaskReceiver

if TYPE_CHECKING:
    from ._handlers import ServerRequestHandlers
    from ._options import _Options
    from ._transports._base import Transport

__all__ = ["EraNegotiation"]

logger = logging.getLogger("trio_mcp")

_META_VERSION = t.META_PROTOCOL_VERSION
_META_CAPS = t.META_CLIENT_CAPABILITIES
_META_CLIENT = t.META_CLIENT_INFO
_META_LOG = t.META_LOG_LEVEL
_META_SERVER = t.META_SERVER_INFO
_BATCH_VERSIONS: Final = frozenset({"2025-03-26"})
"""Revisions that allow JSON-RPC batches (2025-06-18 removed them again)."""


class _ProbeCrashedError(Exception):
    """Internal: the server went away while answering the era probe (old servers do)."""

    def __init__(self, error: MCPError) -> None:
        self.error = error
        super().__init__(str(error))


class EraNegotiation:
    """The era negotiation of [`ClientSession`][trio_mcp.ClientSession] (a mixin: the session sets
    the attributes declared here in its ``__init__``)."""

    if not TYPE_CHECKING:  # (type checkers would refuse the mixin's own assignments)
        __slots__ = ()  # the session's __slots__ hold the attributes

    _transport: Transport
    _opts: _Options
    _rpc: RPCConnection
    _era_cache: EraCache
    _handlers: ServerRequestHandlers
    _client_info: t.Implementation
    _extensions: dict[str, dict[str, Any]]
    _receiver: TaskReceiver | None
    _era: Era | None
    _protocol_version: str | None
    _server_info: t.Implementation | None
    _server_capabilities: t.ServerCapabilities | None
    _instructions: str | None
    _log_level: str | None
    _meta_full: dict[str, Any]
    _meta_plain: dict[str, Any]

    def _batches_allowed(self) -> bool:
        """Whether JSON-RPC batches are valid in the negotiated revision (2025-03-26)."""
        return self._protocol_version in _BATCH_VERSIONS

    async def _start(self) -> None:
        """Start the reader and negotiate the era.

        Raises:
            _ProbeCrashedError: In ``auto`` mode the server died on the era probe.
        """
        self._rpc.start()
        option = self._opts.protocol
        transport = self._transport
        if option == "legacy" or (option == "auto" and not transport.can_probe):
            await self._initialize()
            return
        if option != "auto":
            await self._probe(option, pinned=True)
            return
        key = transport.era_key
        if key is not None and self._era_cache.get(key) == "legacy":
            try:
                await self._initialize()
                return
            except (ServerError, ProtocolError, HTTPStatusError) as exc:
                # versioning.mdx: re-probe when the cached assumption fails.
                logger.debug("cached legacy era of %s failed (%r); probing again", key, exc)
                self._era_cache.forget(key)
                if not self._rpc.usable:
                    raise
        await self._probe(MODERN_VERSIONS[0], pinned=False)

    async def _probe(self, version: str, *, pinned: bool) -> None:
        """Send ``server/discover``; go modern, retry at another version, or fall back.

        A probe that gets no answer within ``probe_timeout`` stays pending while
        ``initialize`` is sent: a server that was merely slow to start answers the probe
        first (it reads its input in order) and the session goes modern; a legacy server
        that ignores unknown methods answers ``initialize``.
        """
        key = self._transport.era_key
        for _attempt in range(2):
            self._set_modern(version)
            call = await self._rpc.start_request("server/discover", {"_meta": self._meta_plain})
            wait = self._opts.probe_timeout
            if pinned:
                wait = self._opts.init_timeout or float("inf")
            discovered: t.DiscoverResult | None = None
            error: MCPError | None = None
            with trio.move_on_after(wait):
                discovered, error = await self._probe_outcome(call)
            if not call.done:
                if pinned:
                    call.abandon()
                    raise trio.TooSlowError(
                        f"server/discover timed out after {self._opts.init_timeout} s"
                    )
                logger.debug("no answer to server/discover yet; sending initialize as well")
                await self._initialize(probe=call)
                return
            verdict = classify_probe(discovered, error, MODERN_VERSIONS, LEGACY_VERSIONS)
            if verdict.kind == ProbeVerdict.MODERN:
                assert discovered is not None and verdict.version is not None
                self._adopt_discover(discovered, verdict.version)
                if key is not None:
                    self._era_cache.put(key, "modern")
                return
            if verdict.kind == ProbeVerdict.RETRY:
                assert verdict.version is not None
                version = verdict.version
                continue
            if verdict.kind == ProbeVerdict.FAIL or pinned:
                if error is not None:
                    raise error
                raise ProtocolError(verdict.reason)
            logger.debug("server/discover probe: %s; falling back to initialize", verdict.reason)
            await self._initialize()
            return
        raise ProtocolError("the server rejected every mutually supported protocol version")

    async def _probe_outcome(
        self, call: PendingCall
    ) -> tuple[t.DiscoverResult | None, MCPError | None]:
        """Wait for the probe's answer: ``(result, None)`` or ``(None, error)``.

        Raises:
            _ProbeCrashedError: The whole connection ended while waiting (the server died).
            TransportError: The server could not be reached at all.
        """
        try:
            raw = await call.wait()
        except (ServerError, ProtocolError, HTTPStatusError) as exc:
            return None, exc
        except ConnectionClosed as exc:
            if not self._rpc.usable:
                raise _ProbeCrashedError(exc) from exc
            return None, exc  # only the probe's stream ended (HTTP): an old server
        try:
            return decode_payload(raw, t.DiscoverResult, "result of server/discover"), None
        except ProtocolError as exc:  # e.g. a legacy server's ``{}`` for any method
            return None, exc

    def _late_discover(self, probe: PendingCall) -> tuple[t.DiscoverResult, str] | None:
        """A modern answer to a probe that outlived its timeout, if one has arrived."""
        try:
            raw = probe.poll()
        except MCPError:
            return None
        finally:
            probe.abandon()
        if raw is None:
            return None
        try:
            discovered = decode_payload(raw, t.DiscoverResult, "result of server/discover")
        except ProtocolError:
            return None
        return self._modern_in(discovered)

    @staticmethod
    def _modern_in(discovered: t.DiscoverResult | None) -> tuple[t.DiscoverResult, str] | None:
        """``(result, version)`` when a discover result names a modern version we speak."""
        if discovered is None:
            return None
        verdict = classify_probe(discovered, None, MODERN_VERSIONS, LEGACY_VERSIONS)
        if verdict.kind != ProbeVerdict.MODERN or verdict.version is None:
            return None
        return discovered, verdict.version

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
        self._transport.negotiated(modern=True, protocol_version=version)
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
        if self._extensions:
            plain[_META_CAPS] = {"extensions": self._extensions}
        full = dict(plain)
        full[_META_CAPS] = self._capabilities()
        self._meta_plain = plain
        self._meta_full = full

    def _adopt_rediscovered(self, raw: msgspec.Raw) -> None:
        """Adopt a (maybe restarted) server's answer to ``server/discover`` after a gap.

        Raises:
            ProtocolError: The answer is not a ``server/discover`` result.
        """
        discovered = decode_payload(raw, t.DiscoverResult, "result of server/discover")
        modern = self._modern_in(discovered)
        if modern is None:
            logger.warning(
                "the server no longer offers a protocol version this session can use "
                "(supportedVersions %r); keeping %s",
                discovered.supported_versions,
                self._protocol_version,
            )
            return
        self._adopt_discover(*modern)

    async def _initialize(self, *, probe: PendingCall | None = None) -> None:
        """The legacy handshake; ``probe`` is an era probe still waiting for its answer."""
        self._era = "legacy"
        self._protocol_version = None
        self._transport.negotiated(modern=False, protocol_version=None)
        params = {
            "protocolVersion": LATEST_LEGACY_VERSION,
            "capabilities": self._capabilities(legacy=True),
            "clientInfo": t.to_builtins(self._client_info),
        }
        try:
            try:
                raw = await self._handshake(params)
            except TransportError as exc:
                if isinstance(exc, ConnectionClosed) or not await self._transport.fallback():
                    raise
                logger.debug("initialize failed (%r); retrying over the fallback transport", exc)
                raw = await self._handshake(params)
        except ConnectionClosed as exc:
            if probe is not None and not self._rpc.usable:
                raise _ProbeCrashedError(exc) from exc
            raise
        except ServerError:
            if probe is None:
                raise
            # A server that read the probe first (it was slow to start) has committed to
            # the modern era and rejects initialize: its answer to the probe decides.
            discovered: t.DiscoverResult | None = None
            with trio.move_on_after(self._opts.init_timeout or self._opts.probe_timeout):
                discovered, _ = await self._probe_outcome(probe)
            probe.abandon()
            late = self._modern_in(discovered)
            if late is None:
                raise
            self._adopt_modern_late(*late)
            return
        if probe is not None:
            late = self._late_discover(probe)
            if late is not None:  # the server answered the probe first: it speaks modern
                self._adopt_modern_late(*late)
                return
        init = decode_payload(raw, t.InitializeResult, "result of initialize")
        if init.protocol_version not in LEGACY_VERSIONS:
            raise ProtocolError(
                f"the server answered initialize with protocol version "
                f"{init.protocol_version!r}, which trio_mcp does not speak "
                f"(it speaks {', '.join(LEGACY_VERSIONS + MODERN_VERSIONS)})"
            )
        self._protocol_version = init.protocol_version
        self._transport.negotiated(modern=False, protocol_version=init.protocol_version)
        self._server_info = init.server_info
        self._server_capabilities = init.capabilities
        if init.instructions is not UNSET:
            self._instructions = init.instructions
        await self._rpc.notify("notifications/initialized")
        key = self._transport.era_key
        if key is not None and self._opts.protocol == "auto":
            self._era_cache.put(key, "legacy")

    def _adopt_modern_late(self, discovered: t.DiscoverResult, version: str) -> None:
        self._adopt_discover(discovered, version)
        key = self._transport.era_key
        if key is not None:
            self._era_cache.put(key, "modern")

    def _capabilities(self, *, legacy: bool = False) -> dict[str, Any]:
        """The client capabilities, with ``extensions`` (the tasks one is modern only)."""
        caps: dict[str, Any] = self._handlers.capabilities()
        receiver = self._receiver
        if legacy and receiver is not None:  # 2025-11-25: task-augmented server requests
            caps = {**caps, **receiver.capabilities()}
        extensions = {
            name: settings
            for name, settings in self._extensions.items()
            if not (legacy and name == TASKS_EXTENSION)
        }
        if extensions:
            caps = {**caps, "extensions": extensions}
        return caps

    async def _handshake(self, params: dict[str, Any]) -> msgspec.Raw:
        timeout = self._opts.init_timeout
        with trio.move_on_after(timeout if timeout is not None else float("inf")):
            return await self._rpc.request("initialize", params, announce_cancel=False)
        raise trio.TooSlowError(f"initialize timed out after {timeout} s")
