"""``open_server_group(auth=...)``: one authorization for every HTTP server of a group.

Given to the group, ``auth`` reaches each HTTP server that has no authorization of its own
(a plain ``http(s)://`` URL, a config entry, a parameters object without ``auth``); a
server's own ``auth`` wins, stdio servers are left alone, and none of it warns.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Generator

import httpx
import trio

from trio_mcp import StreamableHTTPParameters, open_server_group
from trio_mcp._group._open import _with_auth  # pyright: ignore[reportPrivateUsage]
from trio_mcp.groups import RestartPolicy, ServerState
from trio_mcp.testing import MockServer

DEMO = [sys.executable, "-m", "trio_mcp.testing"]


class Recording(httpx.Auth):
    """Adds its own header to each request and remembers it saw one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests = 0

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self.requests += 1
        request.headers["x-auth"] = self.name
        yield request


async def test_the_group_auth_reaches_http_servers_without_their_own(
    nursery: trio.Nursery,
) -> None:
    seen: list[str | None] = []
    server = MockServer("auth")

    @server.tool()
    async def who(ctx: object) -> str:
        return "ok"

    group_auth, own_auth = Recording("group"), Recording("own")
    async with server.open_http(nursery) as http:
        original = http.client._transport  # pyright: ignore[reportPrivateUsage]

        async def record(request: httpx.Request) -> httpx.Response:
            seen.append(request.headers.get("x-auth"))
            return await original.handle_async_request(request)

        http.client._transport = httpx.MockTransport(record)  # pyright: ignore[reportPrivateUsage]
        servers = {
            "plain": StreamableHTTPParameters(http.url, client=http.client),
            "own": StreamableHTTPParameters(http.url, client=http.client, auth=own_auth),
            "stdio": DEMO,
        }
        with trio.fail_after(60), warnings.catch_warnings():
            warnings.simplefilter("error")
            async with open_server_group(
                servers, auth=group_auth, restart=RestartPolicy(enabled=False)
            ) as group:
                states = {name: status.state for name, status in group.statuses().items()}
                assert set(states.values()) == {ServerState.RUNNING}, group.statuses()
    assert group_auth.requests > 0
    assert own_auth.requests > 0
    assert set(seen) == {"group", "own"}


def test_which_targets_take_the_group_auth() -> None:
    auth = Recording("group")
    own = Recording("own")
    # a URL gets it as an option, a parameters object without auth a copy with it
    assert _with_auth("https://a.example/mcp", {"x": 1}, auth) == (
        "https://a.example/mcp",
        {"x": 1, "auth": auth},
    )
    params = StreamableHTTPParameters("https://a.example/mcp")
    given, options = _with_auth(params, {}, auth)
    assert isinstance(given, StreamableHTTPParameters)
    assert given.auth is auth and params.auth is None and options == {}
    # its own auth wins; stdio, WebSocket untouched
    mine = StreamableHTTPParameters("https://a.example/mcp", auth=own)
    assert _with_auth(mine, {}, auth)[0] is mine
    assert _with_auth(DEMO, {}, auth) == (DEMO, {})
    assert _with_auth("wss://a.example/mcp", {}, auth) == ("wss://a.example/mcp", {})
