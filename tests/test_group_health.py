"""A group knows each server's health: RECONNECTING and back, the last failure kept,
``wait_for(since=)``, keep-alive, the restart budget; exact virtual times (MockClock)."""

from __future__ import annotations

import errno
import logging
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import (
    Backoff,
    ConnectionClosed,
    RetryPolicy,
    StreamableHTTPParameters,
    TransportError,
    open_server_group,
)
from trio_mcp._transports._base import Transport
from trio_mcp.groups import RestartPolicy, ServerFailure, ServerState, ServerStatus
from trio_mcp.testing import MockServer, ToolContext

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

POLICY = RestartPolicy(
    backoff=Backoff(initial=1.0, multiplier=2.0, maximum=60.0, jitter=0),
    failure_threshold=3,
    recovery_time=100.0,
    max_restarts=3,
    healthy_after=10.0,
)


def server(name: str, *, eras: Any = "both") -> MockServer:
    mock = MockServer(name=name, eras=eras)

    @mock.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        del ctx
        return f"{name}:{text}"

    return mock


@asynccontextmanager
async def http_group(
    mock: MockServer,
    *,
    get_stream: bool = True,
    retry: RetryPolicy | None = None,
    **options: Any,
) -> AsyncGenerator[tuple[Any, trio_mcp.testing.MockHTTPServer], None]:
    """A group of one member served over Streamable HTTP (in-process, no socket).

    ``get_stream=False``: the server offers no GET stream (405), so nothing but a request
    or a ping can notice that it died; ``retry``: the transport's policy (its GET stream
    re-opens by its backoff)."""
    async with trio.open_nursery() as nursery, mock.open_http(nursery) as http:
        http.get_stream = get_stream
        params = StreamableHTTPParameters(http.url, client=http.client, retry=retry)
        async with open_server_group({"h": params}, restart=POLICY, **options) as group:
            yield group, http
        nursery.cancel_scope.cancel()


async def test_a_broken_link_is_reconnecting_then_running_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_server_group({"a": server("a")}, restart=POLICY) as group:
        link = group.session("a").transport.link
        start = trio.current_time()
        async with group.events() as events:
            await trio.sleep(2)
            broken = ConnectionClosed("the stream broke")
            link.failed(broken)
            down = await events.receive()
            assert (down.state, down.error) == (ServerState.RECONNECTING, broken)
            assert down.last_failure == ServerFailure(broken, start + 2)
            assert trio.current_time() == start + 2
            # calls are still routed to it while it reconnects
            assert (await group.call_tool("echo", {"text": "x"})).content
            await trio.sleep(0.5)
            link.restored()
            back = await events.receive()
            assert back.state is ServerState.RUNNING
            assert trio.current_time() == start + 2.5
        # the failure stays readable after recovery
        status = group.status("a")
        assert status.error is broken
        assert status.last_failure is not None and status.last_failure.at == start + 2
        assert status.restarts == 0


async def test_a_reconnecting_member_answers_a_ping_and_runs_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the link never says it is back (a transport that does not report): the group's
    # recovery ping, by the restart backoff (1 s), finds the server answering
    async with open_server_group({"a": server("a")}, restart=POLICY) as group:
        group.session("a").transport.link.failed(TransportError("stalled"))
        start = trio.current_time()
        await group.wait_for("a", ServerState.RECONNECTING)
        back = await group.wait_for("a", ServerState.RUNNING)
        assert trio.current_time() - start == 1.0
        assert back.error is not None and str(back.error) == "stalled"


async def test_a_failed_routed_call_marks_the_member_at_that_instant(
    autojump_clock: trio.testing.MockClock,
) -> None:
    mock = server("h", eras="legacy")
    async with http_group(mock) as (group, http):
        assert group.status("h").state is ServerState.RUNNING
        await mock.crash()  # the server process is gone: connections are refused
        start = trio.current_time()
        with pytest.raises(TransportError) as seen:
            await group.call_tool("echo", {"text": "x"})
        # status() agrees with what the caller saw, at the same instant
        status = group.status("h")
        assert status.state is ServerState.RECONNECTING
        assert status.error is seen.value
        assert status.last_failure is not None and status.last_failure.at == start
        # recovery pings at 1 and 1 + 2 s fail; the server is back at 5 s; the ping at
        # 3 + 4 = 7 s renews the session (404) and answers
        await trio.sleep(5)
        assert group.status("h").state is ServerState.RECONNECTING
        http.restart()
        back = await group.wait_for("h", ServerState.RUNNING)
        assert trio.current_time() - start == 7.0
        assert back.restarts == 0
        assert "h:y" in str((await group.call_tool("echo", {"text": "y"})).content[0])


async def test_a_successful_routed_call_ends_reconnecting_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    mock = server("h", eras="legacy")
    async with http_group(mock) as (group, http):
        await mock.crash()
        with pytest.raises(TransportError):
            await group.call_tool("echo", {"text": "x"})
        assert group.status("h").state is ServerState.RECONNECTING
        http.restart()
        start = trio.current_time()
        await group.call_tool("echo", {"text": "again"})  # before any recovery ping
        assert group.status("h").state is ServerState.RUNNING
        assert trio.current_time() == start


async def test_keep_alive_finds_a_server_that_died_while_idle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    mock = server("h", eras="legacy")
    # no GET stream (405): its breaking cannot tell the link; nobody calls either
    async with http_group(mock, get_stream=False, keep_alive=5) as (group, http):
        start = trio.current_time()
        async with group.events() as events:
            await mock.crash()  # only the keep-alive can notice
            down = await events.receive()
            assert down.state is ServerState.RECONNECTING
            assert trio.current_time() - start == 5.0
            assert isinstance(down.error, TransportError)
            # recovery pings at 5 + 1, + 2, + 4, + 5 (capped by keep_alive) = 17, 22 s
            await trio.sleep(15)
            http.restart()  # at 20 s
            back = await events.receive()
            assert back.state is ServerState.RUNNING
            assert trio.current_time() - start == 22.0


async def test_the_get_stream_finds_a_dead_server_before_the_keep_alive(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # the legacy GET stream breaks with the server: the transport re-opens it after its
    # backoff (1 s, no jitter), is refused, and marks the link failed, long before the
    # keep-alive's ping (5 s) would have
    mock = server("h", eras="legacy")
    retry = RetryPolicy(backoff=Backoff(initial=1.0, multiplier=2.0, jitter=0))
    async with http_group(mock, retry=retry, keep_alive=5) as (group, http):
        start = trio.current_time()
        async with group.events() as events:
            await mock.crash()
            down = await events.receive()
            assert down.state is ServerState.RECONNECTING
            assert trio.current_time() - start == 1.0
            assert isinstance(down.error, TransportError)
            assert "connection refused" in str(down.error)
            http.restart()  # at 1 s: found 1 s later (by the GET stream's next attempt and
            back = await events.receive()  # the group's first recovery ping alike)
            assert back.state is ServerState.RUNNING
            assert trio.current_time() - start == 2.0


async def test_a_keep_alive_ping_that_times_out_and_a_server_of_its_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    slow, other = server("slow", eras="legacy"), server("other")
    slow.faults.drop("ping")  # the first keep-alive ping is never answered
    async with open_server_group(
        {"slow": slow, "other": other},
        restart=POLICY,
        server_options={"slow": {"keep_alive": 3}},
    ) as group:
        start = trio.current_time()
        down = await group.wait_for("slow", ServerState.RECONNECTING)
        assert trio.current_time() - start == 3 + 3  # the interval, then the ping's timeout
        assert "did not answer a ping within 3 s" in str(down.error)
        back = await group.wait_for("slow", ServerState.RUNNING)
        assert trio.current_time() - start == 3 + 3 + 1  # the first recovery ping answers
        assert back.seq == down.seq + 1
        # the other server has no keep-alive: nothing ever pinged it
        assert [s.state for s in group.history("other")] == [
            ServerState.STARTING,
            ServerState.RUNNING,
        ]


async def test_keep_alive_per_server_and_bad_values() -> None:
    with pytest.raises(ValueError, match="keep_alive"):
        open_server_group([server("a")], keep_alive=0)
    with pytest.raises(ValueError, match="keep_alive"):
        open_server_group([server("a")], server_options={"a": {"keep_alive": -1}})


async def test_the_last_failure_stays_after_the_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a = server("a")
    async with open_server_group({"a": a}, restart=POLICY) as group:
        await trio.sleep(3)
        seen = group.status("a").seq
        crashed_at = trio.current_time()
        await a.crash(exit_code=7, stderr="fatal: out of cheese")
        await group.wait_for("a", ServerState.RESTARTING, since=seen)
        running = await group.wait_for("a", ServerState.RUNNING, since=seen)
        assert running.restarts == 1
        assert running.exit_code == 7
        assert running.stderr_tail == "fatal: out of cheese"
        assert isinstance(running.error, ConnectionClosed)
        failure = running.last_failure
        assert failure is not None
        assert failure.error is running.error
        assert (failure.at, failure.exit_code, failure.stderr_tail) == (
            crashed_at,
            7,
            "fatal: out of cheese",
        )


async def test_wait_for_since_returns_a_transition_that_already_passed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a = server("a")
    async with open_server_group({"a": a}, restart=POLICY) as group:
        before = group.status("a")
        start = trio.current_time()
        await a.crash()
        await trio.sleep(5)  # restarted at 1 s: RESTARTING came and went
        assert group.status("a").state is ServerState.RUNNING
        restarting = await group.wait_for("a", ServerState.RESTARTING, since=before.seq)
        assert trio.current_time() == start + 5  # at once
        assert restarting.retry_at == start + 1.0
        assert restarting.seq > before.seq
        states = [s.state for s in group.history("a") if s.seq > before.seq]
        assert states == [ServerState.RESTARTING, ServerState.STARTING, ServerState.RUNNING]
        # without since: the state now, or the next change into it
        assert (await group.wait_for("a")).seq == group.status("a").seq
        # a since past everything waits for the next change
        with trio.move_on_after(100) as waited:
            await group.wait_for("a", ServerState.RESTARTING, since=group.status("a").seq)
        assert waited.cancelled_caught


async def test_seq_grows_across_the_group_in_event_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b = server("a"), server("b")
    async with open_server_group({"a": a, "b": b}, restart=POLICY) as group:
        received: list[ServerStatus] = []
        async with group.events() as events:
            await a.crash()
            await b.crash()
            while len(received) < 6:
                received.append(await events.receive())
        seqs = [status.seq for status in received]
        assert seqs == sorted(seqs) and len(set(seqs)) == 6


async def test_log_lines_give_durations_not_trio_times(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    a = server("a")
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with open_server_group({"a": a}, restart=POLICY) as group:
            seen = group.status("a").seq
            await a.crash()
            await group.wait_for("a", ServerState.RUNNING, since=seen)
    messages = [record.getMessage() for record in caplog.records]
    assert any("restarting in 1.0 s" in message for message in messages), messages
    assert not any("trio time" in message for message in messages)


class Deployed:
    """A remote server being redeployed: while ``down``, connections are refused."""

    def __init__(self, mock: MockServer) -> None:
        self.mock = mock
        self.down = False
        self.attempts: list[float] = []

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        self.attempts.append(trio.current_time())
        if self.down:
            await trio.lowlevel.checkpoint()
            refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
            raise TransportError("could not connect to the server") from refused
        async with self.mock.open_transport(nursery) as transport:
            yield transport


async def test_ten_redeploys_far_apart_never_fail_a_member(
    autojump_clock: trio.testing.MockClock,
) -> None:
    deployed = Deployed(server("remote"))
    async with open_server_group({"remote": deployed}, restart=POLICY) as group:
        for _ in range(10):
            await trio.sleep(100)  # a healthy run
            deployed.down = True
            seen = group.status("remote").seq
            await deployed.mock.crash()
            await trio.sleep(5)  # refused at 1 and 3 s after the crash (not counted)
            assert group.status("remote").recent_restarts == 1
            deployed.down = False
            back = await group.wait_for("remote", ServerState.RUNNING, since=seen)
            assert back.state is ServerState.RUNNING
        status = group.status("remote")
        assert status.state is ServerState.RUNNING
        assert status.restarts == 30  # every start counted here...
        await trio.sleep(10)
        assert group.status("remote").recent_restarts == 0  # ...none against the budget


async def test_runs_that_last_give_the_budget_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a = server("a")
    async with open_server_group({"a": a}, restart=POLICY) as group:
        for _ in range(10):  # crashes 20 s apart: each run was healthy (10 s)
            await trio.sleep(20)
            seen = group.status("a").seq
            await a.crash()
            await group.wait_for("a", ServerState.RUNNING, since=seen)
        assert group.status("a").restarts == 10


class CrashLoop:
    """A server that starts, then dies within a second, every time."""

    def __init__(self) -> None:
        self.attempts: list[float] = []

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        self.attempts.append(trio.current_time())
        mock = server("loop")
        async with mock.open_transport(nursery) as transport:
            nursery.start_soon(self._crash_soon, mock)
            yield transport

    async def _crash_soon(self, mock: MockServer) -> None:
        await trio.sleep(0.5)
        await mock.crash(exit_code=1)


async def test_a_crash_loop_still_uses_the_budget_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    loop = CrashLoop()
    async with open_server_group({"loop": loop}, restart=POLICY) as group:
        final = await group.wait_for("loop", ServerState.FAILED)
    # runs of 0.5 s; backoff 1, 2 s; the third short run opens the breaker (100 s)
    assert loop.attempts == [0.0, 1.5, 4.0, 104.5]
    assert (final.restarts, final.recent_restarts) == (3, 3)
    assert final.exit_code == 1


async def test_concurrent_failed_calls_make_one_transition(
    autojump_clock: trio.testing.MockClock,
) -> None:
    mock = server("h", eras="legacy")
    async with http_group(mock) as (group, http):
        await mock.crash()
        failed: list[BaseException] = []

        async def call() -> None:
            try:
                await group.call_tool("echo", {"text": "x"})
            except TransportError as exc:
                failed.append(exc)

        async with group.events() as events:
            async with trio.open_nursery() as nursery:
                for _ in range(20):
                    nursery.start_soon(call)
            group.session("h").transport.link.failed(TransportError("and the link says so"))
            assert len(failed) == 20
            assert (await events.receive()).state is ServerState.RECONNECTING
            http.restart()
            assert (await events.receive()).state is ServerState.RUNNING
            with pytest.raises(trio.WouldBlock):  # one transition each way, no more
                events.receive_nowait()
        assert group.status("h").error in failed  # the first caller's error


@pytest.mark.parametrize(
    ("error", "down"),
    [
        (TransportError("refused"), False),
        (trio_mcp.HTTPStatusError(503, "deploying"), True),
        (trio_mcp.HTTPStatusError(502, "bad gateway"), True),
        (trio_mcp.HTTPStatusError(400, "no session"), False),
        (ConnectionClosed("crashed", exit_code=1), False),
        (ValueError("not a transport error"), False),
    ],
)
def test_what_counts_as_a_server_that_is_down(error: BaseException, down: bool) -> None:
    from trio_mcp._group._members import server_down

    assert server_down(error) is down


def test_a_refusal_deep_in_the_cause_chain_is_a_server_that_is_down() -> None:
    from trio_mcp._group._members import server_down

    for cause in (
        ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
        OSError(errno.EHOSTUNREACH, "no route"),
        BaseExceptionGroup("attempts", [OSError(errno.ECONNREFUSED, "refused")]),
    ):
        outer = OSError("could not connect to host:80")
        outer.__cause__ = cause
        error = TransportError("could not connect")
        error.__cause__ = outer
        assert server_down(error)
    looped = TransportError("loop")
    looped.__context__ = looped  # a cycle ends
    assert not server_down(looped)
