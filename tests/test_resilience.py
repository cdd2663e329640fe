"""Tests for trio_mcp._resilience: backoff, retries and the circuit breaker on trio's clock.

Every timing test runs under the ``autojump_clock`` fixture (a MockClock that jumps ahead
whenever all tasks are blocked) and asserts exact virtual times. Delays are binary fractions
(0.125, 0.25, ...) so sums of them are exact floats.
"""

from __future__ import annotations

import functools
import random
from typing import NoReturn

import pytest
import trio
import trio.testing

from trio_mcp._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    MCPError,
    ProtocolError,
    ServerError,
    TransportError,
)
from trio_mcp._resilience import (
    Backoff,
    CircuitBreaker,
    CircuitOpenError,
    CircuitState,
    RetryPolicy,
)

NO_JITTER = Backoff(initial=0.125, multiplier=2.0, maximum=10.0, jitter=0.0)


class Recorder:
    """An async callable that records the trio time of each call and plays a script.

    Each entry of ``script`` is an exception instance to raise or a value to return; the
    last entry repeats.
    """

    def __init__(self, *script: object):
        self.script = list(script)
        self.times: list[float] = []
        self.raised: list[BaseException] = []

    async def __call__(self) -> object:
        self.times.append(trio.current_time())
        index = min(len(self.times), len(self.script)) - 1
        outcome = self.script[index]
        if isinstance(outcome, BaseException):
            # A fresh copy per attempt (without re-running __init__, whose signature
            # varies), so tests can tell which attempt's exception came out.
            exc = type(outcome).__new__(type(outcome), *outcome.args)
            exc.__dict__.update(outcome.__dict__)
            self.raised.append(exc)
            raise exc
        return outcome


async def fail(exc: BaseException) -> NoReturn:
    raise exc


async def succeed() -> str:
    return "ok"


# -- Backoff -----------------------------------------------------------------------------


def test_backoff_exponential_schedule_without_jitter() -> None:
    backoff = Backoff(initial=0.1, multiplier=2.0, maximum=10.0, jitter=0.0)
    assert [backoff.delay(n) for n in range(1, 6)] == [0.1, 0.2, 0.4, 0.8, 1.6]


def test_backoff_defaults() -> None:
    backoff = Backoff()
    assert (backoff.initial, backoff.multiplier, backoff.maximum, backoff.jitter) == (
        0.1,
        2.0,
        10.0,
        0.1,
    )


def test_backoff_is_capped_at_maximum() -> None:
    backoff = Backoff(initial=1.0, multiplier=3.0, maximum=5.0, jitter=0.0)
    assert [backoff.delay(n) for n in range(1, 6)] == [1.0, 3.0, 5.0, 5.0, 5.0]
    # Far past the point where multiplier ** attempt overflows a float.
    assert backoff.delay(100_000) == 5.0


def test_backoff_constant_with_multiplier_one() -> None:
    backoff = Backoff(initial=0.5, multiplier=1.0, jitter=0.0)
    assert [backoff.delay(n) for n in range(1, 4)] == [0.5, 0.5, 0.5]


@pytest.mark.parametrize("jitter", [0.1, 0.5, 1.0])
def test_backoff_jitter_stays_within_bounds(jitter: float) -> None:
    backoff = Backoff(initial=1.0, multiplier=2.0, maximum=16.0, jitter=jitter)
    rng = random.Random(1234)
    for attempt in range(1, 8):
        base = min(16.0, 2.0 ** (attempt - 1))
        delays = [backoff.delay(attempt, random=rng) for _ in range(200)]
        assert all(base * (1 - jitter) <= d <= base for d in delays)
        # The jitter really spreads the delays over most of the allowed range.
        assert max(delays) - min(delays) > 0.8 * jitter * base


def test_backoff_jitter_is_reproducible_with_a_seeded_random() -> None:
    backoff = Backoff(initial=1.0, jitter=0.5)
    first = [backoff.delay(n, random=random.Random(7)) for n in range(1, 6)]
    second = [backoff.delay(n, random=random.Random(7)) for n in range(1, 6)]
    assert first == second
    other = [backoff.delay(n, random=random.Random(8)) for n in range(1, 6)]
    assert first != other


def test_backoff_without_jitter_does_not_use_the_random() -> None:
    rng = random.Random(3)
    state = rng.getstate()
    assert Backoff(initial=0.25, jitter=0.0).delay(2, random=rng) == 0.5
    assert rng.getstate() == state


@pytest.mark.parametrize(
    "kwargs",
    [
        {"initial": -0.1},
        {"initial": float("inf")},
        {"multiplier": 0.5},
        {"maximum": -1.0},
        {"maximum": float("nan")},
        {"jitter": -0.1},
        {"jitter": 1.5},
    ],
)
def test_backoff_rejects_bad_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="Backoff"):
        Backoff(**kwargs)


def test_backoff_attempt_counts_from_one() -> None:
    with pytest.raises(ValueError, match="attempt"):
        Backoff().delay(0)


def test_backoff_is_frozen() -> None:
    backoff = Backoff()
    with pytest.raises(AttributeError):
        backoff.initial = 1.0  # type: ignore[misc]


# -- RetryPolicy: schedule -----------------------------------------------------------------


async def test_retry_attempts_follow_the_backoff_schedule_exactly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fn = Recorder(TransportError("down"))
    policy = RetryPolicy(max_attempts=4, backoff=NO_JITTER)
    with pytest.raises(TransportError):
        await policy.call(fn)
    assert fn.times == [0.0, 0.125, 0.375, 0.875]
    assert trio.current_time() == 0.875


async def test_retry_schedule_with_tenths(autojump_clock: trio.testing.MockClock) -> None:
    # The schedule from the docs: attempts at t=0, 0.1, 0.3 and 0.7. (0.1 + 0.2 is not
    # exactly 0.3 in binary floating point, hence approx with a tiny tolerance.)
    fn = Recorder(ConnectionClosed())
    policy = RetryPolicy(max_attempts=4, backoff=Backoff(initial=0.1, jitter=0.0))
    with pytest.raises(ConnectionClosed):
        await policy.call(fn)
    assert fn.times == pytest.approx([0.0, 0.1, 0.3, 0.7], abs=1e-12)


async def test_retry_delays_are_capped(autojump_clock: trio.testing.MockClock) -> None:
    fn = Recorder(TransportError("down"))
    backoff = Backoff(initial=1.0, multiplier=10.0, maximum=2.5, jitter=0.0)
    with pytest.raises(TransportError):
        await RetryPolicy(max_attempts=5, backoff=backoff).call(fn)
    assert fn.times == [0.0, 1.0, 3.5, 6.0, 8.5]


async def test_retry_returns_the_first_success(autojump_clock: trio.testing.MockClock) -> None:
    fn = Recorder(TransportError("a"), TransportError("b"), "done")
    result = await RetryPolicy(max_attempts=5, backoff=NO_JITTER).call(fn)
    assert result == "done"
    assert fn.times == [0.0, 0.125, 0.375]


async def test_retry_with_jitter_waits_within_bounds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fn = Recorder(TransportError("down"))
    backoff = Backoff(initial=1.0, multiplier=2.0, jitter=0.5)
    with pytest.raises(TransportError):
        await RetryPolicy(max_attempts=3, backoff=backoff).call(fn)
    first_gap = fn.times[1] - fn.times[0]
    second_gap = fn.times[2] - fn.times[1]
    assert 0.5 <= first_gap <= 1.0
    assert 1.0 <= second_gap <= 2.0


async def test_max_attempts_one_never_retries(autojump_clock: trio.testing.MockClock) -> None:
    fn = Recorder(TransportError("down"))
    with pytest.raises(TransportError):
        await RetryPolicy(max_attempts=1, backoff=NO_JITTER).call(fn)
    assert fn.times == [0.0]


async def test_the_last_exception_is_reraised_unchanged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fn = Recorder(HTTPStatusError(503, "busy", "http://127.0.0.1/mcp"))
    with pytest.raises(HTTPStatusError) as excinfo:
        await RetryPolicy(max_attempts=3, backoff=NO_JITTER).call(fn)
    assert len(fn.raised) == 3
    assert excinfo.value is fn.raised[-1]
    assert type(excinfo.value) is HTTPStatusError
    assert excinfo.value.status_code == 503
    # Not chained to the earlier attempts' exceptions, not wrapped.
    assert excinfo.value.__cause__ is None
    assert excinfo.value.__context__ is None


# -- RetryPolicy: what is retried --------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (TransportError("x"), True),
        (ConnectionClosed(), True),
        (HTTPStatusError(500, ""), True),
        (HTTPStatusError(502, ""), True),
        (HTTPStatusError(503, ""), True),
        (HTTPStatusError(408, ""), True),
        (HTTPStatusError(429, ""), True),
        (HTTPStatusError(400, ""), False),
        (HTTPStatusError(401, ""), False),
        (HTTPStatusError(404, ""), False),
        (HTTPStatusError(405, ""), False),
        (ServerError(-32603, "internal"), False),
        (ProtocolError("garbage"), False),
        (MCPError("other"), False),
        (ValueError("bug"), False),
        (OSError("raw"), False),
        (CircuitOpenError("open", retry_at=1.0, state=CircuitState.OPEN), False),
        (KeyboardInterrupt(), False),
    ],
)
def test_default_retry_rule(exc: BaseException, expected: bool) -> None:
    assert RetryPolicy().should_retry(exc) is expected


def test_cancelled_is_never_retryable_even_if_asked() -> None:
    policy = RetryPolicy(retry_on=BaseException)
    assert not policy.should_retry(trio.Cancelled._create())  # pyright: ignore[reportPrivateUsage]
    assert not policy.should_retry(KeyboardInterrupt())
    assert policy.should_retry(ValueError())


async def test_default_policy_does_not_retry_server_errors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fn = Recorder(ServerError(-32602, "bad params", method="tools/call"))
    with pytest.raises(ServerError):
        await RetryPolicy(max_attempts=5, backoff=NO_JITTER).call(fn)
    assert fn.times == [0.0]


async def test_default_policy_does_not_retry_client_http_errors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fn = Recorder(HTTPStatusError(404, "no such endpoint"))
    with pytest.raises(HTTPStatusError):
        await RetryPolicy(max_attempts=5, backoff=NO_JITTER).call(fn)
    assert fn.times == [0.0]


async def test_retry_predicate(autojump_clock: trio.testing.MockClock) -> None:
    def transient(exc: BaseException) -> bool:
        return isinstance(exc, ValueError) and "again" in str(exc)

    fn = Recorder(ValueError("try again"), ValueError("try again"), ValueError("fatal"))
    policy = RetryPolicy(max_attempts=10, backoff=NO_JITTER, retry_on=transient)
    with pytest.raises(ValueError, match="fatal"):
        await policy.call(fn)
    assert fn.times == [0.0, 0.125, 0.375]


async def test_retry_on_tuple_of_types(autojump_clock: trio.testing.MockClock) -> None:
    fn = Recorder(KeyError("a"), LookupError("b"), TypeError("c"))
    policy = RetryPolicy(max_attempts=10, backoff=NO_JITTER, retry_on=(LookupError, OSError))
    with pytest.raises(TypeError):
        await policy.call(fn)
    assert len(fn.times) == 3


async def test_retry_on_a_single_type(autojump_clock: trio.testing.MockClock) -> None:
    # A bare class is callable; it must be treated as a type, not as a predicate.
    fn = Recorder(OSError("a"), ValueError("b"))
    policy = RetryPolicy(max_attempts=10, backoff=NO_JITTER, retry_on=OSError)
    with pytest.raises(ValueError, match="b"):
        await policy.call(fn)
    assert len(fn.times) == 2


class RateLimited(TransportError):
    def __init__(self, retry_after: float | None):
        super().__init__("rate limited")
        self.retry_after = retry_after


async def test_retry_after_hint_is_honoured(autojump_clock: trio.testing.MockClock) -> None:
    fn = Recorder(RateLimited(3.0), RateLimited(None), "ok")
    policy = RetryPolicy(max_attempts=5, backoff=NO_JITTER)
    assert await policy.call(fn) == "ok"
    # 3.0 from the hint (not the 0.125 backoff), then the normal second delay of 0.25.
    assert fn.times == [0.0, 3.0, 3.25]


async def test_retry_after_hint_may_exceed_backoff_maximum(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fn = Recorder(RateLimited(60.0), "ok")
    policy = RetryPolicy(backoff=Backoff(initial=0.125, maximum=1.0, jitter=0.0))
    assert await policy.call(fn) == "ok"
    assert fn.times == [0.0, 60.0]


async def test_retry_after_zero_retries_at_once(autojump_clock: trio.testing.MockClock) -> None:
    fn = Recorder(RateLimited(0), "ok")
    assert await RetryPolicy(backoff=NO_JITTER).call(fn) == "ok"
    assert fn.times == [0.0, 0.0]


def test_retry_after_is_ignored_for_non_retryable_errors() -> None:
    class Hinted(ServerError):
        retry_after = 1.0

    assert RetryPolicy().next_delay(1, Hinted(-1, "no")) is None


def test_next_delay() -> None:
    policy = RetryPolicy(max_attempts=3, backoff=NO_JITTER)
    assert policy.next_delay(1, TransportError()) == 0.125
    assert policy.next_delay(2, TransportError()) == 0.25
    assert policy.next_delay(3, TransportError()) is None
    assert policy.next_delay(1, ValueError()) is None


def test_retry_policy_defaults_and_validation() -> None:
    policy = RetryPolicy()
    assert policy.max_attempts == 3
    assert policy.backoff == Backoff()
    assert policy.retry_on is None
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


# -- RetryPolicy: cancellation -------------------------------------------------------------


async def test_cancellation_during_backoff_is_not_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fn = Recorder(TransportError("down"))
    policy = RetryPolicy(max_attempts=10, backoff=Backoff(initial=0.5, jitter=0.0))
    with pytest.raises(trio.TooSlowError):
        with trio.fail_after(1.0):
            await policy.call(fn)
    # Attempts at 0 and 0.5; the deadline hits at 1.0 during the 1.0s sleep before the
    # third attempt, which never happens.
    assert trio.current_time() == 1.0
    assert fn.times == [0.0, 0.5]


async def test_cancellation_inside_an_attempt_is_not_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls: list[float] = []

    async def hang() -> None:
        calls.append(trio.current_time())
        await trio.sleep_forever()

    policy = RetryPolicy(max_attempts=5, backoff=NO_JITTER, retry_on=BaseException)
    with trio.move_on_after(2.0) as scope:
        await policy.call(hang)
    assert scope.cancelled_caught
    assert calls == [0.0]
    assert trio.current_time() == 2.0


# -- CircuitBreaker ----------------------------------------------------------------------------


async def test_breaker_opens_after_consecutive_failures(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=3)
    assert breaker.state is CircuitState.CLOSED
    for _ in range(2):
        with pytest.raises(TransportError):
            await breaker.call(functools.partial(fail, TransportError("down")))
    assert breaker.state is CircuitState.CLOSED
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    assert breaker.state is CircuitState.OPEN


async def test_breaker_success_resets_the_failure_count(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=3)
    for _ in range(2):
        with pytest.raises(ValueError, match="x"):
            await breaker.call(functools.partial(fail, ValueError("x")))
    assert await breaker.call(succeed) == "ok"
    for _ in range(2):
        with pytest.raises(ValueError, match="x"):
            await breaker.call(functools.partial(fail, ValueError("x")))
    assert breaker.state is CircuitState.CLOSED


async def test_open_breaker_rejects_without_calling(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=30.0)
    await trio.sleep(1.0)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(4.0)

    fn = Recorder("never")
    with pytest.raises(CircuitOpenError) as excinfo:
        await breaker.call(fn)
    assert fn.times == []
    err = excinfo.value
    assert isinstance(err, MCPError)
    assert err.retry_at == 31.0
    assert err.state is CircuitState.OPEN
    assert "open" in str(err)
    assert "26.000s" in str(err)
    assert "reset()" in str(err)


async def test_breaker_goes_half_open_at_exactly_recovery_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=30.0)
    await trio.sleep(1.0)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))

    await trio.sleep_until(30.75)
    assert breaker.state is CircuitState.OPEN
    with pytest.raises(CircuitOpenError):
        await breaker.call(succeed)

    await trio.sleep_until(31.0)
    assert trio.current_time() == 31.0
    assert breaker.state is CircuitState.HALF_OPEN


async def test_breaker_lazily_admits_a_trial_call_after_recovery_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=10.0)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(10.0)
    # No read of .state in between: the call itself performs the transition.
    fn = Recorder("probe ok")
    assert await breaker.call(fn) == "probe ok"
    assert fn.times == [10.0]
    assert breaker.state is CircuitState.CLOSED


async def test_half_open_success_closes(autojump_clock: trio.testing.MockClock) -> None:
    breaker = CircuitBreaker(failure_threshold=2, recovery_time=5.0)
    for _ in range(2):
        with pytest.raises(TransportError):
            await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(5.0)
    assert breaker.state is CircuitState.HALF_OPEN
    assert await breaker.call(succeed) == "ok"
    assert breaker.state is CircuitState.CLOSED
    # Closed again with a fresh count: one failure does not reopen it.
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    assert breaker.state is CircuitState.CLOSED


async def test_half_open_needs_success_threshold_successes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=5.0, success_threshold=3)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(5.0)
    for _ in range(2):
        await breaker.call(succeed)
        assert breaker.state is CircuitState.HALF_OPEN
    await breaker.call(succeed)
    assert breaker.state is CircuitState.CLOSED


async def test_half_open_failure_reopens(autojump_clock: trio.testing.MockClock) -> None:
    breaker = CircuitBreaker(failure_threshold=3, recovery_time=8.0)
    for _ in range(3):
        with pytest.raises(TransportError):
            await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(8.0)
    assert breaker.state is CircuitState.HALF_OPEN
    await trio.sleep(0.5)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("still down")))
    # One failed trial is enough, and the recovery time starts over from t=8.5.
    assert breaker.state is CircuitState.OPEN
    with pytest.raises(CircuitOpenError) as excinfo:
        await breaker.call(succeed)
    assert excinfo.value.retry_at == 16.5
    await trio.sleep_until(16.25)
    assert breaker.state is CircuitState.OPEN
    await trio.sleep_until(16.5)
    assert breaker.state is CircuitState.HALF_OPEN


async def test_half_open_limits_concurrent_trial_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=5.0, half_open_max_calls=2)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(5.0)

    release = trio.Event()
    started: list[float] = []
    results: list[str] = []

    async def slow_probe() -> str:
        started.append(trio.current_time())
        await release.wait()
        return "probe"

    async def run_probe() -> None:
        results.append(await breaker.call(slow_probe))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_probe)
        nursery.start_soon(run_probe)
        await trio.testing.wait_all_tasks_blocked()
        assert started == [5.0, 5.0]

        fn = Recorder("third")
        with pytest.raises(CircuitOpenError) as excinfo:
            await breaker.call(fn)
        assert fn.times == []
        assert excinfo.value.state is CircuitState.HALF_OPEN
        assert excinfo.value.retry_at == 5.0
        assert "half-open" in str(excinfo.value)
        assert breaker.state is CircuitState.HALF_OPEN
        release.set()

    assert results == ["probe", "probe"]
    assert breaker.state is CircuitState.CLOSED


async def test_half_open_slot_is_freed_when_a_trial_finishes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=5.0, success_threshold=2)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(5.0)
    await breaker.call(succeed)  # first trial: slot taken and given back
    assert breaker.state is CircuitState.HALF_OPEN
    await breaker.call(succeed)  # admitted because the slot is free again
    assert breaker.state is CircuitState.CLOSED


async def test_cancellation_is_not_a_failure(autojump_clock: trio.testing.MockClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1)
    with trio.move_on_after(1.0):
        await breaker.call(trio.sleep_forever)
    assert breaker.state is CircuitState.CLOSED


async def test_cancelled_trial_frees_its_half_open_slot(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=5.0)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    await trio.sleep(5.0)
    with trio.move_on_after(1.0) as scope:
        await breaker.call(trio.sleep_forever)
    assert scope.cancelled_caught
    assert breaker.state is CircuitState.HALF_OPEN
    assert await breaker.call(succeed) == "ok"
    assert breaker.state is CircuitState.CLOSED


async def test_failure_on_limits_what_counts(autojump_clock: trio.testing.MockClock) -> None:
    breaker = CircuitBreaker(failure_threshold=2, failure_on=TransportError)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    # The server answered: not a failure, and not a success that resets the count.
    with pytest.raises(ServerError):
        await breaker.call(functools.partial(fail, ServerError(-32602, "bad")))
    assert breaker.state is CircuitState.CLOSED
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    assert breaker.state is CircuitState.OPEN


async def test_results_of_calls_from_an_earlier_state_are_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=10.0)
    release = trio.Event()

    async def slow() -> str:
        await release.wait()
        return "late"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(breaker.call, slow)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(TransportError):
            await breaker.call(functools.partial(fail, TransportError("down")))
        await trio.sleep(10.0)
        assert breaker.state is CircuitState.HALF_OPEN
        release.set()
    # The late success started while closed; it says nothing about the service now and
    # must neither close the breaker nor free a trial slot it never took.
    assert breaker.state is CircuitState.HALF_OPEN
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(breaker.call, slow)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(CircuitOpenError):
            await breaker.call(succeed)
        release.set()
    assert breaker.state is CircuitState.CLOSED


async def test_reset_closes_the_breaker(autojump_clock: trio.testing.MockClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_time=100.0)
    with pytest.raises(TransportError):
        await breaker.call(functools.partial(fail, TransportError("down")))
    assert breaker.state is CircuitState.OPEN
    breaker.reset()
    assert breaker.state is CircuitState.CLOSED
    assert await breaker.call(succeed) == "ok"


async def test_guard_records_success_and_failure(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=2, recovery_time=5.0)
    err = ValueError("boom")

    async def guarded_work() -> None:
        with breaker.guard():
            await trio.sleep(1.0)
            raise err

    with pytest.raises(ValueError, match="boom") as excinfo:
        await guarded_work()
    assert excinfo.value is err
    assert breaker.state is CircuitState.CLOSED
    with pytest.raises(ValueError, match="boom"), breaker.guard():
        raise ValueError("boom")
    assert breaker.state is CircuitState.OPEN

    ran = False
    with pytest.raises(CircuitOpenError) as open_info, breaker.guard():
        ran = True
    assert not ran
    assert open_info.value.retry_at == 6.0

    await trio.sleep_until(6.0)
    with breaker.guard():
        await trio.sleep(0.5)
    assert breaker.state is CircuitState.CLOSED


async def test_guard_ignores_cancellation(autojump_clock: trio.testing.MockClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1)
    with trio.move_on_after(1.0), breaker.guard():
        await trio.sleep_forever()
    assert breaker.state is CircuitState.CLOSED


async def test_guard_is_single_use(autojump_clock: trio.testing.MockClock) -> None:
    breaker = CircuitBreaker()
    guard = breaker.guard()
    with guard:
        pass
    with pytest.raises(RuntimeError, match="once"), guard:
        pass


@pytest.mark.parametrize(
    "kwargs",
    [
        {"failure_threshold": 0},
        {"recovery_time": -1.0},
        {"recovery_time": float("nan")},
        {"half_open_max_calls": 0},
        {"success_threshold": 0},
    ],
)
def test_breaker_rejects_bad_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        CircuitBreaker(**kwargs)  # type: ignore[arg-type]


def test_breaker_defaults_and_repr() -> None:
    breaker = CircuitBreaker()
    assert breaker.failure_threshold == 5
    assert breaker.recovery_time == 30.0
    assert breaker.half_open_max_calls == 1
    assert breaker.success_threshold == 1
    # Reading the state of a closed breaker needs no trio clock.
    assert breaker.state is CircuitState.CLOSED
    assert "closed" in repr(breaker)


# -- RetryPolicy with a CircuitBreaker ---------------------------------------------------------


async def test_retry_stops_when_the_breaker_opens(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=2, recovery_time=30.0)
    fn = Recorder(TransportError("down"))
    policy = RetryPolicy(max_attempts=5, backoff=NO_JITTER)
    with pytest.raises(CircuitOpenError) as excinfo:
        await policy.call(fn, breaker=breaker)
    # Attempts at 0 and 0.125 trip the breaker; the third, at 0.375, is refused at once.
    assert fn.times == [0.0, 0.125]
    assert trio.current_time() == 0.375
    assert excinfo.value.retry_at == 30.125


async def test_retry_through_a_closed_breaker_succeeds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=5)
    fn = Recorder(TransportError("a"), "ok")
    assert await RetryPolicy(backoff=NO_JITTER).call(fn, breaker=breaker) == "ok"
    assert fn.times == [0.0, 0.125]
    assert breaker.state is CircuitState.CLOSED
