"""A confidential client identity (a client secret, a private key, an assertion) is bound to
one authorization server: ``issuer=``, else the first one it is used with. Any other issuer
a server names is refused with ``ClientRegistrationError`` (naming both) before anything is
sent there; a workload JWT goes only where its ``aud`` points; a group refuses a shared
``auth=`` carrying such credentials without ``issuer=``."""

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

import trio_mcp
from trio_mcp import open_server_group
from trio_mcp.auth import ClientRegistrationError, JWTBearerGrant, TokenRequestError

GOOD_AS, EVIL_AS = "https://as.good.example", "https://as.evil.example"
GOOD, EVIL = "https://good.example/mcp", "https://evil.example/mcp"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def workload_jwt(aud: Any) -> str:
    def part(value: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'ES256'})}.{part({'aud': aud, 'sub': 'w'})}.sig"


@dataclass
class World:
    """Two MCP servers, each naming its own authorization server."""

    token_requests: list[tuple[str, dict[str, str], str | None]] = field(
        default_factory=lambda: list[tuple[str, dict[str, str], str | None]]()
    )

    def handler(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url).split("?")[0]
        for server, issuer in ((GOOD, GOOD_AS), (EVIL, EVIL_AS)):
            prm = server.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            if url == server:
                if request.headers.get("authorization", "").startswith("Bearer at-"):
                    return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})
                return httpx.Response(
                    401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{prm}"'}
                )
            if url == prm:
                return httpx.Response(
                    200, json={"resource": server, "authorization_servers": [issuer]}
                )
            if url == f"{issuer}/.well-known/oauth-authorization-server":
                return httpx.Response(
                    200,
                    json={
                        "issuer": issuer,
                        "token_endpoint": f"{issuer}/token",
                        "authorization_endpoint": f"{issuer}/authorize",
                        "grant_types_supported": ["client_credentials", JWT_BEARER],
                        "token_endpoint_auth_methods_supported": ["client_secret_post"],
                    },
                )
            if url == f"{issuer}/token":
                form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
                self.token_requests.append((issuer, form, request.headers.get("authorization")))
                n = len(self.token_requests)
                return httpx.Response(200, json={"access_token": f"at-{n}", "token_type": "Bearer"})
        return httpx.Response(404)

    def issuers(self) -> list[str]:
        return [issuer for issuer, _, _ in self.token_requests]


@asynccontextmanager
async def client_for(world: World, **options: Any) -> AsyncGenerator[httpx.AsyncClient]:
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(http_client=as_client, dpop=False, **options)
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            yield client


async def call(client: httpx.AsyncClient, url: str) -> httpx.Response:
    return await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


SECRET = {"client_id": "svc", "client_secret": "s3cret"}


async def test_a_secret_without_issuer_is_bound_to_the_first_issuer() -> None:
    """docs/authorization.md's pre-registered client (no ``issuer=``) at two servers."""
    world = World()
    async with client_for(world, grant="client_credentials", **SECRET) as client:
        assert (await call(client, GOOD)).status_code == 200
        with pytest.raises(ClientRegistrationError) as caught:
            await call(client, EVIL)
        assert (await call(client, GOOD)).status_code == 200  # still fine where it belongs
    assert EVIL_AS in str(caught.value) and GOOD_AS in str(caught.value)
    assert "first issuer" in str(caught.value)
    assert world.issuers() == [GOOD_AS]  # the secret never went to the other server


async def test_client_credentials_with_issuer_meeting_another_issuer() -> None:
    """It used to be a bare AssertionError (an AttributeError under python -O)."""
    world = World()
    async with client_for(world, grant="client_credentials", issuer=GOOD_AS, **SECRET) as client:
        with pytest.raises(ClientRegistrationError) as caught:
            await call(client, EVIL)
        assert (await call(client, GOOD)).status_code == 200
    assert EVIL_AS in str(caught.value) and GOOD_AS in str(caught.value)
    assert "issuer=" in str(caught.value)
    assert world.issuers() == [GOOD_AS]


@pytest.mark.parametrize("options", [{"client_id": "w"}, {}])
async def test_a_workload_jwt_is_bound_to_its_issuer(options: dict[str, Any]) -> None:
    """With ``issuer=`` (or pinned by its first use), no other server gets the assertion."""
    world = World()
    grant = JWTBearerGrant(workload_jwt([GOOD_AS, EVIL_AS]))
    async with client_for(world, grant=grant, issuer=GOOD_AS, **options) as client:
        with pytest.raises(ClientRegistrationError, match=r"as\.evil\.example"):
            await call(client, EVIL)
    assert world.token_requests == []
    async with client_for(world, grant=grant, **options) as client:
        assert (await call(client, GOOD)).status_code == 200
        with pytest.raises(ClientRegistrationError, match=r"as\.evil\.example"):
            await call(client, EVIL)
    assert world.issuers() == [GOOD_AS]


@pytest.mark.parametrize(
    "aud", [EVIL_AS, [EVIL_AS, "https://other.example"], None, f"{EVIL_AS}/token"]
)
async def test_a_workload_jwt_for_another_server_is_not_sent(aud: Any) -> None:
    world = World()
    grant = JWTBearerGrant(workload_jwt(aud))
    async with client_for(world, grant=grant, issuer=GOOD_AS, client_id="w") as client:
        with pytest.raises(TokenRequestError, match="names neither") as caught:
            await call(client, GOOD)
    assert caught.value.error == "invalid_grant"
    assert world.token_requests == []


@pytest.mark.parametrize("aud", [GOOD_AS, [EVIL_AS, GOOD_AS], f"{GOOD_AS}/token"])
async def test_a_workload_jwt_for_this_server_is_sent(aud: Any) -> None:
    world = World()
    grant = JWTBearerGrant(workload_jwt(aud))
    async with client_for(world, grant=grant, issuer=GOOD_AS, client_id="w") as client:
        assert (await call(client, GOOD)).status_code == 200
    assert world.issuers() == [GOOD_AS]


@pytest.mark.parametrize("assertion", ["opaque", "a.b.c", "a.W10.c"])
async def test_an_assertion_that_is_not_a_jwt_is_not_sent(assertion: str) -> None:
    world = World()
    async with client_for(world, grant=JWTBearerGrant(assertion), client_id="w") as client:
        with pytest.raises(TokenRequestError, match="not a JWT"):
            await call(client, GOOD)
    assert world.token_requests == []


@pytest.mark.parametrize(
    "options",
    [
        {"client_secret": "s"},
        {"private_key": "(a PEM)"},
        {"grant": JWTBearerGrant("x.y.z")},
        {"grant": "client_credentials"},
    ],
)
def test_a_browser_login_with_credentials_is_bound_too(options: dict[str, Any]) -> None:
    from trio_mcp._auth._identity import ClientIdentity

    identity = ClientIdentity(trio_mcp.OAuth(client_id="c", **options))
    identity.check_issuer(GOOD_AS)  # the first: pinned
    identity.check_issuer(GOOD_AS)
    with pytest.raises(ClientRegistrationError, match=r"as\.evil\.example"):
        identity.check_issuer(EVIL_AS)


def test_a_public_client_is_not_bound() -> None:
    from trio_mcp._auth._identity import ClientIdentity

    identity = ClientIdentity(trio_mcp.OAuth(client_id="c"))
    identity.check_issuer(GOOD_AS)
    identity.check_issuer(EVIL_AS)  # a client id alone is no secret: DCR/CIMD elsewhere


# -------------------------------------------------------------------------- groups


@pytest.mark.parametrize(
    "options",
    [
        {"grant": "client_credentials", **SECRET},
        {"client_id": "c", "private_key": "(a PEM)"},
        {"grant": JWTBearerGrant("x.y.z")},
    ],
)
async def test_a_group_refuses_shared_credentials_without_issuer(options: dict[str, Any]) -> None:
    auth = trio_mcp.OAuth(**options)
    with pytest.raises(ValueError, match="issuer="):
        async with open_server_group([GOOD, EVIL], auth=auth):
            pass  # pragma: no cover


async def test_a_group_takes_shared_credentials_with_issuer_or_for_one_server() -> None:
    from trio_mcp._group._open import _members  # pyright: ignore[reportPrivateUsage]

    bound = trio_mcp.OAuth(grant="client_credentials", issuer=GOOD_AS, **SECRET)
    assert [m.options["auth"] for m in _members([GOOD, EVIL], {}, {}, {}, bound)] == [bound] * 2
    unbound = trio_mcp.OAuth(grant="client_credentials", **SECRET)
    assert [m.options["auth"] for m in _members([GOOD], {}, {}, {}, unbound)] == [unbound]
    public = trio_mcp.OAuth()
    assert len(_members([GOOD, EVIL], {}, {}, {}, public)) == 2
