"""Assertion grants: a JWT the application already holds, traded for an access token.

Two flows, both ending in the RFC 7523 ``jwt-bearer`` grant at the MCP server's
authorization server:

* [`JWTBearerGrant`][trio_mcp.auth.JWTBearerGrant], workload identity federation (SEP-1933): the
  workload's own JWT (a Kubernetes service-account token, a cloud provider's identity token, a CI
  job's OIDC token) is the ``assertion``.
* [`IdentityAssertionGrant`][trio_mcp.auth.IdentityAssertionGrant], enterprise-managed authorization
  (SEP-990, "cross-app access"): the user's ID token from the enterprise identity provider is first
  exchanged there (RFC 8693 token exchange) for an Identity Assertion JWT Authorization Grant
  (ID-JAG), which is then the ``assertion``.

Neither flow opens a browser, and a failed grant is never retried with another grant: the
error reaches the caller as a [`TokenRequestError`][trio_mcp.auth.TokenRequestError].
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable
from os import PathLike
from typing import TYPE_CHECKING, cast
from urllib.parse import quote

import httpx
import msgspec
import trio

from .._exceptions import AuthDiscoveryError, TokenRequestError
from .._jsonrpc import UNDECODABLE
from . import _grants, _metadata

if TYPE_CHECKING:
    from ._flows import Flow
    from ._tokens import Token

__all__ = ["IdentityAssertionGrant", "JWTBearerGrant"]

logger = logging.getLogger("trio_mcp.auth")

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"

TokenSource = str | Callable[[], Awaitable[str]]
"""A JWT, or an async function that returns a current one (called for each grant)."""


async def _resolve(source: TokenSource, what: str) -> str:
    if isinstance(source, str):
        await trio.lowlevel.checkpoint()
        value = source
    else:
        value = await source()
    value = value.strip()
    if not value:
        raise ValueError(f"the {what} is empty")
    return value


def _file_source(path: str | PathLike[str]) -> Callable[[], Awaitable[str]]:
    async def read() -> str:
        return await trio.Path(path).read_text(encoding="utf-8")

    return read


class JWTBearerGrant:
    """Workload identity: the workload's own JWT as an RFC 7523 ``jwt-bearer`` assertion.

    ``OAuth(grant=JWTBearerGrant(assertion), client_id=...)`` sends
    ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` with the JWT as
    ``assertion`` (and ``resource``, ``scope``) to the token endpoint, authenticating as
    ``client_id`` the way the authorization server advertises (``none`` sends just the id).
    The JWT's ``aud`` must name the authorization server (its issuer); the identity
    provider of the workload issues it. An expired access token is replaced by running
    the grant again with a fresh assertion (no refresh token is needed).

    A failure (``invalid_grant``, ``invalid_scope``, ``unauthorized_client``) is raised as
    [`TokenRequestError`][trio_mcp.auth.TokenRequestError], never retried, and never answered by
    switching to another grant.

    Args:
        assertion: The JWT, or an async function returning a current one (called for each
            grant, so a rotating token is re-read). See also
            [`from_file()`][trio_mcp.auth.JWTBearerGrant.from_file].
    """

    grant_type: str = JWT_BEARER

    def __init__(self, assertion: TokenSource) -> None:
        self.assertion: TokenSource = assertion

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> JWTBearerGrant:
        """A grant whose assertion is read from ``path`` each time it is needed.

        The usual shape of a projected workload token (Kubernetes
        ``/var/run/secrets/tokens/...``, ``AZURE_FEDERATED_TOKEN_FILE``), which the platform
        rotates in place.

        Args:
            path: The file holding the JWT.
        """
        return cls(_file_source(path))

    async def _assertion(self, flow: Flow) -> str:
        assertion = await _resolve(self.assertion, "workload JWT assertion")
        context = flow.context
        check_audience(assertion, context.issuer, context.metadata.token_endpoint or "")
        return assertion


def _audiences(assertion: str) -> list[str] | None:
    """The ``aud`` of a JWT, read without verifying it; None when it is not a JWT."""
    parts = assertion.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = msgspec.json.decode(payload)
    except (ValueError, *UNDECODABLE):
        return None
    if not isinstance(claims, dict):
        return None
    aud = cast("dict[str, object]", claims).get("aud")
    if isinstance(aud, str):
        return [aud]
    if isinstance(aud, list):
        return [item for item in cast("list[object]", aud) if isinstance(item, str)]
    return []


def check_audience(assertion: str, issuer: str, token_endpoint: str) -> None:
    """Refuse a workload JWT whose ``aud`` names neither ``issuer`` nor ``token_endpoint``.

    RFC 7523 §3: the authorization server accepts only a JWT whose ``aud`` identifies it;
    one meant for another server is a credential of that server, and is never sent here.
    The JWT is not verified (the authorization server does that), only read.

    Raises:
        TokenRequestError: The assertion is not a JWT, or its ``aud`` is for another server
            (``error`` is ``"invalid_grant"``; nothing was sent).
    """
    audiences = _audiences(assertion)
    if audiences is None:
        raise TokenRequestError(
            "the workload assertion is not a JWT (three Base64url parts, a JSON claims set); "
            "refusing to send it",
            error="invalid_grant",
        )
    if issuer not in audiences and token_endpoint not in audiences:
        raise TokenRequestError(
            f"the workload JWT's aud {audiences!r} names neither authorization server "
            f"{issuer} nor its token endpoint {token_endpoint}: it is meant for another "
            "server, so it is not sent there",
            error="invalid_grant",
        )


class IdentityAssertionGrant:
    """Enterprise-managed authorization: an ID-JAG from the enterprise IdP, then ``jwt-bearer``.

    ``OAuth(grant=IdentityAssertionGrant(...), client_id=..., client_secret=...)``:

    1. At the identity provider's token endpoint, an RFC 8693 token exchange of the user's
       ID token (``subject_token_type=...:id_token``) for an ID-JAG
       (``requested_token_type=urn:ietf:params:oauth:token-type:id-jag``), with
       ``audience`` the MCP authorization server's issuer and ``resource`` the MCP server,
       authenticating as ``idp_client_id``.
    2. At the MCP authorization server, the RFC 7523 ``jwt-bearer`` grant with the ID-JAG as
       ``assertion``, authenticating as ``OAuth``'s ``client_id`` (the ID-JAG names it).

    Both steps run again, with a fresh ID token from ``id_token`` when it is a function,
    whenever a new access token is needed.

    Args:
        id_token: The user's ID token from the identity provider (obtained at single
            sign-on), or an async function returning a current one.
        idp_client_id: This application's client id at the identity provider.
        idp_client_secret: Its secret there (``client_secret_basic``), if it is confidential.
        idp_token_endpoint: The identity provider's token endpoint.
        idp_issuer: The identity provider's issuer; its token endpoint is discovered
            (OpenID Connect / RFC 8414 metadata) when ``idp_token_endpoint`` is not given.

    Raises:
        ValueError: Neither ``idp_token_endpoint`` nor ``idp_issuer`` was given.
    """

    grant_type: str = JWT_BEARER

    def __init__(
        self,
        *,
        id_token: TokenSource,
        idp_client_id: str,
        idp_client_secret: str | None = None,
        idp_token_endpoint: str | None = None,
        idp_issuer: str | None = None,
    ) -> None:
        if idp_token_endpoint is None and idp_issuer is None:
            raise ValueError("IdentityAssertionGrant needs idp_token_endpoint or idp_issuer")
        self.id_token: TokenSource = id_token
        self.idp_client_id: str = idp_client_id
        self.idp_client_secret: str | None = idp_client_secret
        self.idp_token_endpoint: str | None = idp_token_endpoint
        self.idp_issuer: str | None = idp_issuer

    async def _token_endpoint(self, http: httpx.AsyncClient) -> str:
        if self.idp_token_endpoint is not None:
            await trio.lowlevel.checkpoint()
            return self.idp_token_endpoint
        assert self.idp_issuer is not None
        for url in _metadata.as_metadata_urls(self.idp_issuer):
            body = await _metadata.fetch(http, url)
            if body is None:
                continue
            metadata = _metadata.decode_as_metadata(body, url, self.idp_issuer)
            if metadata.token_endpoint:
                self.idp_token_endpoint = metadata.token_endpoint
                return metadata.token_endpoint
        raise AuthDiscoveryError(
            f"identity provider {self.idp_issuer} publishes no metadata with a token_endpoint; "
            "pass idp_token_endpoint= to IdentityAssertionGrant"
        )

    async def _assertion(self, flow: Flow) -> str:
        """Exchange the ID token for an ID-JAG at the identity provider."""
        http, context, scope = flow.http, flow.context, flow.scope
        url = await self._token_endpoint(http)
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "audience": context.metadata.issuer,
            "resource": context.resource,
            "subject_token": await _resolve(self.id_token, "ID token"),
            "subject_token_type": ID_TOKEN,
        }
        if scope:
            form["scope"] = scope
        headers: dict[str, str] = {}
        if self.idp_client_secret is not None:
            pair = f"{quote(self.idp_client_id, safe='')}:{quote(self.idp_client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        else:
            form["client_id"] = self.idp_client_id
        response = await _grants.post_form(
            http, url, form, headers, f"the token exchange at identity provider {url}"
        )
        if response.status_code != 200:
            raise _grants.oauth_error(
                response, response.content, f"the ID-JAG token exchange at {url}"
            )
        try:
            answer = _exchange_decoder.decode(response.content)
        except UNDECODABLE as exc:
            raise TokenRequestError(
                f"identity provider {url} answered the token exchange with a malformed "
                f"response ({exc})",
                error="invalid_response",
            ) from exc
        if answer.issued_token_type != ID_JAG:
            raise TokenRequestError(
                f"identity provider {url} issued a {answer.issued_token_type!r} token, not an "
                f"ID-JAG ({ID_JAG}); it does not support enterprise-managed authorization",
                error="invalid_response",
            )
        logger.info("exchanged the ID token for an ID-JAG at %s", url)
        return answer.access_token


class _ExchangeResponse(msgspec.Struct, kw_only=True):
    access_token: str
    issued_token_type: str
    token_type: str = "N_A"
    expires_in: float | None = None

    def __repr__(self) -> str:  # the ID-JAG is a credential
        return (
            f"_ExchangeResponse(access_token='***', issued_token_type={self.issued_token_type!r})"
        )


_exchange_decoder = msgspec.json.Decoder(_ExchangeResponse)


AssertionGrant = JWTBearerGrant | IdentityAssertionGrant


async def authorize(flow: Flow, grant: AssertionGrant) -> Token:
    """Run ``grant`` and keep the token (the provider's assertion grant)."""
    client = await flow.identity(None, register=False)
    if client is None:
        client = _grants.ClientInfo("", None, "none", flow.context.issuer)  # no client auth
    assertion = await grant._assertion(flow)  # pyright: ignore[reportPrivateUsage]
    form = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": flow.context.resource}
    if flow.scope:
        form["scope"] = flow.scope
    return await flow.keep(client, await flow.token_request(client, form))
