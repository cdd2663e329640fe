"""The OAuth wire: PKCE, state, client authentication, token and registration requests.

Nothing cryptographic is written here: random values come from `secrets`, hashes from
`hashlib`, and every JWT (``private_key_jwt`` client assertions, DPoP proofs) is signed
by PyJWT with ``cryptography`` keys, imported on first use.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode

import httpx
import msgspec

from .._exceptions import AuthDiscoveryError, AuthError, TokenRequestError
from .._jsonrpc import UNDECODABLE
from .._redact import hidden
from .._transports._headers import echo_problem
from ._bodies import Answer, send

__all__ = [
    "ClientInfo",
    "TokenResponse",
    "choose_auth_method",
    "pkce_pair",
    "random_state",
]

_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt", "none")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """A PKCE ``code_verifier`` (43 characters, RFC 7636 §4.1) and its S256 challenge."""
    verifier = _b64url(secrets.token_bytes(32))
    challenge = _b64url(hashlib.sha256(verifier.encode("ascii")).digest())
    return verifier, challenge


def random_state() -> str:
    """An unguessable ``state`` value (128 bits)."""
    return _b64url(secrets.token_bytes(16))


@dataclass
class ClientInfo:
    """A client identity at one authorization server.

    Attributes:
        client_id: The client id.
        client_secret: The secret of a confidential client, if any.
        auth_method: The token endpoint authentication method.
        issuer: The issuer the identity belongs to (``None``: any, pre-registered).
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: str = "none"
    issuer: str | None = None


def choose_auth_method(
    supported: list[str] | None,
    *,
    has_secret: bool,
    has_key: bool,
    registered: str | None = None,
) -> str:
    """The token endpoint authentication method to use.

    The method the registration returned wins when the server supports it; otherwise the
    first the server supports that the client can do, preferring ``client_secret_basic``
    (RFC 8414's default when the server does not say).
    """
    server = supported if supported else ["client_secret_basic"]
    if registered and registered in _AUTH_METHODS and registered in server:
        return registered
    possible = [
        method
        for method in ("private_key_jwt", "client_secret_basic", "client_secret_post", "none")
        if (method != "private_key_jwt" or has_key)
        and (method not in ("client_secret_basic", "client_secret_post") or has_secret)
    ]
    for method in possible:
        if method in server:
            return method
    if not supported:
        return possible[0] if has_secret or has_key else "none"
    return "none" if not has_secret and not has_key else possible[0]


def client_assertion(
    client_id: str, audience: str, private_key: Any, algorithm: str, *, now: float | None = None
) -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 §2.2), signed with PyJWT.

    Args:
        client_id: ``iss`` and ``sub``.
        audience: ``aud``: the authorization server's issuer.
        private_key: A PEM string/bytes or a ``cryptography`` private key.
        algorithm: The JWS algorithm (``ES256``, ``RS256``, ...).
        now: The wall-clock time to stamp (default: now).

    Raises:
        AuthError: PyJWT is not installed (``pip install trio-mcp[auth]``).
    """
    try:
        import jwt
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise AuthError(
            "private_key_jwt needs PyJWT and cryptography: pip install 'trio-mcp[auth]'"
        ) from exc

    issued = int(time.time() if now is None else now)
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + 300,
        "jti": str(uuid.uuid4()),
    }
    return jwt.encode(claims, private_key, algorithm=algorithm)


def authenticate(
    form: dict[str, str],
    headers: dict[str, str],
    client: ClientInfo,
    *,
    audience: str,
    private_key: Any = None,
    signing_algorithm: str = "ES256",
) -> None:
    """Add the client's authentication to a token request's form and headers."""
    method = client.auth_method
    if method == "client_secret_basic" and client.client_secret is not None:
        from urllib.parse import quote

        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        return
    if client.client_id:  # empty: an assertion grant with no client identity at all
        form["client_id"] = client.client_id
    if method == "client_secret_post" and client.client_secret is not None:
        form["client_secret"] = client.client_secret
    elif method == "private_key_jwt":
        if private_key is None:
            raise AuthDiscoveryError(
                "the authorization server wants private_key_jwt client authentication; "
                "pass private_key= to OAuth"
            )
        form["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        form["client_assertion"] = client_assertion(
            client.client_id, audience, private_key, signing_algorithm
        )


class TokenResponse(msgspec.Struct, kw_only=True):
    """A successful token endpoint answer (RFC 6749 §5.1)."""

    access_token: str
    token_type: str = "Bearer"
    expires_in: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    id_token: str | None = None

    def __repr__(self) -> str:
        return (
            f"TokenResponse(access_token='***', token_type={self.token_type!r}, "
            f"expires_in={self.expires_in!r}, refresh_token={hidden(self.refresh_token)}, "
            f"scope={self.scope!r}, id_token={hidden(self.id_token)})"
        )


class _ErrorResponse(msgspec.Struct, kw_only=True):
    error: str
    error_description: str | None = None


_token_decoder = msgspec.json.Decoder(TokenResponse)
_error_decoder = msgspec.json.Decoder(_ErrorResponse)


def oauth_error(response: Answer, body: bytes, doing: str) -> TokenRequestError:
    """The [`TokenRequestError`][trio_mcp.auth.TokenRequestError] for a failed answer from an OAuth
    endpoint."""
    try:
        error = _error_decoder.decode(body)
        code, description = error.error, error.error_description
    except UNDECODABLE:
        code, description = "invalid_response", body[:200].decode("utf-8", "replace")
    hint = {
        "invalid_grant": "the grant (code or refresh token) is expired or revoked; log in again",
        "invalid_client": "the client credentials were refused; check client_id and secret",
        "invalid_scope": "the scope asked for is not allowed; pass other scopes",
        "unauthorized_client": "this client may not use this grant",
    }.get(code, "")
    message = f"{doing} failed with HTTP {response.status_code}: {code}"
    if description:
        message += f" ({description})"
    if hint:
        message += f"; {hint}"
    return TokenRequestError(
        message, error=code, description=description, status_code=response.status_code
    )


_FORM_HEADERS: Final = {
    "Content-Type": "application/x-www-form-urlencoded",
    "Accept": "application/json",
}


async def post_form(
    http: httpx.AsyncClient,
    url: str,
    form: Mapping[str, str],
    headers: Mapping[str, str],
    doing: str,
) -> Answer:
    """POST a form to an OAuth endpoint; a request that fails is a ``network_error``.

    The form's ``Content-Type`` and ``Accept: application/json`` are set here; the answer
    is read with the 1 MiB bound of `_bodies` (``invalid_response`` beyond it).

    Args:
        http: The client for the authorization server.
        url: The endpoint.
        form: The form fields.
        headers: Further headers (client authentication, DPoP).
        doing: What the request is, for the message (e.g. ``"the token request to URL"``).
    """
    return await send(
        http,
        "POST",
        url,
        error=TokenRequestError,
        doing=doing,
        headers={**_FORM_HEADERS, **headers},
        content=urlencode(form),
    )


def decode_token_response(body: bytes, url: str) -> TokenResponse:
    """Decode a token endpoint's successful answer."""
    try:
        token = _token_decoder.decode(body)
    except UNDECODABLE as exc:
        raise TokenRequestError(
            f"the token endpoint {url} answered with a malformed token response ({exc})",
            error="invalid_response",
        ) from exc
    problem = echo_problem(token.access_token)
    if problem is not None:
        raise TokenRequestError(
            f"the token endpoint {url} issued an access token that cannot be sent in a "
            f"header: it {problem}",
            error="invalid_response",
        )
    if token.token_type.lower() not in ("bearer", "dpop"):
        raise TokenRequestError(
            f"the token endpoint {url} issued an unsupported token_type {token.token_type!r}",
            error="unsupported_token_type",
        )
    return token


@dataclass
class RegistrationRequest:
    """What a client asks for in Dynamic Client Registration (RFC 7591)."""

    client_name: str
    redirect_uris: list[str]
    grant_types: list[str]
    token_endpoint_auth_method: str
    scope: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: {})

    def body(self) -> bytes:
        """The JSON body of the request."""
        data: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": self.redirect_uris,
            "grant_types": self.grant_types,
            "response_types": ["code"] if "authorization_code" in self.grant_types else [],
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "application_type": "native",
        }
        if self.scope:
            data["scope"] = self.scope
        data.update(self.extra)
        return msgspec.json.encode(data)


class RegistrationResponse(msgspec.Struct, kw_only=True):
    """The part of a DCR answer a client uses."""

    client_id: str
    client_secret: str | None = None
    token_endpoint_auth_method: str | None = None

    def __repr__(self) -> str:
        return (
            f"RegistrationResponse(client_id={self.client_id!r}, "
            f"client_secret={hidden(self.client_secret)}, "
            f"token_endpoint_auth_method={self.token_endpoint_auth_method!r})"
        )


registration_decoder = msgspec.json.Decoder(RegistrationResponse)
