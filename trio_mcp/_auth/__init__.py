"""OAuth 2.1 authorization for HTTP sessions: ``open_mcp_session(url, auth=trio_mcp.OAuth())``.

Modules: ``_metadata`` (challenges, protected-resource and authorization-server metadata,
discovery order), ``_grants`` (PKCE, state, client authentication, token and registration
requests), ``_storage`` (token stores), ``_browser`` (the loopback redirect and the browser),
``_provider`` (the flow driver, an ``httpx.Auth``). Importing this package imports httpx;
PyJWT and ``cryptography`` are imported only when a JWT is signed.
"""

from ._browser import LoopbackBrowser as LoopbackBrowser
from ._browser import Redirect as Redirect
from ._browser import UserAgent as UserAgent
from ._provider import OAuth as OAuth
from ._storage import FileTokenStore as FileTokenStore
from ._storage import MemoryTokenStore as MemoryTokenStore
from ._storage import StoredClient as StoredClient
from ._storage import StoredToken as StoredToken
from ._storage import TokenStore as TokenStore

__all__ = [
    "FileTokenStore",
    "LoopbackBrowser",
    "MemoryTokenStore",
    "OAuth",
    "Redirect",
    "StoredClient",
    "StoredToken",
    "TokenStore",
    "UserAgent",
]
