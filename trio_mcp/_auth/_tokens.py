"""Token sets keyed by ``(issuer, resource, client_id)``: which token each server is shown.

The MCP spec forbids sending a token to any server but the one it was issued for. A
provider shared by several servers (sessions, a server group) therefore never has "the"
token: it has one token set per key, and each server URL is mapped to the key discovery
validated for it (its authorization server, the protected resource covering it, the
client it was issued to). A request carries only the token of its own server's key; a
``401`` from one server forgets only that server's token; refreshes run one at a time per
key (`TokenTable.lock()`), so a rotating refresh token is never spent twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from ._dpop import DPoPKey
    from ._grants import ClientInfo
    from ._storage import StoredToken

__all__ = ["Token", "TokenKey", "TokenTable", "from_stored"]

TokenKey = tuple[str, str, str]
"""``(issuer, resource, client_id)``."""


@dataclass(eq=False)
class Token:
    """A token set in memory (its secrets are not in its repr)."""

    access_token: str = field(repr=False)
    token_type: str
    refresh_token: str | None = field(repr=False)
    scope: str | None
    deadline: float | None  # on trio's clock
    issuer: str
    resource: str
    client: ClientInfo
    dpop: DPoPKey | None = field(default=None, repr=False)  # the key a DPoP token is bound to

    @property
    def key(self) -> TokenKey:
        """The ``(issuer, resource, client_id)`` this token belongs to."""
        return (self.issuer, self.resource, self.client.client_id)


def from_stored(
    stored: StoredToken,
    issuer: str,
    resource: str,
    client: ClientInfo,
    key: DPoPKey | None,
) -> Token:
    """A stored token, its wall-clock expiry turned into a deadline on trio's clock."""
    deadline = None
    if stored.expires_at is not None:
        deadline = trio.current_time() + (stored.expires_at - time.time())
    return Token(
        stored.access_token,
        stored.token_type,
        stored.refresh_token,
        stored.scope,
        deadline,
        issuer,
        resource,
        client,
        key,
    )


class TokenTable:
    """The provider's tokens: one per key, and the key of each server URL."""

    def __init__(self) -> None:
        self._tokens: dict[TokenKey, Token] = {}
        self._servers: dict[str, TokenKey] = {}
        self._locks: dict[TokenKey, trio.Lock] = {}

    def for_server(self, server_url: str) -> Token | None:
        """The token to show ``server_url`` (canonical), if it has one."""
        key = self._servers.get(server_url)
        return self._tokens.get(key) if key is not None else None

    def get(self, key: TokenKey) -> Token | None:
        """The token of ``key``, if any."""
        return self._tokens.get(key)

    def keep(self, server_url: str, token: Token) -> None:
        """Make ``token`` the one of its key, and its key the one of ``server_url``."""
        self._tokens[token.key] = token
        self._servers[server_url] = token.key

    def forget(self, token: Token) -> None:
        """Drop ``token`` if it is still the one of its key (other keys are untouched)."""
        if self._tokens.get(token.key) is token:
            del self._tokens[token.key]

    def lock(self, key: TokenKey) -> trio.Lock:
        """The lock that keeps one refresh of ``key`` in flight at a time."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = trio.Lock()
        return lock
