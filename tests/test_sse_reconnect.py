"""HTTP+SSE sessions survive a server restart: the transport reconnects and re-initializes.

A scripted in-process 2024-11-05 server (``RestartingServer``) that can be stopped,
started and restarted with its sessions forgotten, on virtual time: every delay below is
exact (the reconnection schedule has no jitter here).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import Backoff, ConnectionClosed
from trio_mcp._transports._link import LinkState
from trio_mcp._transports._sse import SSEParameters

URL = "http://old.test/sse"
#: Deterministic: 1 s after the break, then 2 s, then every 4 s.
SCHEDULE = Backoff(initial=1.0, multiplier=2.0, maximum=4.0, jitter=0)
INIT_RESULT: dict[str, Any] = {
    "protocolVersion": "2024-11-05",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "old", "version": "1"},
}


def event(data: Any, name: str = "message") -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return f"event: {name}\ndata: {text}\n\n".encode()


class RestartingServer:
    """A 2024-11-05 server whose process can die and come back (sessions forgotten).

    Attributes:
        down: GETs and POSTs fail to connect while True.
        lost_status: How a POST to an unknown session is answered (404, or 400 with the
            official Python SDK's body).
        refuse_initialize: Answer ``initialize`` with a JSON-RPC error.
        hold: Methods never answered.
        log: ``(trio time, session, method)`` of every POST that reached a session.
    """

    def __init__(self) -> None:
        self.down = False
        self.lost_status = 404
        self.refuse_initialize = False
        self.refuse_stream = False
        self.hold: set[str] = set()
        self.log: list[tuple[float, str, str]] = []
        self.gets: list[float] = []
        self._sessions: dict[str, trio.MemorySendChannel[bytes | BaseException]] = {}
        self._count = 0

    @property
    def sessions(self) -> list[str]:
        return list(self._sessions)

    def stop(self) -> None:
        """The process dies: every stream breaks, every session is forgotten."""
        self.down = True
        for channel in self._sessions.values():
            channel.send_nowait(httpx.RemoteProtocolError("peer closed connection"))
        self._sessions.clear()

    def start(self) -> None:
        self.down = False

    def end_streams(self) -> None:
        """End every event stream cleanly (sessions forgotten), staying up."""
        for channel in self._sessions.values():
            channel.close()
        self._sessions.clear()

    def forget(self) -> None:
        """Forget every session, leaving their streams open (a lost session)."""
        self._sessions.clear()

    def push(self, session: str, data: Any) -> None:
        self._sessions[session].send_nowait(event(data))

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("connection refused", request=request)
        if request.method == "GET":
            if self.refuse_stream:
                return httpx.Response(403, text="go away")
            return self._open_stream()
        session = parse_qs(urlsplit(str(request.url)).query)["session_id"][0]
        channel = self._sessions.get(session)
        if channel is None:
            if self.lost_status == 404:
                return httpx.Response(404, text="Could not find session")
            return httpx.Response(400, text="Invalid session ID")
        message = json.loads(request.content)
        method = message.get("method")
        self.log.append((trio.current_time(), session, method))
        if "id" in message and method is not None and method not in self.hold:
            if method == "initialize" and self.refuse_initialize:
                answer: dict[str, Any] = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32600, "message": "no more sessions"},
                }
            else:
                value: Any = {}
                if method == "initialize":
                    value = INIT_RESULT
                elif method == "tools/call":
                    text = f"{session}:{message['params']['arguments']['text']}"
                    value = {"content": [{"type": "text", "text": text}]}
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": value}
            channel.send_nowait(event(answer))
        return httpx.Response(202, text="Accepted")

    def _open_stream(self) -> httpx.Response:
        self._count += 1
        session = f"s{self._count}"
        send, receive = trio.open_memory_channel[bytes | BaseException](100)
        self._sessions[session] = send
        self.gets.append(trio.current_time())

        async def body() -> AsyncIterator[bytes]:
            yield event(f"/messages/?session_id={session}", name="endpoint")
            async with receive:
                async for chunk in receive:
                    if isinstance(chunk, BaseException):
                        raise chunk
                    yield chunk

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())


@asynccontextmanager
async def open_session(
    server: RestartingServer, **options: Any
) -> AsyncGenerator[trio_mcp.ClientSession, None]:
    options.setdefault("reconnect", SCHEDULE)
    async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as client:
        async with trio.open_nursery() as nursery:
            params = SSEParameters(URL, client=client, timeout=5.0, **options)
            async with trio_mcp.open_mcp_session(nursery, params, protocol="legacy") as session:
                yield session


async def echo(session: trio_mcp.ClientSession, text: str) -> str:
    return (await session.call_tool("echo", {"text": text})).text


def link_of(session: trio_mcp.ClientSession) -> Any:
    return session._transport.link  # pyright: ignore[reportPrivateUsage]


async def wait_for_state(session: trio_mcp.ClientSession, state: LinkState) -> None:
    link = link_of(session)
    seen = link.version
    while link.state is not state:
        seen = await link.wait_changed(seen)


async def test_restart_reconnects_after_the_backoff_and_reinitializes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server) as session:
        assert await echo(session, "a") == "s1:a"
        broke = trio.current_time()
        server.stop()
        await wait_for_state(session, LinkState.RECONNECTING)
        assert trio.current_time() == broke
        await trio.sleep(2.5)  # attempts at +1 (refused) and +3 (the server is back)
        server.start()
        await wait_for_state(session, LinkState.UP)
        assert trio.current_time() == broke + 3
        assert server.gets == [0, broke + 3]
        # the session's initialize and initialized, replayed on the new session at +3
        assert [(t, m) for t, s, m in server.log if s == "s2"] == [
            (broke + 3, "initialize"),
            (broke + 3, "notifications/initialized"),
        ]
        assert await echo(session, "b") == "s2:b"
        assert link_of(session).reconnects == 1
        failure = link_of(session).last_failure
        assert isinstance(failure.error, ConnectionClosed)
        assert "broke" in str(failure.error)
        assert failure.at == broke


async def test_a_clean_end_of_the_stream_reconnects_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server) as session:
        ended = trio.current_time()
        server.end_streams()
        await wait_for_state(session, LinkState.RECONNECTING)
        await wait_for_state(session, LinkState.UP)
        assert trio.current_time() == ended + 1
        assert await echo(session, "x") == "s2:x"


async def test_pending_call_fails_at_once_with_connection_closed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    server.hold.add("tools/call")
    async with open_session(server) as session:
        failed_at: list[float] = []

        async def call() -> None:
            with pytest.raises(ConnectionClosed, match="before the answer to request"):
                await echo(session, "lost")
            failed_at.append(trio.current_time())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await trio.sleep(1)
            broke = trio.current_time()
            server.stop()
        assert failed_at == [broke]
        server.hold.clear()
        server.start()
        await wait_for_state(session, LinkState.UP)
        assert await echo(session, "again") == "s2:again"


@pytest.mark.parametrize("status", [404, 400])
async def test_a_post_to_a_lost_session_reconnects(
    autojump_clock: trio.testing.MockClock, status: int
) -> None:
    server = RestartingServer()
    server.lost_status = status
    async with open_session(server) as session:
        server.forget()  # the stream stays open, the session is gone
        lost = trio.current_time()
        with pytest.raises(ConnectionClosed, match=f"no longer knows .*HTTP {status}"):
            await echo(session, "a")
        assert link_of(session).state is LinkState.RECONNECTING
        await wait_for_state(session, LinkState.UP)
        assert trio.current_time() == lost + 1
        assert await echo(session, "b") == "s2:b"


async def test_a_call_during_the_outage_fails_fast(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server) as session:
        server.stop()
        await wait_for_state(session, LinkState.RECONNECTING)
        start = trio.current_time()
        with trio.fail_after(0.5):  # the caller's deadline: never waited past
            with pytest.raises(ConnectionClosed, match="being re-established"):
                await echo(session, "during")
        assert trio.current_time() == start
        server.start()
        await wait_for_state(session, LinkState.UP)
        assert await echo(session, "after") == "s2:after"


async def test_keeps_trying_on_the_schedule_until_the_server_is_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server) as session:
        broke = trio.current_time()
        server.stop()
        await trio.sleep(30)
        server.start()
        await wait_for_state(session, LinkState.UP)
        # attempts at +1, +3, +7, +11, ... +31 (every 4 s once capped)
        assert trio.current_time() == broke + 31
        assert await echo(session, "late") == "s2:late"


async def test_refused_reinitialization_ends_the_session_cleanly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server) as session:
        server.stop()
        server.refuse_initialize = True
        server.start()
        broke = trio.current_time()
        await wait_for_state(session, LinkState.CLOSED)
        assert trio.current_time() == broke + 1
        with pytest.raises(ConnectionClosed, match="refused to start a new session"):
            await echo(session, "x")
        assert isinstance(session.failure, ConnectionClosed)
        assert "no more sessions" in str(session.failure)
        gets = len(server.gets)
        await trio.sleep(60)
        assert len(server.gets) == gets  # not a loop


async def test_without_reconnect_a_break_ends_the_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server, reconnect=None) as session:
        server.stop()
        server.start()
        await wait_for_state(session, LinkState.CLOSED)
        with pytest.raises(ConnectionClosed, match="broke"):
            await echo(session, "x")
        assert len(server.gets) == 1


async def test_close_during_the_reconnection_is_clean(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with trio.open_nursery() as outer:
        async with open_session(server) as session:
            server.stop()
            await wait_for_state(session, LinkState.RECONNECTING)
            await trio.sleep(1.5)
        assert link_of(session).state is LinkState.CLOSED
        assert len(outer.child_tasks) == 0
    assert trio.current_time() < 2  # nothing waited for a reconnect


@pytest.mark.parametrize("steps", range(40))
async def test_close_racing_a_reconnection(
    autojump_clock: trio.testing.MockClock, steps: int
) -> None:
    """Close after ``steps`` scheduler rounds into the reconnection: at every await point."""
    server = RestartingServer()
    async with open_session(server) as session:
        server.stop()
        server.start()
        await trio.sleep(1)  # the first attempt starts now
        for _ in range(steps):
            await trio.lowlevel.checkpoint()
    assert link_of(session).state is LinkState.CLOSED


async def test_a_refused_event_stream_ends_the_session_cleanly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server) as session:
        server.stop()
        server.refuse_stream = True
        server.start()
        broke = trio.current_time()
        await wait_for_state(session, LinkState.CLOSED)
        assert trio.current_time() == broke + 1
        with pytest.raises(ConnectionClosed, match=r"refused the event stream \(HTTP 403\)"):
            await echo(session, "x")


async def test_reconnection_stopped_by_its_nursery_ends_receive(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def host_nursery(*, task_status: trio.TaskStatus[trio.Nursery]) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started(nursery)
            await trio.sleep_forever()

    server = RestartingServer()
    async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as client:
        async with trio.open_nursery() as outer:
            service: trio.Nursery = await outer.start(host_nursery)
            params = SSEParameters(URL, client=client, reconnect=SCHEDULE)
            async with params.open_transport(service) as transport:
                server.stop()
                await wait_for_link(transport.link, LinkState.RECONNECTING)
                service.cancel_scope.cancel()
                with trio.fail_after(1), pytest.raises(ConnectionClosed, match="stopped"):
                    await transport.receive()  # no hang
                assert transport.link.state is LinkState.CLOSED
            outer.cancel_scope.cancel()


async def wait_for_link(link: Any, state: LinkState) -> None:
    seen = link.version
    while link.state is not state:
        seen = await link.wait_changed(seen)


async def test_concurrent_failures_share_one_reconnection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = RestartingServer()
    async with open_session(server) as session:
        server.forget()  # every POST now gets 404
        failures: list[str] = []

        async def call(n: int) -> None:
            with pytest.raises(ConnectionClosed) as info:
                await echo(session, str(n))
            failures.append(str(info.value))

        async with trio.open_nursery() as nursery:
            for n in range(5):
                nursery.start_soon(call, n)
        assert len(failures) == 5
        await wait_for_state(session, LinkState.UP)
        assert len(server.gets) == 2  # one reconnection for all five
        assert link_of(session).reconnects == 1
        assert await echo(session, "ok") == "s2:ok"
