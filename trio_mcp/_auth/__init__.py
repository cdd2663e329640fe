"""OAuth 2.1 authorization for HTTP sessions: ``StreamableHTTPParameters(url, auth=OAuth())``.

Each guarantee lives in one module, named after it:

* ``_tokens``: token sets keyed by ``(issuer, resource, client_id)``; each server URL is
  shown only its own key's token; one refresh in flight per key.
* ``_policy``: the endpoint policy, one function for every URL discovery yields
  (``https``, or ``http`` on a loopback host).
* ``_bodies``: every body from an authorization server or protected-resource endpoint is
  read streaming, at most 1 MiB.
* ``_metadata``: challenges, protected-resource and authorization-server metadata, the
  discovery order, bounded fetching.
* ``_flows``: the grant flows as functions over a small ``Flow`` (the authorization code
  flow, client credentials); ``_device`` (RFC 8628) and ``_assertions`` (jwt-bearer:
  workload identity, ID-JAG) are flows too.
* ``_grants``: the wire: PKCE, state, client authentication, token and registration
  requests and answers.
* ``_dpop`` (DPoP keys, proofs and nonces, RFC 9449), ``_storage`` (token stores),
  ``_keyring`` (the OS keyring store), ``_browser`` (the loopback redirect and the
  browser).
* ``_provider``: ``OAuth``, the ``httpx.Auth``: the user's settings (``_settings``, the
  protocol the parts read them through) and the parts it puts together:
  ``_challenges`` (one request's answers to ``401``, ``403`` and DPoP nonce challenges),
  ``_authorizer`` (one authorization at a time: recovery, step-up, discovery, which grant
  runs), ``_keeper`` (tokens kept, refreshed one at a time per key, stored and found
  again), ``_identity`` (client identity, registrations per redirect URI) and
  ``_token_endpoint`` (token requests with their DPoP proofs and nonces).

Importing this package imports httpx; PyJWT and ``cryptography`` are imported only when a
JWT is signed or a DPoP key made. Secrets never appear in reprs (``trio_mcp._redact``).
"""

from ._assertions import IdentityAssertionGrant as IdentityAssertionGrant
from ._assertions import JWTBearerGrant as JWTBearerGrant
from ._browser import LoopbackBrowser as LoopbackBrowser
from ._browser import Redirect as Redirect
from ._browser import UserAgent as UserAgent
from ._device import DeviceCode as DeviceCode
from ._device import DeviceFlow as DeviceFlow
from ._keyring import KeyringTokenStore as KeyringTokenStore
from ._provider import OAuth as OAuth
from ._storage import FileTokenStore as FileTokenStore
from ._storage import MemoryTokenStore as MemoryTokenStore
from ._storage import ServerBindingStore as ServerBindingStore
from ._storage import StoredClient as StoredClient
from ._storage import StoredServer as StoredServer
from ._storage import StoredToken as StoredToken
from ._storage import TokenStore as TokenStore

__all__ = [
    "DeviceCode",
    "DeviceFlow",
    "FileTokenStore",
    "IdentityAssertionGrant",
    "JWTBearerGrant",
    "KeyringTokenStore",
    "LoopbackBrowser",
    "MemoryTokenStore",
    "OAuth",
    "Redirect",
    "ServerBindingStore",
    "StoredClient",
    "StoredServer",
    "StoredToken",
    "TokenStore",
    "UserAgent",
]
