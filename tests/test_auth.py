"""trio_mcp._auth: discovery, metadata, PKCE, state, grants, refresh, storage, bad input.

A scripted protected resource and authorization server behind ``httpx.MockTransport``; time
from trio's ``MockClock`` (``autojump_clock``), so expiry and refresh happen at exact
virtual times.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import traceback
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import trio

import trio_mcp
from trio_mcp._auth import _grants, _metadata

SERVER = "https://mcp.example.com/mcp"
AS = "https://auth.example.com"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


# -------------------------------------------------------------------- the scripted world


@dataclass
class World:
    """A protected MCP endpoint and its authorization server, as one httpx handler."""

    issuer: str = AS
    metadata_issuer: str = AS
    resource: str = SERVER
    pkce_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    iss_supported: bool = True
    scopes_supported: list[str] | None = None
    challenge_scope: str | None = None
    expires_in: int | None = 3600
    token_error: str | None = None
    refresh_error: str | None = None
    registration: bool = True
    needed_scope_for_call: str | None = None
    malformed_metadata: bool = False
    valid: set[str] = field(default_factory=lambda: set[str]())
    scopes_of: dict[str, str] = field(default_factory=lambda: dict[str, str]())
    log: list[tuple[str, str]] = field(default_factory=lambda: list[tuple[str, str]]())
    issued: int = 0
    challenge: str = ""
    last_scope: str = ""
    resource_params: list[str] = field(default_factory=lambda: list[str]())

    def count(self, what: str) -> int:
        return sum(1 for kind, _ in self.log if kind == what)

    def revoke_all(self) -> None:
        self.valid.clear()

    def handler(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url).split("?")[0]
        if url == SERVER:
            return self.mcp(request)
        if url == PRM_URL:
            self.log.append(("prm", url))
            return httpx.Response(
                200,
                json={
                    "resource": self.resource,
                    "authorization_servers": [self.issuer],
                    **(
                        {"scopes_supported": self.scopes_supported} if self.scopes_supported else {}
                    ),
                },
            )
        if url == f"{AS}/.well-known/oauth-authorization-server":
            self.log.append(("metadata", url))
            if self.malformed_metadata:
                return httpx.Response(200, content=b'{"issuer": 42')
            doc: dict[str, Any] = {
                "issuer": self.metadata_issuer,
                "authorization_endpoint": f"{AS}/authorize",
                "token_endpoint": f"{AS}/token",
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": self.iss_supported,
            }
            if self.registration:
                doc["registration_endpoint"] = f"{AS}/register"
            if self.pkce_methods is not None:
                doc["code_challenge_methods_supported"] = self.pkce_methods
            return httpx.Response(200, json=doc)
        if url == f"{AS}/register":
            self.log.append(("register", url))
            body = json.loads(request.content)
            assert body["application_type"] == "native"
            return httpx.Response(201, json={"client_id": "dcr-client"})
        if url == f"{AS}/authorize":
            return self.authorize(request)
        if url == f"{AS}/token":
            return self.token(request)
        return httpx.Response(404)

    def mcp(self, request: httpx.Request) -> httpx.Response:
        self.log.append(("mcp", request.headers.get("authorization", "")))
        auth = request.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ")
        if not auth.startswith("Bearer ") or token not in self.valid:
            scope = f', scope="{self.challenge_scope}"' if self.challenge_scope else ""
            return httpx.Response(
                401,
                headers={"WWW-Authenticate": f'Bearer resource_metadata="{PRM_URL}"{scope}'},
            )
        method = json.loads(request.content).get("method") if request.content else None
        needed = self.needed_scope_for_call
        if method == "tools/call" and needed and needed not in self.scopes_of[token].split():
            return httpx.Response(
                403,
                headers={
                    "WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{needed}"'
                },
            )
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})

    def authorize(self, request: httpx.Request) -> httpx.Response:
        query = {k: v[0] for k, v in parse_qs(request.url.query.decode()).items()}
        self.log.append(("authorize", query.get("scope", "")))
        self.challenge = query["code_challenge"]
        self.last_scope = query.get("scope", "")
        assert query["code_challenge_method"] == "S256"
        self.resource_params.append(query["resource"])
        params = {"code": "the-code", "state": query["state"], "iss": self.issuer}
        return httpx.Response(
            302, headers={"Location": f"{query['redirect_uri']}?{urlencode(params)}"}
        )

    def token(self, request: httpx.Request) -> httpx.Response:
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        grant = form["grant_type"]
        self.log.append(("token", grant))
        self.resource_params.append(form["resource"])
        if grant == "authorization_code":
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == self.challenge
            if self.token_error:
                return httpx.Response(400, json={"error": self.token_error})
        if grant == "refresh_token" and self.refresh_error:
            return httpx.Response(400, json={"error": self.refresh_error})
        self.issued += 1
        token = f"token-{self.issued}"
        self.valid.add(token)
        self.scopes_of[token] = form.get("scope", self.last_scope)
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "refresh_token": f"refresh-{self.issued}",
        }
        if self.expires_in is not None:
            answer["expires_in"] = self.expires_in
        return httpx.Response(200, json=answer)


class Agent:
    """A user agent that approves at once by following the redirect with the mock client."""

    redirect_uri = "http://127.0.0.1:9/callback"

    def __init__(self, http: httpx.AsyncClient, tamper: dict[str, str] | None = None) -> None:
        self.http = http
        self.tamper = tamper or {}
        self.hang = False

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[Agent]:
        yield self

    async def authorize(self, authorization_url: str) -> str:
        if self.hang:
            await trio.sleep_forever()
        response = await self.http.get(authorization_url)
        location = response.headers["location"]
        if not self.tamper:
            return location
        parts = urlsplit(location)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query.update(self.tamper)
        query = {k: v for k, v in query.items() if v != "<drop>"}
        return f"{parts.scheme}://{parts.netloc}{parts.path}?{urlencode(query)}"


@asynccontextmanager
async def setup(
    world: World, **options: Any
) -> AsyncGenerator[tuple[httpx.AsyncClient, trio_mcp.OAuth, Agent]]:
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        agent = Agent(as_client, options.pop("tamper", None))
        oauth = trio_mcp.OAuth(http_client=as_client, user_agent=agent, **options)
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            yield client, oauth, agent


async def call(client: httpx.AsyncClient, method: str = "tools/list") -> httpx.Response:
    return await client.post(SERVER, json={"jsonrpc": "2.0", "id": 1, "method": method})


# -------------------------------------------------------------------- pure parts


def test_parse_challenge() -> None:
    c = _metadata.parse_challenge(
        'Bearer realm="x", error="insufficient_scope", scope="a b", '
        'resource_metadata="https://h/.well-known/oauth-protected-resource"'
    )
    assert c.scheme == "Bearer"
    assert c.error == "insufficient_scope"
    assert c.scope == "a b"
    assert c.resource_metadata == "https://h/.well-known/oauth-protected-resource"
    assert _metadata.parse_challenge(None).scope is None
    two = _metadata.parse_challenge('Basic realm="r", Bearer scope="s", error=invalid_token')
    assert (two.scheme, two.scope, two.error) == ("Bearer", "s", "invalid_token")
    escaped = _metadata.parse_challenge(r'Bearer error_description="say \"hi\""')
    assert escaped.get("error_description") == 'say "hi"'
    assert _metadata.parse_challenge('Bearer ,,, "garbage').scheme == "Bearer"


def test_discovery_orders() -> None:
    assert _metadata.prm_urls(SERVER, None) == [
        PRM_URL,
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]
    assert _metadata.prm_urls("https://h/", "https://h/custom.json") == [
        "https://h/custom.json",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert _metadata.as_metadata_urls("https://a/tenant1") == [
        "https://a/.well-known/oauth-authorization-server/tenant1",
        "https://a/.well-known/openid-configuration/tenant1",
        "https://a/tenant1/.well-known/openid-configuration",
    ]
    assert _metadata.as_metadata_urls("https://a") == [
        "https://a/.well-known/oauth-authorization-server",
        "https://a/.well-known/openid-configuration",
    ]
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError):
        _metadata.as_metadata_urls("ftp://a")


def test_pkce_and_state() -> None:
    verifier, challenge = _grants.pkce_pair()
    assert len(verifier) == 43
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert _grants.pkce_pair()[0] != verifier
    assert len(_grants.random_state()) >= 22
    assert _grants.random_state() != _grants.random_state()


def test_metadata_validation() -> None:
    good = b'{"issuer": "https://a", "token_endpoint": "https://a/t"}'
    assert _metadata.decode_as_metadata(good, "u", "https://a").token_endpoint == "https://a/t"
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="issuer"):
        _metadata.decode_as_metadata(good, "u", "https://a/")  # no normalisation
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="malformed"):
        _metadata.decode_as_metadata(b"[1, 2", "u", "https://a")
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="token_endpoint"):
        _metadata.decode_as_metadata(b'{"issuer": "https://a"}', "u", "https://a")
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="malformed"):
        _metadata.decode_prm(b'{"resource": 1}', "u")
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="authorization_servers"):
        _metadata.decode_prm(b'{"resource": "https://r"}', "u")


def test_resource_covers() -> None:
    assert _metadata.resource_covers("https://mcp.example.com", SERVER)
    assert _metadata.resource_covers("https://MCP.example.com/mcp", SERVER)
    assert not _metadata.resource_covers("https://evil.example.com/mcp", SERVER)
    assert not _metadata.resource_covers("https://mcp.example.com/mc", SERVER)
    assert not _metadata.resource_covers("http://mcp.example.com/mcp", SERVER)


def test_auth_method_choice() -> None:
    choose = _grants.choose_auth_method
    assert choose(["none"], has_secret=True, has_key=False) == "none"
    assert choose(["client_secret_post"], has_secret=True, has_key=False) == "client_secret_post"
    assert choose(None, has_secret=True, has_key=False) == "client_secret_basic"
    assert choose(["private_key_jwt"], has_secret=False, has_key=True) == "private_key_jwt"
    assert choose(["client_secret_basic"], has_secret=False, has_key=False) == "none"
    assert (
        choose(["client_secret_basic", "client_secret_post"], has_secret=True, has_key=False,
               registered="client_secret_post")
        == "client_secret_post"
    )  # fmt: skip


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="client_id"):
        trio_mcp.OAuth(grant="client_credentials")
    with pytest.raises(ValueError, match="grant"):
        trio_mcp.OAuth(grant="implicit")  # type: ignore[arg-type]


# -------------------------------------------------------------------- flows


async def test_authorization_code_flow() -> None:
    world = World()
    async with setup(world) as (client, oauth, _):
        response = await call(client)
        assert response.status_code == 200
        assert world.count("register") == 1
        assert world.count("authorize") == 1
        assert world.log[-1] == ("mcp", "Bearer token-1")
        assert set(world.resource_params) == {SERVER}  # RFC 8707, both requests
        # the next request reuses the token: no new flow
        assert (await call(client)).status_code == 200
        assert world.count("token") == 1
        stored = await oauth.store.get_token(AS, SERVER, "dcr-client")
        assert stored is not None and stored.access_token == "token-1"


async def test_scope_selection() -> None:
    world = World(scopes_supported=["a", "b"])
    async with setup(world) as (client, _, _):
        await call(client)
    assert ("authorize", "a b") in world.log
    world = World(scopes_supported=["a", "b"], challenge_scope="c")
    async with setup(world) as (client, _, _):
        await call(client)
    assert ("authorize", "c") in world.log
    world = World()
    async with setup(world) as (client, _, _):
        await call(client)
    assert ("authorize", "") in world.log


async def test_expiry_and_refresh_on_trio_clock(autojump_clock: trio.abc.Clock) -> None:
    world = World(expires_in=100)
    async with setup(world, refresh_margin=10) as (client, _, _):
        await call(client)
        start = trio.current_time()
        await trio.sleep(89.5)
        await call(client)
        assert world.count("token") == 1  # 0.5 s before the margin: still good
        await trio.sleep(0.5)
        assert trio.current_time() - start == 90.0
        await call(client)
        assert ("token", "refresh_token") in world.log
        assert world.log[-1] == ("mcp", "Bearer token-2")


async def test_one_refresh_in_flight(autojump_clock: trio.abc.Clock) -> None:
    world = World(expires_in=100)
    async with setup(world, refresh_margin=0) as (client, _, _):
        await call(client)
        await trio.sleep(100)
        results: list[int] = []

        async def one() -> None:
            results.append((await call(client)).status_code)

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(one)
    assert results == [200] * 10
    assert world.log.count(("token", "refresh_token")) == 1


async def test_401_during_call_refreshes_once() -> None:
    world = World()
    async with setup(world) as (client, _, _):
        await call(client)
        world.revoke_all()  # the server forgets the token: next call gets 401
        results: list[int] = []

        async def one() -> None:
            results.append((await call(client)).status_code)

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(one)
    assert results == [200] * 5
    assert world.log.count(("token", "refresh_token")) == 1
    assert world.count("authorize") == 1


async def test_revoked_refresh_token_authorizes_again() -> None:
    world = World(refresh_error="invalid_grant")
    async with setup(world) as (client, _, _):
        await call(client)
        world.revoke_all()
        assert (await call(client)).status_code == 200
    assert world.count("authorize") == 2


async def test_revoked_refresh_token_headless() -> None:
    world = World(refresh_error="invalid_grant")
    async with setup(world) as (client, oauth, _):
        await call(client)
        world.revoke_all()
        oauth.interactive = False
        with pytest.raises(trio_mcp.auth.LoginRequiredError, match="headless"):
            await call(client)


async def test_headless_uses_stored_token() -> None:
    world = World()
    store = trio_mcp.auth.MemoryTokenStore()
    async with setup(world, store=store) as (client, _, _):
        await call(client)
    async with setup(world, store=store, interactive=False) as (client, _, _):
        assert (await call(client)).status_code == 200
    assert world.count("authorize") == 1


async def test_step_up_is_bounded() -> None:
    world = World(challenge_scope="read", needed_scope_for_call="write")
    async with setup(world) as (client, _, _):
        assert (await call(client, "tools/list")).status_code == 200
        assert (await call(client, "tools/call")).status_code == 200
        assert world.log.count(("authorize", "read write")) == 1  # the union
    world = World(challenge_scope="read", needed_scope_for_call="never")
    world.scopes_of = _Forgetful()
    async with setup(world, max_step_up=2) as (client, _, _):
        await call(client, "tools/list")
        with pytest.raises(trio_mcp.auth.InsufficientScopeError) as info:
            await call(client, "tools/call")
    assert info.value.scope == "never"
    assert world.count("authorize") == 3


class _Forgetful(dict[str, str]):
    """Tokens never get the scope asked for."""

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, "read")


# -------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("world", "match"),
    [
        (World(metadata_issuer="https://attacker.example.com"), "issuer"),
        (World(malformed_metadata=True), "malformed"),
        (World(resource="https://evil.example.com/mcp"), "does not cover"),
        (World(pkce_methods=None), "S256"),
        (World(pkce_methods=["plain"]), "S256"),
    ],
)
async def test_bad_discovery(world: World, match: str) -> None:
    async with setup(world) as (client, _, _):
        with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match=match):
            await call(client)
    assert world.count("authorize") == 0
    assert world.count("token") == 0


async def test_no_client_identity() -> None:
    world = World(registration=False)
    async with setup(world) as (client, _, _):
        with pytest.raises(trio_mcp.auth.ClientRegistrationError, match="client_id="):
            await call(client)


async def test_as_error() -> None:
    world = World(token_error="invalid_client")
    async with setup(world) as (client, _, _):
        with pytest.raises(trio_mcp.auth.TokenRequestError) as info:
            await call(client)
    assert info.value.error == "invalid_client"
    assert "check client_id" in str(info.value)


@pytest.mark.parametrize(
    ("tamper", "match"),
    [
        ({"state": "forged"}, "wrong state"),
        ({"iss": "https://evil.example.com"}, "mix-up"),
        ({"iss": AS + "/"}, "mix-up"),  # compared without normalisation
        ({"iss": "<drop>"}, "promises an iss"),
        ({"error": "access_denied", "code": "<drop>"}, "access_denied"),
    ],
)
async def test_bad_redirect(tamper: dict[str, str], match: str) -> None:
    world = World()
    async with setup(world, tamper=tamper) as (client, _, _):
        with pytest.raises(trio_mcp.auth.AuthorizationDeniedError, match=match):
            await call(client)
    assert world.count("token") == 0


async def test_callback_never_comes(autojump_clock: trio.abc.Clock) -> None:
    world = World()
    async with setup(world) as (client, _, agent):
        agent.hang = True
        start = trio.current_time()
        with pytest.raises(trio.TooSlowError):
            with trio.fail_after(120):
                await call(client)
        assert trio.current_time() - start == 120
    assert world.count("token") == 0


async def test_client_credentials_post() -> None:
    world = World()
    async with setup(
        world, grant="client_credentials", client_id="machine", client_secret="s3cret"
    ) as (client, _, _):
        assert (await call(client)).status_code == 200
    assert world.count("authorize") == 0
    assert ("token", "client_credentials") in world.log


async def test_client_credentials_private_key_jwt() -> None:
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    seen: list[dict[str, str]] = []
    world = World()
    original = world.token

    def token(request: httpx.Request) -> httpx.Response:
        seen.append({k: v[0] for k, v in parse_qs(request.content.decode()).items()})
        return original(request)

    world.token = token  # type: ignore[method-assign]
    async with setup(world, grant="client_credentials", client_id="m", private_key=pem) as (
        client,
        _,
        _,
    ):
        # the server lists only "none": the key is used only when the server wants it
        assert (await call(client)).status_code == 200
    assert "client_assertion" not in seen[0]
    form: dict[str, str] = {}
    headers: dict[str, str] = {}
    info = _grants.ClientInfo("m", None, "private_key_jwt")
    _grants.authenticate(form, headers, info, audience=AS, private_key=pem)
    claims = jwt.decode(
        form["client_assertion"], key.public_key(), algorithms=["ES256"], audience=AS
    )
    assert claims["iss"] == claims["sub"] == "m"
    assert form["client_assertion_type"].endswith("jwt-bearer")
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="private_key="):
        _grants.authenticate({}, {}, info, audience=AS)


# -------------------------------------------------------------------- storage and browser


async def test_file_store(tmp_path: Any) -> None:
    path = tmp_path / "sub" / "tokens.json"
    store = trio_mcp.auth.FileTokenStore(path)
    assert await store.get_token(AS, SERVER, "c") is None
    token = trio_mcp.auth.StoredToken(access_token="t", refresh_token="r", expires_at=1.0)
    await store.set_token(AS, SERVER, "c", token)
    await store.set_client(AS, trio_mcp.auth.StoredClient("c", "s", "client_secret_post"))
    other = trio_mcp.auth.FileTokenStore(path)  # another process sees the same entries
    assert await other.get_token(AS, SERVER, "c") == token
    assert await other.get_token(AS, SERVER, "d") is None
    assert await other.get_client(AS) == trio_mcp.auth.StoredClient("c", "s", "client_secret_post")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    await other.delete_token(AS, SERVER, "c")
    assert await store.get_token(AS, SERVER, "c") is None
    assert await store.get_client(AS) is not None
    path.write_text("not json")
    assert await store.get_token(AS, SERVER, "c") is None  # corrupt: logged out, no crash


async def test_loopback_browser() -> None:
    browser = trio_mcp.auth.LoopbackBrowser(open_browser=False)
    async with browser.redirect() as redirect:
        uri = redirect.redirect_uri
        assert uri.startswith("http://127.0.0.1:") and uri.endswith("/callback")
        port = int(urlsplit(uri).port or 0)
        got: list[str] = []

        async def user() -> None:
            stray = await trio.open_tcp_stream("127.0.0.1", port)
            await stray.send_all(b"GET /favicon.ico HTTP/1.1\r\n\r\n")
            assert b"404" in await stray.receive_some(1024)
            await stray.aclose()
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(b"GET /callback?code=c&state=s HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b"200 OK" in await stream.receive_some(4096)
            await stream.aclose()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(user)
            got.append(await redirect.authorize("https://auth.example.com/authorize?x=1"))
    assert got == [f"{uri}?code=c&state=s"]
    with pytest.raises(OSError):
        await trio.open_tcp_stream("127.0.0.1", port)  # the listener is gone


def test_import_is_light() -> None:
    import subprocess
    import sys

    code = "import sys, trio_mcp; print('jwt' in sys.modules, 'trio_mcp._auth' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    "body",
    [b'{"issuer": "\xff"}', b'{"access_token": "\xc3\x28", "token_type": "Bearer"}', b"\xff"],
)
def test_undecodable_documents_are_auth_errors(body: bytes) -> None:
    """Invalid UTF-8 (a UnicodeDecodeError inside msgspec) ends in the auth family too."""
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="malformed"):
        _metadata.decode_as_metadata(body, "u", "https://a")
    with pytest.raises(trio_mcp.auth.AuthDiscoveryError, match="malformed"):
        _metadata.decode_prm(body, "u")
    with pytest.raises(trio_mcp.auth.TokenRequestError, match="malformed"):
        _grants.decode_token_response(body, "u")
    response = httpx.Response(400)
    assert _grants.oauth_error(response, body, "x").error == "invalid_response"


class NurseryAgent(Agent):
    """A user agent whose redirect block runs inside a nursery of its own."""

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[Agent]:
        async with trio.open_nursery():
            yield self


async def test_a_user_agents_nursery_error_arrives_bare_with_its_context() -> None:
    """The error inside a user agent's nursery reaches the caller bare, as itself, with its
    traceback and context (it was ``raise ... from None``, which hid them)."""
    world = World()
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        agent = NurseryAgent(as_client, {"state": "forged"})
        oauth = trio_mcp.OAuth(http_client=as_client, user_agent=agent)
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            with pytest.raises(
                trio_mcp.auth.AuthorizationDeniedError, match="wrong state"
            ) as caught:
                await call(client)
    error = caught.value
    assert not error.__suppress_context__
    frames = [frame.f_code.co_name for frame, _ in traceback.walk_tb(error.__traceback__)]
    assert "check_callback" in frames  # where it was raised, not only where it was re-raised
