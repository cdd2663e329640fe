"""Opening a group: [`open_server_group()`][trio_mcp.groups.open_server_group] turns the servers
given into members and runs them.

The servers come as a loaded config, a mapping of names to targets, or a list of targets
(named by `default_name()`). Each becomes a member with its
session options and handlers (which learn the server's name in the group); config entries
are checked for consent first. The block starts once every member has started or failed its
first start.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeAlias, cast, overload

import trio

from .._config import ApprovalCallback, ConsentStore, MCPConfig, ServerConfig, check_consent
from .._config._model import target_parts
from .._connect import Target, _only_error, warn_transport_options
from .._exceptions import raise_bare as _raise_bare
from .._session import ElicitationHandler, RequestContext, RootsHandler, SamplingHandler
from .._transports._base import Transport
from ._members import Member, RestartPolicy
from ._names import CollisionPolicy, default_name
from ._server_group import ServerGroup

if TYPE_CHECKING:
    import httpx

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["GroupServers", "open_server_group"]

GroupServers: TypeAlias = "MCPConfig | Mapping[str, Target | ServerConfig] | Sequence[Target]"


@overload
def open_server_group(
    nursery: trio.Nursery,
    servers: GroupServers,
    /,
    *,
    collisions: CollisionPolicy = "prefix",
    prefix_separator: str = "_",
    restart: RestartPolicy | None = None,
    approve: ApprovalCallback | None = None,
    consent_store: ConsentStore | None = None,
    server_options: Mapping[str, Mapping[str, Any]] | None = None,
    sampling: SamplingHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: RootsHandler | None = None,
    auth: httpx.Auth | None = None,
    notification_buffer: int = 1000,
    keep_alive: float | None = None,
    **session_options: Any,
) -> AbstractAsyncContextManager[ServerGroup]: ...
@overload
def open_server_group(
    servers: GroupServers,
    /,
    *,
    collisions: CollisionPolicy = "prefix",
    prefix_separator: str = "_",
    restart: RestartPolicy | None = None,
    approve: ApprovalCallback | None = None,
    consent_store: ConsentStore | None = None,
    server_options: Mapping[str, Mapping[str, Any]] | None = None,
    sampling: SamplingHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: RootsHandler | None = None,
    auth: httpx.Auth | None = None,
    notification_buffer: int = 1000,
    keep_alive: float | None = None,
    **session_options: Any,
) -> AbstractAsyncContextManager[ServerGroup]: ...
def open_server_group(
    nursery_or_servers: trio.Nursery | GroupServers,
    servers: GroupServers | None = None,
    /,
    *,
    collisions: CollisionPolicy = "prefix",
    prefix_separator: str = "_",
    restart: RestartPolicy | None = None,
    approve: ApprovalCallback | None = None,
    consent_store: ConsentStore | None = None,
    server_options: Mapping[str, Mapping[str, Any]] | None = None,
    sampling: SamplingHandler | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: RootsHandler | None = None,
    auth: httpx.Auth | None = None,
    notification_buffer: int = 1000,
    keep_alive: float | None = None,
    **session_options: Any,
) -> AbstractAsyncContextManager[ServerGroup]:
    """Start several MCP servers, each supervised, and yield them as one
    [`ServerGroup`][trio_mcp.groups.ServerGroup].

    Two forms, as [`open_mcp_session()`][trio_mcp.open_mcp_session] has:
    ``open_server_group(nursery, servers)`` runs one supervisor task per server in your nursery;
    ``open_server_group( servers)`` owns a nursery around your block, and your exceptions arrive
    bare (their ``__cause__`` and ``__context__`` as you raised them).

    The block starts once every server has either started (handshake done, catalogue
    fetched) or failed its first start; failures are reported per server
    ([`ServerGroup.status()`][trio_mcp.groups.ServerGroup.status],
    [`ServerGroup.events()`][trio_mcp.groups.ServerGroup.events]), never raised here. Leaving the
    block stops every server.

    Args:
        nursery_or_servers: The nursery that owns the supervisors, with the servers
            following; or the servers alone.
        servers: A config from [`load_config()`][trio_mcp.config.load_config], a mapping of names to
            targets (or [`ServerConfig`][trio_mcp.config.ServerConfig]), or a list of targets (named
            by `default_name()`; an argv is a list itself, so wrap it: ``[["python",
            "-m", "server"]]``).
        collisions: When servers offer the same tool or prompt name: ``"prefix"`` exposes
            each as ``server{prefix_separator}name``; ``"error"`` makes listing and
            routing raise [`NameCollisionError`][trio_mcp.groups.NameCollisionError]; a hook
            ``(kind, server, name) -> exposed name`` renames each clashing item. Under ``"prefix"``
            and a hook a clash affects only the names that clash (see ``docs/groups.md``).
        prefix_separator: Between server name and item name under ``"prefix"``.
        restart: The [`RestartPolicy`][trio_mcp.groups.RestartPolicy] (default:
            ``RestartPolicy()``); ``RestartPolicy(enabled=False)`` turns restarts off.
        approve: Consent pinning for config entries: called for each entry that is new or
            changed since approved (see [`check_consent()`][trio_mcp.config.check_consent]); a
            refused entry does not start (state ``REJECTED``). None: no pinning.
        consent_store: Where approvals are kept (default: a file in the user's config
            folder).
        server_options: Per server name, more [`open_mcp_session()`][trio_mcp.open_mcp_session]
            options (``roots``, ``sampling``, ``default_timeout``, ...); they win over the rest.
        sampling: Handles sampling for every server; ``ctx.server_name`` is the server's
            name in the group.
        elicitation: Handles elicitation for every server (``ctx.server_name`` as above).
        roots: The roots every server gets (a list, or a callable given the context).
        auth: The authorization (an [`OAuth`][trio_mcp.auth.OAuth], any ``httpx.Auth``) of every
            HTTP server (an ``http(s)://`` URL, a config entry or a parameters object)
            that has none of its own; stdio and WebSocket servers are left alone. One
            ``OAuth`` serves them all, each server with its own tokens.
        notification_buffer: The buffer of each server's notification forwarding and of
            [`ServerGroup.notifications()`][trio_mcp.groups.ServerGroup.notifications] channels.
        keep_alive: Seconds between keep-alive pings of each running server (from the end
            of one to the start of the next; each may take as long): a ping that fails
            makes the server ``RECONNECTING`` until it answers again, so a server that died
            while the application was idle shows at once. None (the default): no pings
            (a stdio server's exit shows anyway; a remote server's failure shows when a
            call fails or its transport notices). One server's own:
            ``server_options={"name": {"keep_alive": 10}}``.
        **session_options: More [`open_mcp_session()`][trio_mcp.open_mcp_session] options for every
            server (``default_timeout``, ``init_timeout``, ``protocol``, ...). Transport
            options (``env=``, ``headers=``, ``ssl_context=``...), here or in
            ``server_options``, are deprecated as they are on ``open_mcp_session``: still
            applied, with a `DeprecationWarning`; give each server as a parameters
            object instead ([`StdioParameters`][trio_mcp.transports.StdioParameters],
            [`StreamableHTTPParameters`][trio_mcp.transports.StreamableHTTPParameters], ...).

    Yields:
        The group.

    Raises:
        TypeError: ``servers`` is not one of the accepted forms.
        ValueError: ``server_options`` names a server that is not in the group, or
            ``keep_alive`` is not a positive number.
    """
    nursery: trio.Nursery | None
    if isinstance(nursery_or_servers, trio.Nursery):
        if servers is None:
            raise TypeError("open_server_group(nursery, servers): the servers are missing")
        nursery = nursery_or_servers
    elif servers is None:
        nursery, servers = None, nursery_or_servers
    else:
        raise TypeError(
            "open_server_group() takes (nursery, servers) or (servers); "
            f"{nursery_or_servers!r} is not a trio.Nursery"
        )
    _check_keep_alive(keep_alive)
    if collisions not in ("prefix", "error") and not callable(collisions):
        raise ValueError(f"collisions must be 'prefix', 'error' or a callable, not {collisions!r}")
    handlers = {
        key: value
        for key, value in (("sampling", sampling), ("elicitation", elicitation), ("roots", roots))
        if value is not None
    }
    members = _members(servers, session_options, server_options or {}, handlers, auth, keep_alive)
    given = [*session_options, *(key for per in (server_options or {}).values() for key in per)]
    warn_transport_options(  # deprecated: they belong on each server's parameters object
        "open_server_group", given, [member.target for member in members], stacklevel=2
    )
    group = ServerGroup(
        members,
        collisions=collisions,
        prefix_separator=prefix_separator,
        restart=restart if restart is not None else RestartPolicy(),
        notification_buffer=notification_buffer,
    )
    configs = _configs(servers)
    if nursery is None:
        return _own_nursery(group, configs, approve, consent_store)
    return _run_group(nursery, group, configs, approve, consent_store)


def _with_auth(
    target: Any, options: dict[str, Any], auth: httpx.Auth
) -> tuple[Any, dict[str, Any]]:
    """Give an HTTP server without authorization of its own the group's ``auth``."""
    # Imported here for import cost: httpx loads only once HTTP is used (an auth is given).
    from .._transports._http_client import HTTPOptions

    if isinstance(target, str) and target.lower().startswith(("http://", "https://")):
        return target, {**options, "auth": auth}
    if isinstance(target, HTTPOptions) and target.auth is None:
        return dataclasses.replace(target, auth=auth), options
    return target, options


def _check_keep_alive(keep_alive: object) -> None:
    if keep_alive is not None and not (
        isinstance(keep_alive, (int, float)) and 0 < keep_alive < float("inf")
    ):
        raise ValueError(f"keep_alive must be a positive number of seconds, not {keep_alive!r}")


def _configs(servers: Any) -> dict[str, ServerConfig]:
    if isinstance(servers, MCPConfig):
        return dict(servers.servers)
    if isinstance(servers, Mapping):
        items = cast("Mapping[str, object]", servers).items()
        return {name: value for name, value in items if isinstance(value, ServerConfig)}
    return {}


def _named_handler(handler: Any, name: str) -> Any:
    """Wrap a server-request handler so its context names the server in the group."""

    async def with_name(params: Any, ctx: RequestContext) -> Any:
        return await handler(params, dataclasses.replace(ctx, server_name=name))

    return with_name


def _named_roots(roots: RootsHandler, name: str) -> RootsHandler:
    if not callable(roots):
        return roots
    handler = roots

    async def with_name(ctx: RequestContext) -> Any:
        return await handler(dataclasses.replace(ctx, server_name=name))

    return with_name


def _members(
    servers: Any,
    session_options: dict[str, Any],
    server_options: Mapping[str, Mapping[str, Any]],
    handlers: dict[str, Any],
    auth: httpx.Auth | None = None,
    keep_alive: float | None = None,
) -> list[Member]:
    entries: list[tuple[str, Any]]
    if isinstance(servers, MCPConfig):
        entries = list(servers.servers.items())
    elif isinstance(servers, Mapping):
        entries = list(cast("Mapping[str, Any]", servers).items())
    elif isinstance(servers, Sequence) and not isinstance(servers, (str, bytes)):
        entries = []
        taken: set[str] = set()
        for target in cast("Sequence[Any]", servers):  # type: ignore[redundant-cast]
            base = default_name(target)
            name, number = base, 1
            while name in taken:
                number += 1
                name = f"{base}-{number}"
            taken.add(name)
            entries.append((name, target))
    else:
        raise TypeError(
            "open_server_group(): give a loaded config, a mapping of names to targets, or a "
            f"list of targets, not {servers!r}"
        )
    unknown = sorted(set(server_options) - {name for name, _ in entries})
    if unknown:
        raise ValueError(f"open_server_group(): server_options names unknown servers {unknown}")
    members: list[Member] = []
    shared: list[str] = []  # the servers given the group's auth
    for name, target in entries:
        options: dict[str, Any] = {}
        redact = target.redact if isinstance(target, ServerConfig) else None
        if isinstance(target, ServerConfig):
            target, options = target_parts(target)  # put together when the member runs
        options.update(session_options)
        options.update(handlers)
        options.update(server_options.get(name, {}))
        member_keep_alive = options.pop("keep_alive", keep_alive)
        _check_keep_alive(member_keep_alive)
        for key in ("sampling", "elicitation"):
            if options.get(key) is not None:
                options[key] = _named_handler(options[key], name)
        if options.get("roots") is not None:
            options["roots"] = _named_roots(options["roots"], name)
        if auth is not None and "auth" not in options:
            target, options = _with_auth(target, options, auth)
            if options.get("auth") is auth or getattr(target, "auth", None) is auth:
                shared.append(name)
        restartable = not isinstance(target, Transport)
        members.append(
            Member(name, target, options, restartable, redact=redact, keep_alive=member_keep_alive)
        )
    if len(shared) > 1:
        _check_shared_auth(auth, shared)
    return members


def _check_shared_auth(auth: Any, names: list[str]) -> None:
    """Refuse one OAuth whose credentials bind to one issuer, shared without ``issuer=``.

    Raises:
        ValueError: ``auth`` carries a client secret, a private key or an assertion but
            no ``issuer=``: the first server to connect would choose where they go.
    """
    # Imported here for import cost: the auth package loads only once an auth is given.
    from .._auth._identity import confidential
    from .._auth._provider import OAuth  # (the same: only once an auth is given)

    if not isinstance(auth, OAuth) or auth.issuer is not None:
        return
    what = confidential(auth)
    if what is not None:
        raise ValueError(
            f"open_server_group(auth=...): the shared OAuth carries {what} but no issuer=, "
            f"so whichever of {names} connects first would choose the authorization server "
            "that gets it. Pass OAuth(..., issuer=...) (servers of other authorization "
            "servers are then refused), or give each server its own auth"
        )


@asynccontextmanager
async def _run_group(
    nursery: trio.Nursery,
    group: ServerGroup,
    configs: dict[str, ServerConfig],
    approve: ApprovalCallback | None,
    store: ConsentStore | None,
) -> AsyncGenerator[ServerGroup, None]:
    approved: dict[str, bool] = {}
    if approve is not None and configs:
        approved = await check_consent(configs, approve, store)
    try:
        group._start(nursery, approved)
        await group._settled()
        yield group
    finally:
        await group.aclose()


@asynccontextmanager
async def _own_nursery(
    group: ServerGroup,
    configs: dict[str, ServerConfig],
    approve: ApprovalCallback | None,
    store: ConsentStore | None,
) -> AsyncGenerator[ServerGroup, None]:
    user_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            async with _run_group(nursery, group, configs, approve, store) as opened:
                try:
                    yield opened
                except BaseException as exc:
                    user_error = exc
                    raise
    except BaseExceptionGroup as exc_group:
        error = _only_error(exc_group, user_error)
        if error is None:
            raise
        _raise_bare(error)
