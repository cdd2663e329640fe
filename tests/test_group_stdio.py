"""A group of real stdio servers under real time: one is killed mid-run and restarted."""

from __future__ import annotations

import json
import os
import signal
import sys
import warnings
from pathlib import Path

import pytest
import trio

from trio_mcp import Backoff, StdioParameters, open_server_group
from trio_mcp.config import parse_config
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


async def test_sigkilled_server_pid_exit_code_and_stderr_are_kept_after_restart() -> None:
    with trio.fail_after(60):
        async with open_server_group({"edge": EDGE}, restart=FAST) as group:
            first = group.status("edge")
            transport = group.session("edge").transport
            assert first.pid is not None and first.pid == getattr(transport, "pid", None)
            # the edge server's crash tool writes to stderr and exits 3
            seen = first.seq
            with pytest.raises(Exception):  # noqa: B017 - the server dies answering
                await group.session("edge").call_tool("crash")  # edge lists no tools
            died = await group.wait_for("edge", ServerState.RESTARTING, since=seen)
            assert died.pid is None
            assert died.last_failure is not None and died.last_failure.pid == first.pid
            second = await group.wait_for("edge", ServerState.RUNNING, since=died.seq)
            assert second.pid is not None and second.pid != first.pid
            # now SIGKILL the new process: its pid, exit code and the stderr tail of the
            # last death stay readable once the server runs again
            os.kill(second.pid, signal.SIGKILL)
            killed = await group.wait_for("edge", ServerState.RESTARTING, since=second.seq)
            assert killed.exit_code == -signal.SIGKILL
            third = await group.wait_for("edge", ServerState.RUNNING, since=killed.seq)
            assert third.restarts == 2
            assert third.exit_code == -signal.SIGKILL
            assert third.last_failure is not None
            assert third.last_failure.pid == second.pid
            assert third.last_failure.exit_code == -signal.SIGKILL
            assert died.stderr_tail and "crashed on purpose" in died.stderr_tail
            assert third.pid is not None and third.pid not in (first.pid, second.pid)


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


async def test_transport_options_on_the_group_warn_as_on_open_mcp_session(
    tmp_path: Path,
) -> None:
    # the deprecated spelling still applies (a missing cwd fails that server's start),
    # with the warning open_mcp_session gives, pointing at this file
    missing = str(tmp_path / "missing")
    expected = (
        r"open_server_group\(\): transport options on open_server_group are deprecated "
        r"\(cwd, env\); give them to trio_mcp\.StdioParameters\(target, cwd=\.\.\., env=\.\.\.\)"
    )
    with pytest.warns(DeprecationWarning, match=expected) as caught:
        opening = open_server_group(
            {"ok": DEMO, "moved": DEMO},
            env={"TRIO_MCP_GROUP_TEST": "1"},
            server_options={"moved": {"cwd": missing}},
            restart=RestartPolicy(enabled=False),
        )
    with trio.fail_after(60):
        async with opening as group:
            assert group.status("ok").state is ServerState.RUNNING
            moved = group.status("moved")
            assert moved.state is ServerState.FAILED
            assert "missing" in str(moved.error)
    assert [Path(warning.filename).name for warning in caught] == ["test_group_stdio.py"]


async def test_a_group_of_parameters_objects_and_config_entries_gives_no_warning(
    tmp_path: Path,
) -> None:
    # the normal path: transport options on the parameters object (or in the config entry)
    config = await parse_config(
        json.dumps({"mcpServers": {"conf": {"command": DEMO[0], "args": DEMO[1:], "env": {}}}})
    )
    servers = {
        "params": StdioParameters(DEMO, env={"TRIO_MCP_GROUP_TEST": "1"}, cwd=str(tmp_path)),
        "conf": config.servers["conf"],
    }
    with trio.fail_after(60), warnings.catch_warnings():
        warnings.simplefilter("error")
        async with open_server_group(servers, restart=RestartPolicy(enabled=False)) as group:
            states = {name: status.state for name, status in group.statuses().items()}
            assert states == {"params": ServerState.RUNNING, "conf": ServerState.RUNNING}
