"""trio_mcp.auth.DeviceFlow: the OAuth device authorization grant (RFC 8628).

A scripted MCP endpoint and authorization server behind ``httpx.MockTransport``; polling
runs on trio's ``MockClock`` (``autojump_clock``), so every poll happens at an exact virtual
time: ``interval``, ``slow_down`` (+5 s), ``expires_in`` and the caller's cancel scope.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
import trio

import trio_mcp

SERVER = "https://mcp.example.com/mcp"
AS = "https://auth.example.com"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


@dataclass
class World:
    """``answers``: what each poll of the token endpoint gets, in order (then a token)."""

    answers: list[str] = field(default_factory=lambda: list[str]())
    interval: int | None = 5
    expires_in: int = 600
    device_endpoint: bool = True
    complete_uri: bool = True
    pkce: bool = True
    registration: bool = False
    polls: list[float] = field(default_factory=lambda: list[float]())
    device_requests: list[dict[str, str]] = field(default_factory=lambda: list[dict[str, str]]())
    registrations: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    poll_forms: list[dict[str, str]] = field(default_factory=lambda: list[dict[str, str]]())
    valid: set[str] = field(default_factory=lambda: set[str]())

    def handler(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url).split("?")[0]
        if url == SERVER:
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if token not in self.valid:
                return httpx.Response(
                    401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{PRM_URL}"'}
                )
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})
        if url == PRM_URL:
            return httpx.Response(
                200,
                json={"resource": SERVER, "authorization_servers": [AS], "scopes_supported": ["a"]},
            )
        if url == f"{AS}/.well-known/oauth-authorization-server":
            doc: dict[str, Any] = {
                "issuer": AS,
                "authorization_endpoint": f"{AS}/authorize",
                "token_endpoint": f"{AS}/token",
                "token_endpoint_auth_methods_supported": ["none"],
            }
            if self.pkce:
                doc["code_challenge_methods_supported"] = ["S256"]
            if self.device_endpoint:
                doc["device_authorization_endpoint"] = f"{AS}/device"
            if self.registration:
                doc["registration_endpoint"] = f"{AS}/register"
            return httpx.Response(200, json=doc)
        if url == f"{AS}/register":
            self.registrations.append(json.loads(request.content))
            return httpx.Response(201, json={"client_id": "dcr-device"})
        if url == f"{AS}/device":
            self.device_requests.append(form_of(request))
            answer: dict[str, Any] = {
                "device_code": "dev-123",
                "user_code": "WDJB-MJHT",
                "verification_uri": "https://auth.example.com/activate",
                "expires_in": self.expires_in,
            }
            if self.complete_uri:
                answer["verification_uri_complete"] = (
                    "https://auth.example.com/activate?user_code=WDJB-MJHT"
                )
            if self.interval is not None:
                answer["interval"] = self.interval
            return httpx.Response(200, json=answer)
        if url == f"{AS}/token":
            form = form_of(request)
            self.poll_forms.append(form)
            self.polls.append(trio.current_time())
            assert form["grant_type"] == DEVICE_CODE
            assert form["device_code"] == "dev-123"
            if self.answers:
                return httpx.Response(400, json={"error": self.answers.pop(0)})
            token = f"token-{len(self.polls)}"
            self.valid.add(token)
            return httpx.Response(
                200, json={"access_token": token, "token_type": "Bearer", "expires_in": 3600}
            )
        return httpx.Response(404)


def form_of(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


class NeverBrowser:
    """A user agent that fails the test if the authorization code flow starts."""

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[Any]:
        raise AssertionError("the browser flow started")
        yield  # pragma: no cover


@asynccontextmanager
async def setup(world: World, **options: Any) -> AsyncGenerator[httpx.AsyncClient]:
    transport = httpx.MockTransport(world.handler)
    options.setdefault("user_agent", NeverBrowser())
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(http_client=as_client, **options)
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            yield client


async def call(client: httpx.AsyncClient) -> httpx.Response:
    return await client.post(SERVER, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


class Shown:
    def __init__(self) -> None:
        self.codes: list[tuple[float, trio_mcp.auth.DeviceCode]] = []

    def __call__(self, code: trio_mcp.auth.DeviceCode) -> None:
        self.codes.append((trio.current_time(), code))


# -------------------------------------------------------------------- flows


async def test_device_flow_polls_at_interval(autojump_clock: trio.abc.Clock) -> None:
    world = World(answers=["authorization_pending", "authorization_pending"])
    shown = Shown()
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(shown)) as client:
        assert (await call(client)).status_code == 200
        assert trio.current_time() == 15
        assert (await call(client)).status_code == 200  # the token is kept
    assert world.polls == [5, 10, 15]
    assert shown.codes == [
        (
            0,
            trio_mcp.auth.DeviceCode(
                user_code="WDJB-MJHT",
                verification_uri="https://auth.example.com/activate",
                verification_uri_complete="https://auth.example.com/activate?user_code=WDJB-MJHT",
                expires_in=600,
                interval=5,
            ),
        )
    ]
    assert world.device_requests == [{"resource": SERVER, "scope": "a", "client_id": "cli"}]
    assert world.poll_forms[0] == {
        "grant_type": DEVICE_CODE,
        "device_code": "dev-123",
        "resource": SERVER,
        "client_id": "cli",
    }


async def test_slow_down_adds_five_seconds(autojump_clock: trio.abc.Clock) -> None:
    world = World(
        answers=["authorization_pending", "slow_down", "authorization_pending", "slow_down"]
    )
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        assert (await call(client)).status_code == 200
    # 5 s, then 5 (slow_down -> 10), 10, 10 (slow_down -> 15), 15
    assert world.polls == [5, 10, 20, 30, 45]


async def test_default_interval_is_five_seconds(autojump_clock: trio.abc.Clock) -> None:
    world = World(interval=None, answers=["authorization_pending"])
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        assert (await call(client)).status_code == 200
    assert world.polls == [5, 10]


async def test_access_denied(autojump_clock: trio.abc.Clock) -> None:
    world = World(answers=["authorization_pending", "access_denied"])
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        with pytest.raises(trio_mcp.auth.AuthorizationDeniedError, match="denied") as info:
            await call(client)
    assert info.value.error == "access_denied"
    assert world.polls == [5, 10]


async def test_expired_token_error(autojump_clock: trio.abc.Clock) -> None:
    world = World(answers=["expired_token"])
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        with pytest.raises(trio_mcp.auth.DeviceCodeExpiredError, match="WDJB-MJHT"):
            await call(client)
    assert world.polls == [5]


async def test_expires_in_bounds_the_wait(autojump_clock: trio.abc.Clock) -> None:
    world = World(expires_in=12, answers=["authorization_pending"] * 10)
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        with pytest.raises(trio_mcp.auth.DeviceCodeExpiredError):
            await call(client)
        assert trio.current_time() == 12  # raised at the code's expiry, not a poll later
    assert world.polls == [5, 10]


async def test_caller_cancel_scope_bounds_the_wait(autojump_clock: trio.abc.Clock) -> None:
    world = World(answers=["authorization_pending"] * 100)
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        with pytest.raises(trio.TooSlowError):
            with trio.fail_after(23):
                await call(client)
        assert trio.current_time() == 23
    assert world.polls == [5, 10, 15, 20]


async def test_other_token_error_is_raised(autojump_clock: trio.abc.Clock) -> None:
    world = World(answers=["invalid_client"])
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        with pytest.raises(trio_mcp.auth.TokenRequestError, match="invalid_client"):
            await call(client)


async def test_async_show_and_registration(autojump_clock: trio.abc.Clock) -> None:
    """No client id: Dynamic Client Registration for the device grant, no redirect URI."""
    world = World(registration=True)
    seen: list[str] = []

    async def show(code: trio_mcp.auth.DeviceCode) -> None:
        await trio.sleep(1)
        seen.append(code.user_code)

    async with setup(world, device=trio_mcp.auth.DeviceFlow(show)) as client:
        assert (await call(client)).status_code == 200
    assert seen == ["WDJB-MJHT"]
    assert world.polls == [6]  # polling starts when show returns
    assert world.registrations[0]["grant_types"] == [DEVICE_CODE, "refresh_token"]
    assert world.registrations[0]["redirect_uris"] == []
    assert world.device_requests[0]["client_id"] == "dcr-device"


async def test_default_show_prints_to_stderr(
    autojump_clock: trio.abc.Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World()
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow()) as client:
        assert (await call(client)).status_code == 200
    err = capsys.readouterr().err
    assert "https://auth.example.com/activate" in err and "WDJB-MJHT" in err


# -------------------------------------------------------------------- when it is used


async def test_headless_uses_device_when_allowed(autojump_clock: trio.abc.Clock) -> None:
    world = World()
    device = trio_mcp.auth.DeviceFlow(Shown(), prefer=False)
    async with setup(world, client_id="cli", interactive=False, device=device) as client:
        assert (await call(client)).status_code == 200
    assert world.polls == [5]


async def test_no_display_uses_device_when_allowed(autojump_clock: trio.abc.Clock) -> None:
    world = World()
    device = trio_mcp.auth.DeviceFlow(Shown(), prefer=False)
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    async with setup(world, client_id="cli", user_agent=browser, device=device) as client:
        assert (await call(client)).status_code == 200
    assert world.polls == [5]


async def test_not_preferred_with_a_browser_uses_the_browser() -> None:
    world = World()
    device = trio_mcp.auth.DeviceFlow(Shown(), prefer=False)
    async with setup(world, client_id="cli", device=device) as client:
        with pytest.raises(AssertionError, match="browser flow started"):
            await call(client)
    assert world.device_requests == []


async def test_headless_without_device_endpoint_needs_login() -> None:
    world = World(device_endpoint=False)
    device = trio_mcp.auth.DeviceFlow(Shown())
    async with setup(world, client_id="cli", interactive=False, device=device) as client:
        with pytest.raises(trio_mcp.auth.LoginRequiredError):
            await call(client)
    assert world.device_requests == []


async def test_device_only_server_needs_no_pkce(autojump_clock: trio.abc.Clock) -> None:
    world = World(pkce=False)
    async with setup(world, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())) as client:
        assert (await call(client)).status_code == 200
    world = World(pkce=False)
    async with setup(world, client_id="cli") as client:  # no device flow: PKCE is required
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="S256"):
            await call(client)


async def test_malformed_device_answer() -> None:
    world = World()

    def handler(request: httpx.Request) -> httpx.Response:
        if str(request.url) == f"{AS}/device":
            return httpx.Response(200, json={"device_code": "x"})
        return world.handler(request)

    transport = httpx.MockTransport(handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(
            http_client=as_client, client_id="cli", device=trio_mcp.auth.DeviceFlow(Shown())
        )
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="malformed"):
                await call(client)
