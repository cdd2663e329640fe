"""A server that floods notifications (or garbage) does not flood the log (issue 26).

Every place that drops a message logs through one :class:`trio_mcp._droplog.DropLog`: the
first drop at once, then at most one summary line per interval of Trio's clock with the count,
and what is still counted when the source ends. Times and counts here are exact (MockClock).
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from trio_mcp import open_server_group
from trio_mcp._droplog import DROP_LOG_INTERVAL, DropLog
from trio_mcp.testing import MockServer, ToolContext

from .rawpeer import connect

NOTE = {"jsonrpc": "2.0", "method": "notifications/a"}


def lines(caplog: pytest.LogCaptureFixture, needle: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if needle in r.getMessage()]


async def test_drop_log_first_then_one_summary_per_interval(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    assert DROP_LOG_INTERVAL == 10.0
    log = DropLog("dropped")
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        for _ in range(1000):  # t=0: one line, 999 counted
            log.dropped("x")
        await trio.sleep(5)
        for _ in range(1000):  # t=5: counted
            log.dropped("y")
        await trio.sleep(7)
        log.dropped("z")  # t=12: the summary (2000 counted), a new interval starts
        log.dropped("w")  # counted
        await trio.sleep(30)
        log.dropped("v")  # t=42: the one counted drop, in a summary
        log.flush()  # nothing left to say
        await trio.sleep(1)
        log.dropped("u")
        log.flush()  # t=43: the one counted drop
    assert [r.getMessage() for r in caplog.records] == [
        "dropped x",
        "dropped 2000 more in the last 12.000 s (the last: z); 2001 in all",
        "dropped 2 more in the last 30.000 s (the last: v); 2003 in all",
        "dropped 1 more in the last 1.000 s (the last: u); 2004 in all",
    ]
    assert log.total == 2004


async def test_quiet_source_logs_each_rare_drop(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    log = DropLog("dropped")
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        for name in "abc":
            log.dropped(name)
            await trio.sleep(11)
        log.flush()
    assert [r.getMessage() for r in caplog.records] == ["dropped a", "dropped b", "dropped c"]


async def test_a_flooded_subscriber_logs_three_lines_not_thousands(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with connect() as (session, peer):
            async with session.notifications("notifications/a", buffer=1):
                for pause in (0, 5, 7):  # bursts at t=0, 5 and 12
                    await trio.sleep(pause)
                    for _ in range(1000):
                        await peer.send(NOTE)
                    await trio.testing.wait_all_tasks_blocked()
    # 3000 sent, 1 buffered: 2999 dropped. Lines: the first drop (t=0), at t=12 the 1998
    # counted before it plus itself, and on leaving the block the 999 counted after it.
    assert lines(caplog, "subscriber is full") == [
        "notification subscriber is full; dropped notifications/a",
        "notification subscriber is full; dropped 1999 more in the last 12.000 s "
        "(the last: notifications/a); 2000 in all",
        "notification subscriber is full; dropped 999 more in the last 0.000 s "
        "(the last: notifications/a); 2999 in all",
    ]


async def test_garbage_flood_is_summarised(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with connect() as (_session, peer):
            for _ in range(500):
                await peer.stream.send(b'{"jsonrpc": "2.0", "nonsense": true}')
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(10)
            await peer.stream.send(b'{"jsonrpc": "2.0", "nonsense": true}')
            await trio.testing.wait_all_tasks_blocked()
    found = lines(caplog, "dropping an invalid message")
    assert len(found) == 2
    assert "500 more in the last 10.000 s" in found[1] and "501 in all" in found[1]


async def test_async_callbacks_flood(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    release = trio.Event()

    async def slow(note: object) -> None:
        await release.wait()

    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with connect() as (session, peer):
            session.add_notification_handler("notifications/a", slow)
            for _ in range(1064):  # 64 run, 1000 dropped
                await peer.send(NOTE)
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(10)
            await peer.send(NOTE)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
    found = lines(caplog, "dropping the async notification callback")
    assert len(found) == 2
    assert "1000 more in the last 10.000 s" in found[1] and "1001 in all" in found[1]


async def test_a_flooded_group_subscriber(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    server = MockServer("flood", eras="legacy")

    @server.tool
    async def flood(ctx: ToolContext, count: int) -> str:
        for index in range(count):
            await ctx.log("info", f"note {index}")
        return "done"

    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with open_server_group({"flood": server}) as group:
            async with group.notifications("notifications/message", buffer=1):
                await group.call_tool("flood", {"count": 2000})
                await trio.testing.wait_all_tasks_blocked()
    found = lines(caplog, "group notification subscriber is full")
    assert found[0] == (
        "group notification subscriber is full; dropped notifications/message from 'flood'"
    )
    assert len(found) == 2 and "1999 in all" in found[1]


async def test_what_is_counted_is_logged_when_the_session_closes(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with connect() as (_session, peer):
            for _ in range(3):
                await peer.stream.send(b'{"jsonrpc": "2.0", "nonsense": true}')
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(4)
    found = lines(caplog, "dropping an invalid message")
    assert len(found) == 2
    assert "2 more in the last 4.000 s" in found[1] and "3 in all" in found[1]


async def test_fifty_thousand_notifications_two_lines(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The reported case: 50,000 notifications to a subscriber that never reads."""
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with connect() as (session, peer):
            async with session.notifications("notifications/a"):  # the default buffer
                for _ in range(50_000):
                    await peer.send(NOTE)
                await trio.testing.wait_all_tasks_blocked()
                buffered = session._opts.notification_buffer  # pyright: ignore[reportPrivateUsage]
    found = lines(caplog, "subscriber is full")
    dropped = 50_000 - buffered
    assert found == [
        "notification subscriber is full; dropped notifications/a",
        f"notification subscriber is full; dropped {dropped - 1} more in the last 0.000 s "
        f"(the last: notifications/a); {dropped} in all",
    ]
