"""OAuth 2.1 authorization for HTTP sessions: ``open_mcp_session(url, auth=trio_mcp.OAuth())``.

Modules: ``_metadata`` (challenges, protected-resource and authorization-server metadata,
discovery order), ``_grants`` (PKCE, state, client authentication, token and registration
requests), ``_assertions`` (the jwt-bearer grants of workload identity and enterprise-managed
authorization), ``_device`` (the device authorization grant), ``_dpop`` (DPoP keys, proofs
and nonces, RFC 9449), ``_storage`` (token stores),
``_keyring`` (the OS keyring store), ``_browser`` (the loopback redirect and the browser),
``_provider`` (the flow driver, an ``httpx.Auth``). Importing this package imports httpx;
PyJWT and ``cryptography`` are imported only when a JWT is signed or a DPoP key made.
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
