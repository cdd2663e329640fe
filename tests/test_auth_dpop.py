"""DPoP (RFC 9449) in trio_mcp.OAuth: proofs, bound tokens, server nonces, stored keys.

A scripted authorization server and protected resource behind ``httpx.MockTransport``
that verify every proof with PyJWT against the JWK in its header, the way a real server
does: ``typ``, signature, ``htm``, ``htu``, ``iat``, unique ``jti``, ``ath`` and the
token's key thumbprint (``cnf.jkt``), and the nonce when they demand one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
import pytest
import trio
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import trio_mcp
from trio_mcp._auth import _dpop

SERVER = "https://mcp.example.com/mcp"
AS = "https://auth.example.com"
TOKEN_URL = f"{AS}/token"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verify_proof(proof: str, method: str, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Verify a DPoP proof as a server does; its header and claims."""
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt"
    jwk = header["jwk"]
    assert "d" not in jwk and "p" not in jwk  # never the private key
    public = jwt.PyJWK.from_dict(jwk, algorithm=header["alg"])
    claims = jwt.decode(proof, public.key, algorithms=[header["alg"]])
    assert claims["htm"] == method
    assert claims["htu"] == url
    assert "?" not in claims["htu"] and "#" not in claims["htu"]
    assert abs(claims["iat"] - time.time()) < 60
    assert isinstance(claims["jti"], str) and len(claims["jti"]) >= 16
    return header, claims


@dataclass
class World:
    """A DPoP-capable authorization server and MCP endpoint, as one httpx handler."""

    algs: list[str] | None = field(default_factory=lambda: ["RS256", "ES256"])
    required: bool = False  # the PRM's dpop_bound_access_tokens_required
    as_nonce: str | None = None  # the AS demands this nonce
    rs_nonce: str | None = None  # the RS demands this nonce
    rotate_as_nonce: bool = False  # a new nonce every time: a nonce loop
    rotate_rs_nonce: bool = False
    nonce_header: str | None = None  # what DPoP-Nonce says instead of the nonce
    unbound: bool = False  # answer Bearer to a DPoP token request
    bound_without_proof: bool = False  # answer DPoP to a request without a proof
    demand_proof: bool = False  # 400 invalid_dpop_proof without a proof
    expires_in: int = 3600
    issued: int = 0
    bound: dict[str, str] = field(default_factory=lambda: dict[str, str]())  # token -> jkt
    valid: set[str] = field(default_factory=lambda: set[str]())
    jtis: set[str] = field(default_factory=lambda: set[str]())
    log: list[tuple[str, str]] = field(default_factory=lambda: list[tuple[str, str]]())
    proofs: list[tuple[dict[str, Any], dict[str, Any]]] = field(
        default_factory=lambda: list[tuple[dict[str, Any], dict[str, Any]]]()
    )
    challenge: str = ""
    nonce_count: int = 0
    rs_scheme: str = "DPoP"  # the scheme of the MCP server's 401 challenge
    rs_algs: list[str] | None = None  # the PRM's dpop_signing_alg_values_supported

    def count(self, what: str) -> int:
        return sum(1 for kind, _ in self.log if kind == what)

    def check(self, proof: str, method: str, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
        header, claims = verify_proof(proof, method, url)
        assert claims["jti"] not in self.jtis, "a proof was reused"
        self.jtis.add(claims["jti"])
        self.proofs.append((header, claims))
        return header, claims

    def nonce_answer(self, status: int, fixed: str, rotate: bool, rs: bool) -> httpx.Response:
        self.nonce_count += 1
        nonce = f"{fixed}-{self.nonce_count}" if rotate else fixed
        headers = {"DPoP-Nonce": self.nonce_header if self.nonce_header is not None else nonce}
        if self.nonce_header == "<absent>":
            headers = {}
        if rs:
            headers["WWW-Authenticate"] = 'DPoP error="use_dpop_nonce", algs="ES256"'
        return httpx.Response(status, headers=headers, json={"error": "use_dpop_nonce"})

    def handler(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url).split("?")[0]
        if url == SERVER:
            return self.mcp(request)
        if url == PRM_URL:
            return httpx.Response(
                200,
                json={
                    "resource": SERVER,
                    "authorization_servers": [AS],
                    "dpop_bound_access_tokens_required": self.required,
                    **({"dpop_signing_alg_values_supported": self.rs_algs} if self.rs_algs else {}),
                },
            )
        if url == f"{AS}/.well-known/oauth-authorization-server":
            doc: dict[str, Any] = {
                "issuer": AS,
                "authorization_endpoint": f"{AS}/authorize",
                "token_endpoint": TOKEN_URL,
                "registration_endpoint": f"{AS}/register",
                "token_endpoint_auth_methods_supported": ["none"],
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": True,
            }
            if self.algs is not None:
                doc["dpop_signing_alg_values_supported"] = self.algs
            return httpx.Response(200, json=doc)
        if url == f"{AS}/register":
            return httpx.Response(201, json={"client_id": "dcr-client"})
        if url == f"{AS}/authorize":
            query = {k: v[0] for k, v in parse_qs(request.url.query.decode()).items()}
            self.challenge = query["code_challenge"]
            params = {"code": "the-code", "state": query["state"], "iss": AS}
            location = f"{query['redirect_uri']}?{urlencode(params)}"
            return httpx.Response(302, headers={"Location": location})
        if url == TOKEN_URL:
            return self.token(request)
        return httpx.Response(404)

    def token(self, request: httpx.Request) -> httpx.Response:
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        self.log.append(("token", form["grant_type"]))
        proof = request.headers.get("dpop")
        jkt = None
        if proof is None:
            if self.demand_proof:
                return httpx.Response(400, json={"error": "invalid_dpop_proof"})
        else:
            header, claims = self.check(proof, "POST", TOKEN_URL)
            assert "ath" not in claims
            if self.as_nonce is not None and (
                self.rotate_as_nonce or claims.get("nonce") != self.as_nonce
            ):
                self.log.append(("as-nonce-challenge", ""))
                return self.nonce_answer(400, self.as_nonce, self.rotate_as_nonce, rs=False)
            jkt = _dpop.jwk_thumbprint(header["jwk"])
        self.issued += 1
        token = f"token-{self.issued}"
        self.valid.add(token)
        token_type = "Bearer"
        if (jkt is not None and not self.unbound) or self.bound_without_proof:
            self.bound[token] = jkt or "nobody"
            token_type = "DPoP"
        return httpx.Response(
            200,
            json={
                "access_token": token,
                "token_type": token_type,
                "refresh_token": f"refresh-{self.issued}",
                "expires_in": self.expires_in,
            },
        )

    def mcp(self, request: httpx.Request) -> httpx.Response:
        auth = request.headers.get("authorization", "")
        self.log.append(("mcp", auth))
        scheme, _, token = auth.partition(" ")
        unauthorized = httpx.Response(
            401,
            headers={"WWW-Authenticate": f'{self.rs_scheme} resource_metadata="{PRM_URL}"'},
        )
        if token not in self.valid:
            return unauthorized
        if token in self.bound:
            assert scheme == "DPoP", "a DPoP-bound token was sent as Bearer"
            header, claims = self.check(request.headers["dpop"], request.method, SERVER)
            assert claims["ath"] == b64url(hashlib.sha256(token.encode()).digest())
            assert _dpop.jwk_thumbprint(header["jwk"]) == self.bound[token]
            if self.rs_nonce is not None and (
                self.rotate_rs_nonce or claims.get("nonce") != self.rs_nonce
            ):
                self.log.append(("rs-nonce-challenge", ""))
                return self.nonce_answer(401, self.rs_nonce, self.rotate_rs_nonce, rs=True)
        else:
            assert scheme == "Bearer"
            assert "dpop" not in request.headers
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})


class Agent:
    """A user agent that approves at once by following the redirect."""

    redirect_uri = "http://127.0.0.1:9/callback"

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    @asynccontextmanager
    async def redirect(self) -> AsyncGenerator[Agent]:
        yield self

    async def authorize(self, authorization_url: str) -> str:
        response = await self.http.get(authorization_url)
        return str(response.headers["location"])


@asynccontextmanager
async def setup(
    world: World, **options: Any
) -> AsyncGenerator[tuple[httpx.AsyncClient, trio_mcp.OAuth]]:
    transport = httpx.MockTransport(world.handler)
    async with httpx.AsyncClient(transport=transport) as as_client:
        oauth = trio_mcp.OAuth(http_client=as_client, user_agent=Agent(as_client), **options)
        async with httpx.AsyncClient(transport=transport, auth=oauth) as client:
            yield client, oauth


async def call(client: httpx.AsyncClient, url: str = SERVER) -> httpx.Response:
    return await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def mcp_auth(world: World) -> list[str]:
    return [auth for kind, auth in world.log if kind == "mcp"]


# -------------------------------------------------------------------- pure parts


def test_proof_claims() -> None:
    key = _dpop.DPoPKey.generate("ES256")
    token = "an-access-token"
    proof = key.proof(
        "post", "https://MCP.example.com/mcp?session=1#frag", access_token=token, nonce="n-1"
    )
    header, claims = verify_proof(proof, "POST", SERVER)
    assert header["alg"] == "ES256"
    assert header["jwk"] == key.public_jwk
    assert claims["ath"] == b64url(hashlib.sha256(token.encode()).digest())
    assert claims["nonce"] == "n-1"
    # no token, no nonce: no ath, no nonce; every proof has its own jti
    other = jwt.decode(
        key.proof("GET", SERVER), options={"verify_signature": False}, algorithms=["ES256"]
    )
    assert "ath" not in other and "nonce" not in other
    assert other["jti"] != claims["jti"]


def test_thumbprint_rfc7638_example() -> None:
    jwk = {
        "kty": "RSA",
        "n": (
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1"
            "L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4"
            "QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbO"
            "pbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csF"
            "Cur-kEgU8awapJzKnqDKgw"
        ),
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29",
    }
    # RFC 7638 §3.1
    assert _dpop.jwk_thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_algorithm_choice() -> None:
    assert _dpop.choose_algorithm(["RS256", "ES256"]) == "ES256"
    assert _dpop.choose_algorithm(["PS256", "RS256"]) == "PS256"
    assert _dpop.choose_algorithm(["EdDSA", "RS256"]) == "EdDSA"
    assert _dpop.choose_algorithm(None) == "ES256"
    assert _dpop.choose_algorithm(["HS256", "none"]) is None
    assert _dpop.choose_algorithm([]) is None


def test_nonce_header() -> None:
    assert _dpop.parse_nonce(" abc-123_~! ", "s") == "abc-123_~!"
    for bad in ("two words", 'quo"te', "back\\slash", "", "x" * 2000):
        with pytest.raises(trio_mcp.auth.DPoPNonceError, match="malformed DPoP-Nonce"):
            _dpop.parse_nonce(bad, "s")
    with pytest.raises(trio_mcp.auth.DPoPNonceError, match="without a DPoP-Nonce"):
        _dpop.parse_nonce(None, "s")
    cache = _dpop.NonceCache(limit=2)
    cache.set("https://a.example/x", "1")
    cache.update("https://a.example/y?q", "bad nonce")  # ignored, not an error
    assert cache.get("https://a.example/z") == "1"
    cache.set("https://b.example", "2")
    cache.set("https://c.example", "3")
    assert cache.get("https://a.example") is None  # bounded: the oldest server went


def test_key_jwk_round_trip() -> None:
    for algorithm in ("ES256", "ES384", "ES512", "EdDSA", "PS256"):
        key = _dpop.DPoPKey.generate(algorithm)
        jwk = json.loads(json.dumps(key.private_jwk()))  # survives a JSON file
        again = _dpop.DPoPKey.from_jwk(jwk)
        assert again.algorithm == algorithm
        assert again.public_jwk == key.public_jwk
    with pytest.raises(trio_mcp.auth.DPoPError, match="private key"):
        _dpop.DPoPKey.from_jwk(key.public_jwk)
    with pytest.raises(trio_mcp.auth.DPoPError, match="malformed"):
        _dpop.DPoPKey.from_jwk({"kty": "EC", "crv": "P-256", "d": "AA", "x": "AA"})


def test_bad_option() -> None:
    with pytest.raises(ValueError, match="dpop must be"):
        trio_mcp.OAuth(dpop="always")


# -------------------------------------------------------------------- flows


async def test_bound_token_at_as_and_rs() -> None:
    world = World()
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
        assert (await call(client)).status_code == 200
    # the token request carried a proof (no ath) with an ES256 key the token is bound to
    token_proofs = [c for _, c in world.proofs if c["htu"] == TOKEN_URL]
    assert len(token_proofs) == 1 and world.proofs[0][0]["alg"] == "ES256"
    assert world.bound == {"token-1": _dpop.jwk_thumbprint(world.proofs[0][0]["jwk"])}
    # every MCP request: DPoP scheme, never Bearer, a fresh proof each (jtis checked unique)
    sent = [auth for auth in mcp_auth(world) if auth]
    assert sent == ["DPoP token-1", "DPoP token-1"]
    assert len(world.proofs) == 3


async def test_rsa_when_only_rsa_is_offered() -> None:
    world = World(algs=["HS256", "RS256"])
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
    assert {h["alg"] for h, _ in world.proofs} == {"RS256"}
    assert "token-1" in world.bound


async def test_no_dpop_when_not_advertised_or_disabled() -> None:
    for world, options in ((World(algs=None), {}), (World(), {"dpop": False})):
        async with setup(world, **options) as (client, _):
            assert (await call(client)).status_code == 200
        assert world.proofs == [] and world.bound == {}
        assert mcp_auth(world)[-1] == "Bearer token-1"


async def test_auto_binds_only_when_the_resource_accepts_dpop() -> None:
    """A Bearer-only MCP server (the common case) gets Bearer tokens even when the AS
    offers DPoP; a resource that lists DPoP algorithms in its metadata gets bound ones."""
    world = World(rs_scheme="Bearer")
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
    assert world.bound == {} and mcp_auth(world)[-1] == "Bearer token-1"
    world = World(rs_scheme="Bearer", rs_algs=["ES256"])
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
    assert list(world.bound) == ["token-1"] and mcp_auth(world)[-1] == "DPoP token-1"


async def test_unsupported_algs_auto_falls_back_to_bearer() -> None:
    world = World(algs=["HS256"])
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
    assert world.proofs == [] and mcp_auth(world)[-1] == "Bearer token-1"


async def test_required_dpop_without_supported_alg() -> None:
    for world, options in (
        (World(algs=["HS256"], required=True), {}),
        (World(algs=[]), {"dpop": True}),
    ):
        async with setup(world, **options) as (client, _):
            with pytest.raises(trio_mcp.auth.DPoPError, match="advertises no signing algorithm"):
                await call(client)
        assert world.count("token") == 0


async def test_as_demands_dpop_without_advertising() -> None:
    world = World(algs=None, demand_proof=True)
    async with setup(world) as (client, _):
        with pytest.raises(
            trio_mcp.auth.DPoPError, match=r"demands DPoP proofs \(invalid_dpop_proof\)"
        ):
            await call(client)
    # dpop=True: it works with ES256 although the server did not say
    world = World(algs=None, demand_proof=True)
    async with setup(world, dpop=True) as (client, _):
        assert (await call(client)).status_code == 200
    assert world.proofs[0][0]["alg"] == "ES256"


async def test_unbound_token_is_sent_as_bearer() -> None:
    world = World(unbound=True)
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
    assert len(world.proofs) == 1  # the token request only
    assert mcp_auth(world)[-1] == "Bearer token-1"


async def test_dpop_token_for_a_request_without_proof() -> None:
    world = World(bound_without_proof=True)
    async with setup(world, dpop=False) as (client, _):
        with pytest.raises(trio_mcp.auth.DPoPError, match="carried no DPoP proof"):
            await call(client)
    assert "token-1" not in [auth.split()[-1] for auth in mcp_auth(world) if auth]


async def test_as_nonce_retry_and_memory(autojump_clock: trio.abc.Clock) -> None:
    world = World(as_nonce="as-nonce", expires_in=60)
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
        assert world.count("as-nonce-challenge") == 1
        assert world.count("token") == 2  # the challenge, then the retry with the nonce
        token_proofs = [c for _, c in world.proofs if c["htu"] == TOKEN_URL]
        assert "nonce" not in token_proofs[0] and token_proofs[1]["nonce"] == "as-nonce"
        await trio.sleep(31)  # the token expires (30 s margin): refresh with the nonce at once
        assert (await call(client)).status_code == 200
    assert world.log.count(("token", "refresh_token")) == 1
    assert world.count("as-nonce-challenge") == 1


async def test_rs_nonce_retry_and_memory() -> None:
    world = World(rs_nonce="rs-nonce")
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
        assert world.count("rs-nonce-challenge") == 1
        assert (await call(client)).status_code == 200
    assert world.count("rs-nonce-challenge") == 1  # the second request had the nonce
    rs_proofs = [c for _, c in world.proofs if c["htu"] == SERVER]
    assert [c.get("nonce") for c in rs_proofs] == [None, "rs-nonce", "rs-nonce"]
    assert world.count("token") == 1  # a nonce challenge is not a reason to authorize again


async def test_nonce_loop_is_bounded() -> None:
    world = World(as_nonce="n", rotate_as_nonce=True)
    async with setup(world) as (client, _):
        with pytest.raises(trio_mcp.auth.DPoPNonceError, match="nonce loop"):
            await call(client)
    assert world.count("token") == 2
    world = World(rs_nonce="n", rotate_rs_nonce=True)
    async with setup(world) as (client, _):
        with pytest.raises(trio_mcp.auth.DPoPNonceError, match="nonce loop"):
            await call(client)
    assert world.count("rs-nonce-challenge") == 2
    assert world.count("token") == 1


@pytest.mark.parametrize("nonce_header", ['bad "nonce"', "<absent>"])
async def test_malformed_nonce_header(nonce_header: str) -> None:
    for world in (
        World(as_nonce="n", nonce_header=nonce_header),
        World(rs_nonce="n", nonce_header=nonce_header),
    ):
        async with setup(world) as (client, _):
            with pytest.raises(trio_mcp.auth.DPoPNonceError, match="DPoP-Nonce"):
                await call(client)


async def test_refresh_keeps_the_key(autojump_clock: trio.abc.Clock) -> None:
    world = World(expires_in=60)
    async with setup(world) as (client, _):
        assert (await call(client)).status_code == 200
        await trio.sleep(31)
        assert (await call(client)).status_code == 200
    assert world.log.count(("token", "refresh_token")) == 1
    assert world.bound["token-1"] == world.bound["token-2"]
    assert mcp_auth(world)[-1] == "DPoP token-2"


async def test_client_credentials_with_dpop() -> None:
    world = World()
    async with setup(world, grant="client_credentials", client_id="machine", client_secret="s") as (
        client,
        _,
    ):
        assert (await call(client)).status_code == 200
    assert ("token", "client_credentials") in world.log
    assert mcp_auth(world)[-1] == "DPoP token-1"


async def test_user_key() -> None:
    key = ec.generate_private_key(ec.SECP384R1())
    expected = _dpop.DPoPKey(key, "ES384").thumbprint()
    for given in (key, _dpop.DPoPKey(key, "ES384").private_jwk()):
        world = World(algs=["ES256", "ES384"])
        async with setup(world, dpop=given) as (client, _):
            assert (await call(client)).status_code == 200
        assert world.bound["token-1"] == expected
        assert {h["alg"] for h, _ in world.proofs} == {"ES384"}
    world = World(algs=["ES256"])
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    async with setup(world, dpop=rsa_key) as (client, _):
        with pytest.raises(trio_mcp.auth.DPoPError, match="signs with none of the algorithms"):
            await call(client)


async def test_stored_key_reused_after_restart(tmp_path: Any) -> None:
    path = tmp_path / "tokens.json"
    world = World()
    async with setup(world, store=trio_mcp.auth.FileTokenStore(path)) as (client, _):
        assert (await call(client)).status_code == 200
    entry = next(iter(json.loads(path.read_text())["tokens"].values()))
    assert entry["token_type"] == "DPoP"
    assert entry["dpop_jwk"]["alg"] == "ES256" and "d" in entry["dpop_jwk"]
    # a new process: a new OAuth on the same file, headless; the token works with its key
    async with setup(world, store=trio_mcp.auth.FileTokenStore(path), interactive=False) as (
        client,
        _,
    ):
        assert (await call(client)).status_code == 200
    assert world.count("token") == 1
    assert mcp_auth(world)[-1] == "DPoP token-1"


async def test_stored_dpop_token_without_key_is_never_bearer() -> None:
    store = trio_mcp.auth.MemoryTokenStore()
    world = World()
    world.valid.add("stolen")
    world.bound["stolen"] = "someone"
    await store.set_client(AS, trio_mcp.auth.StoredClient("dcr-client"))
    await store.set_token(
        AS, SERVER, "dcr-client", trio_mcp.auth.StoredToken("stolen", token_type="DPoP")
    )
    async with setup(world, store=store, interactive=False) as (client, _):
        with pytest.raises(trio_mcp.auth.LoginRequiredError):
            await call(client)
    assert all("stolen" not in auth for auth in mcp_auth(world))


async def test_memory_store_keeps_the_key() -> None:
    store = trio_mcp.auth.MemoryTokenStore()
    world = World()
    async with setup(world, store=store) as (client, _):
        assert (await call(client)).status_code == 200
    async with setup(world, store=store, interactive=False) as (client, _):
        assert (await call(client)).status_code == 200
    assert world.count("token") == 1
    assert mcp_auth(world)[-1] == "DPoP token-1"


async def test_htu_of_a_request_with_a_query() -> None:
    world = World()
    async with setup(world) as (client, _):
        assert (await call(client, f"{SERVER}?session=abc")).status_code == 200
    assert all("?" not in c["htu"] for _, c in world.proofs)


def test_parse_url_helpers() -> None:
    assert _dpop.htu("HTTPS://Example.COM:8443/a/b?x=1#y") == "https://example.com:8443/a/b"
    assert _dpop.htu("https://example.com") == "https://example.com/"
    assert _dpop.origin("https://Example.com:8443/a") == "https://example.com:8443"
    assert urlsplit(_dpop.htu(SERVER)).path == "/mcp"
