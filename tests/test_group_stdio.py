"""A group of real stdio servers under real time: one is killed mid-run and restarted."""

from __future__ import annotations

import sys

import pytest
import trio

from trio_mcp import Backoff, open_server_group
from trio_mcp.groups import RestartPolicy, ServerState, ServerUnavailableError

from .interop_peers import SERVERS_DIR

DEMO = [sys.executable, "-m", "trio_mcp.testing"]
EDGE = [sys.executable, str(SERVERS_DIR / "edge_server.py")]
FAST = RestartPolicy(backoff=Backoff(initial=0.2, jitter=0), failure_threshold=5)


async def test_killed_server_is_restarted_while_the_other_keeps_working() -> None:
    with trio.fail_after(60):
        async with open_server_group({"demo": DEMO, "edge": EDGE}, restart=FAST) as group:
            assert group.status("demo").state is ServerState.RUNNING
            assert group.status("edge").state is ServerState.RUNNING
            echo = await group.call_tool("echo", {"text": "hi"})  # only demo lists tools
            assert "hi" in str(echo.content[0])
            async with group.events() as events:
                with pytest.raises(Exception):  # noqa: B017 - the server dies answering
                    await group.session("edge").call_tool("crash")
                down = await events.receive()
                assert down.server == "edge"
                assert down.state is ServerState.RESTARTING
                assert down.exit_code == 3
                assert "crashed on purpose" in down.stderr_tail
                with pytest.raises(ServerUnavailableError) as info:
                    group.session("edge")
                assert "crashed on purpose" in info.value.stderr_tail
                # the other server is untouched
                assert "still" in str((await group.call_tool("echo", {"text": "still"})).content[0])
            back = await group.wait_for("edge")
            assert back.restarts == 1
            again = await group.session("edge").call_tool("echo", {"text": "back"})
            assert "back" in str(again.content[0])


async def test_demo_server_crash_tool_is_reported_per_server() -> None:
    with trio.fail_after(60):
        async with open_server_group([DEMO, EDGE], restart=RestartPolicy(enabled=False)) as group:
            assert group.servers == ["trio_mcp.testing", "edge_server"]
            with pytest.raises(Exception):  # noqa: B017
                await group.call_tool("crash")
            status = await group.wait_for("trio_mcp.testing", ServerState.FAILED)
            assert status.exit_code == 1
            assert "crashed" in status.stderr_tail
            echo = await group.session("edge_server").call_tool("echo", {"text": "ok"})
            assert "ok" in str(echo.content[0])
