"""trio_mcp.auth.JWTBearerGrant and trio_mcp.auth.IdentityAssertionGrant: the jwt-bearer assertion grants.

A scripted MCP endpoint, its authorization server and an enterprise identity provider
behind one ``httpx.MockTransport``: workload identity (the workload's JWT as the RFC 7523
assertion) and enterprise-managed authorization (RFC 8693 token exchange of an ID token for
an ID-JAG at the IdP, then the jwt-bearer grant), their wire parameters, and their failures.
"""

from __future__ import annotations

import base64
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
IDP = "https://idp.example.com"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def workload_jwt(label: str = "w", aud: Any = AS) -> str:
    """An (unsigned) JWT whose ``aud`` is ``aud``: the client reads it, never verifies it."""

    def part(value: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'ES256'})}.{part({'aud': aud, 'sub': label})}.sig"


WORKLOAD = workload_jwt()


def form_of(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


def basic_of(request: httpx.Request) -> tuple[str, str] | None:
    header = request.headers.get("authorization", "")
    if not header.startswith("Basic "):
        return None
    user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    return user, password


@dataclass
class World:
    auth_methods: list[str] = field(default_factory=lambda: ["none"])
    scopes_supported: list[str] | None = None
    as_error: str | None = None
    idp_error: str | None = None
    issued_token_type: str = ID_JAG
    expires_in: int | None = 3600
    token_requests: list[tuple[dict[str, str], tuple[str, str] | None]] = field(
        default_factory=lambda: list[tuple[dict[str, str], tuple[str, str] | None]]()
    )
    exchanges: list[tuple[dict[str, str], tuple[str, str] | None]] = field(
        default_factory=lambda: list[tuple[dict[str, str], tuple[str, str] | None]]()
    )
    idp_metadata_requests: int = 0
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
            doc: dict[str, Any] = {"resource": SERVER, "authorization_servers": [AS]}
            if self.scopes_supported:
                doc["scopes_supported"] = self.scopes_supported
            return httpx.Response(200, json=doc)
        if url == f"{AS}/.well-known/oauth-authorization-server":
            return httpx.Response(
                200,
                json={
                    "issuer": AS,
                    "token_endpoint": f"{AS}/token",
                    "grant_types_supported": [JWT_BEARER],
                    "token_endpoint_auth_methods_supported": self.auth_methods,
                },
            )
        if url == f"{AS}/token":
            form = form_of(request)
            self.token_requests.append((form, basic_of(request)))
            if self.as_error:
                return httpx.Response(400, json={"error": self.as_error})
            token = f"at-{len(self.token_requests)}"
            self.valid.add(token)
            answer: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
            if self.expires_in is not None:
                answer["expires_in"] = self.expires_in
            return httpx.Response(200, json=answer)
        if url == f"{IDP}/.well-known/oauth-authorization-server":
            self.idp_metadata_requests += 1
            return httpx.Response(404)
        if url == f"{IDP}/.well-known/openid-configuration":
            self.idp_metadata_requests += 1
            return httpx.Response(
                200, json={"issuer": IDP, "token_endpoint": f"{IDP}/oauth2/token"}
            )
        if url in (f"{IDP}/token", f"{IDP}/oauth2/token"):
            form = form_of(request)
            self.exchanges.append((form, basic_of(request)))
            if self.idp_error:
                return httpx.Response(400, json={"error": self.idp_error})
            return httpx.Response(
                200,
                json={
                    "access_token": f"id-jag-{len(self.exchanges)}",
                    "issued_token_type": self.issued_token_type,
                    "token_type": "N_A",
                    "expires_in": 300,
                },
            )
        return httpx.Response(404)


@asynccontextmanager
async def setup(world: World, **options: Any) -> AsyncGenerator[httpx.AsyncClient]:
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(http_client=as_client, **options)
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            yield client


async def call(client: httpx.AsyncClient) -> httpx.Response:
    return await client.post(SERVER, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


# -------------------------------------------------------------------- workload identity


async def test_workload_jwt_is_the_assertion() -> None:
    world = World(scopes_supported=["mcp:read"])
    grant = trio_mcp.auth.JWTBearerGrant(WORKLOAD)
    async with setup(world, grant=grant, client_id="workload") as client:
        assert (await call(client)).status_code == 200
        assert (await call(client)).status_code == 200  # the token is reused
    assert len(world.token_requests) == 1
    form, basic = world.token_requests[0]
    assert form == {
        "grant_type": JWT_BEARER,
        "assertion": WORKLOAD,
        "resource": SERVER,
        "scope": "mcp:read",
        "client_id": "workload",
    }
    assert basic is None


async def test_workload_without_client_id_sends_no_client_auth() -> None:
    world = World()
    async with setup(world, grant=trio_mcp.auth.JWTBearerGrant(WORKLOAD)) as client:
        assert (await call(client)).status_code == 200
    form, basic = world.token_requests[0]
    assert "client_id" not in form and basic is None
    assert form["assertion"] == WORKLOAD


async def test_workload_secret_basic_when_advertised() -> None:
    world = World(auth_methods=["client_secret_basic"])
    grant = trio_mcp.auth.JWTBearerGrant(WORKLOAD)
    async with setup(world, grant=grant, client_id="w", client_secret="s") as client:
        assert (await call(client)).status_code == 200
    form, basic = world.token_requests[0]
    assert basic == ("w", "s") and "client_id" not in form


async def test_workload_assertion_function_called_per_grant(
    autojump_clock: trio.abc.Clock,
) -> None:
    """An expired access token is replaced by a new grant with a fresh assertion."""
    world = World(expires_in=100)
    calls: list[float] = []

    async def current() -> str:
        calls.append(trio.current_time())
        return workload_jwt(f"jwt-{len(calls)}") + "\n"  # stripped

    async with setup(world, grant=trio_mcp.auth.JWTBearerGrant(current), client_id="w") as client:
        assert (await call(client)).status_code == 200
        await trio.sleep(100)  # past expiry: no refresh token, the grant runs again
        world.valid.clear()
        assert (await call(client)).status_code == 200
    assertions = [form["assertion"] for form, _ in world.token_requests]
    assert assertions == [workload_jwt("jwt-1"), workload_jwt("jwt-2")]
    assert calls == [0.0, 100.0]


async def test_workload_assertion_from_file(tmp_path: Any) -> None:
    path = tmp_path / "token"
    path.write_text(workload_jwt("file") + "\n")
    world = World()
    async with setup(world, grant=trio_mcp.auth.JWTBearerGrant.from_file(path)) as client:
        assert (await call(client)).status_code == 200
    assert world.token_requests[0][0]["assertion"] == workload_jwt("file")


@pytest.mark.parametrize("error", ["invalid_grant", "invalid_scope", "unauthorized_client"])
async def test_workload_failure_is_not_retried(error: str) -> None:
    world = World(as_error=error)
    async with setup(world, grant=trio_mcp.auth.JWTBearerGrant(WORKLOAD), client_id="w") as client:
        with pytest.raises(trio_mcp.auth.TokenRequestError, match=error) as info:
            await call(client)
    assert info.value.error == error
    assert len(world.token_requests) == 1  # no retry, no other grant
    assert world.token_requests[0][0]["grant_type"] == JWT_BEARER


async def test_empty_assertion_is_a_clear_error() -> None:
    world = World()
    async with setup(world, grant=trio_mcp.auth.JWTBearerGrant("  "), client_id="w") as client:
        with pytest.raises(ValueError, match="assertion is empty"):
            await call(client)
    assert world.token_requests == []


# -------------------------------------------------------------------- enterprise (ID-JAG)


def enterprise(**overrides: Any) -> dict[str, Any]:
    grant_options: dict[str, Any] = {
        "id_token": "user.id.token",
        "idp_client_id": "idp-client",
        "idp_token_endpoint": f"{IDP}/token",
    }
    grant_options.update(overrides)
    return {
        "grant": trio_mcp.auth.IdentityAssertionGrant(**grant_options),
        "client_id": "mcp-client",
        "client_secret": "mcp-secret",
    }


async def test_enterprise_token_exchange_then_jwt_bearer() -> None:
    world = World(auth_methods=["client_secret_basic"], scopes_supported=["chat"])
    async with setup(world, **enterprise()) as client:
        assert (await call(client)).status_code == 200
    assert len(world.exchanges) == 1
    exchange, idp_basic = world.exchanges[0]
    assert exchange == {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG,
        "audience": AS,
        "resource": SERVER,
        "subject_token": "user.id.token",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "scope": "chat",
        "client_id": "idp-client",
    }
    assert idp_basic is None
    form, basic = world.token_requests[0]
    assert form == {
        "grant_type": JWT_BEARER,
        "assertion": "id-jag-1",
        "resource": SERVER,
        "scope": "chat",
    }
    assert basic == ("mcp-client", "mcp-secret")


async def test_enterprise_idp_secret_and_discovery() -> None:
    world = World(auth_methods=["client_secret_basic"])
    options = enterprise(idp_token_endpoint=None, idp_issuer=IDP, idp_client_secret="idp-s")
    async with setup(world, **options) as client:
        assert (await call(client)).status_code == 200
        world.valid.clear()
        assert (await call(client)).status_code == 200  # a second exchange
    assert world.idp_metadata_requests == 2  # discovered once (RFC 8414 404, then OIDC)
    assert len(world.exchanges) == 2
    exchange, idp_basic = world.exchanges[0]
    assert idp_basic == ("idp-client", "idp-s") and "client_id" not in exchange


@pytest.mark.parametrize(
    ("world", "match"),
    [
        (World(idp_error="invalid_grant"), "ID-JAG token exchange .* invalid_grant"),
        (World(issued_token_type="urn:ietf:params:oauth:token-type:access_token"), "not an ID-JAG"),
        (World(as_error="invalid_client"), "jwt-bearer token request .* invalid_client"),
    ],
)
async def test_enterprise_failures(world: World, match: str) -> None:
    async with setup(world, **enterprise()) as client:
        with pytest.raises(trio_mcp.auth.TokenRequestError, match=match):
            await call(client)
    assert len(world.token_requests) <= 1


def test_enterprise_options() -> None:
    with pytest.raises(ValueError, match="idp_token_endpoint or idp_issuer"):
        trio_mcp.auth.IdentityAssertionGrant(id_token="t", idp_client_id="c")
    grant = trio_mcp.auth.IdentityAssertionGrant(id_token="t", idp_client_id="c", idp_issuer=IDP)
    with pytest.raises(ValueError, match="client_id"):
        trio_mcp.OAuth(grant=grant)


async def test_enterprise_malformed_exchange_answer() -> None:
    world = World()

    def handler(request: httpx.Request) -> httpx.Response:
        if str(request.url) == f"{IDP}/token":
            return httpx.Response(200, content=b'{"access_token": 1}')
        return world.handler(request)

    transport = httpx.MockTransport(handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(http_client=as_client, **enterprise())
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            with pytest.raises(trio_mcp.auth.TokenRequestError, match="malformed"):
                await call(client)
    assert world.token_requests == []
