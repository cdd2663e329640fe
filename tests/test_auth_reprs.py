"""Secrets never in reprs; blocking work (keyring, DPoP keys) never blocks the event loop.

Reprs reach logs, tracebacks and ``pytest --showlocals``: every type that holds a token,
a secret, a key, a header value or an environment value shows ``'***'`` instead.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
import trio

import trio_mcp
from trio_mcp._auth import _dpop, _grants, _tokens

from .test_auth_dpop import World as DPoPWorld
from .test_auth_dpop import call as dpop_call
from .test_auth_dpop import setup as dpop_setup

SECRET = "s3cr3t-value"


def _reprs() -> list[object]:
    client = _grants.ClientInfo("client", SECRET, "client_secret_basic")
    return [
        trio_mcp.auth.StoredToken(
            SECRET, refresh_token=SECRET, dpop_jwk={"d": SECRET, "kty": "EC"}
        ),
        trio_mcp.auth.StoredClient("client", SECRET),
        client,
        _tokens.Token(SECRET, "Bearer", SECRET, "s", None, "i", "r", client),
        _grants.TokenResponse(access_token=SECRET, refresh_token=SECRET, id_token=SECRET),
        _grants.RegistrationResponse(client_id="c", client_secret=SECRET),
        trio_mcp.StreamableHTTPParameters(
            "https://x.example/mcp", headers={"Authorization": f"Bearer {SECRET}"}
        ),
        trio_mcp.SSEParameters("https://x.example/sse", headers={"X-Api-Key": SECRET}),
        trio_mcp.WebSocketParameters("wss://x.example/ws", headers={"X-Api-Key": SECRET}),
        trio_mcp.StdioParameters(["server"], env={"API_KEY": SECRET}),
    ]


@pytest.mark.parametrize("value", _reprs(), ids=lambda v: type(v).__name__)
def test_reprs_hold_no_secret(value: object) -> None:
    shown = repr(value)
    assert SECRET not in shown
    assert SECRET not in str(value)


def test_reprs_still_say_which_header_or_variable_is_set() -> None:
    params = trio_mcp.StdioParameters(["server"], env={"API_KEY": SECRET})
    assert "'API_KEY': '***'" in repr(params)
    http = trio_mcp.StreamableHTTPParameters("https://x.example/mcp", headers={"A": SECRET})
    assert "'A': '***'" in repr(http) and "https://x.example/mcp" in repr(http)
    assert "refresh_token=None" in repr(trio_mcp.auth.StoredToken(SECRET))


def test_private_wire_answers_hold_no_secret() -> None:
    from trio_mcp._auth import _assertions, _device

    device = _device._decoder.decode(  # pyright: ignore[reportPrivateUsage]
        b'{"device_code": "%s", "user_code": "U", "expires_in": 5}' % SECRET.encode()
    )
    exchange = _assertions._exchange_decoder.decode(  # pyright: ignore[reportPrivateUsage]
        b'{"access_token": "%s", "issued_token_type": "x"}' % SECRET.encode()
    )
    for value in (device, exchange):
        assert SECRET not in repr(value)


# ------------------------------------------------------------------ blocking work


class _BlockedKeyring:
    """A keyring whose read waits for the user to unlock it (``released``)."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.entered = threading.Event()

    def get_password(self, service: str, username: str) -> str | None:
        self.entered.set()
        self.released.wait(30)
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        raise AssertionError("not expected")

    def delete_password(self, service: str, username: str) -> None:
        raise AssertionError("not expected")


async def test_a_keyring_prompt_does_not_outlive_the_callers_deadline() -> None:
    backend = _BlockedKeyring()
    store = trio_mcp.auth.KeyringTokenStore(backend=backend)
    # safety for the old code, where the cancellation waits for the thread
    timer = threading.Timer(5, backend.released.set)
    timer.start()
    scope = trio.CancelScope()
    done = trio.Event()

    async def reader() -> None:
        with scope:
            await store.get_token("https://as.example", "https://mcp.example/mcp", "c")
        done.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            assert await trio.to_thread.run_sync(backend.entered.wait, 10)
            scope.cancel()  # the caller's deadline, while the keyring waits for the user
            await done.wait()
            assert not backend.released.is_set()  # the caller left; the keyring still waits
        assert scope.cancelled_caught
    finally:
        backend.released.set()
        timer.cancel()


async def test_dpop_keys_are_made_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    generate = _dpop.DPoPKey.generate

    def recording(algorithm: str) -> _dpop.DPoPKey:
        threads.append(threading.current_thread())
        return generate(algorithm)

    monkeypatch.setattr(_dpop.DPoPKey, "generate", staticmethod(recording))
    world = DPoPWorld(algs=["RS256"])
    async with dpop_setup(world) as (client, _):
        response: Any = await dpop_call(client)
        assert isinstance(response, httpx.Response) and response.status_code == 200
    assert threads and all(t is not threading.main_thread() for t in threads)
