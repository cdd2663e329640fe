"""Token stores: the first request of a new provider carries the stored token (no 401 round
trip, never to another server), and the OS keyring store (keyring's API with an in-memory
backend set programmatically).

The scripted protected resource and authorization server of ``tests/test_auth.py``.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

import trio_mcp

from .test_auth import AS, SERVER, Agent, World, call


class _MemoryKeyring:
    """A keyring backend in memory: ``keyring.backend.KeyringBackend``'s three methods."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        import keyring.errors

        if self.entries.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("no such entry")


def _memory_keyring_backend() -> Any:
    """The same, as a real ``KeyringBackend`` subclass (what ``keyring.set_keyring`` takes)."""
    import keyring.backend

    class MemoryBackend(keyring.backend.KeyringBackend):
        priority = 1  # pyright: ignore[reportAssignmentType]

        def __init__(self) -> None:
            super().__init__()
            self.inner = _MemoryKeyring()

        def get_password(self, service: str, username: str) -> str | None:
            return self.inner.get_password(service, username)

        def set_password(self, service: str, username: str, password: str) -> None:
            self.inner.set_password(service, username, password)

        def delete_password(self, service: str, username: str) -> None:
            self.inner.delete_password(service, username)

    return MemoryBackend()


def _stores(tmp_path: Any) -> list[Any]:
    return [
        trio_mcp.auth.MemoryTokenStore(),
        trio_mcp.auth.FileTokenStore(tmp_path / "tokens.json"),
        trio_mcp.auth.KeyringTokenStore(backend=_MemoryKeyring()),
    ]


async def _session(world: World, store: Any, **options: Any) -> tuple[int, int, list[str]]:
    """One new provider on ``store``, two calls: (requests to the MCP server, 401s, log)."""
    transport = httpx.MockTransport(world.handler)
    before = len(world.log)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(
            http_client=as_client, user_agent=Agent(as_client), store=store, **options
        )
        statuses: list[int] = []
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            for _ in range(2):
                statuses.append((await call(client)).status_code)
    assert statuses == [200, 200]
    log = world.log[before:]
    mcp = [auth for kind, auth in log if kind == "mcp"]
    unauthorized = sum(1 for auth in mcp if auth.removeprefix("Bearer ") not in world.valid)
    return len(mcp), unauthorized, [kind for kind, _ in log]


@pytest.mark.parametrize("kind", ["memory", "file", "keyring"])
async def test_first_request_carries_the_stored_token(tmp_path: Any, kind: str) -> None:
    store = dict(zip(["memory", "file", "keyring"], _stores(tmp_path), strict=True))[kind]
    world = World()
    # the first process: 401, discovery, authorization, retry, then a second call
    assert (await _session(world, store))[:2] == (3, 1)
    # a new provider on the same store: the stored token on the very first request
    requests, unauthorized, kinds = await _session(world, store)
    assert (requests, unauthorized) == (2, 0)
    assert kinds == ["mcp", "mcp"]  # no discovery, no token request
    # headless works the same (the CLI's other commands)
    assert (await _session(world, store, interactive=False))[:2] == (2, 0)
    assert world.count("authorize") == 1


async def test_stored_token_is_bound_to_the_exact_server_url() -> None:
    store = trio_mcp.auth.MemoryTokenStore()
    world = World()
    await _session(world, store)
    bound = await store.get_server(SERVER)
    assert bound == trio_mcp.auth.StoredServer(AS, SERVER, "dcr-client", "none")
    # another URL on the same host was never bound: its first request carries no token
    other = SERVER + "/other"
    assert await store.get_server(other) is None
    transport = httpx.MockTransport(world.handler)
    oauth = trio_mcp.OAuth(store=store, interactive=False)
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), auth=oauth) as client:
        await client.post(other, json={})
    assert seen == [None]
    del transport


async def test_a_token_from_another_issuer_is_not_sent_before_discovery() -> None:
    # the binding names issuer A; this provider's pre-registered client belongs to issuer B:
    # the stored token (of A's client) is not used, the server's 401 starts discovery
    store = trio_mcp.auth.MemoryTokenStore()
    world = World()
    await _session(world, store)
    oauth = trio_mcp.OAuth(store=store, client_id="dcr-client", issuer="https://other.example")
    assert await oauth._keeper.bound(SERVER) is None  # pyright: ignore[reportPrivateUsage]


async def test_expired_stored_token_waits_for_discovery(autojump_clock: trio.abc.Clock) -> None:
    store = trio_mcp.auth.MemoryTokenStore()
    world = World(expires_in=60)
    await _session(world, store)
    token = next(iter(store._tokens.values()))  # pyright: ignore[reportPrivateUsage]
    key = next(iter(store._tokens))  # pyright: ignore[reportPrivateUsage]
    store._tokens[key] = trio_mcp.auth.StoredToken(  # pyright: ignore[reportPrivateUsage]
        token.access_token, refresh_token=token.refresh_token, expires_at=0.0
    )
    requests, unauthorized, kinds = await _session(world, store)
    assert (requests, unauthorized) == (3, 1)  # sent bare, 401, discovery, refresh
    assert "authorize" not in kinds and kinds.count("token") == 1


async def test_keyring_store_through_the_keyring_api(tmp_path: Any) -> None:
    import keyring

    previous = keyring.get_keyring()
    keyring.set_keyring(_memory_keyring_backend())
    try:
        store = trio_mcp.auth.KeyringTokenStore(service="trio-mcp-test")
        assert await store.get_token(AS, SERVER, "c") is None
        token = trio_mcp.auth.StoredToken("at", refresh_token="rt", scope="s", expires_at=12.5)
        await store.set_token(AS, SERVER, "c", token)
        assert await store.get_token(AS, SERVER, "c") == token
        assert await store.get_token(AS, SERVER, "other") is None
        await store.set_client(AS, trio_mcp.auth.StoredClient("c", "secret", "client_secret_basic"))
        assert await store.get_client(AS) == trio_mcp.auth.StoredClient(
            "c", "secret", "client_secret_basic"
        )
        await store.delete_token(AS, SERVER, "c")
        await store.delete_token(AS, SERVER, "c")  # missing is fine
        assert await store.get_token(AS, SERVER, "c") is None
        raw = keyring.get_password("trio-mcp-test", f"client {AS}")
        assert raw is not None and '"client_id": "c"' in raw
        # a foreign or corrupt entry reads as absent
        keyring.set_password("trio-mcp-test", f"client {AS}", "not json")
        assert await store.get_client(AS) is None
    finally:
        keyring.set_keyring(previous)


async def test_keyring_store_errors_are_auth_errors() -> None:
    import keyring.errors

    class Locked(_MemoryKeyring):
        def get_password(self, service: str, username: str) -> str | None:
            raise keyring.errors.KeyringLocked("the keyring is locked")

    store = trio_mcp.auth.KeyringTokenStore(backend=Locked())
    with pytest.raises(trio_mcp.AuthError, match="keyring is locked"):
        await store.get_token(AS, SERVER, "c")


def test_keyring_is_imported_on_first_use_only() -> None:
    import subprocess
    import sys

    code = (
        "import sys, trio_mcp; s = trio_mcp.auth.KeyringTokenStore(); "
        "assert 'keyring' not in sys.modules, 'imported early'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
