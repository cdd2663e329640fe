"""Authorizing: what a provider does when a server refuses its token.

The `Authorizer` of a provider runs one authorization at a time (its flow lock: a
browser or device login, the discovery before it); requests that hit a ``401`` meanwhile
wait for it and use its token.

* `recover()` (after a ``401``): discovery (``_metadata``), then the
  cheapest way to a token: another request's new token, a refresh, a stored token
  (``_keeper``), else the provider's grant (`authorize()`).
* `step_up()` (after a ``403 insufficient_scope``): the grant again, for
  the union of the scopes asked before, held, and asked for now.
* `authorize()` picks the grant: client credentials, an assertion grant
  (``_assertions``), the device flow (``_device``), or the authorization code flow with
  the user agent (``_flows``); a headless provider never starts a browser
  ([`LoginRequiredError`][trio_mcp.auth.LoginRequiredError]).
"""

from __future__ import annotations

import functools
import logging

import httpx
import trio

from .._exceptions import AuthDiscoveryError, LoginRequiredError
from . import _assertions, _bodies, _device, _flows, _metadata
from ._challenges import scope_union
from ._identity import ClientIdentity
from ._keeper import TokenKeeper
from ._metadata import Discovery
from ._settings import Settings
from ._token_endpoint import TokenEndpoint
from ._tokens import Token

__all__ = ["Authorizer"]

logger = logging.getLogger("trio_mcp.auth")


class Authorizer:
    """The authorizations of one provider, one at a time.

    Args:
        settings: The provider (its grant, scopes, user agent, ``interactive``,
            ``device``, read at each authorization).
        identity: Its client identity.
        endpoint: Its token endpoint.
        keeper: Its tokens.
        http_client: The caller's client for the authorization server, if any.
    """

    def __init__(
        self,
        settings: Settings,
        identity: ClientIdentity,
        endpoint: TokenEndpoint,
        keeper: TokenKeeper,
        http_client: httpx.AsyncClient | None,
    ) -> None:
        self._settings = settings
        self._identity = identity
        self._endpoint = endpoint
        self._keeper = keeper
        self._http_client = http_client
        self._flow_lock = trio.Lock()  # one authorization flow at a time
        self._contexts: dict[str, Discovery] = {}  # server URL -> what discovery found
        self._requested_scopes: dict[str, str | None] = {}  # server URL -> last scope asked

    def context(self, server_url: str) -> Discovery | None:
        """What the last discovery found for ``server_url``, if it ran."""
        return self._contexts.get(server_url)

    async def recover(
        self, server_url: str, challenge: _metadata.Challenge, failed: Token | None
    ) -> Token:
        """After a 401: reuse another task's new token, refresh, a stored token, or authorize."""
        keeper = self._keeper
        async with self._flow_lock:
            current = keeper.for_server(server_url)
            if current is not None and current is not failed:
                return current  # another request's flow already replaced the failed token
            async with _bodies.open_client(self._http_client) as http:
                context = await self._discover(http, server_url, challenge)
                if (
                    failed is not None
                    and failed.refresh_token is not None
                    and failed.issuer == context.issuer
                    and failed.resource == context.resource
                ):
                    refreshed = await keeper.refresh_once(http, context, failed)
                    if refreshed is not None and refreshed is not failed:
                        return refreshed
                if failed is not None:
                    await keeper.forget(failed)
                stored = await keeper.stored(http, context, failed)
                if stored is not None:
                    return stored
                scope = self._choose_scope(context, challenge.scope)
                return await self.authorize(http, context, scope)

    async def step_up(
        self, server_url: str, challenge: _metadata.Challenge, failed: Token | None
    ) -> Token:
        """After a 403 ``insufficient_scope``: authorize for the union of the scopes."""
        async with self._flow_lock:
            current = self._keeper.for_server(server_url)
            if current is not None and current is not failed:
                return current
            async with _bodies.open_client(self._http_client) as http:
                context = self._contexts.get(server_url)
                if context is None:
                    context = await self._discover(http, server_url, challenge)
                scope = scope_union(
                    self._requested_scopes.get(server_url),
                    failed.scope if failed else None,
                    challenge.scope,
                )
                scope = self._with_offline_access(context, scope)
                logger.debug("step-up authorization of %s for scope %r", server_url, scope)
                return await self.authorize(http, context, scope)

    async def authorize(
        self, http: httpx.AsyncClient, context: Discovery, scope: str | None
    ) -> Token:
        """Run this provider's grant for ``context`` (the flows are in ``_flows``,
        ``_device`` and ``_assertions``)."""
        settings = self._settings
        self._requested_scopes[context.server_url] = scope
        logger.debug("authorizing %s: scope %r", context.server_url, scope)
        flow = _flows.Flow(
            http=http,
            context=context,
            scope=scope,
            private_key=settings.private_key,
            signing_algorithm=settings.signing_algorithm,
            identity=functools.partial(self._identity.choose, http, context),
            token_request=functools.partial(self._endpoint.request, http, context),
            keep=lambda client, answer: self._keeper.keep(context, client, answer, scope),
        )
        if settings.grant == "client_credentials":
            return await _flows.client_credentials(flow)
        if settings.assertion_grant is not None:
            return await _assertions.authorize(flow, settings.assertion_grant)
        if settings.device is not None and self._uses_device(context.metadata):
            return await _device.authorize(flow, settings.device)
        if not settings.interactive:
            raise LoginRequiredError(
                f"{context.server_url} needs an authorization by its user (authorization "
                f"server {context.issuer}) and this OAuth is headless (interactive=False); "
                "log in once with a browser (trio-mcp auth login) so a token is stored"
            )
        return await _flows.authorization_code(flow, settings.user_agent)

    def _uses_device(self, metadata: _metadata.AuthorizationServerMetadata) -> bool:
        settings = self._settings
        return _device.should_use(
            settings.device,
            metadata,
            interactive=settings.interactive,
            user_agent=settings.user_agent,
        )

    async def _discover(
        self, http: httpx.AsyncClient, server_url: str, challenge: _metadata.Challenge
    ) -> Discovery:
        """Discovery for ``server_url`` (`_metadata.discover()`), remembered; an
        authorization code flow needs PKCE S256."""
        context = await _metadata.discover(http, server_url, challenge)
        issuer, metadata = context.issuer, context.metadata
        if (
            self._settings.grant == "authorization_code"
            and "S256" not in (metadata.code_challenge_methods_supported or [])
            and not self._uses_device(metadata)  # the device flow needs no PKCE
        ):
            raise AuthDiscoveryError(
                f"authorization server {issuer} does not advertise PKCE S256 "
                "(code_challenge_methods_supported); refusing the authorization code flow"
            )
        logger.debug(
            "%s: resource %s, issuer %s; authorization %s, token %s, registration %s, device %s",
            server_url,
            context.resource,
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

    def _choose_scope(self, context: Discovery, challenged: str | None) -> str | None:
        scope = self._settings.scopes or challenged
        if scope is None and context.prm is not None and context.prm.scopes_supported:
            scope = " ".join(context.prm.scopes_supported)
        return self._with_offline_access(context, scope)

    def _with_offline_access(self, context: Discovery, scope: str | None) -> str | None:
        supported = context.metadata.scopes_supported or []
        if (
            scope
            and self._settings.grant == "authorization_code"
            and "offline_access" in supported
            and "offline_access" not in scope.split()
        ):
            return f"{scope} offline_access"
        return scope
