"""Real Streamable HTTP servers killed and started again on the same port (issue 33).

Each server is SIGKILLed mid-session and started again on its port, as deploys and crashes
do; the restarted process knows no session. The session must renew itself (server-everything
and the TypeScript SDK's examples answer ``400`` "No valid session ID provided", the old
Python SDK ``400`` in plain text, the official Python SDK and fastmcp ``404``), answer calls
again within about two seconds of the server coming back, and set up again what the
application set up: a resource subscription whose updates flow again on the re-opened GET
stream (server-everything).
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
import trio

import trio_mcp
from trio_mcp._eras import era_cache
from trio_mcp._transports._link import LinkState

from .interop_peers import (
    FASTMCP_PYTHON,
    LISTENING_MARKER,
    LOOPBACK,
    SERVERS_DIR,
    _Output,
    _wait_until_accepting,
    everything_argv,
    everything_env,
    free_loopback_port,
    methods_log_env,
    old_sdk_server_argv,
    old_sdk_server_env,
    sdk_server_argv,
    sdk_server_env,
    skip_unless_fastmcp,
    skip_unless_old_sdk,
    skip_unless_peers,
    skip_unless_sdk,
    terminate_process,
)

pytestmark = pytest.mark.interop

#: How soon after the server accepts connections again a call must be answered.
RECOVERY_BUDGET = 2.0


@pytest.fixture(autouse=True)
def fresh_era_cache() -> None:
    era_cache.clear()


@dataclass
class Peer:
    """A server process on a fixed port that a test can kill and start again."""

    launch: Callable[[int], tuple[Sequence[str], dict[str, str]]]
    port: int
    path: str
    process: trio.Process | None = None
    output: _Output | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}{self.path}"

    async def start(self) -> float:
        """Start the server; returns the trio time it accepted connections."""
        argv, env = self.launch(self.port)
        self.output = _Output()
        self.process = await trio.lowlevel.open_process(
            list(argv), stdin=subprocess.DEVNULL, stdout=self.output.file,
            stderr=self.output.file, env=env,
        )  # fmt: skip
        with trio.fail_after(30):
            ready = f"{LISTENING_MARKER} {LOOPBACK}:{self.port}"
            accepting = await _wait_until_accepting(self.process, self.port, self.output, ready)
        assert accepting, self.output.tail()
        return trio.current_time()

    async def kill(self) -> None:
        """SIGKILL the server, as a crash does, and wait for it to be gone."""
        assert self.process is not None and self.output is not None
        self.process.kill()
        with trio.fail_after(10):
            await self.process.wait()
        self.output.file.close()
        self.process = None

    async def stop(self) -> None:
        if self.process is not None:
            await terminate_process(self.process)
            self.process = None
        if self.output is not None:
            self.output.file.close()


@asynccontextmanager
async def running(
    launch: Callable[[int], tuple[Sequence[str], dict[str, str]]], path: str = "/mcp"
) -> AsyncGenerator[Peer, None]:
    peer = Peer(launch, free_loopback_port(), path)
    try:
        await peer.start()
        yield peer
    finally:
        await peer.stop()


async def call_until_answered(
    session: trio_mcp.ClientSession, since: float, argument: str = "text"
) -> float:
    """Call ``echo`` until it is answered (for 15 s at most); how long after ``since``."""
    with trio.fail_after(15):
        while True:
            try:
                result = await session.call_tool(
                    "echo", {argument: "back"}, timeout=RECOVERY_BUDGET
                )
            except (trio_mcp.TransportError, trio.TooSlowError):
                await trio.sleep(0.05)
                continue
            assert "back" in result.text
            return trio.current_time() - since


async def test_server_everything_restart_400(caplog: pytest.LogCaptureFixture) -> None:
    skip_unless_peers()
    uri = "demo://resource/static/document/architecture.md"
    async with running(
        lambda port: (everything_argv("streamableHttp"), everything_env(port))
    ) as peer:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url) as session:
                assert session.era == "legacy"
                first = session.transport.session_id  # type: ignore[attr-defined]
                await session.set_logging_level("debug")
                await session.subscribe_resource(uri)
                await peer.kill()
                with pytest.raises(trio_mcp.TransportError):  # down: fails fast
                    await session.call_tool("echo", {"message": "down"}, timeout=5)
                assert session.transport.link.state is LinkState.RECONNECTING
                back = await peer.start()
                # the restarted process answers the old id with 400 "No valid session ID
                # provided": renewed, replayed
                assert await call_until_answered(session, back, "message") < RECOVERY_BUDGET
                assert session.transport.session_id not in (None, first)  # type: ignore[attr-defined]
                # the subscription was sent again: the restarted server's updates reach us
                async with session.notifications("notifications/resources/updated") as updates:
                    await session.call_tool("toggle-subscriber-updates", {})
                    with trio.fail_after(10):
                        note = await updates.receive()
                assert note.params["uri"] == uri
            nursery.cancel_scope.cancel()
    assert any("HTTP 400" in r.getMessage() for r in caplog.records)


async def test_official_sdk_restart_404() -> None:
    skip_unless_sdk()
    async with running(
        lambda port: (sdk_server_argv("http", mode="legacy", port=port), sdk_server_env())
    ) as peer:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url) as session:
                assert session.era == "legacy"
                first = session.transport.session_id  # type: ignore[attr-defined]
                assert (await session.call_tool("echo", {"text": "before"})).text == "before"
                await peer.kill()
                back = await peer.start()
                assert await call_until_answered(session, back) < RECOVERY_BUDGET
                assert session.transport.session_id not in (None, first)  # type: ignore[attr-defined]
                async with session.notifications("notifications/message") as logs:
                    await session.call_tool("log_messages", {"count": 1})
                    with trio.fail_after(10):
                        await logs.receive()
            nursery.cancel_scope.cancel()


async def test_old_python_sdk_restart_plain_400() -> None:
    skip_unless_old_sdk()
    async with running(
        lambda port: (old_sdk_server_argv("http", port=port), old_sdk_server_env(None)),
        path="/mcp/",
    ) as peer:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url) as session:
                first = session.transport.session_id  # type: ignore[attr-defined]
                assert (await session.call_tool("echo", {"text": "before"})).text == "before"
                await peer.kill()
                back = await peer.start()
                assert await call_until_answered(session, back) < RECOVERY_BUDGET
                assert session.transport.session_id not in (None, first)  # type: ignore[attr-defined]
            nursery.cancel_scope.cancel()


async def test_fastmcp_restart() -> None:
    skip_unless_fastmcp()

    def launch(port: int) -> tuple[list[str], dict[str, str]]:
        argv = [str(FASTMCP_PYTHON), str(SERVERS_DIR / "fastmcp_http_server.py")]
        return [*argv, "--port", str(port)], methods_log_env()

    async with running(launch) as peer:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url) as session:
                era = session.era
                await session.set_logging_level("info")
                assert (await session.call_tool("echo", {"text": "before"})).text == "before"
                await peer.kill()
                back = await peer.start()
                assert await call_until_answered(session, back) < RECOVERY_BUDGET
                assert session.era == era
                async with session.notifications("notifications/message") as logs:
                    result = await session.call_tool("log_then_echo", {"text": "hello"})
                    assert result.text == "hello"
                    with trio.fail_after(10):
                        note = await logs.receive()
                assert "hello" in str(note.params.get("data"))
            nursery.cancel_scope.cancel()


async def test_official_sdk_modern_listen_reopens_after_restart() -> None:
    skip_unless_sdk()
    async with running(
        lambda port: (sdk_server_argv("http", mode="modern", port=port), sdk_server_env())
    ) as peer:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url) as session:
                assert session.era == "modern"
                async with session.listen(tools=True) as changes:
                    await peer.kill()
                    back = await peer.start()
                    assert await call_until_answered(session, back) < RECOVERY_BUDGET
                    await trio.sleep(6)  # past the listen stream's capped backoff (5 s)
                    gaps = 0
                    while True:  # what the gap delivered (the lists may have changed)
                        try:
                            changes.receive_nowait()
                        except trio.WouldBlock:
                            break
                        gaps += 1
                    assert gaps >= 1
                    # the re-opened stream carries the restarted server's own notification
                    await session.call_tool("add_dynamic_tool", {"name": "fresh"})
                    with trio.fail_after(5):
                        note = await changes.receive()
                    assert note.method == "notifications/tools/list_changed"
            nursery.cancel_scope.cancel()
