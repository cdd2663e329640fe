"""One server of a group: its life from start to stop, and the policy that restarts it.

A :class:`Supervisor` runs each member in a task of its own: it opens the session, fetches
the catalogue (again on ``list_changed``), forwards notifications, records why a run ended
(error, stderr tail, exit code), and restarts the server by the :class:`RestartPolicy`:
exponential backoff and a circuit breaker on trio's clock. Every change of state is a
:class:`ServerStatus` handed to the group, which publishes it.
"""

from __future__ import annotations

import enum
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import trio
from msgspec import UNSET

from .._config import redact_exception as _redact_exception
from .._connect import Target, open_mcp_session, with_transport_options
from .._exceptions import CircuitOpenError, ConnectionClosed, MCPError, ServerError
from .._resilience import Backoff, CircuitBreaker, CircuitState
from .._session import ClientSession, Notification

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["RestartPolicy", "ServerState", "ServerStatus", "Supervisor"]

logger = logging.getLogger("trio_mcp")

_LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "tool",
    "notifications/prompts/list_changed": "prompt",
    "notifications/resources/list_changed": "resource",
}
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


#: The states of a member whose items are left out of the group's catalogue.
DOWN_FOR_GOOD: Final = frozenset({ServerState.FAILED, ServerState.REJECTED, ServerState.STOPPED})


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


class _ShortRun(Exception):
    """Internal: a run ended before it counted as healthy (a breaker failure)."""


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
    items: dict[str, list[Any]] = field(default_factory=dict[str, list[Any]])
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    settled: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    changed: trio.Event = field(default_factory=trio.Event)

    def status(self) -> ServerStatus:
        """A snapshot of the member's state."""
        return ServerStatus(
            self.name, self.state, self.error, self.stderr_tail, self.exit_code,
            self.restarts, self.retry_at, self.circuit_open,
        )  # fmt: skip


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

    def set(self, member: Member, state: ServerState, **changes: Any) -> None:
        """Move ``member`` to ``state`` (with ``changes`` to its fields) and publish it."""
        member.state = state
        for key, value in changes.items():
            setattr(member, key, value)
        if state is not ServerState.RESTARTING:
            member.retry_at = None
            member.circuit_open = False
        member.changed.set()
        member.changed = trio.Event()
        self._publish(member.status())

    async def supervise(self, member: Member) -> None:
        """Run ``member`` until its scope is cancelled or it is down for good; never raises."""
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
                self.set(
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
                self.set(member, ServerState.FAILED, session=None)
                logger.warning("MCP server %r is down for good: %s", member.name, error)
                return
            if breaker.state is CircuitState.OPEN:
                continue  # the guard refuses, and we wait for the recovery time
            retry_at = trio.current_time() + policy.backoff.delay(failures)
            self.set(member, ServerState.RESTARTING, session=None, retry_at=retry_at)
            logger.warning(
                "MCP server %r stopped (%s); restarting at trio time %.3f",
                member.name, error, retry_at,
            )  # fmt: skip
            await trio.sleep_until(retry_at)
            member.restarts += 1

    async def _run_once(self, member: Member) -> tuple[BaseException, bool, bool]:
        """Run the server once; return (why it ended, whether it ran long enough, permanent)."""
        self.set(member, ServerState.STARTING)
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
                        self.set(
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
            and trio.current_time() - running_since >= self.restart.healthy_after
        )
        return failure, healthy, permanent

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


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = cast("BaseExceptionGroup[BaseException]", error).exceptions[0]
    return error
