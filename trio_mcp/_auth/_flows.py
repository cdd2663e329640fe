"""The grant flows, as functions over a small `Flow`: what one authorization needs.

A flow gets the discovery result (`_metadata.Discovery`), the scope to ask for,
and three services lent by the provider: the client identity (pre-registered, metadata document,
stored or registered), the token request (client authentication, DPoP proofs and nonces,
the 1 MiB bound) and ``keep`` (turn an answer into the token of this server's key and
store it). No flow reaches into the provider: the authorization code flow lives here,
the device flow in `_device`, the assertion grants in `_assertions`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import trio

from .._exceptions import (
    AuthDiscoveryError,
    AuthorizationDeniedError,
    ClientRegistrationError,
    raise_bare,
)
from . import _grants, _metadata
from ._browser import UserAgent, check_browser_url
from ._policy import check_endpoint
from ._tokens import Token

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["Flow", "authorization_code", "check_callback", "client_credentials"]

logger = logging.getLogger("trio_mcp.auth")


@dataclass
class Flow:
    """One authorization: the discovery result, the scope, and the provider's services.

    Attributes:
        http: The client for the authorization server.
        context: What discovery found.
        scope: The scope to ask for (``None``: none).
        private_key: The ``private_key_jwt`` key, if any (for endpoints other than the
            token endpoint, e.g. device authorization).
        signing_algorithm: Its JWS algorithm.
        identity: ``await identity(redirect_uri, register=..., grant_types=...)``: the
            client identity (``None`` when there is none and ``register`` is false).
        token_request: ``await token_request(client, form)``: POST to the token endpoint.
        keep: ``await keep(client, answer)``: the token of this server's key, stored.
    """

    http: httpx.AsyncClient
    context: _metadata.Discovery
    scope: str | None
    private_key: Any
    signing_algorithm: str
    identity: Callable[..., Awaitable[_grants.ClientInfo | None]]
    token_request: Callable[[_grants.ClientInfo, dict[str, str]], Awaitable[_grants.TokenResponse]]
    keep: Callable[[_grants.ClientInfo, _grants.TokenResponse], Awaitable[Token]]


async def client_credentials(flow: Flow) -> Token:
    """The client credentials grant (machine to machine; a pre-registered client)."""
    client = await flow.identity(None, register=False)
    if client is None:  # (OAuth requires client_id for this grant: the identity checks it)
        raise ClientRegistrationError(
            f"no client identity for authorization server {flow.context.issuer}"
        )
    form = {"grant_type": "client_credentials", "resource": flow.context.resource}
    if flow.scope:
        form["scope"] = flow.scope
    return await flow.keep(client, await flow.token_request(client, form))


async def authorization_code(flow: Flow, user_agent: UserAgent) -> Token:
    """The authorization code grant with PKCE S256, ``state`` and the resource indicator.

    Raises:
        AuthDiscoveryError: No authorization endpoint, or one the policy refuses (checked
            again right before the browser step).
        AuthorizationDeniedError: The redirect is refused (`check_callback()`).
    """
    context, scope = flow.context, flow.scope
    endpoint = context.metadata.authorization_endpoint
    if endpoint is None:
        raise AuthDiscoveryError(
            f"authorization server {context.issuer} has no authorization_endpoint"
        )
    check_endpoint(endpoint, "the authorization endpoint")  # before it reaches a browser
    check_browser_url(endpoint)  # any user agent gets only http(s) to open
    try:
        async with user_agent.redirect() as redirect:
            client = await flow.identity(redirect.redirect_uri, register=True)
            if client is None:  # (with register=True the identity returns one or raises)
                raise ClientRegistrationError(
                    f"no client identity for authorization server {context.issuer}"
                )
            verifier, challenge = _grants.pkce_pair()
            state = _grants.random_state()
            query = {
                "response_type": "code",
                "client_id": client.client_id,
                "redirect_uri": redirect.redirect_uri,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": state,
                "resource": context.resource,
            }
            if scope:
                query["scope"] = scope
                if "offline_access" in scope.split():
                    # OIDC Core 11: without prompt=consent an OpenID provider drops
                    # offline_access (no refresh token); oidc-provider does
                    query["prompt"] = "consent"
            separator = "&" if "?" in endpoint else "?"
            logger.debug("sending the user to %s (redirect %s)", endpoint, redirect.redirect_uri)
            callback = await redirect.authorize(f"{endpoint}{separator}{urlencode(query)}")
            code = check_callback(callback, state, context)
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect.redirect_uri,
                "code_verifier": verifier,
                "resource": context.resource,
            }
            response = await flow.token_request(client, form)
    except BaseExceptionGroup as group:
        # a user agent's nursery wraps what failed inside its block: raise it bare, its
        # own traceback and context kept (the session's helper, not ``from None``)
        error = _only_error(group)
        if error is None:
            raise
        raise_bare(error)
    return await flow.keep(client, response)


def _only_error(group: BaseExceptionGroup[Any]) -> BaseException | None:
    """The one exception (not a ``Cancelled``) in ``group``, else None."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in cast("BaseExceptionGroup[BaseException]", exc).exceptions:
                walk(inner)
        elif not isinstance(exc, trio.Cancelled):
            leaves.append(exc)

    walk(group)
    return leaves[0] if len(leaves) == 1 else None


def check_callback(callback: str, state: str, context: _metadata.Discovery) -> str:
    """The code of an authorization response, after checking ``state`` and ``iss``.

    Raises:
        AuthorizationDeniedError: Wrong ``state``, a wrong or missing ``iss`` (RFC 9207),
            an ``error``, or no code.
    """
    params = {k: v[0] for k, v in parse_qs(urlsplit(callback).query).items()}
    if params.get("state") != state:
        raise AuthorizationDeniedError(
            "the authorization response carries the wrong state; it does not answer this "
            "client's request (a forged or stale redirect). Start the login again"
        )
    issuer = context.metadata.issuer
    iss = params.get("iss")
    if iss is not None and iss != issuer:
        raise AuthorizationDeniedError(
            f"the authorization response comes from issuer {iss!r}, not {issuer!r} "
            "(RFC 9207); refusing it: it may be a mix-up attack"
        )
    if iss is None and context.metadata.authorization_response_iss_parameter_supported:
        raise AuthorizationDeniedError(
            f"authorization server {issuer} promises an iss parameter in its responses "
            "(RFC 9207) but this one has none; refusing it"
        )
    if "error" in params:
        description = params.get("error_description")
        raise AuthorizationDeniedError(
            f"the authorization server refused: {params['error']}"
            + (f" ({description})" if description else ""),
            error=params["error"],
        )
    code = params.get("code")
    if not code:
        raise AuthorizationDeniedError("the authorization response carries no code")
    return code
