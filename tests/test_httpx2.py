"""Your own HTTP client, used as you configured it; and httpx2 objects where httpx's go.

The official SDK (mcp 2.x) and fastmcp 4 use httpx2; trio_mcp keeps httpx and accepts
either library's ``AsyncClient`` and ``Auth``. Every test talks to a real h11 server on
loopback (an MCP server of the modern era that wants a bearer token, or the two-era server
of tests/test_http_races.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import h11
import httpx
import pytest
import trio

import trio_mcp
from trio_mcp._transports._http_base import core_for
from trio_mcp._transports._http_client import HTTPOptions
from trio_mcp._transports._http_errors import convert_httpx_error

from .h11peer import read_request
from .test_http_races import _serve

httpx2 = pytest.importorskip("httpx2")  # (Python 3.11+)

LIBRARIES = pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])


class GuardedServer:
    """A modern MCP server that answers only requests with ``Authorization: Bearer good``."""

    def __init__(self) -> None:
        self.authorizations: list[str | None] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def serve(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while (received := await read_request(stream, conn)) is not None:
                request, body = received
                headers = dict(request.headers)
                authorization = headers.get(b"authorization")
                self.authorizations.append(authorization.decode() if authorization else None)
                if authorization != b"Bearer good":
                    status, answer = 401, b""
                    extra = [(b"www-authenticate", b'Bearer realm="mcp"')]
                else:
                    status, extra = 200, [(b"content-type", b"application/json")]
                    message = json.loads(body)
                    if message["method"] == "server/discover":
                        result: Any = {"resultType": "complete", "capabilities": {"tools": {}},
                                       "supportedVersions": ["2026-07-28"]}  # fmt: skip
                    else:
                        result = {"content": [{"type": "text", "text": "authorized"}]}
                    answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
                    answer = answer.encode()  # type: ignore[assignment]
                head = h11.Response(
                    status_code=status, headers=[(b"content-length", b"%d" % len(answer)), *extra]
                )
                await stream.send_all(conn.send(head) + conn.send(h11.Data(data=answer)))
                await stream.send_all(conn.send(h11.EndOfMessage()))
                conn.start_next_cycle()
        except (trio.BrokenResourceError, h11.ProtocolError):
            pass


@asynccontextmanager
async def guarded() -> AsyncGenerator[GuardedServer]:
    server = GuardedServer()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.serve, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def two_era_server(era: str) -> AsyncGenerator[str]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, partial(_serve, era), 0, host="127.0.0.1")
        )
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
        nursery.cancel_scope.cancel()


def challenge_flow(library: Any) -> Any:
    """A real challenge/response auth flow of ``library``: no token, then on 401 the token."""

    class Challenge(library.Auth):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            self.challenges = 0

        def auth_flow(self, request: Any) -> Generator[Any, Any, None]:
            response = yield request
            if response.status_code == 401:
                self.challenges += 1
                request.headers["Authorization"] = "Bearer good"
                yield request

    return Challenge()


async def call(url: str, **options: Any) -> str:
    async with trio_mcp.open_mcp_session(
        trio_mcp.StreamableHTTPParameters(url, **options)
    ) as session:
        result = await session.call_tool("anything", {})
        text: str = result.content[0].text  # type: ignore[union-attr]
        return text


@LIBRARIES
async def test_an_auth_flow_of_either_library(library: Any) -> None:
    flow = challenge_flow(library)
    async with guarded() as server:
        with trio.fail_after(10):
            assert await call(server.url, auth=flow) == "authorized"
    assert flow.challenges >= 2  # every request was challenged and answered by the flow
    assert server.authorizations[:2] == [None, "Bearer good"]


@pytest.mark.parametrize("client_library", [httpx, httpx2], ids=["httpx-client", "httpx2-client"])
@LIBRARIES
async def test_an_auth_flow_with_a_client_of_either_library(
    library: Any, client_library: Any
) -> None:
    """A flow of the other library than the client's is driven through an adapter."""
    flow = challenge_flow(library)
    async with guarded() as server, client_library.AsyncClient() as client:
        with trio.fail_after(10):
            assert await call(server.url, client=client, auth=flow) == "authorized"
    assert flow.challenges >= 2
    assert server.authorizations[:2] == [None, "Bearer good"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_an_httpx2_client_in_both_eras(era: str) -> None:
    sent: list[str] = []

    async def hook(request: Any) -> None:
        sent.append(request.method)

    async with two_era_server(era) as url:
        async with httpx2.AsyncClient(event_hooks={"request": [hook]}) as client:
            with trio.fail_after(10):
                assert await call(url, client=client) == "done"
            assert not client.is_closed  # the caller's: not closed by the session
    assert "POST" in sent
    if era == "legacy":
        assert "DELETE" in sent


@LIBRARIES
async def test_your_client_keeps_its_timeouts_hooks_and_headers(library: Any) -> None:
    """Only a response stream's read limit is lifted; everything else is as configured."""
    seen: list[tuple[str, dict[str, Any], str | None]] = []

    async def hook(request: Any) -> None:
        body = json.loads(request.content) if request.content else {}
        seen.append(
            (str(body.get("method")), request.extensions["timeout"], request.headers.get("x-mine"))
        )

    configured = library.Timeout(connect=1.5, read=2.5, write=3.5, pool=4.5)
    async with two_era_server("legacy") as url:
        async with library.AsyncClient(
            timeout=configured, event_hooks={"request": [hook]}, headers={"x-mine": "kept"}
        ) as client:
            with trio.fail_after(10):
                assert await call(url, client=client, timeout=99.0) == "done"
    by_method = {method: (timeout, header) for method, timeout, header in seen}
    stream = {"connect": 1.5, "read": None, "write": 3.5, "pool": 4.5}
    short = {"connect": 1.5, "read": 2.5, "write": 3.5, "pool": 4.5}
    assert by_method["tools/call"] == (stream, "kept")  # a request: its answer may stream
    assert by_method["notifications/initialized"] == (short, "kept")  # answered at once


async def test_a_client_of_ours_uses_the_timeout_option() -> None:
    async with trio.open_nursery() as nursery:
        core = core_for(HTTPOptions("http://127.0.0.1:1/mcp", timeout=7.0), nursery)
        assert core.client.timeout.connect == 7.0
        await core.aclose(None)


@LIBRARIES
async def test_errors_of_both_libraries_are_trio_mcps(library: Any) -> None:
    async with library.AsyncClient() as client, trio.open_nursery() as nursery:
        core = core_for(HTTPOptions("http://127.0.0.1:1/mcp", client=client), nursery)
        with pytest.raises(trio_mcp.TransportError, match="could not connect") as caught:
            await core.open("POST", "http://127.0.0.1:1/mcp", headers={}, content=b"{}")
        assert isinstance(caught.value.__cause__, library.ConnectError)
    cases = [
        (library.ReadTimeout("slow"), trio_mcp.TransportError, "timed out"),
        (library.RemoteProtocolError("bad"), trio_mcp.ConnectionClosed, "broke"),
        (library.ProxyError("407"), trio_mcp.TransportError, "proxy"),
        (library.LocalProtocolError("bad header"), trio_mcp.TransportError, "valid HTTP"),
    ]
    for error, kind, words in cases:
        converted = convert_httpx_error(error, "http://x/mcp", "sending POST to")
        assert type(converted) is kind and words in str(converted)


async def test_client_and_ssl_context_together_is_a_clear_error() -> None:
    import ssl

    async with httpx.AsyncClient() as client, trio.open_nursery() as nursery:
        with pytest.raises(ValueError, match="client= or ssl_context="):
            core_for(
                HTTPOptions(
                    "https://x/mcp", client=client, ssl_context=ssl.create_default_context()
                ),
                nursery,
            )


def test_httpx2_is_not_imported_unless_given() -> None:
    script = (
        "import sys, trio\n"
        "from trio_mcp._transports._http_client import HTTPOptions\n"
        "from trio_mcp._transports._http_base import core_for\n"
        "async def main():\n"
        "    async with trio.open_nursery() as nursery:\n"
        "        core = core_for(HTTPOptions('http://127.0.0.1:1/mcp'), nursery)\n"
        "        try:\n"
        "            await core.open('POST', 'http://127.0.0.1:1/mcp', headers={}, content=b'{}')\n"
        "        except Exception as exc:\n"
        "            print(type(exc).__name__)\n"
        "        await core.aclose(None)\n"
        "trio.run(main)\n"
        "print('httpx2' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == ["TransportError", "False"]
