"""The OAuth provider: an `httpx.Auth` that drives discovery, identity and grants.

Pass it as ``auth=`` to [`open_mcp_session()`][trio_mcp.open_mcp_session] (any HTTP transport, both
eras), to any number of sessions and server groups at once. Every request carries the token of its
own server's key (``_tokens``: issuer, resource, client), as ``Authorization: Bearer``, or
``DPoP`` with a fresh proof for a DPoP-bound token (RFC 9449). A 401 starts the flow:
discovery (``_metadata``, under the endpoint policy of ``_policy`` and the body bound of
``_bodies``), client identity, a grant (``_flows``, ``_device``, ``_assertions``), then the
request is sent once more. A 403 ``insufficient_scope`` starts a step-up authorization for
the union of the scopes, a bounded number of times. Refreshes run one at a time per key;
authorizations one at a time per provider; requests that hit a 401 meanwhile wait for it
and use its token.

[`OAuth`][trio_mcp.auth.OAuth] keeps the user's settings and puts together the parts that do the
work,
each in the module named after it:

* ``_challenges``: one request's answers to its server's ``401``, ``403`` and DPoP nonce
  challenges, and the ``Authorization`` header;
* ``_authorizer``: one authorization at a time: recovering after a ``401``, step-up after
  a ``403``, discovery per server, which grant runs;
* ``_keeper``: the tokens per key, refreshed one at a time, stored and found again;
* ``_identity``: the client identity and registrations per redirect URI;
* ``_token_endpoint``: every token request, with its DPoP proof and nonce.

The parts read the settings from the provider (``_settings.Settings``) when they need
them, and none imports this module.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any, Literal

import httpx

from . import _assertions, _device, _dpop
from ._assertions import AssertionGrant
from ._authorizer import Authorizer
from ._browser import LoopbackBrowser, UserAgent
from ._challenges import Challenges, apply, canonical
from ._identity import ClientIdentity
from ._keeper import TokenKeeper
from ._storage import MemoryTokenStore, TokenStore
from ._token_endpoint import TokenEndpoint

__all__ = ["OAuth"]


class OAuth(httpx.Auth):
    """OAuth 2.1 authorization for HTTP MCP sessions (``auth=OAuth(...)``).

    Client identity is chosen in the spec's order: the pre-registered ``client_id`` (for
    ``issuer``, or any issuer when ``issuer`` is ``None``), a Client ID Metadata Document
    (``client_metadata_url``, when the server supports them), a registration stored for
    the issuer (for a browser login: only one made for the same redirect URI), Dynamic
    Client Registration; else [`ClientRegistrationError`][trio_mcp.auth.ClientRegistrationError].

    Args:
        grant: ``"authorization_code"`` (a user, a browser) or ``"client_credentials"``
            (machine to machine; needs ``client_id`` and a secret or ``private_key``), or
            an assertion grant object: [`JWTBearerGrant`][trio_mcp.auth.JWTBearerGrant] (workload
            identity) or [`IdentityAssertionGrant`][trio_mcp.auth.IdentityAssertionGrant]
            (enterprise-managed authorization; needs ``client_id``).
        client_id: A pre-registered client id.
        client_secret: Its secret (confidential clients).
        issuer: The issuer ``client_id`` is registered at (``None``: any).
        private_key: A PEM private key (or ``cryptography`` key) for ``private_key_jwt``.
        signing_algorithm: The JWS algorithm of ``private_key`` (``ES256``, ``RS256``...).
        client_metadata_url: The HTTPS URL of this client's Client ID Metadata Document.
        client_name: The name registered by Dynamic Client Registration.
        scopes: Scopes to ask for instead of the server's (challenge, then
            ``scopes_supported``, else none).
        store: Where tokens and registrations are kept (default: in memory).
        user_agent: The browser step (default: [`LoopbackBrowser`][trio_mcp.auth.LoopbackBrowser]).
        interactive: ``False``: never start a browser flow; use stored tokens (and refresh
            them), a device flow when ``device`` allows it, or raise
            [`LoginRequiredError`][trio_mcp.auth.LoginRequiredError].
        device: Opt in to the device authorization grant (RFC 8628) where the server
            offers it: a [`DeviceFlow`][trio_mcp.auth.DeviceFlow].
        max_step_up: How many 403 ``insufficient_scope`` re-authorizations one request may
            trigger before [`InsufficientScopeError`][trio_mcp.auth.InsufficientScopeError].
        refresh_margin: Refresh a token this many seconds before it expires.
        http_client: The ``httpx.AsyncClient`` for requests to the authorization server
            (the caller closes it; default: a short-lived one per flow).
        dpop: DPoP (RFC 9449) proof of possession. ``"auto"`` (default): when the
            resource requires bound tokens, or when the authorization server advertises
            ``dpop_signing_alg_values_supported`` and the MCP server accepts DPoP (its
            ``401`` challenge uses the ``DPoP`` scheme or its metadata lists DPoP
            algorithms), so a Bearer-only server never gets a bound token; ``True``:
            always; ``False``: never; or a private
            key to sign every proof with (a ``cryptography`` EC, Ed25519 or RSA private key,
            or a private JWK ``dict``) instead of a new key pair per token.
    """

    def __init__(
        self,
        *,
        grant: Literal["authorization_code", "client_credentials"]
        | AssertionGrant = "authorization_code",
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        private_key: Any = None,
        signing_algorithm: str = "ES256",
        client_metadata_url: str | None = None,
        client_name: str = "trio-mcp",
        scopes: Sequence[str] | None = None,
        store: TokenStore | None = None,
        user_agent: UserAgent | None = None,
        interactive: bool = True,
        max_step_up: int = 2,
        refresh_margin: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
        dpop: bool | Literal["auto"] | Any = "auto",
        device: _device.DeviceFlow | None = None,
    ) -> None:
        self.assertion_grant: AssertionGrant | None = None
        if isinstance(grant, (_assertions.JWTBearerGrant, _assertions.IdentityAssertionGrant)):
            if isinstance(grant, _assertions.IdentityAssertionGrant) and client_id is None:
                raise ValueError("IdentityAssertionGrant needs OAuth's client_id (the ID-JAG's)")
            self.assertion_grant = grant
            name = "jwt_bearer"
        elif grant in ("authorization_code", "client_credentials"):
            name = grant
        else:
            raise ValueError(f"unknown grant {grant!r}")
        if name == "client_credentials" and client_id is None:
            raise ValueError("the client_credentials grant needs a pre-registered client_id")
        self.grant: str = name
        self.device: _device.DeviceFlow | None = device
        self.client_id: str | None = client_id
        self.client_secret: str | None = client_secret
        self.issuer: str | None = issuer
        self.private_key: Any = private_key
        self.signing_algorithm: str = signing_algorithm
        self.client_metadata_url: str | None = client_metadata_url
        self.client_name: str = client_name
        self.scopes: str | None = " ".join(scopes) if scopes else None
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.user_agent: UserAgent = user_agent if user_agent is not None else LoopbackBrowser()
        self.interactive: bool = interactive
        self.max_step_up: int = max_step_up
        self.refresh_margin: float = refresh_margin
        if isinstance(dpop, str) and dpop != "auto":
            raise ValueError(f"dpop must be True, False, 'auto' or a private key, not {dpop!r}")
        self.dpop: Any = dpop
        # the parts (see the module's docstring); each reads the settings above from self
        self._dpop_nonces = _dpop.NonceCache()  # per server: MCP and authorization servers
        identity = ClientIdentity(self)
        endpoint = TokenEndpoint(self, self._dpop_nonces)
        self._keeper = TokenKeeper(self, identity, endpoint, http_client)
        self._authorizer = Authorizer(self, identity, endpoint, self._keeper, http_client)

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Attach the token; on 401 authorize once and retry; on 403 step up (bounded).

        Args:
            request: The request to the MCP server (httpx calls this).
        """
        server_url = canonical(str(request.url))
        token = await self._keeper.current(server_url, self._authorizer.context(server_url))
        challenges = Challenges(
            server_url,
            self._dpop_nonces,
            max_step_up=self.max_step_up,
            recover=self._authorizer.recover,
            step_up=self._authorizer.step_up,
        )
        again = True
        while again:
            apply(request, token, self._dpop_nonces)
            response = yield request
            again, token = await challenges.retry(request, response, token)
