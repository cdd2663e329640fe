"""Client identity: which ``client_id`` this client is at an authorization server.

Chosen in the MCP spec's order (`ClientIdentity.choose`): the pre-registered
``client_id`` (for its ``issuer``, or any issuer), a Client ID Metadata Document (when the
server supports them), a registration stored for the issuer (for a browser login: only
one made for the same redirect URI), Dynamic Client Registration (`ClientIdentity.register()`);
else [`ClientRegistrationError`][trio_mcp.auth.ClientRegistrationError].
A confidential identity (a client secret, a private key, an assertion) is bound to one
issuer (`ClientIdentity.check_issuer`): ``issuer=``, else the first one it is used with.

Registrations are per redirect URI: an authorization server matches redirect URIs
exactly, and ``LoopbackBrowser`` listens on a new port for each login, so a login whose
redirect URI differs registers again. Each registration is stored twice: as the issuer's
current one, and by its client id (`client_slot()`), so a token stored for a server
stays usable with the client it was issued to (`ClientIdentity.bound()`).
"""

from __future__ import annotations

import logging

import httpx

from .._exceptions import ClientRegistrationError
from . import _bodies, _grants
from ._metadata import Discovery
from ._settings import Settings
from ._storage import StoredClient, StoredServer

__all__ = ["ClientIdentity", "client_slot", "confidential"]

logger = logging.getLogger("trio_mcp.auth")


def client_slot(issuer: str, client_id: str) -> str:
    """The store key of one registration among several at ``issuer``."""
    return f"{issuer} client_id={client_id}"


def confidential(settings: Settings) -> str | None:
    """What in ``settings`` is a credential bound to one issuer, or None when nothing is.

    A client secret, a private key, an assertion grant and the client credentials grant
    are sent to (or only valid at) one authorization server, so they are given to one
    issuer only: ``issuer=``, else the first one they are used with.
    """
    if settings.client_secret is not None:
        return "a client secret"
    if settings.private_key is not None:
        return "a private key"
    if settings.assertion_grant is not None:
        return "an assertion grant"
    if settings.grant == "client_credentials":
        return "the client credentials grant"
    return None


class ClientIdentity:
    """The client identity of one provider at each authorization server.

    Args:
        settings: The provider (its ``client_id``, ``client_secret``, ``issuer``,
            ``private_key``, ``client_metadata_url``, ``client_name`` and ``store``, read
            at each use).
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._pinned: str | None = None  # the issuer a confidential identity was first used at

    def check_issuer(self, issuer: str) -> None:
        """Refuse ``issuer`` unless this provider's credentials may go there.

        A confidential identity (`confidential`) is bound to ``issuer=``, or, when
        that is ``None``, to the first issuer it is used with (validated discovery, or a
        stored token's); any other issuer is refused before anything is sent to it.

        Raises:
            ClientRegistrationError: ``issuer`` is not the one the credentials are bound to
                (the message names both).
        """
        settings = self._settings
        what = confidential(settings)
        if what is None:
            return
        expected = settings.issuer or self._pinned
        if expected is None:
            logger.info("client: credentials bound to the first issuer used, %s", issuer)
            self._pinned = issuer
            return
        if issuer != expected:
            why = "OAuth's issuer=" if settings.issuer else "the first issuer they were used with"
            raise ClientRegistrationError(
                f"authorization server {issuer} is not {expected}, the one issuer this "
                f"client's credentials ({what}) are bound to ({why}); refusing to send them "
                "there. Give each authorization server its own OAuth(..., issuer=...)"
            )

    async def choose(
        self,
        http: httpx.AsyncClient,
        context: Discovery,
        redirect_uri: str | None,
        *,
        register: bool,
        grant_types: list[str] | None = None,
    ) -> _grants.ClientInfo | None:
        """The client identity at ``context.issuer`` for a login with ``redirect_uri``.

        Args:
            http: The client for the authorization server.
            context: What discovery found.
            redirect_uri: The login's redirect URI (``None``: no browser step).
            register: Register dynamically when there is no identity yet.
            grant_types: The grant types to register (default: the authorization code and
                the refresh token).

        Returns:
            The identity, or ``None`` when there is none and ``register`` is false.

        Raises:
            ClientRegistrationError: No way to get an identity, or the registration failed.
        """
        settings = self._settings
        metadata = context.metadata
        self.check_issuer(context.issuer)
        if settings.client_id is not None and settings.issuer in (None, context.issuer):
            method = _grants.choose_auth_method(
                metadata.token_endpoint_auth_methods_supported,
                has_secret=settings.client_secret is not None,
                has_key=settings.private_key is not None,
            )
            logger.debug("client: pre-registered %s (%s)", settings.client_id, method)
            return _grants.ClientInfo(
                settings.client_id, settings.client_secret, method, settings.issuer
            )
        metadata_url = settings.client_metadata_url
        if metadata_url is not None and metadata.client_id_metadata_document_supported:
            logger.debug("client: Client ID Metadata Document %s", metadata_url)
            return _grants.ClientInfo(metadata_url, None, "none", context.issuer)
        stored = await settings.store.get_client(context.issuer)
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
        return await self.register(http, context, redirect_uri, grant_types)

    async def register(
        self,
        http: httpx.AsyncClient,
        context: Discovery,
        redirect_uri: str | None,
        grant_types: list[str] | None = None,
    ) -> _grants.ClientInfo:
        """Register dynamically (RFC 7591) at ``context.issuer`` and store the registration.

        Raises:
            ClientRegistrationError: The endpoint refused, failed or answered nonsense.
        """
        metadata = context.metadata
        supported = metadata.token_endpoint_auth_methods_supported or []
        wanted = "none" if "none" in supported or not supported else supported[0]
        request = _grants.RegistrationRequest(
            client_name=self._settings.client_name,
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
        store = self._settings.store
        await store.set_client(context.issuer, entry)
        await store.set_client(client_slot(context.issuer, client.client_id), entry)
        logger.debug(
            "client: registered dynamically at %s as %s (%s, redirect URI %s)",
            url,
            client.client_id,
            method,
            redirect_uri,
        )
        return client

    async def bound(self, bound: StoredServer) -> _grants.ClientInfo | None:
        """This provider's identity at ``bound.issuer`` if it is the bound client, else None."""
        settings = self._settings
        try:
            self.check_issuer(bound.issuer)
        except ClientRegistrationError:
            return None  # a token of another issuer: never refreshed with these credentials
        if settings.client_id is not None:
            if settings.client_id != bound.client_id or settings.issuer not in (
                None,
                bound.issuer,
            ):
                return None
            return _grants.ClientInfo(
                settings.client_id, settings.client_secret, bound.auth_method, settings.issuer
            )
        metadata_url = settings.client_metadata_url
        if metadata_url is not None and metadata_url == bound.client_id:
            return _grants.ClientInfo(metadata_url, None, "none", bound.issuer)
        store = settings.store
        stored = await store.get_client(client_slot(bound.issuer, bound.client_id))
        if stored is None or stored.client_id != bound.client_id:
            stored = await store.get_client(bound.issuer)  # stored before the slots
        if stored is None or stored.client_id != bound.client_id:
            return None
        return _grants.ClientInfo(
            stored.client_id, stored.client_secret, stored.auth_method, bound.issuer
        )
