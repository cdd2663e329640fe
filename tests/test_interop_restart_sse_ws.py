"""Real servers killed and restarted on the same port: HTTP+SSE and WebSocket sessions recover.

* ``@modelcontextprotocol/server-everything`` over legacy HTTP+SSE (its POSTs to a session
  it does not know are never answered: only the broken event stream tells);
* the official Python SDK's server over HTTP+SSE (it answers an unknown session with 404);
* a real trio-websocket MCP server (none of the peers speaks WebSocket), restarted.

Each session must answer again within about two seconds of its server coming back.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import SSEParameters, WebSocketParameters
from trio_mcp._eras import era_cache
from trio_mcp._transports._link import LinkState

from .interop_peers import (
    LISTENING_MARKER,
    LOOPBACK,
    _Output,
    _wait_until_accepting,
    everything_argv,
    everything_env,
    free_loopback_port,
    sdk_server_argv,
    sdk_server_env,
    skip_unless_peers,
    skip_unless_sdk,
    terminate_process,
)

pytestmark = pytest.mark.interop

WS_SERVER = Path(__file__).parent / "servers" / "ws_server.py"

#: How soon after its server accepts connections again a session must answer (seconds).
RECOVERY = 2.5


@pytest.fixture(autouse=True)
def fresh_era_cache() -> None:
    era_cache.clear()


class Server:
    """One server process, started (and killed, and started again) on a fixed port."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], port: int) -> None:
        self.argv = list(argv)
        self.env = env
        self.port = port
        self.process: trio.Process | None = None
        self.output: _Output | None = None

    async def start(self) -> None:
        self.output = _Output()
        self.process = await trio.lowlevel.open_process(
            self.argv, stdin=subprocess.DEVNULL, stdout=self.output.file,
            stderr=self.output.file, env=self.env,
        )  # fmt: skip
        with trio.fail_after(30):
            ready = f"{LISTENING_MARKER} {LOOPBACK}:{self.port}"
            assert await _wait_until_accepting(self.process, self.port, self.output, ready)

    async def kill(self) -> None:
        """SIGKILL: no goodbye to any client (a crash, an OOM kill)."""
        assert self.process is not None and self.output is not None
        with trio.CancelScope(shield=True):
            self.process.kill()
            await self.process.wait()
        self.output.file.close()
        self.process = self.output = None

    async def stop(self) -> None:
        if self.process is not None and self.output is not None:
            await terminate_process(self.process)
            self.output.file.close()
            self.process = self.output = None


async def recovery_time(session: trio_mcp.ClientSession, call: Any) -> float:
    """Seconds until ``call`` succeeds again (it fails fast while reconnecting)."""
    start = trio.current_time()
    with trio.fail_after(30):
        while True:
            try:
                await call()
            except trio_mcp.ConnectionClosed:
                await trio.sleep(0.05)
                continue
            return trio.current_time() - start


async def restart_and_measure(
    server: Server, session: trio_mcp.ClientSession, call: Any, *, down: float = 0.5
) -> float:
    link = session.transport.link
    await server.kill()
    with trio.fail_after(10):
        while link.state is LinkState.UP:  # the broken connection is seen
            await link.wait_changed(link.version)
    await trio.sleep(down)
    await server.start()
    return await recovery_time(session, call)


async def test_everything_over_sse_recovers_from_a_restart() -> None:
    skip_unless_peers()
    port = free_loopback_port()
    server = Server(everything_argv("sse"), everything_env(port), port)
    await server.start()
    try:
        async with trio.open_nursery() as nursery:
            url = f"http://{LOOPBACK}:{port}/sse"
            async with trio_mcp.open_mcp_session(nursery, SSEParameters(url)) as session:

                async def echo() -> None:
                    result = await session.call_tool("echo", {"message": "hi"}, timeout=5)
                    assert "hi" in result.text

                await echo()
                for _ in range(2):  # and again: every restart recovers
                    took = await restart_and_measure(server, session, echo)
                    assert took < RECOVERY, took
                    assert session.transport.link.state is LinkState.UP
                assert session.transport.link.reconnects == 2
    finally:
        await server.stop()


async def test_sdk_server_over_sse_recovers_from_a_restart() -> None:
    skip_unless_sdk()
    port = free_loopback_port()
    server = Server(sdk_server_argv("sse", mode="legacy", port=port), sdk_server_env(), port)
    await server.start()
    try:
        async with trio.open_nursery() as nursery:
            url = f"http://{LOOPBACK}:{port}/sse"
            async with trio_mcp.open_mcp_session(nursery, SSEParameters(url)) as session:

                async def echo() -> None:
                    result = await session.call_tool("echo", {"text": "hi"}, timeout=5)
                    assert result.text == "hi"

                await echo()
                took = await restart_and_measure(server, session, echo)
                assert took < RECOVERY, took
    finally:
        await server.stop()


async def test_websocket_server_recovers_from_a_restart() -> None:
    port = free_loopback_port()
    argv = [sys.executable, str(WS_SERVER), "--port", str(port)]
    server = Server(argv, sdk_server_env(), port)
    await server.start()
    try:
        async with trio.open_nursery() as nursery:
            url = f"ws://{LOOPBACK}:{port}/mcp"
            params = WebSocketParameters(url)
            async with trio_mcp.open_mcp_session(nursery, params, protocol="legacy") as session:
                answered_by: list[str] = []

                async def echo() -> None:
                    result = await session.call_tool("echo", {"text": "hi"}, timeout=5)
                    pid, _, text = result.text.partition(":")
                    assert text == "hi"
                    answered_by.append(pid)

                await echo()
                for _ in range(2):
                    took = await restart_and_measure(server, session, echo)
                    assert took < RECOVERY, took
                assert len(set(answered_by)) == 3  # three processes answered, in turn
                assert session.transport.link.reconnects == 2
    finally:
        await server.stop()
