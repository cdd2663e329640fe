"""Tests that would hang for ever on the autojump clock: every task waits, no deadline.

Not collected by default (see pytest.ini); trio_mcp's own tests run it and expect each to
fail at once with the plugin's report of what each task waits on.
"""

from __future__ import annotations

import trio
import trio.testing

import trio_mcp


async def test_an_event_nobody_sets(mcp_clock: trio.testing.MockClock) -> None:
    never = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(never.wait, name="the helper")
        await never.wait()


async def test_a_tool_that_never_answers(
    mcp_session: trio_mcp.ClientSession, mcp_clock: trio.testing.MockClock
) -> None:
    await mcp_session.call_tool("stuck", {})
