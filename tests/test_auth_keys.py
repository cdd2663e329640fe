"""Tokens keyed by (issuer, resource, client): one provider, several protected servers.

A real authorization server and two protected MCP endpoints on loopback
(``tests/auth_loopback.py``); one :class:`~trio_mcp.OAuth` reaches both. Each server must
see only tokens issued for it (the MCP spec: a client MUST NOT send a token to another
server than the one it was issued for), switching between them must not log in again,
and a refusal by one must not forget the other's token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

import trio_mcp

from .auth_loopback import BrowserAgent, World, serve

A, B = "/a/mcp", "/b/mcp"


@asynccontextmanager
async def world_and_client(
    world: World, **options: Any
) -> AsyncGenerator[tuple[httpx.AsyncClient, trio_mcp.OAuth, BrowserAgent]]:
    async with serve(world.handler) as base:
        world.base = base
        agent = BrowserAgent()
        options.setdefault("store", trio_mcp.auth.MemoryTokenStore())
        auth = trio_mcp.OAuth(user_agent=agent, dpop=False, **options)
        async with httpx.AsyncClient(auth=auth, timeout=30) as client:
            yield client, auth, agent


async def call(client: httpx.AsyncClient, world: World, path: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return (await client.post(world.base + path, json=body)).status_code


def assert_only_own_tokens(world: World) -> None:
    for path in world.resources:
        for auth in world.seen.get(path, []):
            if auth is not None:
                token = auth.removeprefix("Bearer ")
                assert world.tokens.get(token, world.base + path) == world.base + path, (
                    f"{path} was shown a token issued for {world.tokens[token]}"
                )


async def test_one_provider_two_servers_each_sees_only_its_own_token() -> None:
    world = World()
    async with world_and_client(world) as (client, _, agent):
        with trio.fail_after(30):
            for path in (A, B, A, B, A, B):
                assert await call(client, world, path) == 200
    assert_only_own_tokens(world)
    # one login per server, none when switching back and forth (each login listened on
    # its own loopback port, so each registered its own redirect URI)
    assert len(agent.authorization_urls) == 2
    assert world.count("register") == 2
    # after the first 401 of each, every request carried its own token
    assert world.seen[A][1:] == [world.seen[A][1]] * 3 and world.seen[A][1] is not None
    assert world.seen[B][1:] == [world.seen[B][1]] * 3 and world.seen[B][1] is not None
    assert world.seen[A][1] != world.seen[B][1]


async def test_concurrent_first_requests_to_two_servers() -> None:
    world = World()
    async with world_and_client(world) as (client, _, agent):
        statuses: list[int] = []

        async def one(path: str) -> None:
            statuses.append(await call(client, world, path))

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for path in (A, B, A, B, A, B):
                    nursery.start_soon(one, path)
    assert statuses == [200] * 6
    assert len(agent.authorization_urls) == 2
    assert_only_own_tokens(world)


async def test_a_refusal_by_one_server_keeps_the_others_token() -> None:
    world = World(expires_in=None)
    store = trio_mcp.auth.MemoryTokenStore()
    async with world_and_client(world, store=store) as (client, _, agent):
        with trio.fail_after(30):
            assert await call(client, world, A) == 200
            assert await call(client, world, B) == 200
            token_a = world.seen[A][-1]
            world.revoke(B)  # B refuses its token (and its refresh token)
            assert await call(client, world, B) == 200  # B logs in again
            assert await call(client, world, A) == 200  # A: no login, the same token
    assert world.seen[A][-1] == token_a
    assert len(agent.authorization_urls) == 3
    client_id = next(iter(world.clients))
    stored_a = await store.get_token(world.base, world.base + A, client_id)
    assert stored_a is not None and f"Bearer {stored_a.access_token}" == token_a


async def test_shared_store_two_providers_second_process(tmp_path: Path) -> None:
    # the tokens of both servers survive in a file store; a new provider (a new process)
    # shows each server its own stored token on the first request (no 401, no login)
    world = World(expires_in=None)
    path = tmp_path / "tokens.json"
    async with world_and_client(world, store=trio_mcp.auth.FileTokenStore(path)) as (client, _, _):
        with trio.fail_after(30):
            assert await call(client, world, A) == 200
            assert await call(client, world, B) == 200
        seen_before = {p: len(world.seen[p]) for p in (A, B)}
        auth = trio_mcp.OAuth(
            store=trio_mcp.auth.FileTokenStore(path), interactive=False, dpop=False
        )
        async with httpx.AsyncClient(auth=auth) as second:
            with trio.fail_after(30):
                for p in (B, A, B):
                    assert await call(second, world, p) == 200
    assert len(world.seen[A]) == seen_before[A] + 1
    assert len(world.seen[B]) == seen_before[B] + 2
    assert_only_own_tokens(world)


async def test_one_refresh_per_key_in_flight(autojump_clock: trio.abc.Clock) -> None:
    # both servers' tokens expire at the same virtual time; three concurrent requests to
    # each refresh each key exactly once (a rotated refresh token is never spent twice)
    world = World(expires_in=3600, base="https://mcp.example")
    world.metadata_override = {}
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        agent = _MockAgent(as_client)
        auth = trio_mcp.OAuth(http_client=as_client, user_agent=agent, dpop=False)
        async with httpx.AsyncClient(transport=transport, auth=auth) as client:
            assert await call(client, world, A) == 200
            assert await call(client, world, B) == 200
            await trio.sleep(3600)
            statuses: list[int] = []

            async def one(path: str) -> None:
                statuses.append(await call(client, world, path))

            async with trio.open_nursery() as nursery:
                for path in (A, B, A, B, A, B):
                    nursery.start_soon(one, path)
    assert statuses == [200] * 6
    refreshes = [detail for kind, detail in world.log if kind == "token" and "refresh" in detail]
    assert sorted(refreshes) == [
        f"refresh_token {world.base}{A}",
        f"refresh_token {world.base}{B}",
    ]
    assert_only_own_tokens(world)


class _MockAgent:
    """Approves at once through the mock transport (no listener)."""

    redirect_uri = "http://127.0.0.1:9/callback"

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[_MockAgent]:
        yield self

    async def authorize(self, authorization_url: str) -> str:
        return (await self.http.get(authorization_url)).headers["location"]


# ---------------------------------------------------------------- registrations


async def test_exact_redirect_matching_server_across_two_logins() -> None:
    # the AS matches redirect URIs exactly (as the MCP spec requires); each login listens
    # on a new loopback port, so the second login must not reuse the first registration
    world = World(exact_redirects=True, expires_in=None)
    store = trio_mcp.auth.MemoryTokenStore()
    async with world_and_client(world, store=store) as (client, _, first_agent):
        with trio.fail_after(30):
            assert await call(client, world, A) == 200
        world.revoke(A)  # the token is gone: the next session must log in again
        async with world_and_client_again(world, store) as (second, agent):
            with trio.fail_after(30):
                assert await call(second, world, A) == 200
    assert first_agent.redirect_uris[0] != agent.redirect_uris[0]
    assert [uris for uris in world.clients.values()] == [
        first_agent.redirect_uris,
        agent.redirect_uris,
    ]
    stored = await store.get_client(world.base)
    assert stored is not None and stored.redirect_uri == agent.redirect_uris[0]


@asynccontextmanager
async def world_and_client_again(
    world: World, store: trio_mcp.auth.TokenStore
) -> AsyncGenerator[tuple[httpx.AsyncClient, BrowserAgent]]:
    agent = BrowserAgent()
    auth = trio_mcp.OAuth(user_agent=agent, store=store, dpop=False)
    async with httpx.AsyncClient(auth=auth, timeout=30) as client:
        yield client, agent


async def test_a_token_of_an_earlier_registration_stays_usable(tmp_path: Path) -> None:
    # login to A (client-1), then to B with a new port (client-2 replaces client-1 as the
    # issuer's registration); a new process still finds A's token, issued to client-1
    world = World(exact_redirects=True, expires_in=None)
    path = tmp_path / "tokens.json"
    async with world_and_client(world, store=trio_mcp.auth.FileTokenStore(path)) as (c, _, _):
        with trio.fail_after(30):
            assert await call(c, world, A) == 200
        async with world_and_client_again(world, trio_mcp.auth.FileTokenStore(path)) as (c2, _):
            with trio.fail_after(30):
                assert await call(c2, world, B) == 200
        assert list(world.clients) == ["client-1", "client-2"]
        headless = trio_mcp.OAuth(store=trio_mcp.auth.FileTokenStore(path), interactive=False)
        async with httpx.AsyncClient(auth=headless) as client:
            with trio.fail_after(30):
                assert await call(client, world, A) == 200
                assert await call(client, world, B) == 200
    assert_only_own_tokens(world)


async def test_old_store_files_still_work(tmp_path: Path) -> None:
    # a tokens.json written before registrations had redirect URIs: the stored token is
    # used as before; a browser login registers again (the old registration's redirect
    # URI is unknown) instead of crashing or being refused
    world = World(exact_redirects=True, expires_in=None)
    async with serve(world.handler) as base:
        world.base = base
        world.clients["old-client"] = ["http://127.0.0.1:1/callback"]
        world.tokens["old-token"] = base + A
        path = tmp_path / "tokens.json"
        key = json.dumps([base, base + A, "old-client"])
        path.write_text(
            json.dumps(
                {
                    "tokens": {key: {"access_token": "old-token", "token_type": "Bearer"}},
                    "clients": {base: {"client_id": "old-client", "auth_method": "none"}},
                    "servers": {
                        base + A: {
                            "issuer": base,
                            "resource": base + A,
                            "client_id": "old-client",
                            "auth_method": "none",
                        }
                    },
                }
            )
        )
        agent = BrowserAgent()
        auth = trio_mcp.OAuth(store=trio_mcp.auth.FileTokenStore(path), user_agent=agent)
        async with httpx.AsyncClient(auth=auth) as client:
            with trio.fail_after(30):
                assert await call(client, world, A) == 200
                assert world.seen[A] == ["Bearer old-token"]
                assert await call(client, world, B) == 200
    assert list(world.clients) == ["old-client", "client-2"]
    assert_only_own_tokens(world)


@pytest.mark.parametrize("kind", ["file", "memory"])
async def test_registration_for_a_device_flow_is_not_used_by_a_browser(
    kind: str, tmp_path: Path
) -> None:
    # a registration without a redirect URI (e.g. made for the device flow) cannot serve
    # an authorization code flow at an exact-matching server: register again
    world = World(exact_redirects=True, expires_in=None)
    store: trio_mcp.auth.TokenStore = (
        trio_mcp.auth.FileTokenStore(tmp_path / "t.json")
        if kind == "file"
        else trio_mcp.auth.MemoryTokenStore()
    )
    async with serve(world.handler) as base:
        world.base = base
        world.clients["device-client"] = []
        await store.set_client(base, trio_mcp.auth.StoredClient("device-client"))
        auth = trio_mcp.OAuth(store=store, user_agent=BrowserAgent(), dpop=False)
        async with httpx.AsyncClient(auth=auth) as client:
            with trio.fail_after(30):
                assert await call(client, world, A) == 200
    assert list(world.clients) == ["device-client", "client-2"]
