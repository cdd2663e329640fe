"""What the user chose: the provider's settings, as the parts of the provider read them.

[`OAuth`][trio_mcp.auth.OAuth] keeps its constructor's arguments as public attributes (a caller
may change one later, ``oauth.interactive = False``). Each part of the provider
(``_identity``, ``_token_endpoint``, ``_keeper``, ``_authorizer``) is given the provider
itself typed as `Settings`, and reads the attribute when it needs it: so a change
is seen at the next request, and no part imports ``_provider`` (the dependencies point one
way: ``_provider`` builds the parts, the parts know only this protocol).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._assertions import AssertionGrant
    from ._browser import UserAgent
    from ._device import DeviceFlow
    from ._storage import TokenStore

__all__ = ["Settings"]


class Settings(Protocol):
    """The settings of one provider (see [`OAuth`][trio_mcp.auth.OAuth] for each one's meaning).

    ``grant`` is ``"authorization_code"``, ``"client_credentials"`` or ``"jwt_bearer"``
    (then ``assertion_grant`` is the grant object); ``scopes`` is space-separated.
    """

    grant: str
    assertion_grant: AssertionGrant | None
    device: DeviceFlow | None
    client_id: str | None
    client_secret: str | None
    issuer: str | None
    private_key: Any
    signing_algorithm: str
    client_metadata_url: str | None
    client_name: str
    scopes: str | None
    store: TokenStore
    user_agent: UserAgent
    interactive: bool
    refresh_margin: float
    dpop: Any
