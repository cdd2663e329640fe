"""Many servers at once: a supervised group with one catalogue and routing.

Each server runs in a supervisor task of its own, in the nursery you give (or one the
group owns). A server that fails to start or dies is reported (a :class:`ServerStatus`
with its error and stderr tail) while the others keep working; servers started from a
factory (a stdio command, a URL, a ``MockServer``) are restarted with exponential backoff
and a circuit breaker on trio's clock, and their catalogue is fetched again.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import os
import sys
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, TypeVar, cast, overload
from urllib.parse import urlsplit

import msgspec
import trio
from msgspec import UNSET

from . import types as t
from ._config import ApprovalCallback, ConsentStore, MCPConfig, ServerConfig, check_consent
from ._config import redact_exception as _redact_exception
from ._connect import Target, open_mcp_session, with_transport_options
from ._droplog import DropLog
from ._exceptions import (
    CircuitOpenError,
    ConnectionClosed,
    MCPError,
    NameCollisionError,
    ResourceNotFoundError,
    ServerError,
    ServerUnavailableError,
)
from ._handlers import ElicitationHandler, RequestContext, RootsHandler, SamplingHandler
from ._resilience import Backoff, CircuitBreaker, CircuitState
from ._session import ClientSession, Notification
from ._transports._base import Transport

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = [
    "CollisionPolicy",
    "GroupNotification",
    "RestartPolicy",
    "ServerGroup",
    "ServerState",
    "ServerStatus",
    "open_server_group",
]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")

CollisionPolicy: TypeAlias = "Literal['prefix', 'error'] | Callable[[str, str, str], str]"
"""``"prefix"``, ``"error"``, or a hook ``(kind, server, name) -> exposed name``."""

_LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "tool",
    "notifications/prompts/list_changed": "prompt",
    "notifications/resources/list_changed": "resource",
}
_LAUNCHERS: Final = frozenset(
    {"python", "python3", "node", "npx", "uvx", "uv", "bunx", "bun", "deno", "pipx", "docker"}
)


#: How many distinct name clashes are remembered as logged (then the memory starts over).
_MAX_CLASHES_LOGGED: Final = 1024
_DEFAULT_BACKOFF: Final = Backoff(initial=0.5, multiplier=2.0, maximum=30.0, jitter=0.1)


@dataclass(frozen=True, slots=True, kw_only=True)
class RestartPolicy:
    """How a group restarts a server that failed to start or died.

    After a failure the server is restarted after ``backoff.delay(n)`` seconds, ``n``
    counting the failures since it last ran for ``healthy_after`` seconds. Every run goes
    through a :class:`~trio_mcp.CircuitBreaker`: ``failure_threshold`` short runs in a row
    open it, and the next start waits until ``recovery_time`` has passed. After
    ``max_restarts`` restarts the server stays down (state ``FAILED``).

    Attributes:
        enabled: False: never restart (the off switch).
        backoff: The delays between restarts.
        max_restarts: How many restarts in all (None: no limit; the breaker still limits
            the rate).
        failure_threshold: Short runs in a row that open the circuit breaker.
        recovery_time: Seconds the open breaker waits before one trial start.
        healthy_after: A run at least this long counts as a success: it closes the
            breaker and starts the backoff again from its first delay.

    Raises:
        ValueError: A value is out of range.
    """

    enabled: bool = True
    backoff: Backoff = _DEFAULT_BACKOFF
    max_restarts: int | None = 10
    failure_threshold: int = 5
    recovery_time: float = 60.0
    healthy_after: float = 30.0

    def __post_init__(self) -> None:
        if self.max_restarts is not None and self.max_restarts < 0:
            raise ValueError(f"RestartPolicy.max_restarts must be >= 0, not {self.max_restarts}")
        if not self.healthy_after >= 0:
            raise ValueError("RestartPolicy.healthy_after must be >= 0")
        CircuitBreaker(failure_threshold=self.failure_threshold, recovery_time=self.recovery_time)


class ServerState(enum.Enum):
    """Where a server of a group is in its life."""

    #: Being started (process launched, handshake, catalogue fetched).
    STARTING = "starting"
    #: Running: calls reach it.
    RUNNING = "running"
    #: Down, waiting for a restart at ``retry_at``.
    RESTARTING = "restarting"
    #: Down for good: restarts are off, used up, or the error cannot be cured by one.
    FAILED = "failed"
    #: Not started: the approval callback refused the config entry.
    REJECTED = "rejected"
    #: Stopped because the group closed.
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """A snapshot of one server of a group (also what :meth:`ServerGroup.events` sends).

    Attributes:
        server: The server's name in the group.
        state: Its state.
        error: The failure that ended its last run (or stopped it starting), if any.
        stderr_tail: The last lines a stdio server wrote to stderr before it died.
        exit_code: The exit code of a stdio server that died, when known.
        restarts: How many times it was restarted.
        retry_at: In ``RESTARTING``: the trio time of the next start.
        circuit_open: In ``RESTARTING``: the wait is the circuit breaker's recovery time.
    """

    server: str
    state: ServerState
    error: BaseException | None = None
    stderr_tail: str = ""
    exit_code: int | None = None
    restarts: int = 0
    retry_at: float | None = None
    circuit_open: bool = False


class GroupNotification(msgspec.Struct, frozen=True):
    """A notification from one server of a group.

    Attributes:
        server: The server's name in the group.
        notification: The notification itself.
    """

    server: str
    notification: Notification


class _ShortRun(Exception):
    """Internal: a run ended before it counted as healthy (a breaker failure)."""


@dataclass(eq=False)
class _Member:
    name: str
    target: Target
    options: dict[str, Any]
    restartable: bool
    redact: Callable[[str], str] | None = None  # a config entry's: hides interpolated secrets
    state: ServerState = ServerState.STARTING
    session: ClientSession | None = None
    error: BaseException | None = None
    stderr_tail: str = ""
    exit_code: int | None = None
    restarts: int = 0
    retry_at: float | None = None
    circuit_open: bool = False
    items: dict[str, list[Any]] = field(default_factory=dict[str, list[Any]])
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    settled: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    changed: trio.Event = field(default_factory=trio.Event)

    def status(self) -> ServerStatus:
        return ServerStatus(
            self.name, self.state, self.error, self.stderr_tail, self.exit_code,
            self.restarts, self.retry_at, self.circuit_open,
        )  # fmt: skip


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


def default_name(target: Target | ServerConfig) -> str:
    """The name a target gets in a group built from a list.

    A config entry keeps its name; a parameters object with a ``name`` (``MockServer``)
    uses it; an argv gives the program (or, for a launcher such as ``python``, ``npx`` or
    ``uvx``, the module or package it runs); a URL gives its host and port.
    """
    if isinstance(target, ServerConfig):
        return target.name
    argv: list[str] | None = None
    if isinstance(target, str):
        if "://" in target:
            parts = urlsplit(target)
            return parts.netloc or target
        argv = target.split()
    elif isinstance(target, Sequence):
        argv = [os.fspath(part) for part in target]
    else:
        name: object = getattr(target, "name", None)
        if isinstance(name, str) and name:
            return name
        url: object = getattr(target, "url", None)
        if isinstance(url, str):
            return urlsplit(url).netloc or url
        command: object = getattr(target, "argv", None)
        if isinstance(command, list):
            argv = [str(part) for part in cast("list[object]", command)]
    if not argv:
        return type(target).__name__.lower()
    program = os.path.basename(argv[0])
    stem = program.split(".")[0] if program.startswith("python") else program
    if stem.rstrip("0123456789.") in _LAUNCHERS or stem in _LAUNCHERS:
        rest = argv[1:]
        if "-m" in rest and rest.index("-m") + 1 < len(rest):
            return rest[rest.index("-m") + 1]
        for arg in rest:
            if not arg.startswith("-"):
                base = arg.rstrip("/").rsplit("/", 1)[-1]
                return base.removesuffix(".py").removesuffix(".js") or base
    return program


class ServerGroup:
    """Several MCP servers behind one catalogue. Open it with :func:`open_server_group`.

    The catalogue (:meth:`list_tools`, ...) holds the items of every server that has run,
    named by the collision policy; :meth:`call_tool`, :meth:`get_prompt` and
    :meth:`read_resource` route to the server that offers the item. A server that is down
    answers :class:`~trio_mcp.groups.ServerUnavailableError` (with the reason and stderr tail)
    while the others keep working.
    """

    def __init__(
        self,
        members: list[_Member],
        *,
        collisions: CollisionPolicy,
        prefix_separator: str,
        restart: RestartPolicy,
        notification_buffer: int,
    ) -> None:
        self._members = {member.name: member for member in members}
        self._collisions = collisions
        self._separator = prefix_separator
        self._restart = restart
        self._buffer = notification_buffer
        self._note_subscribers: list[
            tuple[frozenset[str] | None, trio.MemorySendChannel[GroupNotification]]
        ] = []
        self._event_subscribers: list[trio.MemorySendChannel[ServerStatus]] = []
        self._event_drops = DropLog("server group event subscriber is full; dropped")
        self._note_drops = DropLog("group notification subscriber is full; dropped")
        self._clashes_logged: set[tuple[str, str, tuple[str, ...], str | None]] = set()
        self._closed = False

    # -- state -----------------------------------------------------------------------------

    @property
    def servers(self) -> list[str]:
        """The names of the servers, in the order they were given."""
        return list(self._members)

    def status(self, server: str) -> ServerStatus:
        """A snapshot of one server's state.

        Args:
            server: The server's name.

        Raises:
            KeyError: No server has that name.
        """
        return self._member(server).status()

    def statuses(self) -> dict[str, ServerStatus]:
        """A snapshot of every server's state, by name."""
        return {name: member.status() for name, member in self._members.items()}

    def session(self, server: str) -> ClientSession:
        """The session of a running server, for anything the group does not route.

        Args:
            server: The server's name.

        Raises:
            KeyError: No server has that name.
            ServerUnavailableError: The server is not running.
        """
        member = self._member(server)
        if member.state is not ServerState.RUNNING or member.session is None:
            raise self._unavailable(member)
        return member.session

    async def wait_for(self, server: str, *states: ServerState) -> ServerStatus:
        """Wait until a server is in one of ``states`` (default: ``RUNNING``).

        Args:
            server: The server's name.
            *states: The states to wait for.

        Returns:
            Its status once it got there.
        """
        member = self._member(server)
        wanted = states or (ServerState.RUNNING,)
        await trio.lowlevel.checkpoint()
        while member.state not in wanted:
            await member.changed.wait()
        return member.status()

    def _member(self, server: str) -> _Member:
        try:
            return self._members[server]
        except KeyError:
            raise KeyError(f"no server named {server!r} in the group ({self.servers})") from None

    def _unavailable(self, member: _Member) -> ServerUnavailableError:
        reason = {
            ServerState.STARTING: "is starting",
            ServerState.RESTARTING: "is down and waiting to restart",
            ServerState.FAILED: "is down for good",
            ServerState.REJECTED: "was not approved to start",
            ServerState.STOPPED: "was stopped (the group is closed)",
        }.get(member.state, "is not running")
        if member.error is not None and member.state is not ServerState.REJECTED:
            reason += f": {member.error}"
        return ServerUnavailableError(
            member.name,
            reason,
            cause=member.error,
            stderr_tail=member.stderr_tail,
            retry_at=member.retry_at if member.state is ServerState.RESTARTING else None,
        )

    def _set(self, member: _Member, state: ServerState, **changes: Any) -> None:
        member.state = state
        for key, value in changes.items():
            setattr(member, key, value)
        if state is not ServerState.RESTARTING:
            member.retry_at = None
            member.circuit_open = False
        member.changed.set()
        member.changed = trio.Event()
        status = member.status()
        for send in list(self._event_subscribers):
            try:
                send.send_nowait(status)
            except trio.WouldBlock:
                self._event_drops.dropped(f"{status.server!r}: {status.state.name}")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    # -- supervision -----------------------------------------------------------------------

    async def _supervise(self, member: _Member) -> None:
        try:
            with member.scope:
                await self._supervise_loop(member)
        except Exception as exc:  # a bug: never into the caller's nursery
            logger.error("supervisor of %r failed: %r", member.name, exc, exc_info=True)
            self._set(member, ServerState.FAILED, error=exc)
        finally:
            member.session = None
            if member.state not in (ServerState.FAILED, ServerState.REJECTED):
                self._set(member, ServerState.STOPPED)
            member.settled.set()
            member.done.set()

    async def _supervise_loop(self, member: _Member) -> None:
        policy = self._restart
        breaker = CircuitBreaker(
            failure_threshold=policy.failure_threshold, recovery_time=policy.recovery_time
        )
        failures = 0
        while True:
            error: BaseException | None = None
            healthy = permanent = False
            try:
                with breaker.guard():
                    error, healthy, permanent = await self._run_once(member)
                    if not healthy:
                        raise _ShortRun
            except CircuitOpenError as refused:
                self._set(
                    member, ServerState.RESTARTING, retry_at=refused.retry_at, circuit_open=True
                )
                member.settled.set()
                await trio.sleep_until(refused.retry_at)
                member.restarts += 1
                continue
            except _ShortRun:
                pass
            failures = 1 if healthy else failures + 1
            member.settled.set()
            exhausted = policy.max_restarts is not None and member.restarts >= policy.max_restarts
            if permanent or not member.restartable or not policy.enabled or exhausted:
                self._set(member, ServerState.FAILED, session=None)
                logger.warning("MCP server %r is down for good: %s", member.name, error)
                return
            if breaker.state is CircuitState.OPEN:
                continue  # the guard refuses, and we wait for the recovery time
            retry_at = trio.current_time() + policy.backoff.delay(failures)
            self._set(member, ServerState.RESTARTING, session=None, retry_at=retry_at)
            logger.warning(
                "MCP server %r stopped (%s); restarting at trio time %.3f",
                member.name, error, retry_at,
            )  # fmt: skip
            await trio.sleep_until(retry_at)
            member.restarts += 1

    async def _run_once(self, member: _Member) -> tuple[BaseException, bool, bool]:
        """Run the server once; return (why it ended, whether it ran long enough, permanent)."""
        self._set(member, ServerState.STARTING)
        running_since: float | None = None
        failure: BaseException
        permanent = False
        try:
            target, options = with_transport_options(member.target, member.options)
            async with open_mcp_session(target, **options) as session:
                member.session = session
                async with trio.open_nursery() as run_nursery:
                    if session.era == "modern":  # list_changed arrives on a listen stream
                        await run_nursery.start(self._hold_listen, member, session)
                    async with session.notifications(buffer=self._buffer) as channel:
                        await self._refresh(member, session, ("tool", "prompt", "resource"))
                        running_since = trio.current_time()
                        self._set(
                            member, ServerState.RUNNING, error=None, stderr_tail="", exit_code=None
                        )
                        member.settled.set()
                        async for note in channel:
                            kind = _LIST_CHANGED.get(note.method)
                            if kind is not None:  # refresh first: listeners see the new list
                                await self._refresh(member, session, (kind,))
                            self._forward(member, note)
                    run_nursery.cancel_scope.cancel()
                failure = session.failure or ConnectionClosed("the MCP session ended")
        except MCPError as exc:
            failure = exc
        except (TypeError, ValueError) as exc:  # the target or its options are wrong
            failure, permanent = exc, True
        except BaseExceptionGroup as group:  # from the run's own nursery
            _cancelled, rest = group.split(trio.Cancelled)
            if rest is None:
                raise  # only cancellation: the group is closing
            failure = _first_leaf(rest)
            if not isinstance(failure, MCPError):
                failure = ConnectionClosed(f"the MCP session failed: {failure!r}")
                failure.__cause__ = rest
        except Exception as exc:
            failure = ConnectionClosed(f"the MCP server could not be run: {exc!r}")
            failure.__cause__ = exc
        member.session = None
        if member.redact is not None:  # secrets from ${env:...} never in errors or logs
            failure = _redact_exception(failure, member.redact)
        member.error = failure
        member.stderr_tail = getattr(failure, "stderr_tail", "") or ""
        member.exit_code = getattr(failure, "exit_code", None)
        healthy = (
            running_since is not None
            and trio.current_time() - running_since >= self._restart.healthy_after
        )
        return failure, healthy, permanent

    async def _hold_listen(
        self,
        member: _Member,
        session: ClientSession,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep a modern ``subscriptions/listen`` open; its notifications reach every
        subscriber of the session, so the run's own channel sees them."""
        caps = session.server_capabilities
        started = False
        try:
            async with session.listen(
                tools=caps.tools is not UNSET,
                prompts=caps.prompts is not UNSET,
                resources=caps.resources is not UNSET,
                buffer=1,
            ) as channel:
                task_status.started()
                started = True
                async for _note in channel:
                    pass  # seen by the run's channel too
        except (MCPError, trio.ClosedResourceError) as exc:
            logger.debug("no change notifications from %r: %r", member.name, exc)
        finally:
            if not started:
                task_status.started()

    async def _refresh(self, member: _Member, session: ClientSession, kinds: Sequence[str]) -> None:
        caps = session.server_capabilities
        for kind in kinds:
            try:
                if kind == "tool":
                    member.items["tool"] = (
                        await session.list_tools(cache=False) if caps.tools is not UNSET else []
                    )
                elif kind == "prompt":
                    member.items["prompt"] = (
                        await session.list_prompts(cache=False) if caps.prompts is not UNSET else []
                    )
                elif kind == "resource":
                    has = caps.resources is not UNSET
                    member.items["resource"] = (
                        await session.list_resources(cache=False) if has else []
                    )
                    member.items["resource template"] = (
                        await session.list_resource_templates(cache=False) if has else []
                    )
            except ServerError as exc:  # the server answered: keep what we had
                logger.warning("could not list %ss of %r: %s", kind, member.name, exc)

    def _forward(self, member: _Member, note: Notification) -> None:
        if not self._note_subscribers:
            return
        item = GroupNotification(member.name, note)
        for methods, send in list(self._note_subscribers):
            if methods is not None and note.method not in methods:
                continue
            try:
                send.send_nowait(item)
            except trio.WouldBlock:
                self._note_drops.dropped(f"{note.method} from {member.name!r}")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    # -- catalogue -------------------------------------------------------------------------

    def _catalogue(self, kind: str) -> dict[str, tuple[_Member, Any]]:
        """Exposed name -> (member, item) for tools or prompts, by the collision policy.

        A clash affects only the names that clash. Items sharing a name are renamed by the
        policy (``"error"`` raises instead). When a renamed item lands on a name another
        server offers as is (server ``b`` offering ``a_x`` while ``a`` and ``c`` both
        offer ``x``), the renamed one keeps it (it carries its server's name) and the other
        is renamed too; a name still claimed twice after that is exposed for nobody. Each
        such clash is logged once.
        """
        offers: dict[str, list[tuple[_Member, Any]]] = {}
        for member in self._members.values():
            if member.state in (ServerState.FAILED, ServerState.REJECTED, ServerState.STOPPED):
                continue
            for item in member.items.get(kind, ()):
                offers.setdefault(item.name, []).append((member, item))
        policy = self._collisions
        # exposed name -> its claimants: (member, item, whether the policy renamed it)
        claims: dict[str, list[tuple[_Member, Any, bool]]] = {}
        for name, found in offers.items():
            if len(found) == 1:
                claims.setdefault(name, []).append((*found[0], False))
                continue
            if policy == "error":
                raise NameCollisionError(kind, name, [member.name for member, _ in found])
            for member, item in found:
                claims.setdefault(self._renamed(kind, member, name), []).append(
                    (member, item, True)
                )
        exposed: dict[str, tuple[_Member, Any]] = {}
        second: dict[str, list[tuple[_Member, Any]]] = {}
        for new, claimants in claims.items():
            if len(claimants) == 1:
                exposed[new] = claimants[0][:2]
                continue
            renamed = [(member, item) for member, item, was in claimants if was]
            if len(renamed) == 1:  # a renamed item keeps the name; the bare ones move
                exposed[new] = renamed[0]
            else:
                self._log_clash(kind, new, claimants, None)
            for member, item, was in claimants:
                if not was:
                    second.setdefault(self._renamed(kind, member, item.name), []).append(
                        (member, item)
                    )
        for new, found in second.items():
            if len(found) == 1 and new not in claims:
                exposed[new] = found[0]
            else:
                self._log_clash(kind, new, [(*f, True) for f in found], None)
                continue
            member, item = found[0]
            self._log_clash(kind, item.name, claims[item.name], new)
        return exposed

    def _renamed(self, kind: str, member: _Member, name: str) -> str:
        if self._collisions == "prefix":
            return f"{member.name}{self._separator}{name}"
        return _rename(self._collisions, kind, member.name, name)

    def _log_clash(
        self,
        kind: str,
        name: str,
        claimants: Sequence[tuple[_Member, Any, bool]],
        moved: str | None,
    ) -> None:
        """Log a name clash the collision policy could not settle alone (once per clash)."""
        servers = tuple(sorted(member.name for member, _item, _was in claimants))
        key = (kind, name, servers, moved)
        if key in self._clashes_logged:
            return
        if len(self._clashes_logged) >= _MAX_CLASHES_LOGGED:
            self._clashes_logged.clear()
        self._clashes_logged.add(key)
        if moved is None:
            logger.warning(
                "servers %s all claim the %s name %r: it is exposed for none of them",
                ", ".join(repr(server) for server in servers), kind, name,
            )  # fmt: skip
        else:
            logger.warning(
                "servers %s claim the %s name %r: the renamed one keeps it, the other is "
                "exposed as %r", ", ".join(repr(server) for server in servers), kind, name, moved,
            )  # fmt: skip

    def _all(self, kind: str, key: str) -> list[tuple[_Member, Any]]:
        found: list[tuple[_Member, Any]] = []
        owners: dict[str, str] = {}
        for member in self._members.values():
            if member.state in (ServerState.FAILED, ServerState.REJECTED, ServerState.STOPPED):
                continue
            for item in member.items.get(kind, ()):
                value: str = getattr(item, key)
                if value in owners and self._collisions == "error":
                    raise NameCollisionError(kind, value, [owners[value], member.name])
                owners.setdefault(value, member.name)
                found.append((member, item))
        return found

    async def list_tools(self) -> list[t.Tool]:
        """Every tool of the group, under its exposed name (see the collision policy).

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a name.
        """
        await trio.lowlevel.checkpoint()
        return [
            item if item.name == name else msgspec.structs.replace(item, name=name)
            for name, (_member, item) in self._catalogue("tool").items()
        ]

    async def list_prompts(self) -> list[t.Prompt]:
        """Every prompt of the group, under its exposed name.

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a name.
        """
        await trio.lowlevel.checkpoint()
        return [
            item if item.name == name else msgspec.structs.replace(item, name=name)
            for name, (_member, item) in self._catalogue("prompt").items()
        ]

    async def list_resources(self) -> list[t.Resource]:
        """Every resource of the group (URIs are never renamed).

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a URI.
        """
        await trio.lowlevel.checkpoint()
        return [item for _member, item in self._all("resource", "uri")]

    async def list_resource_templates(self) -> list[t.ResourceTemplate]:
        """Every resource template of the group.

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a template.
        """
        await trio.lowlevel.checkpoint()
        return [item for _member, item in self._all("resource template", "uri_template")]

    def route_tool(self, name: str) -> tuple[str, str]:
        """Which server serves the tool exposed as ``name``, and its name there.

        Args:
            name: The exposed name (as :meth:`list_tools` gives it).

        Returns:
            ``(server, original_name)``.

        Raises:
            KeyError: No server offers such a tool.
        """
        member, item = self._find("tool", name)
        return member.name, item.name

    def _find(self, kind: str, name: str) -> tuple[_Member, Any]:
        found = self._catalogue(kind).get(name)
        if found is None:
            raise KeyError(f"no server of the group offers a {kind} named {name!r}")
        return found

    def _live(self, member: _Member) -> ClientSession:
        if member.state is not ServerState.RUNNING or member.session is None:
            raise self._unavailable(member)
        return member.session

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> t.CallToolResult:
        """Call the tool exposed as ``name`` on the server that offers it.

        Args:
            name: The exposed name.
            arguments: The tool's arguments.
            **kwargs: ``timeout`` and ``on_progress``, as :meth:`ClientSession.call_tool`.

        Raises:
            ServerError: No server offers the tool (``-32602``, as a server would say), or
                the server answered with an error.
            ServerUnavailableError: Its server is not running (why, stderr tail).
        """
        try:
            member, item = self._find("tool", name)
        except KeyError:
            await trio.lowlevel.checkpoint()
            raise ServerError(
                -32602, f"unknown tool {name!r}: no server of the group offers it",
                method="tools/call",
            ) from None  # fmt: skip
        return await self._live(member).call_tool(item.name, arguments, **kwargs)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, **kwargs: Any
    ) -> t.GetPromptResult:
        """Get the prompt exposed as ``name`` from the server that offers it.

        Args:
            name: The exposed name.
            arguments: The prompt's arguments.
            **kwargs: ``timeout``, as :meth:`ClientSession.get_prompt`.

        Raises:
            ServerError: No server offers the prompt (``-32602``), or the server failed.
            ServerUnavailableError: Its server is not running.
        """
        try:
            member, item = self._find("prompt", name)
        except KeyError:
            await trio.lowlevel.checkpoint()
            raise ServerError(
                -32602, f"unknown prompt {name!r}: no server of the group offers it",
                method="prompts/get",
            ) from None  # fmt: skip
        return await self._live(member).get_prompt(item.name, arguments, **kwargs)

    async def read_resource(
        self, uri: str, *, server: str | None = None, **kwargs: Any
    ) -> t.ReadResourceResult:
        """Read a resource from the server that lists it (or whose template matches it).

        Args:
            uri: The resource's URI.
            server: Read from this server, without looking the URI up.
            **kwargs: ``cache`` and ``timeout``, as :meth:`ClientSession.read_resource`.

        Raises:
            ResourceNotFoundError: No server lists the URI or a template matching it.
            NameCollisionError: Several servers do: pass ``server=``.
            ServerUnavailableError: Its server is not running.
        """
        if server is not None:
            return await self._live(self._member(server)).read_resource(uri, **kwargs)
        owners = [m for m, item in self._all("resource", "uri") if item.uri == uri]
        if not owners:
            owners = [
                m
                for m, item in self._all("resource template", "uri_template")
                if _template_matches(item.uri_template, uri)
            ]
        names = list(dict.fromkeys(member.name for member in owners))
        if not names:
            await trio.lowlevel.checkpoint()
            raise ResourceNotFoundError(
                -32002, f"no server of the group offers {uri!r}", method="resources/read"
            )
        if len(names) > 1:
            await trio.lowlevel.checkpoint()
            raise NameCollisionError("resource", uri, names)
        return await self._live(owners[0]).read_resource(uri, **kwargs)

    # -- streams ---------------------------------------------------------------------------

    @asynccontextmanager
    async def notifications(
        self, *methods: str, buffer: int | None = None
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[GroupNotification], None]:
        """Receive the notifications of every server while the block runs.

        Args:
            *methods: Only these methods (all when none are given).
            buffer: How many may wait unread before newer ones are dropped (with a warning).

        Yields:
            A channel of :class:`GroupNotification`; it ends when the group closes.
        """
        send, receive = trio.open_memory_channel[GroupNotification](
            self._buffer if buffer is None else buffer
        )
        entry = (frozenset(methods) if methods else None, send)
        self._note_subscribers.append(entry)
        if self._closed:
            send.close()
        try:
            async with receive:
                yield receive
        finally:
            self._note_subscribers.remove(entry)
            send.close()
            self._note_drops.flush()

    @asynccontextmanager
    async def events(
        self, *, buffer: int = 100
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[ServerStatus], None]:
        """Receive every state change of every server while the block runs.

        Args:
            buffer: How many may wait unread before newer ones are dropped (with a warning).

        Yields:
            A channel of :class:`ServerStatus`; it ends when the group closes.
        """
        send, receive = trio.open_memory_channel[ServerStatus](buffer)
        self._event_subscribers.append(send)
        if self._closed:
            send.close()
        try:
            async with receive:
                yield receive
        finally:
            self._event_subscribers.remove(send)
            send.close()
            self._event_drops.flush()

    # -- closing ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every server (each session closes shielded and bounded). Idempotent."""
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        self._closed = True
        for member in self._members.values():
            member.scope.cancel()
        with trio.CancelScope(shield=True):
            for member in self._members.values():
                await member.done.wait()
        for events in self._event_subscribers:
            events.close()
        for _methods, notes in self._note_subscribers:
            notes.close()


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = cast("BaseExceptionGroup[BaseException]", error).exceptions[0]
    return error


def _rename(hook: Any, kind: str, server: str, name: str) -> str:
    new: object = hook(kind, server, name)
    if not isinstance(new, str) or not new:
        raise TypeError(f"the collisions hook returned {new!r} for {kind} {name!r}, not a name")
    return new


def _template_matches(template: str, uri: str) -> bool:
    """Level-1 RFC 6570 matching: each ``{var}`` stands for one or more non-``/`` chars."""
    import re

    pattern = ""
    for index, part in enumerate(re.split(r"\{[^}]*\}", template)):
        pattern += ("[^/]+" if index else "") + re.escape(part)
    return re.fullmatch(pattern, uri) is not None


GroupServers: TypeAlias = "MCPConfig | Mapping[str, Target | ServerConfig] | Sequence[Target]"


def _members(
    servers: Any,
    session_options: dict[str, Any],
    server_options: Mapping[str, Mapping[str, Any]],
    handlers: dict[str, Any],
) -> list[_Member]:
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
    members: list[_Member] = []
    for name, target in entries:
        options: dict[str, Any] = {}
        redact = target.redact if isinstance(target, ServerConfig) else None
        if isinstance(target, ServerConfig):
            target, options = target.target()
        options.update(session_options)
        options.update(handlers)
        options.update(server_options.get(name, {}))
        for key in ("sampling", "elicitation"):
            if options.get(key) is not None:
                options[key] = _named_handler(options[key], name)
        if options.get("roots") is not None:
            options["roots"] = _named_roots(options["roots"], name)
        restartable = not isinstance(target, Transport)
        members.append(_Member(name, target, options, restartable, redact=redact))
    return members


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
    notification_buffer: int = 1000,
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
    notification_buffer: int = 1000,
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
    notification_buffer: int = 1000,
    **session_options: Any,
) -> AbstractAsyncContextManager[ServerGroup]:
    """Start several MCP servers, each supervised, and yield them as one :class:`ServerGroup`.

    Two forms, as :func:`~trio_mcp.open_mcp_session` has: ``open_server_group(nursery,
    servers)`` runs one supervisor task per server in your nursery; ``open_server_group(
    servers)`` owns a nursery around your block, and your exceptions arrive bare (their
    ``__cause__`` and ``__context__`` as you raised them).

    The block starts once every server has either started (handshake done, catalogue
    fetched) or failed its first start; failures are reported per server
    (:meth:`ServerGroup.status`, :meth:`ServerGroup.events`), never raised here. Leaving
    the block stops every server.

    Args:
        nursery_or_servers: The nursery that owns the supervisors, with the servers
            following; or the servers alone.
        servers: A config from :func:`~trio_mcp.load_config`, a mapping of names to targets
            (or :class:`~trio_mcp.config.ServerConfig`), or a list of targets (named by
            :func:`default_name`; an argv is a list itself, so wrap it: ``[["python",
            "-m", "server"]]``).
        collisions: When servers offer the same tool or prompt name: ``"prefix"`` exposes
            each as ``server{prefix_separator}name``; ``"error"`` makes listing and
            routing raise :class:`~trio_mcp.groups.NameCollisionError`; a hook ``(kind, server,
            name) -> exposed name`` renames each clashing item. Under ``"prefix"`` and a
            hook a clash affects only the names that clash (see ``docs/groups.md``).
        prefix_separator: Between server name and item name under ``"prefix"``.
        restart: The :class:`RestartPolicy` (default: ``RestartPolicy()``);
            ``RestartPolicy(enabled=False)`` turns restarts off.
        approve: Consent pinning for config entries: called for each entry that is new or
            changed since approved (see :func:`~trio_mcp.config.check_consent`); a refused entry
            does not start (state ``REJECTED``). None: no pinning.
        consent_store: Where approvals are kept (default: a file in the user's config
            folder).
        server_options: Per server name, more :func:`~trio_mcp.open_mcp_session` options
            (``headers``, ``auth``, ``roots``, ``sampling``, ...); they win over the rest.
        sampling: Handles sampling for every server; ``ctx.server_name`` is the server's
            name in the group.
        elicitation: Handles elicitation for every server (``ctx.server_name`` as above).
        roots: The roots every server gets (a list, or a callable given the context).
        notification_buffer: The buffer of each server's notification forwarding and of
            :meth:`ServerGroup.notifications` channels.
        **session_options: More :func:`~trio_mcp.open_mcp_session` options for every
            server (``default_timeout``, ``init_timeout``, ``protocol``, ...).

    Yields:
        The group.

    Raises:
        TypeError: ``servers`` is not one of the accepted forms.
        ValueError: ``server_options`` names a server that is not in the group.
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
    if collisions not in ("prefix", "error") and not callable(collisions):
        raise ValueError(f"collisions must be 'prefix', 'error' or a callable, not {collisions!r}")
    handlers = {
        key: value
        for key, value in (("sampling", sampling), ("elicitation", elicitation), ("roots", roots))
        if value is not None
    }
    members = _members(servers, session_options, server_options or {}, handlers)
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


def _configs(servers: Any) -> dict[str, ServerConfig]:
    if isinstance(servers, MCPConfig):
        return dict(servers.servers)
    if isinstance(servers, Mapping):
        items = cast("Mapping[str, object]", servers).items()
        return {name: value for name, value in items if isinstance(value, ServerConfig)}
    return {}


@asynccontextmanager
async def _run_group(
    nursery: trio.Nursery,
    group: ServerGroup,
    configs: dict[str, ServerConfig],
    approve: ApprovalCallback | None,
    store: ConsentStore | None,
) -> AsyncGenerator[ServerGroup, None]:
    verdict: dict[str, bool] = {}
    if approve is not None and configs:
        verdict = await check_consent(configs, approve, store)
    try:
        for member in group._members.values():  # pyright: ignore[reportPrivateUsage]
            if verdict.get(member.name, True):
                nursery.start_soon(
                    group._supervise,  # pyright: ignore[reportPrivateUsage]
                    member,
                    name=f"trio_mcp group server {member.name}",
                )
            else:
                member.error = ServerUnavailableError(member.name, "not approved to start")
                group._set(member, ServerState.REJECTED)  # pyright: ignore[reportPrivateUsage]
                member.settled.set()
                member.done.set()
        for member in group._members.values():  # pyright: ignore[reportPrivateUsage]
            await member.settled.wait()
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
    from ._connect import _only_error, _raise_bare  # pyright: ignore[reportPrivateUsage]

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
