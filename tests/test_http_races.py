"""Race tests over real loopback Streamable HTTP: trio_mcp's own pool, direct socket I/O,
requests started without a yield and answers routed by the task that read them.

A scripted h11 server on 127.0.0.1 answers in both eras. The clock is real (sockets), each
scenario bounded by ``trio.fail_after``: a hang fails the test.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import h11
import pytest
import trio
import trio.testing

import trio_mcp

from .fuzzing import Outcome, user_nursery
from .h11peer import read_request

MODERN = "2026-07-28"
HANG = 60
ON_CLOSE = (trio.ClosedResourceError, trio_mcp.ConnectionClosed)
ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])


def _result(message: dict[str, Any]) -> dict[str, Any]:
    method = message["method"]
    if method == "server/discover":
        return {"resultType": "complete", "supportedVersions": [MODERN],
                "capabilities": {"tools": {}}}  # fmt: skip
    if method == "initialize":
        return {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "races", "version": "1"}}  # fmt: skip
    return {"content": [{"type": "text", "text": "done"}]}


async def _serve(era: str, stream: trio.SocketStream) -> None:
    """One connection: every request answered in JSON; a call named "hang" never is, and
    the answer to one named "pieces" comes in three pieces (cancelled while its body is read)."""
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            received = await read_request(stream, conn)
            if received is None:
                return
            request, body = received
            status, answer = 405, b""
            if request.method == b"DELETE":
                status = 200
            elif request.method == b"POST":
                message = json.loads(body)
                status = 202
                if "id" in message:
                    if message.get("params", {}).get("name") == "hang":
                        await trio.sleep_forever()  # until the client closes the stream
                    if era == "legacy" and message["method"] == "server/discover":
                        status, answer = 400, b"unknown method"
                    else:
                        status = 200
                        reply = {"jsonrpc": "2.0", "id": message["id"], "result": _result(message)}
                        answer = json.dumps(reply).encode()
            headers = [("content-length", str(len(answer)))]
            if status == 200 and answer:
                headers += [("content-type", "application/json"), ("mcp-session-id", "s1")]
            await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers)))
            if b'"pieces"' in body:  # the body in three pieces, each a moment after the last
                third = len(answer) // 3
                for piece in (answer[:third], answer[third : 2 * third]):
                    await stream.send_all(conn.send(h11.Data(data=piece)))
                    await trio.sleep(0.001)
                answer = answer[2 * third :]
            await stream.send_all(conn.send(h11.Data(data=answer)) + conn.send(h11.EndOfMessage()))
            conn.start_next_cycle()
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
        return
    finally:
        await trio.aclose_forcefully(stream)


@asynccontextmanager
async def serving(era: str) -> AsyncGenerator[str]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, partial(_serve, era), 0,
                                                host="127.0.0.1"))  # fmt: skip
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


async def checkpoints(k: int) -> None:
    for _ in range(k):
        await trio.lowlevel.checkpoint()


@ERAS
@pytest.mark.parametrize(
    "name", ["t", "hang", "pieces"], ids=["answered", "never-answered", "in-pieces"]
)
async def test_cancelling_an_http_call_at_every_checkpoint(era: str, name: str) -> None:
    async def cancel_after(scope: trio.CancelScope, k: int) -> None:
        if name == "pieces":  # (its answer takes about 2 ms: cancelled before, during, after)
            await trio.sleep(k * 0.0003)
        else:
            await checkpoints(k)
        scope.cancel()

    answered = name != "hang"
    with trio.fail_after(HANG):
        async with serving(era) as url, user_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, url) as session:
                assert session.era == era
                completed = cancelled = 0
                k = -2
                # -1: cancelled before the call starts; then every checkpoint (or 0.3 ms step)
                # up to 29, and on past that until an answer won the race: a loaded machine
                # may make every answer slower than the first 30 steps (bounded by HANG)
                while k < 29 or (answered and completed == 0):
                    k += 1
                    with trio.CancelScope() as scope:
                        if k < 0:
                            scope.cancel()
                        else:
                            nursery.start_soon(cancel_after, scope, k)
                        result = await session.call_tool(name, {})
                        assert result.text == "done"
                        completed += 1
                    cancelled += scope.cancelled_caught
                    # nothing left behind, nothing broken: the next call works
                    assert (await session.call_tool("t", {})).text == "done"
                assert cancelled > 0 and (completed > 0) == answered


@ERAS
async def test_close_racing_a_burst_of_http_calls(era: str) -> None:
    with trio.fail_after(HANG):
        async with serving(era) as url:
            for k in [*range(0, 12, 2), None]:  # None: close once every call is blocked
                outcomes = [Outcome() for _ in range(20)]
                async with user_nursery() as nursery:
                    async with trio_mcp.open_mcp_session(nursery, url) as session:
                        for i, outcome in enumerate(outcomes):
                            name = "hang" if i % 4 == 0 else "t"
                            nursery.start_soon(outcome.capture, session.call_tool, name, {})
                        if k is None:
                            await trio.testing.wait_all_tasks_blocked()
                        else:
                            await checkpoints(k)
                        await session.aclose()
                        for outcome in outcomes:
                            await outcome.done.wait()
                for outcome in outcomes:
                    error = outcome.error
                    assert error is None or isinstance(error, ON_CLOSE), f"k={k}: {error!r}"
