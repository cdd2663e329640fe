"""A protected MCP server built with the official ``mcp`` SDK's token-verifier support.

Run it as a separate process::

    python tests/servers/auth_sdk_server.py --port N --issuer URL [--resource URL]

It is a resource server only (``AuthSettings`` with ``resource_server_url`` and a
``TokenVerifier``): it serves its Protected Resource Metadata (RFC 9728) naming
``--issuer`` as its authorization server, answers unauthenticated requests with
``401`` + ``WWW-Authenticate: Bearer resource_metadata=...``, and accepts only JWT
access tokens (RFC 9068) that

* are signed by a key of the issuer's JWKS (fetched from its OpenID metadata),
* carry ``iss`` equal to ``--issuer`` and ``aud`` equal to this server's URL,
* have not expired (no leeway) and carry the scope ``mcp:tools``.

``--resource`` overrides the resource this server announces (default
``http://127.0.0.1:<port>/mcp``): a misconfigured server for the wrong-resource test.

DPoP (RFC 9449): a request with ``Authorization: DPoP <token>`` must carry a ``DPoP``
proof (``typ`` ``dpop+jwt``, signed by the ``jwk`` in its header, ``htm``/``htu`` of this
request, ``iat`` within 5 minutes, ``ath`` the token's hash) whose key's thumbprint is the
token's ``cnf.jkt``; the token is then checked as above (the SDK's bearer middleware sees it
as ``Bearer``). A DPoP-bound token sent as ``Bearer`` is refused.

Tools: ``echo(text)``, ``whoami()`` (the token's ``sub``, ``client_id``, scopes, and
``dpop``: whether the request proved possession).
Prints ``TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>`` on stderr once bound; logs one line
``TRIO_MCP_TOKEN <verdict>`` per verified token (``ok`` or the reason).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import time
from contextvars import ContextVar
from typing import Any

import anyio
import httpx
import jwt
from _announce import serve_announced
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

SCOPE = "mcp:tools"
_proved_jkt: ContextVar[str | None] = ContextVar("proved_jkt", default=None)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 SHA-256 thumbprint of a public JWK (its required members only)."""
    members = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
    required = {name: jwk[name] for name in members[jwk["kty"]]}
    canonical = json.dumps(required, separators=(",", ":"), sort_keys=True).encode()
    return _b64url(hashlib.sha256(canonical).digest())


def check_dpop_proof(proof: str, token: str, method: str, url: str) -> str:
    """The proof key's thumbprint, after checking the proof (raises ``jwt.PyJWTError``)."""
    header = jwt.get_unverified_header(proof)
    if header.get("typ") != "dpop+jwt" or not isinstance(header.get("jwk"), dict):
        raise jwt.InvalidTokenError("not a DPoP proof (typ, jwk)")
    jwk: dict[str, Any] = header["jwk"]
    if "d" in jwk:
        raise jwt.InvalidTokenError("the proof's jwk is a private key")
    key = jwt.PyJWK.from_dict(jwk, algorithm=header.get("alg"))
    claims: dict[str, Any] = jwt.decode(
        proof, key=key, algorithms=[str(header.get("alg"))], options={"verify_aud": False}
    )
    if claims.get("htm") != method or str(claims.get("htu", "")).split("?")[0] != url:
        raise jwt.InvalidTokenError(f"htm/htu {claims.get('htm')} {claims.get('htu')}")
    if abs(time.time() - float(claims.get("iat", 0))) > 300 or not claims.get("jti"):
        raise jwt.InvalidTokenError("iat outside the window, or no jti")
    if claims.get("ath") != _b64url(hashlib.sha256(token.encode()).digest()):
        raise jwt.InvalidTokenError("ath does not match the access token")
    return jwk_thumbprint(jwk)


class JwtVerifier:
    """A ``TokenVerifier``: RFC 9068 JWT access tokens checked against the issuer's JWKS."""

    def __init__(self, issuer: str, audience: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self._keys: jwt.PyJWKSet | None = None

    async def _jwks(self) -> jwt.PyJWKSet:
        if self._keys is None:
            async with httpx.AsyncClient(timeout=10) as http:
                config = (await http.get(f"{self.issuer}/.well-known/openid-configuration")).json()
                self._keys = jwt.PyJWKSet.from_dict((await http.get(config["jwks_uri"])).json())
        return self._keys

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access info, or ``None`` (the SDK answers 401) when it is not valid."""
        try:
            header = jwt.get_unverified_header(token)
            keys = await self._jwks()
            key = next(k for k in keys.keys if k.key_id == header.get("kid"))
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=["RS256"],
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
            if header.get("typ") != "at+jwt":
                raise jwt.InvalidTokenError(f"typ {header.get('typ')!r} is not at+jwt")
            bound = claims.get("cnf", {}).get("jkt")
            if bound != _proved_jkt.get():
                raise jwt.InvalidTokenError(f"cnf.jkt {bound!r} but proof {_proved_jkt.get()!r}")
        except (jwt.PyJWTError, StopIteration, httpx.HTTPError, ValueError) as exc:
            print(f"TRIO_MCP_TOKEN {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return None
        print("TRIO_MCP_TOKEN ok", file=sys.stderr, flush=True)
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=str(claims["sub"]),
            claims=claims,
        )


def build_server(port: int, issuer: str, resource: str) -> MCPServer[Any]:
    """The protected server: tokens for ``resource`` from ``issuer`` only."""
    mcp: MCPServer[Any] = MCPServer(
        "trio-mcp-auth-sdk-server",
        token_verifier=JwtVerifier(issuer, f"http://127.0.0.1:{port}/mcp"),
        auth=AuthSettings(
            issuer_url=issuer,  # pyright: ignore[reportArgumentType]
            resource_server_url=resource,  # pyright: ignore[reportArgumentType]
            required_scopes=[SCOPE],
            validate_token_resource=False,  # the verifier checks `aud` itself
        ),
    )

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def whoami() -> dict[str, Any]:
        """Who the access token speaks for."""
        token = get_access_token()
        assert token is not None and token.claims is not None
        return {
            "sub": token.subject,
            "client_id": token.client_id,
            "scopes": token.scopes,
            "dpop": "cnf" in token.claims,
        }

    return mcp


def dpop_to_bearer(app: Any, port: int) -> Any:
    """ASGI wrapper: check a ``DPoP`` authorization's proof, then hand the token on as Bearer."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        headers = dict(scope["headers"])
        authorization = headers.get(b"authorization", b"").decode()
        proved = None
        if authorization[:5].lower() == "dpop ":
            token = authorization[5:].strip()
            url = f"http://127.0.0.1:{port}{scope['path']}"
            try:
                proof = headers.get(b"dpop", b"").decode()
                proved = check_dpop_proof(proof, token, scope["method"], url)
            except (jwt.PyJWTError, KeyError, ValueError) as exc:
                print(f"TRIO_MCP_DPOP {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                proved = "invalid proof"
            else:
                print("TRIO_MCP_DPOP ok", file=sys.stderr, flush=True)
            headers[b"authorization"] = f"Bearer {token}".encode()
            scope = {**scope, "headers": list(headers.items())}
        reset = _proved_jkt.set(proved)
        try:
            await app(scope, receive, send)
        finally:
            _proved_jkt.reset(reset)

    return wrapped


async def serve(port: int, issuer: str, resource: str) -> None:
    """Serve on 127.0.0.1:port until killed."""
    app = dpop_to_bearer(
        build_server(port, issuer, resource).streamable_http_app(host="127.0.0.1"), port
    )

    await serve_announced(app, port)


def main() -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--resource", default=None)
    args = parser.parse_args()
    resource = args.resource or f"http://127.0.0.1:{args.port}/mcp"
    anyio.run(serve, args.port, args.issuer, resource)


if __name__ == "__main__":
    main()
