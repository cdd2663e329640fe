"""Real stdio servers in one group under real time: one is killed mid-run and restarted.

The bundled demo server, ``@modelcontextprotocol/server-everything`` (npm) and the official
SDK's server (``tests/servers/sdk_server.py``) all offer ``echo``: the group exposes them
as ``demo_echo``, ``everything_echo`` and ``sdk_echo``, and the tool loop uses those names.
"""

from __future__ import annotations

import os
import signal
import sys

import pytest
import trio

import trio_mcp
from trio_mcp import Backoff, CreateMessageResult, StdioParameters, TextContent, open_server_group
from trio_mcp._transports._stdio import StdioTransport
from trio_mcp.agent import ModelRequest
from trio_mcp.groups import RestartPolicy, ServerState
from trio_mcp.types import ToolResultContent

from .interop_peers import (
    LOOPBACK,
    everything_argv,
    everything_env,
    free_loopback_port,
    sdk_server_argv,
    sdk_server_env,
    skip_unless_peers,
    skip_unless_sdk,
    terminate_process,
)
from .test_agent import answer, use
from .test_interop_http import start_sdk

pytestmark = pytest.mark.interop

FAST = RestartPolicy(backoff=Backoff(initial=0.2, jitter=0), failure_threshold=5)
STEP = 30  # real seconds for any one step (a cold npx/python start on a busy machine)


def echoed(result: trio_mcp.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_three_real_servers_one_killed_and_restarted() -> None:
    skip_unless_peers()
    skip_unless_sdk()
    servers = {
        "demo": StdioParameters([sys.executable, "-m", "trio_mcp.testing"]),
        "everything": StdioParameters(everything_argv("stdio"), env=everything_env()),
        "sdk": StdioParameters(sdk_server_argv("stdio"), env=sdk_server_env()),
    }
    with trio.fail_after(6 * STEP):  # the whole run; every step has its own bound too
        async with open_server_group(servers, restart=FAST, init_timeout=STEP) as group:
            await run(group, servers)


async def run(group: trio_mcp.ServerGroup, servers: dict[str, StdioParameters]) -> None:
    with trio.fail_after(STEP):
        for name in servers:
            assert group.status(name).state is ServerState.RUNNING, group.status(name)
        names = {tool.name for tool in await group.list_tools()}
        assert {"demo_echo", "everything_echo", "sdk_echo"} <= names
        assert "hi" in echoed(await group.call_tool("everything_echo", {"message": "hi"}))
        assert echoed(await group.call_tool("sdk_echo", {"text": "hi"})) == "hi"
        # a tool added at run time reaches the catalogue (tools/list_changed)...
        async with group.notifications("notifications/tools/list_changed") as changes:
            await group.call_tool("add_dynamic_tool", {"name": "dynamic"})
            note = await changes.receive()
            assert note.server == "sdk"
        assert "dynamic" in {tool.name for tool in await group.list_tools()}

    async with group.events() as events:
        with trio.fail_after(STEP):
            transport = group.session("sdk").transport
            assert isinstance(transport, StdioTransport)
            assert transport.pid is not None and transport.pid == group.status("sdk").pid
            os.kill(transport.pid, signal.SIGKILL)
            status = await events.receive()
            while status.server != "sdk" or status.state is not ServerState.RESTARTING:
                status = await events.receive()
            assert status.exit_code == -signal.SIGKILL, status  # reported per server
            assert group.status("demo").state is ServerState.RUNNING
        with trio.fail_after(STEP):  # the others keep answering
            assert "x" in echoed(await group.call_tool("everything_echo", {"message": "x"}))
            assert "x" in echoed(await group.call_tool("demo_echo", {"text": "x"}))
        with trio.fail_after(STEP):
            back = await group.wait_for("sdk")
    assert back.restarts == 1
    with trio.fail_after(STEP):
        # ...and the restarted server's fresh catalogue replaced the old one
        names = {tool.name for tool in await group.list_tools()}
        assert "dynamic" not in names and "sdk_echo" in names
        assert echoed(await group.call_tool("sdk_echo", {"text": "back"})) == "back"

    async def ask(request: ModelRequest) -> CreateMessageResult:
        del request
        return answer(
            use("1", "sdk_echo", text="a"), use("2", "demo_echo", text="b"),
            use("3", "everything_echo", message="c"),
        )  # fmt: skip

    async def final(request: ModelRequest) -> CreateMessageResult:
        last = request.messages[-1].content
        assert isinstance(last, list)
        got = {b.tool_use_id: b for b in last if isinstance(b, ToolResultContent)}
        assert all(got[key].is_error is not True for key in "123"), got
        return answer(TextContent(text="all echoed"))

    steps = [ask, final]

    async def model(request: ModelRequest) -> CreateMessageResult:
        return await steps.pop(0)(request)

    with trio.fail_after(STEP):
        result = await trio_mcp.run_agent(model, group, ["echo everywhere"])
    assert result.text == "all echoed" and result.tool_calls == 3


async def test_http_member_whose_server_goes_down_is_reconnecting_then_running() -> None:
    # the official Python SDK's server over Streamable HTTP (a legacy session), stopped
    # while the application is idle and started again on the same port
    skip_unless_sdk()
    port = free_loopback_port()
    process, output = await start_sdk(port, "legacy")
    try:
        url = f"http://{LOOPBACK}:{port}/mcp"
        with trio.fail_after(6 * STEP):
            async with open_server_group({"sdk": url}, restart=FAST, keep_alive=1) as group:
                assert group.status("sdk").state is ServerState.RUNNING
                assert echoed(await group.call_tool("echo", {"text": "before"})) == "before"
                seen = group.status("sdk").seq
                await terminate_process(process)
                output.file.close()
                # nobody calls: the keep-alive notices
                down = await group.wait_for("sdk", ServerState.RECONNECTING, since=seen)
                assert isinstance(down.error, trio_mcp.TransportError)
                with pytest.raises(trio_mcp.TransportError):  # routed, and fails fast
                    await group.call_tool("echo", {"text": "down"})
                assert group.status("sdk").state is ServerState.RECONNECTING
                process, output = await start_sdk(port, "legacy")
                back = await group.wait_for("sdk", ServerState.RUNNING, since=down.seq)
                assert back.restarts == 0  # the same session, renewed: not a restart
                assert back.last_failure is not None
                assert back.last_failure.error is down.error
                assert echoed(await group.call_tool("echo", {"text": "after"})) == "after"
    finally:
        await terminate_process(process)
        output.file.close()
