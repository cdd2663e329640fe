"""One server of a group: its life from start to stop, and the policy that restarts it.

A `Supervisor` runs each member in a task of its own: it opens the session, fetches
the catalogue (again on ``list_changed``), forwards notifications, watches the link to the
server while it runs (the transport's ``link``, what callers of the group see, an optional
keep-alive ping), records why a run ended (error, stderr tail, exit code; kept after the
server runs again), and restarts the server by the [`RestartPolicy`][trio_mcp.groups.RestartPolicy]:
exponential backoff and a circuit breaker on trio's clock, a budget of restarts that a healthy run
gives back. Every change of state is a [`ServerStatus`][trio_mcp.groups.ServerStatus] with a
sequence number, handed to the group, which publishes it.
"""

from __future__ import annotations

import enum
import errno
import logging
import sys
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import trio
from msgspec import UNSET

from .._config import redact_exception as _redact_exception
from .._connect import Target, open_mcp_session, with_transport_options
from .._exceptions import (
    CircuitOpenError,
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    ServerError,
    TransportError,
)
from .._resilience import Backoff, CircuitBreaker, CircuitState
from .._session import ClientSession, Notification
from .._terminal import for_terminal
from .._transports._link import LinkState

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["RestartPolicy", "ServerFailure", "ServerState", "ServerStatus", "Supervisor"]

logger = logging.getLogger("trio_mcp")

_LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "tool",
    "notifications/prompts/list_changed": "prompt",
    "notifications/resources/list_changed": "resource",
}
_DEFAULT_BACKOFF: Final = Backoff(initial=0.5, multiplier=2.0, maximum=30.0, jitter=0.1)
_PROBE_TIMEOUT: Final = 10.0
"""Seconds a recovery ping of a RECONNECTING member may take when there is no keep-alive."""
_HISTORY: Final = 64
"""How many past statuses each member keeps for
[`ServerGroup.wait_for()`][trio_mcp.groups.ServerGroup.wait_for] and history."""
_DOWN_ERRNOS: Final = frozenset(
    {errno.ECONNREFUSED, errno.ECONNRESET, errno.EHOSTUNREACH, errno.ENETUNREACH}
)
"""errno values of a server that is down (nothing listens, or it cannot be reached)."""
_DOWN_STATUSES: Final = frozenset({502, 503, 504})
"""HTTP statuses of a gateway whose server is down (a deploy behind a proxy)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RestartPolicy:
    """How a group restarts a server that failed to start or died.

    After a failure the server is restarted after ``backoff.delay(n)`` seconds, ``n``
    counting the failures since it last ran for ``healthy_after`` seconds. Every run goes
    through a [`CircuitBreaker`][trio_mcp.CircuitBreaker]: ``failure_threshold`` short runs
    in a row open it, and the next start waits until ``recovery_time`` has passed.

    The budget is about crash loops, not deploys: ``max_restarts`` counts the restarts
    since the server last ran healthy (for ``healthy_after`` seconds), so a run that long
    gives the whole budget back; and a start that found the server down (connection
    refused or reset, host unreachable, a gateway's 502/503/504: a remote server being
    redeployed) is waiting, not a failed attempt: it is retried by the backoff without
    using the budget or counting towards the breaker. Once the budget is used up the server
    stays down (state ``FAILED``).

    Attributes:
        enabled: False: never restart (the off switch).
        backoff: The delays between restarts (and between the recovery pings of a
            ``RECONNECTING`` member).
        max_restarts: How many restarts since the last healthy run (None: no limit; the
            breaker still limits the rate).
        failure_threshold: Short runs in a row that open the circuit breaker.
        recovery_time: Seconds the open breaker waits before one trial start.
        healthy_after: A run at least this long counts as a success: it closes the
            breaker, starts the backoff again from its first delay and gives the restart
            budget back.

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

    STARTING = "starting"
    """Being started (process launched, handshake, catalogue fetched)."""
    RUNNING = "running"
    """Running: calls reach it."""
    RECONNECTING = "reconnecting"
    """Its session is open but the server does not answer: the transport's link broke or the server
    lost the session (the transport is getting it back), a call routed through the group failed
    below JSON-RPC, or a keep-alive ping failed. Calls are still routed to it (they fail fast, or
    get through once it is back); the group pings it by the restart backoff and it returns to
    ``RUNNING`` by itself once it answers."""
    RESTARTING = "restarting"
    """Down, waiting for a restart at ``retry_at``."""
    FAILED = "failed"
    """Down for good: restarts are off, used up, or the error cannot be cured by one."""
    REJECTED = "rejected"
    """Not started: the approval callback refused the config entry."""
    STOPPED = "stopped"
    """Stopped because the group closed."""


DOWN_FOR_GOOD: Final = frozenset({ServerState.FAILED, ServerState.REJECTED, ServerState.STOPPED})
"""The states of a member whose items are left out of the group's catalogue."""


@dataclass(frozen=True, slots=True)
class ServerFailure:
    """One failure of a server of a group, kept after the server runs again.

    Attributes:
        error: What failed: the exception that ended a run or stopped a start, or (for a
            server that went ``RECONNECTING``) the transport error a caller, the link or a
            ping saw.
        at: When, on trio's clock (``trio.current_time()``).
        exit_code: The exit code of a stdio server that died, when known.
        stderr_tail: The last lines a stdio server wrote to stderr before it died.
        pid: The process id of the stdio server that failed, when known.
    """

    error: BaseException
    at: float
    exit_code: int | None = None
    stderr_tail: str = ""
    pid: int | None = None


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """A snapshot of one server of a group (what a group's ``events()`` sends, too).

    Attributes:
        server: The server's name in the group.
        state: Its state.
        error: The failure that ended its last run (or stopped it starting), or in
            ``RECONNECTING`` why it is not answering; kept after it runs again (None: it
            never failed).
        stderr_tail: The last lines a stdio server wrote to stderr before it last died
            (kept after it runs again).
        exit_code: The exit code of the stdio server that last died, when known (kept
            after it runs again).
        restarts: How many times it was restarted in all.
        retry_at: In ``RESTARTING``: the trio time of the next start.
        circuit_open: In ``RESTARTING``: the wait is the circuit breaker's recovery time.
        last_failure: The most recent failure (error, when, exit code, stderr tail, pid),
            kept after recovery; None: it never failed.
        pid: The process id of a stdio server while its process runs, else None.
        recent_restarts: The restarts that count against ``max_restarts``: those since the
            server last ran healthy for ``healthy_after`` seconds, not counting starts that
            found a remote server down.
        seq: The sequence number of the change this snapshot follows: it grows by one with
            every change of any server of the group (the order of
            [`events`][trio_mcp.groups.ServerGroup.events]); pass it as ``since`` to
            [`wait_for`][trio_mcp.groups.ServerGroup.wait_for].
    """

    server: str
    state: ServerState
    error: BaseException | None = None
    stderr_tail: str = ""
    exit_code: int | None = None
    restarts: int = 0
    retry_at: float | None = None
    circuit_open: bool = False
    last_failure: ServerFailure | None = None
    pid: int | None = None
    recent_restarts: int = 0
    seq: int = 0


class _ShortRun(Exception):
    """Internal: a run ended before it counted as healthy (a breaker failure)."""


class _Unreachable(Exception):
    """Internal: a start found the server down (neither a breaker failure nor a success)."""


@dataclass(eq=False)
class Member:
    """One server of a group: how to open it, and where it is in its life."""

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
    keep_alive: float | None = None
    last_failure: ServerFailure | None = None
    recent_restarts: int = 0
    running_since: float | None = None
    healthy_after: float = 30.0
    seq: int = 0
    forgotten: int = 0  # the seq of the newest status that fell out of ``history``
    history: deque[ServerStatus] = field(
        default_factory=lambda: deque[ServerStatus](maxlen=_HISTORY)
    )
    latest: dict[ServerState, ServerStatus] = field(default_factory=dict[ServerState, ServerStatus])
    items: dict[str, list[Any]] = field(default_factory=dict[str, list[Any]])
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    settled: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    changed: trio.Event = field(default_factory=trio.Event)

    def status(self) -> ServerStatus:
        """A snapshot of the member's state."""
        recent = self.recent_restarts
        if (
            self.state in (ServerState.RUNNING, ServerState.RECONNECTING)
            and self.running_since is not None
            and trio.current_time() - self.running_since >= self.healthy_after
        ):
            recent = 0  # healthy long enough: the budget is back
        return ServerStatus(
            self.name, self.state, self.error, self.stderr_tail, self.exit_code,
            self.restarts, self.retry_at, self.circuit_open, self.last_failure,
            self.pid(), recent, self.seq,
        )  # fmt: skip

    def pid(self) -> int | None:
        """The process id of a stdio server whose process runs, else None."""
        session = self.session
        pid = getattr(session.transport, "pid", None) if session is not None else None
        return pid if isinstance(pid, int) else None

    def since(self, seq: int, states: Collection[ServerState]) -> ServerStatus | None:
        """The first status after ``seq`` in one of ``states`` (the latest such, if the
        history no longer reaches back to ``seq``), or None."""
        for status in self.history:
            if status.seq > seq and status.state in states:
                return status
        if self.forgotten > seq:  # the history no longer reaches back to ``seq``
            found = [s for state, s in self.latest.items() if state in states and s.seq > seq]
            if found:
                return min(found, key=lambda s: s.seq)
        return None


class Supervisor:
    """Runs the members of one group: start, watch, restart, stop.

    Args:
        restart: The restart policy of every member.
        buffer: The buffer of each member's notification forwarding.
        publish: Called with every member's new status (the group's events).
        forward: Called with every notification a member's server sends.
    """

    def __init__(
        self,
        *,
        restart: RestartPolicy,
        buffer: int,
        publish: Callable[[ServerStatus], None],
        forward: Callable[[Member, Notification], None],
    ) -> None:
        self.restart = restart
        self._buffer = buffer
        self._publish = publish
        self._forward = forward
        self._seq = 0

    def set(self, member: Member, state: ServerState, **changes: Any) -> None:
        """Move ``member`` to ``state`` (with ``changes`` to its fields) and publish it."""
        member.state = state
        for key, value in changes.items():
            setattr(member, key, value)
        if state is not ServerState.RESTARTING:
            member.retry_at = None
            member.circuit_open = False
        self._seq += 1
        member.seq = self._seq
        status = member.status()
        if len(member.history) == member.history.maxlen:
            member.forgotten = member.history[0].seq
        member.history.append(status)
        member.latest[state] = status
        member.changed.set()
        member.changed = trio.Event()
        self._publish(status)

    def suspect(
        self,
        member: Member,
        session: ClientSession,
        error: BaseException,
        at: float | None = None,
    ) -> None:
        """A call, the link or a ping found ``session`` not answering: a ``RUNNING`` member
        becomes ``RECONNECTING`` at once, with the error (its supervisor pings it back)."""
        if member.session is not session or member.state is not ServerState.RUNNING:
            return
        if member.redact is not None:
            error = _redact_exception(error, member.redact)
        member.last_failure = ServerFailure(
            error,
            trio.current_time() if at is None else at,
            getattr(error, "exit_code", None),
            getattr(error, "stderr_tail", "") or "",
            member.pid(),
        )
        self.set(member, ServerState.RECONNECTING, error=error)
        logger.warning("MCP server %r is not answering: %s", member.name, for_terminal(error))

    def answered(self, member: Member, session: ClientSession) -> None:
        """``session`` answered (a call or a ping): a ``RECONNECTING`` member runs again."""
        if member.session is session and member.state is ServerState.RECONNECTING:
            self.set(member, ServerState.RUNNING)
            logger.info("MCP server %r answers again", member.name)

    async def supervise(self, member: Member) -> None:
        """Run ``member`` until its scope is cancelled or it is down for good; never raises."""
        member.healthy_after = self.restart.healthy_after
        try:
            with member.scope:
                await self._supervise_loop(member)
        except Exception as exc:  # a bug: never into the caller's nursery
            logger.error("supervisor of %r failed: %r", member.name, exc, exc_info=True)
            self.set(member, ServerState.FAILED, error=exc)
        finally:
            member.session = None
            if member.state not in (ServerState.FAILED, ServerState.REJECTED):
                self.set(member, ServerState.STOPPED)
            member.settled.set()
            member.done.set()

    async def _supervise_loop(self, member: Member) -> None:
        policy = self.restart
        breaker = CircuitBreaker(
            failure_threshold=policy.failure_threshold,
            recovery_time=policy.recovery_time,
            failure_on=_ShortRun,  # a start that found the server down is neither
        )
        failures = 0
        while True:
            error: BaseException | None = None
            healthy = permanent = down = False
            try:
                with breaker.guard():
                    error, healthy, permanent, down = await self._run_once(member)
                    if down:
                        raise _Unreachable
                    if not healthy:
                        raise _ShortRun
            except CircuitOpenError as refused:
                self.set(
                    member, ServerState.RESTARTING, retry_at=refused.retry_at, circuit_open=True
                )
                member.settled.set()
                logger.warning(
                    "MCP server %r failed %d short runs in a row; restarting in %.1f s",
                    member.name, policy.failure_threshold,
                    refused.retry_at - trio.current_time(),
                )  # fmt: skip
                await trio.sleep_until(refused.retry_at)
                member.restarts += 1
                member.recent_restarts += 1
                continue
            except (_ShortRun, _Unreachable):
                pass
            failures = 1 if healthy else failures + 1
            if healthy:
                member.recent_restarts = 0  # a healthy run gives the budget back
            member.settled.set()
            exhausted = (
                not down
                and policy.max_restarts is not None
                and member.recent_restarts >= policy.max_restarts
            )
            if permanent or not member.restartable or not policy.enabled or exhausted:
                self.set(member, ServerState.FAILED, session=None)
                logger.warning(
                    "MCP server %r is down for good: %s", member.name, for_terminal(error)
                )
                return
            if breaker.state is CircuitState.OPEN:
                continue  # the guard refuses, and we wait for the recovery time
            delay = policy.backoff.delay(failures)
            self.set(
                member, ServerState.RESTARTING, session=None, retry_at=trio.current_time() + delay
            )
            logger.warning(
                "MCP server %r %s (%s); restarting in %.1f s",
                member.name, "is down" if down else "stopped", for_terminal(error), delay,
            )  # fmt: skip
            await trio.sleep(delay)
            member.restarts += 1
            if not down:  # waiting for a server that is down is not a failed attempt
                member.recent_restarts += 1

    async def _run_once(self, member: Member) -> tuple[BaseException, bool, bool, bool]:
        """Run the server once; return (why it ended, whether it ran long enough, permanent,
        whether the start found the server down)."""
        self.set(member, ServerState.STARTING)
        member.running_since = None
        failure: BaseException
        permanent = False
        pid: int | None = None
        try:
            target, options = with_transport_options(member.target, member.options)
            async with open_mcp_session(target, **options) as session:
                member.session = session
                pid = member.pid()
                link = session.transport.link
                seen = link.version
                async with trio.open_nursery() as run_nursery:
                    if session.era == "modern":  # list_changed arrives on a listen stream
                        await run_nursery.start(self._hold_listen, member, session)
                    async with session.notifications(buffer=self._buffer) as channel:
                        await self._refresh(member, session, ("tool", "prompt", "resource"))
                        member.running_since = trio.current_time()
                        self.set(member, ServerState.RUNNING)
                        member.settled.set()
                        run_nursery.start_soon(self._watch_link, member, session, seen)
                        run_nursery.start_soon(self._keep_healthy, member, session)
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
        now = trio.current_time()
        member.error = failure
        member.stderr_tail = getattr(failure, "stderr_tail", "") or ""
        member.exit_code = getattr(failure, "exit_code", None)
        member.last_failure = ServerFailure(failure, now, member.exit_code, member.stderr_tail, pid)
        since, member.running_since = member.running_since, None
        healthy = since is not None and now - since >= self.restart.healthy_after
        down = since is None and server_down(failure)
        return failure, healthy, permanent, down

    async def _watch_link(self, member: Member, session: ClientSession, seen: int) -> None:
        """Follow the transport's link (no polling): a broken link or a session the server
        lost makes the member ``RECONNECTING``; the link back up makes it ``RUNNING``."""
        link = session.transport.link
        while True:
            if link.version != seen:  # act on where it stands now (it may have moved on)
                seen = link.version
                failure = link.last_failure
                if link.state is LinkState.UP:
                    self.answered(member, session)
                elif link.state is LinkState.RECONNECTING and failure is not None:
                    self.suspect(member, session, failure.error, failure.at)
                elif link.state is LinkState.CLOSED:
                    gone = ConnectionClosed("the transport's link to the MCP server closed")
                    self.suspect(member, session, gone)
            await link.wait_changed(seen)

    async def _keep_healthy(self, member: Member, session: ClientSession) -> None:
        """Ping a ``RUNNING`` member every ``keep_alive`` seconds (if set), and a
        ``RECONNECTING`` one by the restart backoff until it answers."""
        interval = member.keep_alive
        probes = 0
        while True:
            if member.state is ServerState.RUNNING:
                probes = 0
                with trio.move_on_after(interval if interval is not None else float("inf")):
                    while member.state is ServerState.RUNNING:
                        await member.changed.wait()
                    continue
                error = await _ping(session, interval or _PROBE_TIMEOUT)
                if error is not None:
                    self.suspect(member, session, error)
            elif member.state is ServerState.RECONNECTING:
                probes += 1
                delay = self.restart.backoff.delay(probes)
                await trio.sleep(delay if interval is None else min(delay, interval))
                if member.state is not ServerState.RECONNECTING:
                    continue
                if await _ping(session, interval or _PROBE_TIMEOUT) is None:
                    self.answered(member, session)
            else:
                return

    async def _hold_listen(
        self,
        member: Member,
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

    async def _refresh(self, member: Member, session: ClientSession, kinds: Sequence[str]) -> None:
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


async def _ping(session: ClientSession, timeout: float) -> MCPError | None:
    """Ping the server; return why it did not answer (None: it answered, even with an
    error, or the session is closing)."""
    try:
        await session.ping(timeout=timeout)
    except (TransportError, ProtocolError) as exc:
        return exc
    except trio.TooSlowError as exc:
        slow = TransportError(f"the MCP server did not answer a ping within {timeout:g} s")
        slow.__cause__ = exc
        return slow
    except (ServerError, trio.ClosedResourceError):
        pass  # it answered; or the run is ending, which reports itself
    return None


def server_down(error: BaseException) -> bool:
    """Whether ``error`` says the server could not be reached at all (a remote server being
    redeployed: connection refused or reset, host unreachable, a gateway's 502/503/504).

    Args:
        error: Why a start failed.
    """
    if not isinstance(error, TransportError):
        return False
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        exc = pending.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, HTTPStatusError) and exc.status_code in _DOWN_STATUSES:
            return True
        if isinstance(exc, (ConnectionRefusedError, ConnectionResetError)):
            return True
        if isinstance(exc, OSError) and exc.errno in _DOWN_ERRNOS:
            return True
        if any(kind.__name__ == "ConnectError" for kind in type(exc).__mro__):
            return True  # httpx's (not imported here: it may not be loaded)
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(cast("BaseExceptionGroup[BaseException]", exc).exceptions)
        for linked in (exc.__cause__, exc.__context__):
            if linked is not None:
                pending.append(linked)
    return False


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = cast("BaseExceptionGroup[BaseException]", error).exceptions[0]
    return error
