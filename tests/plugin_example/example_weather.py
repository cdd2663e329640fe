"""How a user tests their MCP client code with trio_mcp's pytest plugin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.testing import MockServer, ReplayServer

CASSETTE = Path(__file__).parent / "cassettes" / "demo.jsonl"


async def test_timeout_at_an_exact_virtual_time(
    mcp_session: trio_mcp.ClientSession, mcp_server: MockServer, mcp_clock: trio.testing.MockClock
) -> None:
    start = trio.current_time()
    with pytest.raises(trio.TooSlowError):
        await mcp_session.call_tool("forecast", {"city": "Oslo", "days": 5}, timeout=25)
    assert trio.current_time() - start == 25
    await mcp_server.wait_for_message("notifications/cancelled")
    assert len(mcp_server.cancelled) == 1


@pytest.mark.mcp_eras
async def test_progress_in_both_eras(
    mcp_session: trio_mcp.ClientSession, mcp_era: str, mcp_clock: trio.testing.MockClock
) -> None:
    seen: list[tuple[float, str | None]] = []
    result = await mcp_session.call_tool(
        "forecast", {"city": "Oslo"}, on_progress=lambda p: seen.append((p.progress, p.message))
    )
    assert result.text == "Oslo: sunny for 3 days"
    assert seen == [(1, "day 1"), (2, "day 2"), (3, "day 3")]
    assert trio.current_time() == 30
    assert mcp_session.era == mcp_era


@pytest.mark.mcp_eras
async def test_a_crash_reads_like_a_dead_process(
    mcp_session: trio_mcp.ClientSession, mcp_server: MockServer
) -> None:
    mcp_server.faults.crash("tools/call", exit_code=137, stderr="Killed")
    with pytest.raises(trio_mcp.ConnectionClosed) as caught:
        await mcp_session.call_tool("echo", {"text": "hi"})
    assert caught.value.exit_code == 137
    assert caught.value.stderr_tail == "Killed"


@pytest.mark.mcp_session_options(default_timeout=2)
async def test_a_dropped_answer_hits_the_session_default_timeout(
    mcp_session: trio_mcp.ClientSession, mcp_server: MockServer, mcp_clock: trio.testing.MockClock
) -> None:
    mcp_server.faults.drop("tools/call")
    with pytest.raises(trio.TooSlowError):
        await mcp_session.call_tool("echo", {"text": "lost"})
    assert trio.current_time() == 2
    assert (await mcp_session.call_tool("echo", {"text": "found"})).text == "found"


async def test_a_recorded_real_server_replayed_instantly(
    nursery: trio.Nursery, mcp_clock: trio.testing.MockClock
) -> None:
    # cassettes/demo.jsonl was recorded from the real demo server subprocess:
    #   Recorder([sys.executable, "-m", "trio_mcp.testing"], "cassettes/demo.jsonl")
    replay = ReplayServer(CASSETTE)
    async with trio_mcp.open_mcp_session(nursery, replay) as session:
        assert (await session.call_tool("echo", {"text": "hello"})).text == "hello"
        start = trio.current_time()
        slow = await session.call_tool("slow", {"seconds": 0.5, "steps": 2})
        assert slow.text == "slept 0.5 seconds"
        assert trio.current_time() - start >= 0.5  # the recorded duration, in virtual time
    replay.check()
    assert sys.executable  # nothing ran: no subprocess in this test
