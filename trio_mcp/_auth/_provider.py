"""The OAuth provider: an :class:`httpx.Auth` that drives discovery, identity and grants.

Pass it as ``auth=`` to :func:`~trio_mcp.open_mcp_session` (any HTTP transport, both eras),
to any number of sessions and server groups at once. Every request carries the token of its
own server's key (``_tokens``: issuer, resource, client), as ``Authorization: Bearer``, or
``DPoP`` with a fresh proof for a DPoP-bound token (RFC 9449). A 401 starts the flow:
discovery (``_metadata``, under the endpoint policy of ``_policy`` and the body bound of
``_bodies``), client identity, a grant (``_flows``, ``_device``, ``_assertions``), then the
request is sent once more. A 403 ``insufficient_scope`` starts a step-up authorization for
the union of the scopes, a bounded number of times. Refreshes run one at a time per key;
authorizations one at a time per provider; requests that hit a 401 meanwhile wait for it
and use its token.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
import trio

from .._exceptions import (
    AuthDiscoveryError,
    AuthError,
    ClientRegistrationError,
    DPoPError,
    DPoPNonceError,
    InsufficientScopeError,
    LoginRequiredError,
    TokenRequestError,
)
from . import _assertions, _bodies, _device, _dpop, _flows, _grants, _metadata, _tokens
from ._assertions import AssertionGrant
from ._browser import LoopbackBrowser, UserAgent
from ._policy import check_endpoint
from ._storage import (
    MemoryTokenStore,
    ServerBindingStore,
    StoredClient,
    StoredServer,
    StoredToken,
    TokenStore,
)

__all__ = ["OAuth"]

logger = logging.getLogger("trio_mcp.auth")

_Token = _tokens.Token


_Context = _flows.Discovery


def _canonical(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


def _scope_union(*scopes: str | None) -> str | None:
    seen: dict[str, None] = {}
    for scope in scopes:
        for item in (scope or "").split():
            seen[item] = None
    return " ".join(seen) or None


def _loaded(
    stored: StoredToken, issuer: str, resource: str, client: _grants.ClientInfo
) -> _Token | None:
    """A stored token, its wall-clock expiry turned into a deadline on trio's clock; ``None``
    for a DPoP token whose key cannot be read (never sent as Bearer)."""
    key = None
    if stored.token_type.lower() == "dpop":
        try:
            key = _dpop.DPoPKey.from_jwk(stored.dpop_jwk or {})
        except DPoPError as exc:
            logger.info("the stored DPoP token has no usable key (%s); ignoring it", exc)
            return None
    return _tokens.from_stored(stored, issuer, resource, client, key)


def _client_slot(issuer: str, client_id: str) -> str:
    """The store key of one registration among several at ``issuer`` (see ``_register``)."""
    return f"{issuer} client_id={client_id}"


def _resource_accepts_dpop(context: _Context) -> bool:
    """Whether the MCP server said it takes DPoP tokens (its challenge or its metadata)."""
    prm = context.prm
    return context.rs_offers_dpop or (
        prm is not None and bool(prm.dpop_signing_alg_values_supported)
    )


class OAuth(httpx.Auth):
    """OAuth 2.1 authorization for HTTP MCP sessions (``auth=OAuth(...)``).

    Client identity is chosen in the spec's order: the pre-registered ``client_id`` (for
    ``issuer``, or any issuer when ``issuer`` is ``None``), a Client ID Metadata Document
    (``client_metadata_url``, when the server supports them), a registration stored for
    the issuer (for a browser login: only one made for the same redirect URI), Dynamic
    Client Registration; else :class:`~trio_mcp.auth.ClientRegistrationError`.

    Args:
        grant: ``"authorization_code"`` (a user, a browser) or ``"client_credentials"``
            (machine to machine; needs ``client_id`` and a secret or ``private_key``), or
            an assertion grant object: :class:`~trio_mcp.auth.JWTBearerGrant` (workload
            identity) or :class:`~trio_mcp.auth.IdentityAssertionGrant` (enterprise-managed
            authorization; needs ``client_id``).
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
        user_agent: The browser step (default: :class:`~trio_mcp.auth.LoopbackBrowser`).
        interactive: ``False``: never start a browser flow; use stored tokens (and refresh
            them), a device flow when ``device`` allows it, or raise
            :class:`~trio_mcp.auth.LoginRequiredError`.
        device: Opt in to the device authorization grant (RFC 8628) where the server
            offers it: a :class:`~trio_mcp.auth.DeviceFlow`.
        max_step_up: How many 403 ``insufficient_scope`` re-authorizations one request may
            trigger before :class:`~trio_mcp.auth.InsufficientScopeError`.
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
        self._http_client = http_client
        # one authorization flow (discovery, a browser or device login) at a time; token
        # refreshes are one at a time per token key (self._tokens.lock)
        self._flow_lock = trio.Lock()
        self._bindings_lock = trio.Lock()
        self._tokens = _tokens.TokenTable()
        self._contexts: dict[str, _Context] = {}  # server URL -> what discovery found
        self._requested_scopes: dict[str, str | None] = {}  # server URL -> last scope asked
        self._bindings_checked: set[str] = set()  # URLs whose stored binding was looked up
        if isinstance(dpop, str) and dpop != "auto":
            raise ValueError(f"dpop must be True, False, 'auto' or a private key, not {dpop!r}")
        self.dpop: Any = dpop
        self._dpop_nonces = _dpop.NonceCache()
        # the key each token response was requested with, until _keep binds it to the token
        self._dpop_issued: dict[str, _dpop.DPoPKey] = {}

    # -- the httpx auth flow ---------------------------------------------------------------

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Attach the token; on 401 authorize once and retry; on 403 step up (bounded).

        Args:
            request: The request to the MCP server (httpx calls this).
        """
        server_url = _canonical(str(request.url))
        token = await self._current_token(server_url)
        if token is None and server_url not in self._bindings_checked:
            token = await self._bound_token(server_url)
        self._apply(request, token)
        response = yield request
        retried_401 = False
        nonce_retried = False
        step_ups = 0
        while True:
            self._dpop_nonces.update(str(request.url), response.headers.get("dpop-nonce"))
            challenge = _metadata.parse_challenge(response.headers.get("www-authenticate"))
            if (
                response.status_code == 401
                and challenge.error == "use_dpop_nonce"
                and token is not None
                and token.dpop is not None
            ):
                if nonce_retried:
                    raise DPoPNonceError(
                        f"{server_url} demanded a new DPoP nonce again after the retry that "
                        "carried its nonce (a nonce loop); giving up"
                    )
                nonce_retried = True
                nonce = _dpop.parse_nonce(response.headers.get("dpop-nonce"), server_url)
                self._dpop_nonces.set(str(request.url), nonce)
                self._apply(request, token)
                response = yield request
                continue
            nonce_retried = False
            if response.status_code == 401:
                if retried_401:
                    raise AuthError(
                        f"{server_url} refused the token it was just issued (HTTP 401, "
                        f"{challenge.error or 'no error code'}); the server and its "
                        "authorization server disagree, nothing more to try"
                    )
                retried_401 = True
                token = await self._recover(server_url, challenge, token)
            elif response.status_code == 403 and challenge.error == "insufficient_scope":
                if step_ups >= self.max_step_up:
                    raise InsufficientScopeError(
                        f"{server_url} still answers 403 insufficient_scope (asking for "
                        f"{challenge.scope!r}) after {step_ups} step-up authorizations; the "
                        "user cannot be granted that scope",
                        scope=challenge.scope,
                    )
                step_ups += 1
                token = await self._step_up(server_url, challenge, token)
            else:
                return
            self._apply(request, token)
            response = yield request

    def _apply(self, request: httpx.Request, token: _Token | None) -> None:
        request.headers.pop("DPoP", None)
        if token is None:
            request.headers.pop("Authorization", None)
        elif token.dpop is not None:  # bound: never sent as Bearer, a fresh proof each time
            url = str(request.url)
            request.headers["Authorization"] = f"DPoP {token.access_token}"
            request.headers["DPoP"] = token.dpop.proof(
                request.method,
                url,
                access_token=token.access_token,
                nonce=self._dpop_nonces.get(url),
            )
        else:
            request.headers["Authorization"] = f"Bearer {token.access_token}"

    # -- tokens ------------------------------------------------------------------------------

    def _expired(self, token: _Token) -> bool:
        return token.deadline is not None and trio.current_time() >= (
            token.deadline - self.refresh_margin
        )

    async def _current_token(self, server_url: str) -> _Token | None:
        """The token to show ``server_url`` now: its own key's, refreshed first when it
        expired (one refresh in flight per key)."""
        token = self._tokens.for_server(server_url)
        if token is None or not self._expired(token):
            await trio.lowlevel.checkpoint()
            return token
        context = self._contexts.get(server_url)
        if token.refresh_token is None or context is None:
            await trio.lowlevel.checkpoint()
            return token  # the server answers 401 and the flow starts over
        async with self._client() as http:
            return await self._refresh_once(http, context, token)

    async def _refresh_once(
        self, http: httpx.AsyncClient, context: _Context, token: _Token
    ) -> _Token | None:
        """Refresh ``token`` unless another task already replaced it (per-key lock);
        ``None`` when the refresh was refused (the token is forgotten)."""
        async with self._tokens.lock(token.key):
            current = self._tokens.get(token.key)
            if current is not None and current is not token and not self._expired(current):
                return current  # another task refreshed (or re-authorized) meanwhile
            if token.refresh_token is None:
                return None
            try:
                return await self._refresh(http, context, token)
            except TokenRequestError as exc:
                logger.info("refreshing the token failed (%s); authorizing again", exc)
                await self._forget(token)
                return None

    async def _recover(
        self, server_url: str, challenge: _metadata.Challenge, failed: _Token | None
    ) -> _Token:
        """After a 401: reuse another task's new token, refresh, a stored token, or authorize."""
        async with self._flow_lock:
            current = self._tokens.for_server(server_url)
            if current is not None and current is not failed:
                return current  # another request's flow already replaced the failed token
            async with self._client() as http:
                context = await self._discover(http, server_url, challenge)
                if (
                    failed is not None
                    and failed.refresh_token is not None
                    and failed.issuer == context.issuer
                    and failed.resource == context.resource
                ):
                    refreshed = await self._refresh_once(http, context, failed)
                    if refreshed is not None and refreshed is not failed:
                        return refreshed
                if failed is not None:
                    await self._forget(failed)
                stored = await self._stored_token(http, context, failed)
                if stored is not None:
                    return stored
                scope = self._choose_scope(context, challenge.scope)
                return await self._authorize(http, context, scope)

    async def _step_up(
        self, server_url: str, challenge: _metadata.Challenge, failed: _Token | None
    ) -> _Token:
        async with self._flow_lock:
            current = self._tokens.for_server(server_url)
            if current is not None and current is not failed:
                return current
            async with self._client() as http:
                context = self._contexts.get(server_url)
                if context is None:
                    context = await self._discover(http, server_url, challenge)
                scope = _scope_union(
                    self._requested_scopes.get(server_url),
                    failed.scope if failed else None,
                    challenge.scope,
                )
                scope = self._with_offline_access(context, scope)
                logger.debug("step-up authorization of %s for scope %r", server_url, scope)
                return await self._authorize(http, context, scope)

    async def _forget(self, token: _Token) -> None:
        """Forget ``token`` (this key only: other servers' tokens are untouched)."""
        self._tokens.forget(token)
        await self.store.delete_token(token.issuer, token.resource, token.client.client_id)

    async def _stored_token(
        self, http: httpx.AsyncClient, context: _Context, failed: _Token | None
    ) -> _Token | None:
        """The stored token of this server's key, refreshed if it expired.

        The client is the one the server URL's stored binding names (its token may have
        been issued to an earlier registration), else this provider's identity.
        """
        client: _grants.ClientInfo | None = None
        if isinstance(self.store, ServerBindingStore):
            bound = await self.store.get_server(context.server_url)
            if (
                bound is not None
                and bound.issuer == context.issuer
                and bound.resource == context.resource
            ):
                client = await self._bound_client(bound)
        if client is None:
            client = await self._client_identity(http, context, None, register=False)
        if client is None:
            return None
        stored = await self.store.get_token(context.issuer, context.resource, client.client_id)
        if stored is None or (failed is not None and stored.access_token == failed.access_token):
            return None
        token = _loaded(stored, context.issuer, context.resource, client)
        if token is None:
            return None
        logger.debug(
            "found a stored %s token for %s (issuer %s, client %s)",
            token.token_type,
            context.resource,
            context.issuer,
            client.client_id,
        )
        if self._expired(token):
            return await self._refresh_once(http, context, token)
        self._tokens.keep(context.server_url, token)
        return token

    async def _keep(
        self,
        context: _Context,
        client: _grants.ClientInfo,
        response: _grants.TokenResponse,
        scope: str | None,
        previous_refresh: str | None = None,
    ) -> _Token:
        deadline = None
        expires_at = None
        if response.expires_in is not None:
            deadline = trio.current_time() + response.expires_in
            expires_at = time.time() + response.expires_in
        # rotation: a new refresh token replaces the old; none returned keeps the old one
        refresh = response.refresh_token or previous_refresh
        key = self._dpop_issued.pop(response.access_token, None)
        if response.token_type.lower() != "dpop":
            key = None  # a Bearer answer to a DPoP request: the token is not bound
        elif key is None:
            raise DPoPError(
                f"authorization server {context.issuer} issued a DPoP-bound token to a token "
                "request that carried no DPoP proof; the token cannot be used. Pass dpop=True "
                "to OAuth if the server requires DPoP without advertising it"
            )
        token = _Token(
            response.access_token,
            response.token_type,
            refresh,
            response.scope or scope,
            deadline,
            context.issuer,
            context.resource,
            client,
            key,
        )
        logger.debug(
            "got a %s token for %s from %s (scope %r, expires in %s s, refresh token: %s)",
            token.token_type,
            context.resource,
            context.issuer,
            token.scope,
            response.expires_in,
            "yes" if refresh else "no",
        )
        self._tokens.keep(context.server_url, token)
        await self.store.set_token(
            context.issuer,
            context.resource,
            client.client_id,
            StoredToken(
                access_token=token.access_token,
                token_type=token.token_type,
                refresh_token=refresh,
                scope=token.scope,
                expires_at=expires_at,
                dpop_jwk=key.private_jwk() if key is not None else None,
            ),
        )
        if isinstance(self.store, ServerBindingStore):
            bound = StoredServer(
                context.issuer, context.resource, client.client_id, client.auth_method
            )
            await self.store.set_server(context.server_url, bound)
        return token

    async def _bound_token(self, server_url: str) -> _Token | None:
        """Before any discovery: the stored token bound to exactly this server URL, if valid.

        ``_keep`` binds a server URL to the issuer and resource discovery validated for it
        (``StoredServer``), so a new provider's first request carries the stored token
        instead of taking a 401 first. The token goes only to the URL discovery bound it
        to, issued by that URL's authorization server for that resource; when the server
        since moved to another authorization server, it answers 401 and the usual flow runs.
        An expired token is left to that flow too (refreshing needs the metadata).
        """
        async with self._bindings_lock:  # not the flow lock: another server's login may wait
            current = self._tokens.for_server(server_url)
            if server_url in self._bindings_checked or current is not None:
                return current
            self._bindings_checked.add(server_url)
            store = self.store
            if not isinstance(store, ServerBindingStore):
                return None
            bound = await store.get_server(server_url)
            client = await self._bound_client(bound) if bound is not None else None
            if bound is None or client is None:
                return None
            stored = await self.store.get_token(bound.issuer, bound.resource, client.client_id)
            if stored is None:
                return None
            token = _loaded(stored, bound.issuer, bound.resource, client)
            if token is None or self._expired(token):
                return None
            logger.debug("using the stored token of %s for %s", bound.issuer, server_url)
            self._tokens.keep(server_url, token)
            return token

    async def _bound_client(self, bound: StoredServer) -> _grants.ClientInfo | None:
        """This provider's identity at ``bound.issuer`` if it is the bound client, else None."""
        if self.client_id is not None:
            if self.client_id != bound.client_id or self.issuer not in (None, bound.issuer):
                return None
            return _grants.ClientInfo(
                self.client_id, self.client_secret, bound.auth_method, self.issuer
            )
        if self.client_metadata_url is not None and self.client_metadata_url == bound.client_id:
            return _grants.ClientInfo(self.client_metadata_url, None, "none", bound.issuer)
        stored = await self.store.get_client(_client_slot(bound.issuer, bound.client_id))
        if stored is None or stored.client_id != bound.client_id:
            stored = await self.store.get_client(bound.issuer)  # stored before the slots
        if stored is None or stored.client_id != bound.client_id:
            return None
        return _grants.ClientInfo(
            stored.client_id, stored.client_secret, stored.auth_method, bound.issuer
        )

    # -- discovery -------------------------------------------------------------------------

    @asynccontextmanager
    async def _client(self) -> AsyncGenerator[httpx.AsyncClient]:
        if self._http_client is not None:
            yield self._http_client
            return
        async with httpx.AsyncClient(follow_redirects=False, timeout=30.0) as client:
            yield client

    async def _discover(
        self, http: httpx.AsyncClient, server_url: str, challenge: _metadata.Challenge
    ) -> _Context:
        """Protected-resource metadata, then the authorization server's, for ``server_url``.

        Every URL found passes the endpoint policy (:mod:`._policy`); every document is read
        with the 1 MiB bound (:mod:`._bodies`).
        """
        prm: _metadata.ProtectedResourceMetadata | None = None
        for url in _metadata.prm_urls(server_url, challenge.resource_metadata):
            body = await _metadata.fetch(http, url)
            if body is not None:
                prm = _metadata.decode_prm(body, url)
                logger.debug("%s: protected-resource metadata at %s", server_url, url)
                break
        if prm is not None:
            if not _metadata.resource_covers(prm.resource, server_url):
                raise AuthDiscoveryError(
                    f"the protected-resource metadata of {server_url} is for resource "
                    f"{prm.resource!r}, which does not cover this server; refusing to "
                    "authorize (a token for it could be replayed elsewhere)"
                )
            resource = prm.resource
            issuer = check_endpoint(prm.authorization_servers[0], "the authorization server")
        else:
            # 2025-03-26: no protected-resource metadata; the server's origin is the issuer
            parts = urlsplit(server_url)
            issuer = f"{parts.scheme}://{parts.netloc}"
            resource = server_url
            logger.debug("%s: no protected-resource metadata; issuer %s", server_url, issuer)
        metadata: _metadata.AuthorizationServerMetadata | None = None
        for url in _metadata.as_metadata_urls(issuer):
            body = await _metadata.fetch(http, url)
            if body is not None:
                metadata = _metadata.decode_as_metadata(body, url, issuer)
                logger.debug("%s: authorization-server metadata at %s", server_url, url)
                break
        if metadata is None:
            if prm is not None:
                raise AuthDiscoveryError(
                    f"authorization server {issuer} publishes no metadata at "
                    f"{', '.join(_metadata.as_metadata_urls(issuer))}"
                )
            metadata = _metadata.legacy_metadata(issuer)
        if (
            self.grant == "authorization_code"
            and "S256" not in (metadata.code_challenge_methods_supported or [])
            and not _device.should_use(self, metadata)  # the device flow needs no PKCE
        ):
            raise AuthDiscoveryError(
                f"authorization server {issuer} does not advertise PKCE S256 "
                "(code_challenge_methods_supported); refusing the authorization code flow"
            )
        context = _Context(
            server_url, resource, issuer, metadata, prm, challenge.scheme.lower() == "dpop"
        )
        logger.debug(
            "%s: resource %s, issuer %s; authorization %s, token %s, registration %s, device %s",
            server_url,
            resource,
            issuer,
            metadata.authorization_endpoint,
            metadata.token_endpoint,
            metadata.registration_endpoint,
            metadata.device_authorization_endpoint,
        )
        previous = self._contexts.get(server_url)
        if previous is not None and previous.issuer != issuer:
            logger.info("authorization server changed: %s -> %s", previous.issuer, issuer)
        self._contexts[server_url] = context
        return context

    def _choose_scope(self, context: _Context, challenged: str | None) -> str | None:
        scope = self.scopes or challenged
        if scope is None and context.prm is not None and context.prm.scopes_supported:
            scope = " ".join(context.prm.scopes_supported)
        return self._with_offline_access(context, scope)

    def _with_offline_access(self, context: _Context, scope: str | None) -> str | None:
        supported = context.metadata.scopes_supported or []
        if (
            scope
            and self.grant == "authorization_code"
            and "offline_access" in supported
            and "offline_access" not in scope.split()
        ):
            return f"{scope} offline_access"
        return scope

    # -- client identity ---------------------------------------------------------------------

    async def _client_identity(
        self,
        http: httpx.AsyncClient,
        context: _Context,
        redirect_uri: str | None,
        *,
        register: bool,
        grant_types: list[str] | None = None,
    ) -> _grants.ClientInfo | None:
        metadata = context.metadata
        if self.client_id is not None and self.issuer in (None, context.issuer):
            method = _grants.choose_auth_method(
                metadata.token_endpoint_auth_methods_supported,
                has_secret=self.client_secret is not None,
                has_key=self.private_key is not None,
            )
            logger.debug("client: pre-registered %s (%s)", self.client_id, method)
            return _grants.ClientInfo(self.client_id, self.client_secret, method, self.issuer)
        if self.client_metadata_url is not None and metadata.client_id_metadata_document_supported:
            logger.debug("client: Client ID Metadata Document %s", self.client_metadata_url)
            return _grants.ClientInfo(self.client_metadata_url, None, "none", context.issuer)
        stored = await self.store.get_client(context.issuer)
        if stored is not None and (redirect_uri is None or stored.redirect_uri == redirect_uri):
            logger.debug("client: stored registration %s at %s", stored.client_id, context.issuer)
            return _grants.ClientInfo(
                stored.client_id, stored.client_secret, stored.auth_method, context.issuer
            )
        if not register:
            return None
        if stored is not None and metadata.registration_endpoint is None:
            return _grants.ClientInfo(  # no way to register again: try the one there is
                stored.client_id, stored.client_secret, stored.auth_method, context.issuer
            )
        if stored is not None:
            # An authorization server matches redirect URIs exactly (the MCP spec requires
            # it): a registration made for another redirect URI (another loopback port)
            # would be refused, so this login registers for its own.
            logger.debug(
                "client: the stored registration %s is for redirect URI %s, not %s; "
                "registering again",
                stored.client_id,
                stored.redirect_uri,
                redirect_uri,
            )
        if metadata.registration_endpoint is None or (redirect_uri is None and not grant_types):
            raise ClientRegistrationError(
                f"no client identity for authorization server {context.issuer}: it offers "
                "neither Client ID Metadata Documents nor Dynamic Client Registration. "
                "Register a client there and pass client_id= (and client_secret=) to OAuth"
            )
        return await self._register(http, context, redirect_uri, grant_types)

    async def _register(
        self,
        http: httpx.AsyncClient,
        context: _Context,
        redirect_uri: str | None,
        grant_types: list[str] | None = None,
    ) -> _grants.ClientInfo:
        metadata = context.metadata
        supported = metadata.token_endpoint_auth_methods_supported or []
        wanted = "none" if "none" in supported or not supported else supported[0]
        request = _grants.RegistrationRequest(
            client_name=self.client_name,
            redirect_uris=[redirect_uri] if redirect_uri is not None else [],
            grant_types=grant_types or ["authorization_code", "refresh_token"],
            token_endpoint_auth_method=wanted,
        )
        url = metadata.registration_endpoint or ""
        response = await _bodies.send(
            http,
            "POST",
            url,
            error=ClientRegistrationError,
            doing=f"registering at {url}",
            content=request.body(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        if response.status_code not in (200, 201):
            error = _grants.oauth_error(response, response.content, f"registering at {url}")
            raise ClientRegistrationError(str(error)) from error
        try:
            registered = _grants.registration_decoder.decode(response.content)
        except Exception as exc:
            raise ClientRegistrationError(
                f"{url} answered the registration with a malformed document ({exc})"
            ) from exc
        method = _grants.choose_auth_method(
            supported or None,
            has_secret=registered.client_secret is not None,
            has_key=False,
            registered=registered.token_endpoint_auth_method,
        )
        client = _grants.ClientInfo(
            registered.client_id, registered.client_secret, method, context.issuer
        )
        entry = StoredClient(client.client_id, client.client_secret, method, redirect_uri)
        # the issuer's current registration, and this one by its client id (a token stored
        # for a server stays usable with the client it was issued to after a re-registration)
        await self.store.set_client(context.issuer, entry)
        await self.store.set_client(_client_slot(context.issuer, client.client_id), entry)
        logger.debug(
            "client: registered dynamically at %s as %s (%s, redirect URI %s)",
            url,
            client.client_id,
            method,
            redirect_uri,
        )
        return client

    # -- grants ----------------------------------------------------------------------------

    async def _authorize(
        self, http: httpx.AsyncClient, context: _Context, scope: str | None
    ) -> _Token:
        """Run this provider's grant for ``context`` (the flows are in ``_flows``,
        ``_device`` and ``_assertions``)."""
        self._requested_scopes[context.server_url] = scope
        logger.debug("authorizing %s: scope %r", context.server_url, scope)
        flow = _flows.Flow(
            http=http,
            context=context,
            scope=scope,
            private_key=self.private_key,
            signing_algorithm=self.signing_algorithm,
            identity=functools.partial(self._client_identity, http, context),
            token_request=functools.partial(self._token_request, http, context),
            keep=lambda client, answer: self._keep(context, client, answer, scope),
        )
        if self.grant == "client_credentials":
            return await _flows.client_credentials(flow)
        if self.assertion_grant is not None:
            return await _assertions.authorize(flow, self.assertion_grant)
        if self.device is not None and _device.should_use(self, context.metadata):
            return await _device.authorize(flow, self.device)
        if not self.interactive:
            raise LoginRequiredError(
                f"{context.server_url} needs an authorization by its user (authorization "
                f"server {context.issuer}) and this OAuth is headless (interactive=False); "
                "log in once with a browser (trio-mcp auth login) so a token is stored"
            )
        return await _flows.authorization_code(flow, self.user_agent)

    async def _refresh(self, http: httpx.AsyncClient, context: _Context, token: _Token) -> _Token:
        assert token.refresh_token is not None
        form = {
            "grant_type": "refresh_token",
            "refresh_token": token.refresh_token,
            "resource": context.resource,
        }
        response = await self._token_request(http, context, token.client, form, dpop=token.dpop)
        return await self._keep(context, token.client, response, token.scope, token.refresh_token)

    async def _token_request(
        self,
        http: httpx.AsyncClient,
        context: _Context,
        client: _grants.ClientInfo,
        form: dict[str, str],
        *,
        dpop: _dpop.DPoPKey | None = None,
    ) -> _grants.TokenResponse:
        """POST ``form`` to the token endpoint, with a DPoP proof when DPoP is in use.

        ``dpop`` is the key of the token being refreshed; otherwise a new token gets a new
        key (:meth:`_dpop_key`). A ``use_dpop_nonce`` answer is retried once with the
        server's nonce. The key of a successful answer waits in ``_dpop_issued`` for
        :meth:`_keep`, so every grant that goes through here gets DPoP.
        """
        url = context.metadata.token_endpoint or ""
        key = dpop if dpop is not None else await self._dpop_key(context)
        doing = f"the {form['grant_type']} token request to {url}"
        for attempt in (1, 2):
            attempt_form = dict(form)  # a fresh client assertion (jti) for the retry too
            headers: dict[str, str] = {}
            _grants.authenticate(
                attempt_form,
                headers,
                client,
                audience=context.metadata.issuer,
                private_key=self.private_key,
                signing_algorithm=self.signing_algorithm,
            )
            if key is not None:
                headers["DPoP"] = key.proof("POST", url, nonce=self._dpop_nonces.get(url))
            response = await _grants.post_form(
                http, url, attempt_form, headers, f"the token request to {url}"
            )
            self._dpop_nonces.update(url, response.headers.get("dpop-nonce"))
            if response.status_code == 200:
                token = _grants.decode_token_response(response.content, url)
                if key is not None:
                    if len(self._dpop_issued) >= 16:  # answers _keep never saw
                        self._dpop_issued.pop(next(iter(self._dpop_issued)))
                    self._dpop_issued[token.access_token] = key
                return token
            error = _grants.oauth_error(response, response.content, doing)
            if error.error == "use_dpop_nonce" and key is not None:
                if attempt == 2:
                    raise DPoPNonceError(
                        f"authorization server {context.issuer} demanded a new DPoP nonce "
                        "again after the retry that carried its nonce (a nonce loop); giving up"
                    ) from error
                nonce = _dpop.parse_nonce(response.headers.get("dpop-nonce"), url)
                self._dpop_nonces.set(url, nonce)
                continue
            if key is None and error.error in ("use_dpop_nonce", "invalid_dpop_proof"):
                advertised = context.metadata.dpop_signing_alg_values_supported
                raise DPoPError(
                    f"authorization server {context.issuer} demands DPoP proofs "
                    f"({error.error}) but advertises no signing algorithm trio_mcp supports "
                    f"(it lists {advertised!r}; supported: "
                    f"{', '.join(_dpop.SUPPORTED_ALGORITHMS)})"
                ) from error
            raise error
        raise AssertionError("unreachable")  # pragma: no cover

    async def _dpop_key(self, context: _Context) -> _dpop.DPoPKey | None:
        """The key for a new token: the user's, a new pair, or ``None`` (no DPoP)."""
        await trio.lowlevel.checkpoint()
        if self.dpop is False:
            return None
        advertised = context.metadata.dpop_signing_alg_values_supported
        if self.dpop is not True and self.dpop != "auto":
            return _dpop.DPoPKey.from_user(self.dpop, advertised)
        required = self.dpop is True or (
            context.prm is not None and context.prm.dpop_bound_access_tokens_required
        )
        if advertised is None and not required:
            return None
        if self.dpop == "auto" and not required and not _resource_accepts_dpop(context):
            # A DPoP-bound token is useless to a resource server that takes only Bearer
            # tokens (the common case): bind only when the resource says it accepts DPoP.
            return None
        algorithm = _dpop.choose_algorithm(advertised)
        resource_algs = context.prm.dpop_signing_alg_values_supported if context.prm else None
        if advertised is not None and resource_algs:
            both = [alg for alg in advertised if alg in resource_algs]
            algorithm = _dpop.choose_algorithm(both) or algorithm
        if algorithm is None:
            if required:
                raise DPoPError(
                    f"DPoP is required for {context.server_url} but authorization server "
                    f"{context.issuer} advertises no signing algorithm trio_mcp supports "
                    f"(dpop_signing_alg_values_supported: {advertised!r}; supported: "
                    f"{', '.join(_dpop.SUPPORTED_ALGORITHMS)})"
                )
            logger.info(
                "authorization server %s offers DPoP only with %r; using bearer tokens",
                context.issuer,
                advertised,
            )
            return None
        # RSA key generation takes 80-270 ms: never on the event loop
        logger.debug("generating a DPoP key (%s) in a worker thread", algorithm)
        return await trio.to_thread.run_sync(
            _dpop.DPoPKey.generate, algorithm, abandon_on_cancel=True
        )
