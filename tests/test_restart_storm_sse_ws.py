"""A restart storm on virtual time, over HTTP+SSE and WebSocket.

The server dies and comes back every few seconds for a minute while 20 tasks call it
continuously with a deadline. Afterwards: no call waited past its deadline, every call
ended with an answer or a documented error, the session answers within a second of the
server's last return, and no task was left behind.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import trio
import trio.testing

import trio_mcp
from trio_mcp import ConnectionClosed
from trio_mcp._transports._link import LinkState

from .test_sse_reconnect import RestartingServer
from .test_sse_reconnect import open_session as open_sse_session
from .test_websocket_reconnect import WSServer
from .test_websocket_reconnect import open_session as open_ws_session
from .test_websocket_reconnect import server as server  # the fixture

DEADLINE = 1.5
STORM = 60.0


async def storm(
    session: trio_mcp.ClientSession, stop: Callable[[], None], start: Callable[[], None]
) -> dict[str, Any]:
    rng = random.Random(33)
    outcomes: dict[str, int] = {"ok": 0, "ConnectionClosed": 0, "TooSlowError": 0}
    longest = 0.0
    restarts = 0

    async def caller(n: int) -> None:
        nonlocal longest
        while trio.current_time() < STORM:
            began = trio.current_time()
            try:
                await session.call_tool("echo", {"text": str(n)}, timeout=DEADLINE)
                outcome = "ok"
            except ConnectionClosed:
                outcome = "ConnectionClosed"
            except trio.TooSlowError:
                outcome = "TooSlowError"
            longest = max(longest, trio.current_time() - began)
            outcomes[outcome] += 1
            await trio.sleep(rng.uniform(0, 0.2))

    async def restarter() -> None:
        nonlocal restarts
        while trio.current_time() < STORM - 10:
            await trio.sleep(rng.uniform(1, 5))
            stop()
            await trio.sleep(rng.uniform(0, 3))
            start()
            restarts += 1

    tasks_before = trio.lowlevel.current_statistics().tasks_living
    async with trio.open_nursery() as nursery:
        for n in range(20):
            nursery.start_soon(caller, n)
        nursery.start_soon(restarter)
    back = trio.current_time()
    link = session.transport.link
    seen = link.version
    while link.state is not LinkState.UP:
        seen = await link.wait_changed(seen)
    await session.call_tool("echo", {"text": "after"}, timeout=DEADLINE)
    return {
        "outcomes": outcomes,
        "longest": longest,
        "restarts": restarts,
        "recovered_in": trio.current_time() - back,
        "reconnects": link.reconnects,
        "tasks_left": trio.lowlevel.current_statistics().tasks_living - tasks_before,
    }


def check(result: dict[str, Any]) -> None:
    assert result["longest"] <= DEADLINE, result  # never past a caller's deadline
    assert result["outcomes"]["ok"] > 1000, result
    assert result["restarts"] >= 10, result
    # each restart costs one reconnection (one during a reconnection is absorbed by it)
    assert result["restarts"] // 2 < result["reconnects"] <= result["restarts"], result
    assert result["recovered_in"] <= 1.0, result
    assert result["tasks_left"] == 0, result  # flat: nothing leaked per restart


async def test_sse_restart_storm(autojump_clock: trio.testing.MockClock) -> None:
    server = RestartingServer()
    async with open_sse_session(server) as session:
        check(await storm(session, server.stop, server.start))


async def test_websocket_restart_storm(
    autojump_clock: trio.testing.MockClock,
    server: WSServer,
) -> None:
    async with open_ws_session(server) as session:
        check(await storm(session, server.stop, server.start))
