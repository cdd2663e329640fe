"""OAuth 2.1 authorization for HTTP sessions: the provider, token stores, grants, errors.

Pass [`OAuth`][trio_mcp.auth.OAuth] as ``auth=`` of an HTTP target (``trio_mcp.OAuth`` is the same
class):

```python
params = trio_mcp.StreamableHTTPParameters(url, auth=trio_mcp.auth.OAuth(
    store=trio_mcp.auth.FileTokenStore("~/.config/my-app/tokens.json"),
))
```

Token stores ([`TokenStore`][trio_mcp.auth.TokenStore],
[`FileTokenStore`][trio_mcp.auth.FileTokenStore],
[`MemoryTokenStore`][trio_mcp.auth.MemoryTokenStore],
[`KeyringTokenStore`][trio_mcp.auth.KeyringTokenStore]) keep what a login earned;
[`DeviceFlow`][trio_mcp.auth.DeviceFlow], [`JWTBearerGrant`][trio_mcp.auth.JWTBearerGrant] and
[`IdentityAssertionGrant`][trio_mcp.auth.IdentityAssertionGrant] are the grants besides the
browser's authorization code flow ([`LoopbackBrowser`][trio_mcp.auth.LoopbackBrowser],
[`UserAgent`][trio_mcp.auth.UserAgent]). Every failure is an [`AuthError`][trio_mcp.auth.AuthError]
(also ``trio_mcp.AuthError``), whose subclasses say which step failed.

Importing this module is cheap: the classes that need httpx load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._exceptions import AuthDiscoveryError as AuthDiscoveryError
from ._exceptions import AuthError as AuthError
from ._exceptions import AuthorizationDeniedError as AuthorizationDeniedError
from ._exceptions import ClientRegistrationError as ClientRegistrationError
from ._exceptions import DeviceCodeExpiredError as DeviceCodeExpiredError
from ._exceptions import DPoPError as DPoPError
from ._exceptions import DPoPNonceError as DPoPNonceError
from ._exceptions import InsufficientScopeError as InsufficientScopeError
from ._exceptions import LoginRequiredError as LoginRequiredError
from ._exceptions import TokenRequestError as TokenRequestError
from ._public import load_lazily as _load_lazily
from ._public import publish as _publish

if TYPE_CHECKING:
    from ._auth import DeviceCode as DeviceCode
    from ._auth import DeviceFlow as DeviceFlow
    from ._auth import FileTokenStore as FileTokenStore
    from ._auth import IdentityAssertionGrant as IdentityAssertionGrant
    from ._auth import JWTBearerGrant as JWTBearerGrant
    from ._auth import KeyringTokenStore as KeyringTokenStore
    from ._auth import LoopbackBrowser as LoopbackBrowser
    from ._auth import MemoryTokenStore as MemoryTokenStore
    from ._auth import OAuth as OAuth
    from ._auth import Redirect as Redirect
    from ._auth import ServerBindingStore as ServerBindingStore
    from ._auth import StoredClient as StoredClient
    from ._auth import StoredServer as StoredServer
    from ._auth import StoredToken as StoredToken
    from ._auth import TokenStore as TokenStore
    from ._auth import UserAgent as UserAgent

# Loaded on first use: they import httpx (or trio-websocket).
_LAZY = {
    "DeviceCode": "._auth",
    "DeviceFlow": "._auth",
    "FileTokenStore": "._auth",
    "IdentityAssertionGrant": "._auth",
    "JWTBearerGrant": "._auth",
    "KeyringTokenStore": "._auth",
    "LoopbackBrowser": "._auth",
    "MemoryTokenStore": "._auth",
    "OAuth": "._auth",
    "Redirect": "._auth",
    "ServerBindingStore": "._auth",
    "StoredClient": "._auth",
    "StoredServer": "._auth",
    "StoredToken": "._auth",
    "TokenStore": "._auth",
    "UserAgent": "._auth",
}

__all__ = [
    "AuthDiscoveryError",
    "AuthError",
    "AuthorizationDeniedError",
    "ClientRegistrationError",
    "DPoPError",
    "DPoPNonceError",
    "DeviceCode",
    "DeviceCodeExpiredError",
    "DeviceFlow",
    "FileTokenStore",
    "IdentityAssertionGrant",
    "InsufficientScopeError",
    "JWTBearerGrant",
    "KeyringTokenStore",
    "LoginRequiredError",
    "LoopbackBrowser",
    "MemoryTokenStore",
    "OAuth",
    "Redirect",
    "ServerBindingStore",
    "StoredClient",
    "StoredServer",
    "StoredToken",
    "TokenRequestError",
    "TokenStore",
    "UserAgent",
]


def __getattr__(name: str) -> Any:
    return _load_lazily(__name__, globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


_publish(__name__, globals(), __all__)
