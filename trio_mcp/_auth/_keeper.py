"""Keeping tokens: a grant's answer turned into a token and stored, stored ones found again.

The `TokenKeeper` of a provider holds its `TokenTable` (one token
per ``(issuer, resource, client_id)`` and the key of each server URL) and its token store:

* `keep()` turns a token endpoint's answer into the token of a server's
  key (bound to its DPoP key, if any), keeps it, stores it, and binds the server URL to
  its issuer and resource in a [`ServerBindingStore`][trio_mcp.auth.ServerBindingStore].
* `refresh_once()` refreshes one at a time per key: a task that waited
  for another's refresh uses its token, so a rotating refresh token is never spent twice.
* `current()` is the token to show a server now (refreshed first when it
  expired); `bound()` the stored token bound to exactly this server URL
  (before any discovery); `stored()` the stored token of a server's key
  after discovery.
* `forget()` drops one key's token (a ``401`` from one server forgets
  only that server's token).
"""

from __future__ import annotations

import logging
import time

import httpx
import trio

from .._exceptions import DPoPError, TokenRequestError
from . import _bodies, _dpop, _grants, _tokens
from ._identity import ClientIdentity
from ._metadata import Discovery
from ._settings import Settings
from ._storage import ServerBindingStore, StoredServer, StoredToken
from ._token_endpoint import TokenEndpoint
from ._tokens import Token

__all__ = ["TokenKeeper", "loaded"]

logger = logging.getLogger("trio_mcp.auth")


def loaded(
    stored: StoredToken, issuer: str, resource: str, client: _grants.ClientInfo
) -> Token | None:
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


class TokenKeeper:
    """The tokens of one provider, in memory and in its store.

    Args:
        settings: The provider (its ``store`` and ``refresh_margin``, read at each use).
        identity: Its client identity (which client a stored token belongs to).
        endpoint: Its token endpoint (refreshes; the DPoP key of each answer).
        http_client: The caller's client for the authorization server, if any.
    """

    def __init__(
        self,
        settings: Settings,
        identity: ClientIdentity,
        endpoint: TokenEndpoint,
        http_client: httpx.AsyncClient | None,
    ) -> None:
        self._settings = settings
        self._identity = identity
        self._endpoint = endpoint
        self._http_client = http_client
        self._tokens = _tokens.TokenTable()
        self._bindings_lock = trio.Lock()
        self._bindings_checked: set[str] = set()  # URLs whose stored binding was looked up

    def for_server(self, server_url: str) -> Token | None:
        """The token ``server_url`` (canonical) is shown now, if any (no refresh)."""
        return self._tokens.for_server(server_url)

    def expired(self, token: Token) -> bool:
        """Whether ``token`` expired, or expires within the provider's ``refresh_margin``."""
        return token.deadline is not None and trio.current_time() >= (
            token.deadline - self._settings.refresh_margin
        )

    async def current(self, server_url: str, context: Discovery | None) -> Token | None:
        """The token to show ``server_url`` now: its own key's, refreshed first when it
        expired (one refresh in flight per key); else the stored token bound to this URL,
        looked up once (`bound()`).

        Args:
            server_url: The canonical URL of the MCP server.
            context: What discovery found for it, if it ran (a refresh needs it).
        """
        token = self._tokens.for_server(server_url)
        if token is None or not self.expired(token):
            await trio.lowlevel.checkpoint()
        elif token.refresh_token is None or context is None:
            await trio.lowlevel.checkpoint()  # the server answers 401; the flow starts over
        else:
            async with _bodies.open_client(self._http_client) as http:
                token = await self.refresh_once(http, context, token)
        if token is None and server_url not in self._bindings_checked:
            token = await self.bound(server_url)
        return token

    async def refresh_once(
        self, http: httpx.AsyncClient, context: Discovery, token: Token
    ) -> Token | None:
        """Refresh ``token`` unless another task already replaced it (per-key lock);
        ``None`` when the refresh was refused (the token is forgotten)."""
        async with self._tokens.lock(token.key):
            current = self._tokens.get(token.key)
            if current is not None and current is not token and not self.expired(current):
                return current  # another task refreshed (or re-authorized) meanwhile
            if token.refresh_token is None:
                return None
            try:
                return await self._refresh(http, context, token)
            except TokenRequestError as exc:
                logger.info("refreshing the token failed (%s); authorizing again", exc)
                await self.forget(token)
                return None

    async def _refresh(self, http: httpx.AsyncClient, context: Discovery, token: Token) -> Token:
        assert token.refresh_token is not None
        form = {
            "grant_type": "refresh_token",
            "refresh_token": token.refresh_token,
            "resource": context.resource,
        }
        response = await self._endpoint.request(http, context, token.client, form, dpop=token.dpop)
        return await self.keep(context, token.client, response, token.scope, token.refresh_token)

    async def forget(self, token: Token) -> None:
        """Forget ``token`` (this key only: other servers' tokens are untouched)."""
        self._tokens.forget(token)
        await self._settings.store.delete_token(
            token.issuer, token.resource, token.client.client_id
        )

    async def stored(
        self, http: httpx.AsyncClient, context: Discovery, failed: Token | None
    ) -> Token | None:
        """The stored token of this server's key, refreshed if it expired.

        The client is the one the server URL's stored binding names (its token may have
        been issued to an earlier registration), else this provider's identity.
        """
        store = self._settings.store
        client: _grants.ClientInfo | None = None
        if isinstance(store, ServerBindingStore):
            bound = await store.get_server(context.server_url)
            if (
                bound is not None
                and bound.issuer == context.issuer
                and bound.resource == context.resource
            ):
                client = await self._identity.bound(bound)
        if client is None:
            client = await self._identity.choose(http, context, None, register=False)
        if client is None:
            return None
        stored = await store.get_token(context.issuer, context.resource, client.client_id)
        if stored is None or (failed is not None and stored.access_token == failed.access_token):
            return None
        token = loaded(stored, context.issuer, context.resource, client)
        if token is None:
            return None
        logger.debug(
            "found a stored %s token for %s (issuer %s, client %s)",
            token.token_type,
            context.resource,
            context.issuer,
            client.client_id,
        )
        if self.expired(token):
            return await self.refresh_once(http, context, token)
        self._tokens.keep(context.server_url, token)
        return token

    async def keep(
        self,
        context: Discovery,
        client: _grants.ClientInfo,
        response: _grants.TokenResponse,
        scope: str | None,
        previous_refresh: str | None = None,
    ) -> Token:
        """Make the token of ``response`` the one of this server's key, and store it.

        Args:
            context: What discovery found for the server.
            client: The client the token was issued to.
            response: The token endpoint's answer.
            scope: The scope asked for (when the answer names none).
            previous_refresh: The refresh token a refresh spent (kept when the answer
                brings no new one).

        Raises:
            DPoPError: A DPoP-bound token answered a request that carried no proof.
        """
        deadline = None
        expires_at = None
        if response.expires_in is not None:
            deadline = trio.current_time() + response.expires_in
            expires_at = time.time() + response.expires_in
        # rotation: a new refresh token replaces the old; none returned keeps the old one
        refresh = response.refresh_token or previous_refresh
        key = self._endpoint.issued_key(response.access_token)
        if response.token_type.lower() != "dpop":
            key = None  # a Bearer answer to a DPoP request: the token is not bound
        elif key is None:
            raise DPoPError(
                f"authorization server {context.issuer} issued a DPoP-bound token to a token "
                "request that carried no DPoP proof; the token cannot be used. Pass dpop=True "
                "to OAuth if the server requires DPoP without advertising it"
            )
        token = Token(
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
        store = self._settings.store
        await store.set_token(
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
        if isinstance(store, ServerBindingStore):
            bound = StoredServer(
                context.issuer, context.resource, client.client_id, client.auth_method
            )
            await store.set_server(context.server_url, bound)
        return token

    async def bound(self, server_url: str) -> Token | None:
        """Before any discovery: the stored token bound to exactly this server URL, if valid.

        `keep()` binds a server URL to the issuer and resource discovery validated for
        it (``StoredServer``), so a new provider's first request carries the stored token
        instead of taking a 401 first. The token goes only to the URL discovery bound it
        to, issued by that URL's authorization server for that resource; when the server
        since moved to another authorization server, it answers 401 and the usual flow
        runs. An expired token is left to that flow too (refreshing needs the metadata).
        """
        async with self._bindings_lock:  # not the flow lock: another server's login may wait
            current = self._tokens.for_server(server_url)
            if server_url in self._bindings_checked or current is not None:
                return current
            self._bindings_checked.add(server_url)
            store = self._settings.store
            if not isinstance(store, ServerBindingStore):
                return None
            bound = await store.get_server(server_url)
            client = await self._identity.bound(bound) if bound is not None else None
            if bound is None or client is None:
                return None
            stored = await store.get_token(bound.issuer, bound.resource, client.client_id)
            if stored is None:
                return None
            token = loaded(stored, bound.issuer, bound.resource, client)
            if token is None or self.expired(token):
                return None
            logger.debug("using the stored token of %s for %s", bound.issuer, server_url)
            self._tokens.keep(server_url, token)
            return token
