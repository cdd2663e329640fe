"""Opening sessions: ``open_mcp_session`` in both forms, its options, target resolution.

``open_mcp_session(nursery, target)`` runs the session's tasks in your nursery;
``open_mcp_session(target)`` gives the session a nursery of its own around your block and
unwraps what that nursery raises, so your exceptions arrive bare. Both resolve the target
(argv, command line, URL or parameters object) into a transport, start a
[`ClientSession`][trio_mcp.ClientSession] on it, negotiate the era, and restart a stdio server once
when it died on the era probe (old SDKs do).
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from types import TracebackType
from typing import Any, Final, cast, overload

import trio

from . import types as t
from ._eras import EraCache
from ._exceptions import raise_bare as _raise_bare
from ._handlers import ServerRequestHandlers
from ._negotiation import _ProbeCrashedError
from ._options import _Options
from ._session import ClientSession, ElicitationHandler, RootsHandler, SamplingHandler
from ._transports._base import Transport, TransportFactory

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["Target", "open_mcp_session"]

logger = logging.getLogger("trio_mcp")

Target = TransportFactory | Transport | Sequence[str] | str

_STDIO_OPTIONS: Final = frozenset(
    {"env", "cwd", "inherit_env", "max_message_size", "on_stderr", "shutdown_timeout"}
)
_HTTP_OPTIONS: Final = frozenset(
    {"headers", "auth", "client", "timeout", "max_message_size", "retry", "breaker", "sse_fallback"}
    | {"ssl_context"}
)
_WS_OPTIONS: Final = frozenset({"headers", "max_message_size", "timeout", "ssl_context"})


def _resolve_target(target: Target, options: dict[str, Any]) -> TransportFactory | Transport:
    """Turn ``target`` into a transport factory, applying the transport options given."""

    def check(kind: str, allowed: frozenset[str]) -> None:
        wrong = sorted(set(options) - allowed)
        if wrong:
            raise TypeError(
                f"open_mcp_session(): option {', '.join(map(repr, wrong))} does not apply to "
                f"{kind} (it takes {', '.join(sorted(allowed))})"
            )

    if isinstance(target, Transport) or (
        isinstance(target, TransportFactory) and not isinstance(target, (str, bytes))
    ):
        check("an open transport or a parameters object (set them on the object)", frozenset())
        return target
    if isinstance(target, str):
        lowered = target.lower()
        if lowered.startswith(("http://", "https://")):
            check("an http(s):// target", _HTTP_OPTIONS)
            from .transports import StreamableHTTPParameters

            return StreamableHTTPParameters(target, **options)
        if lowered.startswith(("ws://", "wss://")):
            check("a ws(s):// target", _WS_OPTIONS)
            from .transports import WebSocketParameters

            return WebSocketParameters(target, **options)
    from ._transports._stdio import StdioParameters

    argv: Any = target
    if isinstance(argv, str) or (
        isinstance(argv, Sequence)
        and not isinstance(argv, bytes)
        and all(isinstance(part, str) for part in argv)  # pyright: ignore[reportUnknownVariableType]
    ):
        check("a stdio command", _STDIO_OPTIONS)
        return StdioParameters(cast("Sequence[str] | str", argv), **options)
    raise TypeError(
        f"open_mcp_session(): cannot connect to {target!r}: give an argv list, a command "
        "line, an http(s):// or ws(s):// URL, or a parameters object"
    )


_TRANSPORT_OPTIONS: Final = _STDIO_OPTIONS | _HTTP_OPTIONS | _WS_OPTIONS


def _parameters_name(target: object) -> str | None:
    """The parameters class whose constructor takes ``target``'s transport options."""
    if isinstance(target, str):
        lowered = target.lower()
        if lowered.startswith(("http://", "https://")):
            return "StreamableHTTPParameters"
        if lowered.startswith(("ws://", "wss://")):
            return "WebSocketParameters"
        return "StdioParameters"
    if isinstance(target, Sequence) and not isinstance(target, bytes):
        return "StdioParameters"
    return None


def take_transport_options(
    target: Any, options: Mapping[str, Any], *, stacklevel: int
) -> tuple[Any, dict[str, Any]]:
    """Apply the deprecated transport keywords among ``options`` to ``target``, warning once.

    Returns the target (a parameters object when any applied) and the other options. The
    warning names the parameters object to use and points ``stacklevel`` frames above the
    caller; an option that does not fit the target is a `TypeError`, as before.
    """
    if not any(key in _TRANSPORT_OPTIONS for key in options):
        return target, dict(options)
    warn_transport_options("open_mcp_session", options, [target], stacklevel=stacklevel + 1)
    return with_transport_options(target, options)


def warn_transport_options(
    api: str, options: Iterable[str], targets: Sequence[Any], *, stacklevel: int
) -> None:
    """Warn if ``api`` was given transport options among ``options`` (deprecated there).

    The one wording of the deprecation: it names the options, and the parameters class
    that takes them for ``targets`` (when they all want the same one); it points
    ``stacklevel`` frames above the caller. No option of a transport: no warning.
    """
    names = sorted({key for key in options if key in _TRANSPORT_OPTIONS})
    if not names:
        return
    classes = {_parameters_name(target) for target in targets}
    cls = classes.pop() if len(classes) == 1 else None
    where = (
        f"trio_mcp.{cls}(target, {', '.join(f'{name}=...' for name in names)}) as the target"
        if cls is not None
        else "the parameters object given as the target"
    )
    warnings.warn(
        f"{api}(): transport options on {api} are deprecated "
        f"({', '.join(names)}); give them to {where}",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


def with_transport_options(
    target: Target, options: Mapping[str, Any]
) -> tuple[TransportFactory | Transport | Target, dict[str, Any]]:
    """Apply the transport options among ``options`` to ``target``; return the rest.

    For the APIs whose own options still mix both kinds (server groups, the CLI, config
    entries), with no warning: ``target, rest = with_transport_options(target, options)``,
    then ``open_mcp_session(target, **rest)`` gets only session options. Raises
    `TypeError` as ``open_mcp_session`` does for an option that does not apply to
    the target.
    """
    transport = {key: value for key, value in options.items() if key in _TRANSPORT_OPTIONS}
    rest = {key: value for key, value in options.items() if key not in _TRANSPORT_OPTIONS}
    if not transport:
        return target, rest
    return _resolve_target(target, transport), rest


@overload
def open_mcp_session(
    nursery: trio.Nursery,
    target: Target,
    /,
    *,
    sampling: SamplingHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: RootsHandler | None = None,
    elicitation_modes: Sequence[str] = ("form",),
    client_info: t.Implementation | None = None,
    protocol: str = "auto",
    default_timeout: float | None = None,
    progress_resets_timeout: bool = False,
    max_timeout: float | None = None,
    probe_timeout: float = 3.0,
    init_timeout: float | None = 60.0,
    cancel_notice_timeout: float = 1.0,
    cache: bool = True,
    max_input_rounds: int = 10,
    max_pages: int = 1000,
    notification_buffer: int = 1000,
    listen_ack_timeout: float = 10.0,
    max_server_requests: int = 32,
    era_cache: EraCache | None = None,
    output_validation: str = "report",
    tasks: bool = False,
    apps: bool = False,
    extensions: Mapping[str, Mapping[str, Any]] | None = None,
) -> AbstractAsyncContextManager[ClientSession]: ...
@overload
def open_mcp_session(
    target: Target,
    /,
    *,
    sampling: SamplingHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: RootsHandler | None = None,
    elicitation_modes: Sequence[str] = ("form",),
    client_info: t.Implementation | None = None,
    protocol: str = "auto",
    default_timeout: float | None = None,
    progress_resets_timeout: bool = False,
    max_timeout: float | None = None,
    probe_timeout: float = 3.0,
    init_timeout: float | None = 60.0,
    cancel_notice_timeout: float = 1.0,
    cache: bool = True,
    max_input_rounds: int = 10,
    max_pages: int = 1000,
    notification_buffer: int = 1000,
    listen_ack_timeout: float = 10.0,
    max_server_requests: int = 32,
    era_cache: EraCache | None = None,
    output_validation: str = "report",
    tasks: bool = False,
    apps: bool = False,
    extensions: Mapping[str, Mapping[str, Any]] | None = None,
) -> AbstractAsyncContextManager[ClientSession]: ...
def open_mcp_session(
    nursery_or_target: trio.Nursery | Target,
    target: Target | None = None,
    /,
    *,
    sampling: SamplingHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: RootsHandler | None = None,
    elicitation_modes: Sequence[str] = ("form",),
    client_info: t.Implementation | None = None,
    protocol: str = "auto",
    default_timeout: float | None = None,
    progress_resets_timeout: bool = False,
    max_timeout: float | None = None,
    probe_timeout: float = 3.0,
    init_timeout: float | None = 60.0,
    cancel_notice_timeout: float = 1.0,
    cache: bool = True,
    max_input_rounds: int = 10,
    max_pages: int = 1000,
    notification_buffer: int = 1000,
    listen_ack_timeout: float = 10.0,
    max_server_requests: int = 32,
    era_cache: EraCache | None = None,
    output_validation: str = "report",
    tasks: bool = False,
    apps: bool = False,
    extensions: Mapping[str, Mapping[str, Any]] | None = None,
    **transport_options: Any,
) -> AbstractAsyncContextManager[ClientSession]:
    """Connect to an MCP server and yield a ready [`ClientSession`][trio_mcp.ClientSession].

    Two forms, as trio-websocket's ``open_websocket`` and ``connect_websocket`` have:

    * ``open_mcp_session(nursery, target)``: the session's reader task, the tasks serving
      server-to-client requests and any transport tasks run in ``nursery`` (yours). An
      exception raised in your block reaches you through that nursery, so as an
      ``ExceptionGroup`` when the nursery wraps it.
    * ``open_mcp_session(target)``: the session owns a nursery of its own around your
      block; an exception from your block propagates bare, never as an ``ExceptionGroup``,
      with its own ``__cause__`` and ``__context__`` as you raised it.

    Leaving the block closes the session and its transport (shielded, bounded graceful
    steps, then force), also when the block is cancelled. None of the session's tasks ever
    raises into the nursery: a failure is recorded
    ([`ClientSession.failure`][trio_mcp.ClientSession.failure]) and every caller gets an exception
    of its own.

    Args:
        nursery_or_target: The nursery that owns the session's tasks, with the target
            following; or the target alone (the session then owns its nursery).
        target: What to connect to: an argv list (a stdio server process), a command line
            string (split like a POSIX shell does, no shell runs), an ``http(s)://`` URL
            (Streamable HTTP, with legacy HTTP+SSE fallback), a ``ws(s)://`` URL (WebSocket),
            or a parameters object such as [`StdioParameters`][trio_mcp.transports.StdioParameters]
            or ``trio_mcp.testing.MockServer``.
        sampling: Handles ``sampling/createMessage`` requests from the server.
        elicitation: Handles ``elicitation/create`` requests from the server.
        roots: Handles ``roots/list``: an async callable, or a static list of roots/URIs.
        elicitation_modes: The elicitation modes ``elicitation`` handles and the client
            declares: ``("form",)`` (default) or with ``"url"``.
        client_info: The name and version sent to the server (default: trio-mcp's).
        protocol: ``"auto"`` (probe, then pick the era), ``"legacy"`` (``initialize``
            handshake only) or a modern revision such as ``"2026-07-28"``.
        default_timeout: The ``timeout=`` of every call that gives none (seconds, whole
            call); None: no timeout but the caller's cancel scope.
        progress_resets_timeout: Progress notifications from the server extend a call's
            timeout (both eras). Off by default: ``timeout=`` bounds the whole call, and a
            server cannot stretch it (see docs/cancellation.md).
        max_timeout: The hard limit, from the start of a call, that progress cannot extend
            (None: ten times the call's timeout; ``math.inf`` for no limit).
        probe_timeout: How long ``auto`` waits for ``server/discover`` before also sending
            ``initialize`` (the probe stays pending: a slow server still answers it).
        init_timeout: Bound on the handshake (``initialize`` or a pinned
            ``server/discover``); None: only your cancel scope.
        cancel_notice_timeout: Bound on sending ``notifications/cancelled``.
        cache: Cache modern results while their ``ttlMs`` says they are fresh.
        max_input_rounds: How many multi-round-trip input rounds one call may take.
        max_pages: How many pages ``list_*`` follows before giving up.
        notification_buffer: How many notifications a subscriber channel holds unread.
        listen_ack_timeout: How long [`ClientSession.listen()`][trio_mcp.ClientSession.listen] waits
            for the modern server's acknowledgement.
        max_server_requests: How many server-to-client requests may run at once.
        era_cache: Where eras are remembered per origin / command (default: one cache
            shared by the process; pass ``EraCache()`` to isolate).
        output_validation: What [`ClientSession.call_tool()`][trio_mcp.ClientSession.call_tool] does
            with a result whose ``structuredContent`` does not match the tool's ``outputSchema``:
            ``"report"`` (default: keep it, outcome on ``result.validation``), ``"strict"`` (raise
            [`OutputValidationError`][trio_mcp.validation.OutputValidationError] carrying it) or
            ``"off"``.
        tasks: Advertise the Tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``)
            and run 2025-11-25 tools whose ``taskSupport`` is ``"optional"`` as tasks.
            Tasks a server makes are driven by
            [`ClientSession.call_tool()`][trio_mcp.ClientSession.call_tool] either way (see
            ``docs/tasks.md``).
        apps: Advertise MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865) with the
            ``text/html;profile=mcp-app`` MIME type: say so only if your host renders apps
            (servers may then list app-only tools). Off by default. Tools and resources
            carry their ``_meta.ui`` either way (``Tool.ui``; see ``docs/apps.md``).
        extensions: Further client extensions to advertise (SEP-2133), e.g.
            ``{"com.example/feature": {"setting": 1}}``.
        **transport_options: Deprecated: transport options (``env=``, ``cwd=``,
            ``headers=``, ``auth=``, ``ssl_context=``...) belong on the parameters object
            ([`StdioParameters`][trio_mcp.transports.StdioParameters],
            [`StreamableHTTPParameters`][trio_mcp.transports.StreamableHTTPParameters],
            [`WebSocketParameters`][trio_mcp.transports.WebSocketParameters]), given as the target.
            Still accepted for one release with a `DeprecationWarning`; type checkers flag them.

    Yields:
        The session, with the era negotiated and the handshake (if any) done.

    Raises:
        TypeError: Wrong arguments, or a (deprecated) transport option that does not
            apply to the target.
        ConnectionClosed: The server could not be started or went away during start-up.
        ProtocolError: The server speaks no protocol revision trio_mcp supports.
    """
    nursery: trio.Nursery | None
    if isinstance(nursery_or_target, trio.Nursery):
        if target is None:
            raise TypeError("open_mcp_session(nursery, target): the target is missing")
        nursery = nursery_or_target
    elif target is None:
        nursery, target = None, nursery_or_target
    else:
        raise TypeError(
            "open_mcp_session() takes (nursery, target) or (target); "
            f"{nursery_or_target!r} is not a trio.Nursery"
        )
    unknown = sorted(set(transport_options) - _TRANSPORT_OPTIONS)
    if unknown:
        raise TypeError(f"open_mcp_session() got an unexpected keyword argument {unknown[0]!r}")
    chosen, _ = take_transport_options(target, transport_options, stacklevel=2)  # deprecated
    options = _Options(
        client_info=client_info, protocol=protocol, default_timeout=default_timeout,
        progress_resets_timeout=progress_resets_timeout, max_timeout=max_timeout,
        probe_timeout=probe_timeout, init_timeout=init_timeout,
        cancel_notice_timeout=cancel_notice_timeout, cache=cache,
        max_input_rounds=max_input_rounds, max_pages=max_pages,
        notification_buffer=notification_buffer, listen_ack_timeout=listen_ack_timeout,
        max_server_requests=max_server_requests, era_cache=era_cache,
        output_validation=output_validation, tasks=tasks, apps=apps, extensions=extensions,
    )  # fmt: skip
    resolved = _resolve_target(chosen, {})
    handlers = ServerRequestHandlers(
        sampling=sampling, elicitation=elicitation, roots=roots,
        elicitation_modes=elicitation_modes,
    )  # fmt: skip
    if nursery is None:
        return _own_nursery_session(resolved, options, handlers)
    return _OpenSession(nursery, resolved, options, handlers)


class _OpenSession:
    """``async with``: open the transport, start the session on it, close both on exit.

    A stdio server that died on the era probe is started once more with the legacy
    handshake only (remembered per command). A plain class, not nested generator context
    managers: an open session keeps no suspended frames alive (issue 27).
    """

    __slots__ = ("_handlers", "_nursery", "_options", "_resolved", "_session", "_transport_cm")

    def __init__(
        self,
        nursery: trio.Nursery,
        resolved: TransportFactory | Transport,
        options: _Options,
        handlers: ServerRequestHandlers,
    ) -> None:
        self._nursery = nursery
        self._resolved = resolved
        self._options = options
        self._handlers = handlers
        self._session: ClientSession | None = None
        self._transport_cm: AbstractAsyncContextManager[Transport] | None = None

    async def __aenter__(self) -> ClientSession:
        resolved = self._resolved
        if isinstance(resolved, Transport):
            self._session = await _started(
                self._nursery, resolved, self._options, self._handlers, restartable=False
            )
            return self._session
        try:
            return await self._open(resolved, self._options, restartable=True)
        except _ProbeCrashedError as crashed:
            # The server died on the era probe, as servers on old SDKs do: start it again
            # and speak the legacy handshake only (remembered per command for next time).
            logger.info("the MCP server died on the era probe (%s); restarting it", crashed.error)
        session = await self._open(
            resolved, replace(self._options, protocol="legacy"), restartable=False
        )
        key = session.transport.era_key
        if key is not None:
            session._era_cache.put(key, "legacy")  # pyright: ignore[reportPrivateUsage]
        return session

    async def _open(
        self, factory: TransportFactory, options: _Options, *, restartable: bool
    ) -> ClientSession:
        cm = factory.open_transport(self._nursery)
        transport = await cm.__aenter__()
        try:
            session = await _started(
                self._nursery, transport, options, self._handlers, restartable=restartable
            )
        except BaseException as exc:
            await cm.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._transport_cm = cm
        self._session = session
        return session

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        session, cm = self._session, self._transport_cm
        self._session = self._transport_cm = None
        try:
            if session is not None:
                await session.aclose()
        except BaseException as close_error:
            if cm is not None:
                await cm.__aexit__(type(close_error), close_error, close_error.__traceback__)
            raise
        if cm is not None:
            return await cm.__aexit__(exc_type, exc, tb)
        return None


async def _started(
    nursery: trio.Nursery,
    transport: Transport,
    options: _Options,
    handlers: ServerRequestHandlers,
    *,
    restartable: bool,
) -> ClientSession:
    """A started session on ``transport`` (closed again when starting it failed)."""
    session: ClientSession = ClientSession._create(nursery, transport, options, handlers)  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    try:
        await session._start()  # pyright: ignore[reportPrivateUsage]
    except _ProbeCrashedError as crashed:
        await session.aclose()
        if restartable:
            raise
        raise crashed.error from None
    except BaseException:
        await session.aclose()
        raise
    return session


@asynccontextmanager
async def _own_nursery_session(
    resolved: TransportFactory | Transport, options: _Options, handlers: ServerRequestHandlers
) -> AsyncGenerator[ClientSession, None]:
    """The nursery-less form: the session's nursery wraps the user's block, errors bare."""
    user_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            async with _OpenSession(nursery, resolved, options, handlers) as session:
                try:
                    yield session
                except BaseException as exc:
                    user_error = exc
                    raise
    except BaseExceptionGroup as group:
        error = _only_error(group, user_error)
        if error is None:
            raise
        _raise_bare(error)


def _only_error(
    group: BaseExceptionGroup[Any], user_error: BaseException | None
) -> BaseException | None:
    """The one real exception in ``group`` (the user's, or start-up's), if there is one."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in cast("BaseExceptionGroup[BaseException]", exc).exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    if user_error is not None and any(leaf is user_error for leaf in leaves):
        if all(leaf is user_error or isinstance(leaf, trio.Cancelled) for leaf in leaves):
            return user_error
        return None
    real = [leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)]
    if len(real) == 1:
        return real[0]
    return None
