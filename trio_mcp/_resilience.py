"""Retries with backoff, and a circuit breaker, on trio's clock.

Everything here takes time only from `trio.current_time()` and waits only with
`trio.sleep()`, so a `trio.testing.MockClock` drives it exactly.

* [`Backoff`][trio_mcp.Backoff] computes the delay before each retry (exponential, capped, with
  jitter).
* [`RetryPolicy`][trio_mcp.RetryPolicy] re-runs an async callable while it fails with a retryable
  error, and re-raises the last error unchanged once it gives up.
* [`CircuitBreaker`][trio_mcp.CircuitBreaker] stops calling a failing service for a while after too
  many consecutive failures (``CLOSED`` → ``OPEN`` → ``HALF_OPEN`` → ``CLOSED``), raising
  [`CircuitOpenError`][trio_mcp.CircuitOpenError] instead of calling.

Cancellation is never retried and never counts as a failure.
"""

from __future__ import annotations

import math
import random as _rnd
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import TypeAlias, TypeVar

import trio

from ._exceptions import CircuitOpenError, CircuitState, HTTPStatusError, TransportError

__all__ = ["Backoff", "CircuitBreaker", "CircuitOpenError", "CircuitState", "RetryPolicy"]

T = TypeVar("T")

# What ``retry_on`` / ``failure_on`` accept: exception types, or a predicate.
_ExceptionRule: TypeAlias = (
    "type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]"
)


def _matches(rule: _ExceptionRule, exc: BaseException) -> bool:
    # A bare class is callable too, so test for it before treating the rule as a predicate.
    if isinstance(rule, (type, tuple)):
        return isinstance(exc, rule)
    return bool(rule(exc))


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """An exponential backoff schedule with a cap and optional jitter.

    The delay before retry number ``attempt`` (1 for the first retry) is:

    ```python
    base = min(maximum, initial * multiplier ** (attempt - 1))
    delay = base * (1 - jitter * U)        # U uniform in [0, 1)
    ```

    so a delay never exceeds ``base`` (nor ``maximum``) and never drops below
    ``base * (1 - jitter)``. ``jitter=0`` gives a deterministic schedule, ``jitter=1.0``
    is "full jitter" (uniform in ``[0, base]``) and ``jitter=0.5`` is "equal jitter"
    (uniform in ``[base / 2, base]``). Jitter spreads out clients that failed together.

    Attributes:
        initial: The delay before the first retry, in seconds.
        multiplier: The factor each further delay grows by (at least 1).
        maximum: The cap on any delay, in seconds.
        jitter: The fraction of each delay that is randomised, from 0 to 1.

    Raises:
        ValueError: If a value is out of range.
    """

    initial: float = 0.1
    multiplier: float = 2.0
    maximum: float = 10.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.initial) and self.initial >= 0):
            raise ValueError(f"Backoff.initial must be a finite number >= 0, not {self.initial!r}")
        if not (math.isfinite(self.multiplier) and self.multiplier >= 1):
            raise ValueError(
                f"Backoff.multiplier must be a finite number >= 1, not {self.multiplier!r}"
            )
        if not self.maximum >= 0:  # also rejects NaN
            raise ValueError(f"Backoff.maximum must be >= 0, not {self.maximum!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"Backoff.jitter must be between 0 and 1, not {self.jitter!r}")

    def delay(self, attempt: int, *, random: _rnd.Random | None = None) -> float:
        """Return how long to wait before retry number ``attempt``.

        Args:
            attempt: The retry about to be made: 1 after the first failure, 2 after the
                second, and so on.
            random: The random number generator for the jitter. Pass a seeded
                `random.Random` for a reproducible schedule; the default uses the
                `random` module's global generator. Not used when ``jitter`` is 0.

        Returns:
            The delay in seconds.

        Raises:
            ValueError: If ``attempt`` is less than 1.
        """
        if attempt < 1:
            raise ValueError(f"attempt counts from 1, not {attempt!r}")
        try:
            raw = self.initial * self.multiplier ** (attempt - 1)
        except OverflowError:
            raw = math.inf
        base = min(self.maximum, raw)
        if self.jitter == 0 or base == 0:
            return base
        u = random.random() if random is not None else _rnd.random()
        return base * (1 - self.jitter * u)


def _retry_by_default(exc: BaseException) -> bool:
    if isinstance(exc, HTTPStatusError):
        code = exc.status_code
        return not 400 <= code < 500 or code in (408, 429)
    return isinstance(exc, TransportError)


def _retry_after(exc: BaseException) -> float | None:
    hint: object = getattr(exc, "retry_after", None)
    if isinstance(hint, bool) or not isinstance(hint, (int, float)):
        return None
    if not math.isfinite(hint):
        return None
    return max(0.0, float(hint))


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often, and after how long, to retry a failed operation.

    With the default ``retry_on`` a policy retries [`TransportError`][trio_mcp.TransportError]
    (connection failures, HTTP 5xx, 408 and 429) and nothing else: never
    [`ServerError`][trio_mcp.ServerError] (the server answered),
    [`ProtocolError`][trio_mcp.ProtocolError], an HTTP 4xx other than 408/429, or
    [`CircuitOpenError`][trio_mcp.CircuitOpenError]. `trio.Cancelled` and other non-`Exception`
    errors are never retried, whatever ``retry_on`` says.

    If a retryable exception has a ``retry_after`` attribute holding a number of seconds
    (for example from an HTTP ``Retry-After`` header), the policy waits exactly that long
    instead of the backoff delay. Bound the total time with `trio.fail_after()`.

    For example:

    ```python
    policy = trio_mcp.RetryPolicy(max_attempts=5)
    tools = await policy.call(session.list_tools)
    ```

    Attributes:
        max_attempts: How many times to call in total, the first call included (at least 1).
        backoff: The delays between attempts.
        retry_on: Which exceptions to retry: an exception type, a tuple of types, or a
            predicate taking the exception; ``None`` for the default described above.

    Raises:
        ValueError: If ``max_attempts`` is less than 1.
    """

    max_attempts: int = 3
    backoff: Backoff = Backoff()
    retry_on: _ExceptionRule | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, not {self.max_attempts!r}")

    def should_retry(self, exc: BaseException) -> bool:
        """Return whether ``exc`` is worth another attempt, ignoring the attempt count.

        Args:
            exc: The exception the last attempt raised.

        Returns:
            True if ``retry_on`` matches ``exc``; always False for `trio.Cancelled`,
            [`CircuitOpenError`][trio_mcp.CircuitOpenError] and other non-`Exception` errors.
        """
        if not isinstance(exc, Exception) or isinstance(exc, CircuitOpenError):
            return False
        if self.retry_on is None:
            return _retry_by_default(exc)
        return _matches(self.retry_on, exc)

    def next_delay(
        self, attempt: int, exc: BaseException, *, random: _rnd.Random | None = None
    ) -> float | None:
        """Decide whether to retry after a failed attempt, and after how long.

        This is the building block for retry loops that cannot be written as one
        [`call()`][trio_mcp.RetryPolicy.call], such as a transport re-opening a stream:

        ```python
        attempt = 0
        while True:
            attempt += 1
            try:
                return await connect()
            except Exception as exc:
                delay = policy.next_delay(attempt, exc)
                if delay is None:
                    raise
            await trio.sleep(delay)
        ```

        Args:
            attempt: The number of the attempt that just failed (1 for the first call).
            exc: The exception it raised.
            random: Passed to [`Backoff.delay()`][trio_mcp.Backoff.delay] for reproducible jitter.

        Returns:
            The delay in seconds before the next attempt, or ``None`` to give up
            (attempts are used up or ``exc`` is not retryable).
        """
        if attempt >= self.max_attempts or not self.should_retry(exc):
            return None
        hint = _retry_after(exc)
        if hint is not None:
            return hint
        return self.backoff.delay(attempt, random=random)

    async def call(
        self, fn: Callable[[], Awaitable[T]], *, breaker: CircuitBreaker | None = None
    ) -> T:
        """Call ``fn()`` until it succeeds or the policy gives up.

        Use `functools.partial()` to pass arguments. Each attempt is a fresh call of
        ``fn``; the waits between attempts are `trio.sleep()` calls, so an enclosing
        cancel scope interrupts them.

        Args:
            fn: An async callable taking no arguments.
            breaker: A circuit breaker each attempt goes through. When it is open, the
                [`CircuitOpenError`][trio_mcp.CircuitOpenError] is raised at once, not retried.

        Returns:
            What ``fn`` returned.

        Raises:
            Exception: The exception of the last attempt, re-raised unchanged, when it is
                not retryable or ``max_attempts`` is reached.
            CircuitOpenError: If ``breaker`` refused an attempt.
            trio.Cancelled: Propagated at once, never retried.
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                if breaker is None:
                    return await fn()
                return await breaker.call(fn)
            except Exception as exc:
                delay = self.next_delay(attempt, exc)
                if delay is None:
                    raise
            # Sleep outside the ``except`` block so a later exception is not chained to
            # this one through ``__context__``.
            await trio.sleep(delay)


class CircuitBreaker:
    """Stop calling a service that keeps failing, and probe it again later.

    * ``CLOSED``: calls go through. After ``failure_threshold`` consecutive failures the
      breaker opens. A success resets the count.
    * ``OPEN``: calls raise [`CircuitOpenError`][trio_mcp.CircuitOpenError] without being made. Once
      ``recovery_time`` seconds of trio time have passed since it opened, the next call
      (or read of [`state`][trio_mcp.CircuitBreaker.state]) moves the breaker to ``HALF_OPEN``;
      there is no background task.
    * ``HALF_OPEN``: at most ``half_open_max_calls`` trial calls run at once; others are
      refused. ``success_threshold`` successful trials close the breaker; one failed trial
      opens it again for another ``recovery_time``.

    A failure is an `Exception` matching ``failure_on`` (by default any). Other
    exceptions are ignored: `trio.Cancelled`, `KeyboardInterrupt`, and
    exceptions ``failure_on`` excludes neither count as failures nor as successes. Results
    of calls that started before the breaker last changed state are ignored too.

    For example:

    ```python
    breaker = trio_mcp.CircuitBreaker(failure_threshold=3, recovery_time=10.0)
    result = await breaker.call(functools.partial(session.call_tool, "echo", {}))
    with breaker.guard():
        await session.ping()
    ```

    A breaker belongs to one trio run; share it among the tasks that call the same service.

    Args:
        failure_threshold: Consecutive failures that open the breaker (at least 1).
        recovery_time: Seconds the breaker stays open before allowing trial calls.
        half_open_max_calls: Trial calls allowed at once while half-open (at least 1).
        success_threshold: Successful trials needed to close the breaker (at least 1).
        failure_on: Which exceptions count as failures: a type, a tuple of types, or a
            predicate; ``None`` counts every `Exception`. For example
            ``failure_on=trio_mcp.TransportError`` ignores errors the server answered with.

    Raises:
        ValueError: If a value is out of range.
    """

    def __init__(
        self,
        *,
        failure_threshold: int = 5,
        recovery_time: float = 30.0,
        half_open_max_calls: int = 1,
        success_threshold: int = 1,
        failure_on: _ExceptionRule | None = None,
    ):
        if failure_threshold < 1:
            raise ValueError(f"failure_threshold must be >= 1, not {failure_threshold!r}")
        if not (math.isfinite(recovery_time) and recovery_time >= 0):
            raise ValueError(f"recovery_time must be a finite number >= 0, not {recovery_time!r}")
        if half_open_max_calls < 1:
            raise ValueError(f"half_open_max_calls must be >= 1, not {half_open_max_calls!r}")
        if success_threshold < 1:
            raise ValueError(f"success_threshold must be >= 1, not {success_threshold!r}")
        self.failure_threshold = failure_threshold
        self.recovery_time = recovery_time
        self.half_open_max_calls = half_open_max_calls
        self.success_threshold = success_threshold
        self.failure_on = failure_on
        self._state = CircuitState.CLOSED
        self._failures = 0  # consecutive failures while closed
        self._successes = 0  # successful trials while half-open
        self._in_flight = 0  # trial calls running while half-open
        self._opened_at = 0.0
        self._generation = 0  # bumped on every transition; stale results are ignored

    def __repr__(self) -> str:
        return (
            f"<CircuitBreaker {self._state.value}, {self._failures}/{self.failure_threshold}"
            f" failures, recovery_time={self.recovery_time}>"
        )

    @property
    def state(self) -> CircuitState:
        """The current state, moving ``OPEN`` to ``HALF_OPEN`` if the recovery time is over.

        Reading it while the breaker is open needs a running trio loop (for its clock).
        """
        self._refresh()
        return self._state

    def reset(self) -> None:
        """Close the breaker and forget all counts, as if it were new.

        Results of calls already in flight are ignored.
        """
        self._transition(CircuitState.CLOSED)

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Call ``fn()`` through the breaker and record the outcome.

        Args:
            fn: An async callable taking no arguments (use `functools.partial()`).

        Returns:
            What ``fn`` returned.

        Raises:
            CircuitOpenError: If the breaker is open, or half-open with all trial slots
                taken; ``fn`` is not called.
            Exception: Whatever ``fn`` raised, unchanged.
        """
        with self.guard():
            return await fn()

    def guard(self) -> AbstractContextManager[None]:
        """Return a context manager that runs its block as one call through the breaker.

        Entering checks the breaker (and may raise [`CircuitOpenError`][trio_mcp.CircuitOpenError],
        skipping the block); leaving records a success if the block finished and a failure if it
        raised a matching exception. It is a plain ``with`` block, usable around ``await``
        expressions in async code; use each returned guard once.

        Returns:
            A single-use context manager.
        """
        return _Guard(self)

    # -- internals ------------------------------------------------------------------

    def _transition(self, state: CircuitState) -> None:
        self._state = state
        self._generation += 1
        self._failures = 0
        self._successes = 0
        self._in_flight = 0
        if state is CircuitState.OPEN:
            self._opened_at = trio.current_time()

    def _refresh(self) -> None:
        if (
            self._state is CircuitState.OPEN
            and trio.current_time() >= self._opened_at + self.recovery_time
        ):
            self._transition(CircuitState.HALF_OPEN)

    def _acquire(self) -> int:
        self._refresh()
        if self._state is CircuitState.OPEN:
            retry_at = self._opened_at + self.recovery_time
            wait = retry_at - trio.current_time()
            raise CircuitOpenError(
                f"circuit breaker is open after {self.failure_threshold} consecutive "
                f"failures; calls are refused for another {wait:.3f}s (until trio time "
                f"{retry_at:.3f}). Wait, or call reset() if the service is known to be back",
                retry_at=retry_at,
                state=CircuitState.OPEN,
            )
        if self._state is CircuitState.HALF_OPEN:
            if self._in_flight >= self.half_open_max_calls:
                raise CircuitOpenError(
                    f"circuit breaker is half-open and its {self.half_open_max_calls} trial "
                    "call(s) are still running; retry when they finish",
                    retry_at=trio.current_time(),
                    state=CircuitState.HALF_OPEN,
                )
            self._in_flight += 1
        return self._generation

    def _release(self, ticket: int, exc: BaseException | None) -> None:
        if ticket != self._generation:
            return  # the state changed since this call started
        if self._state is CircuitState.HALF_OPEN:
            self._in_flight -= 1
        if exc is None:
            if self._state is CircuitState.CLOSED:
                self._failures = 0
            elif self._state is CircuitState.HALF_OPEN:
                self._successes += 1
                if self._successes >= self.success_threshold:
                    self._transition(CircuitState.CLOSED)
            return
        if not isinstance(exc, Exception):
            return  # Cancelled, KeyboardInterrupt, ...: not the service's fault
        if self.failure_on is not None and not _matches(self.failure_on, exc):
            return
        if self._state is CircuitState.CLOSED:
            self._failures += 1
            if self._failures >= self.failure_threshold:
                self._transition(CircuitState.OPEN)
        elif self._state is CircuitState.HALF_OPEN:
            self._transition(CircuitState.OPEN)


class _Guard(AbstractContextManager[None]):
    """One call through a [`CircuitBreaker`][trio_mcp.CircuitBreaker], as a ``with`` block."""

    __slots__ = ("_breaker", "_ticket")

    def __init__(self, breaker: CircuitBreaker):
        self._breaker = breaker
        self._ticket: int | None = None

    def __enter__(self) -> None:
        if self._ticket is not None:
            raise RuntimeError("a CircuitBreaker guard can only be used once")
        self._ticket = self._breaker._acquire()  # pyright: ignore[reportPrivateUsage]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._ticket is not None
        self._breaker._release(self._ticket, exc)  # pyright: ignore[reportPrivateUsage]
