"""A token store in the operating system's keyring (the ``keyring`` extra).

``keyring`` (jaraco/keyring) is imported on first use, never by ``import trio_mcp``. Every
call runs in a worker thread: keyring backends block (D-Bus, the macOS Security framework,
the Windows Credential Manager).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, cast

import trio

from .._exceptions import AuthError
from ._storage import StoredClient, StoredServer, StoredToken

__all__ = ["KeyringTokenStore"]


def _import_keyring() -> Any:
    try:
        import keyring
    except ImportError as exc:
        raise AuthError(
            "KeyringTokenStore needs the keyring library: pip install 'trio-mcp[keyring]'"
        ) from exc
    return keyring


class KeyringTokenStore:
    """A :class:`~trio_mcp.TokenStore` in the OS keyring (macOS Keychain, Windows Credential
    Manager, Secret Service / KWallet on Linux), through the ``keyring`` library.

    Each token, registration and server binding is one keyring entry of ``service``, its
    user name the entry's key (``token ["issuer", "resource", "client id"]``,
    ``client issuer``, ``server URL``), its secret the entry as JSON. Keyrings cannot list
    their entries, so ``trio-mcp auth status`` does not see these; use the file store there.
    Some backends limit an entry's size (Windows: 2560 bytes), which a long JWT with its
    refresh token may exceed; the store then raises :class:`~trio_mcp.AuthError`.

    Args:
        service: The keyring service name the entries are filed under.
        backend: A ``keyring.backend.KeyringBackend`` to use instead of the user's default
            one (``keyring.get_keyring()``), e.g. a test double.

    Raises:
        AuthError: On first use, when ``keyring`` is not installed
            (``pip install 'trio-mcp[keyring]'``), or when the keyring refuses an entry.
    """

    def __init__(self, service: str = "trio-mcp", *, backend: Any = None) -> None:
        self.service: str = service
        self._backend: Any = backend

    def _keyring(self) -> Any:
        if self._backend is None:
            self._backend = _import_keyring().get_keyring()
        return self._backend

    def _get_sync(self, name: str) -> dict[str, Any] | None:
        keyring = _import_keyring()
        try:
            text = self._keyring().get_password(self.service, name)
        except keyring.errors.KeyringError as exc:
            raise AuthError(f"reading {name!r} from the keyring failed: {exc}") from exc
        if text is None:
            return None
        try:
            data: Any = json.loads(text)
        except ValueError:
            return None  # not ours, or corrupt: as if logged out
        return cast("dict[str, Any]", data) if isinstance(data, dict) else None

    def _set_sync(self, name: str, value: dict[str, Any] | None) -> None:
        keyring = _import_keyring()
        backend = self._keyring()
        try:
            if value is not None:
                backend.set_password(self.service, name, json.dumps(value, sort_keys=True))
            else:
                try:
                    backend.delete_password(self.service, name)
                except keyring.errors.PasswordDeleteError:
                    pass  # missing is fine
        except keyring.errors.KeyringError as exc:
            raise AuthError(f"writing {name!r} to the keyring failed: {exc}") from exc

    async def _get(self, name: str) -> dict[str, Any] | None:
        return await trio.to_thread.run_sync(self._get_sync, name)

    async def _set(self, name: str, value: dict[str, Any] | None) -> None:
        await trio.to_thread.run_sync(self._set_sync, name, value)

    @staticmethod
    def _token_name(issuer: str, resource: str, client_id: str) -> str:
        return "token " + json.dumps([issuer, resource, client_id])

    async def get_token(self, issuer: str, resource: str, client_id: str) -> StoredToken | None:
        """The stored token for this issuer, resource and client, or ``None``.

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        entry = await self._get(self._token_name(issuer, resource, client_id))
        try:
            return StoredToken(**entry) if entry is not None else None
        except TypeError:
            return None

    async def set_token(
        self, issuer: str, resource: str, client_id: str, token: StoredToken
    ) -> None:
        """Store (replace) the token.

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
            token: The token set.
        """
        await self._set(self._token_name(issuer, resource, client_id), asdict(token))

    async def delete_token(self, issuer: str, resource: str, client_id: str) -> None:
        """Forget the token (missing is fine).

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        await self._set(self._token_name(issuer, resource, client_id), None)

    async def get_client(self, issuer: str) -> StoredClient | None:
        """The registration at this issuer, or ``None``.

        Args:
            issuer: The authorization server's issuer.
        """
        entry = await self._get(f"client {issuer}")
        try:
            return StoredClient(**entry) if entry is not None else None
        except TypeError:
            return None

    async def set_client(self, issuer: str, client: StoredClient) -> None:
        """Store (replace) the registration at this issuer.

        Args:
            issuer: The authorization server's issuer.
            client: The registration.
        """
        await self._set(f"client {issuer}", asdict(client))

    async def get_server(self, server_url: str) -> StoredServer | None:
        """The binding of this MCP server URL, or ``None`` (see :class:`~trio_mcp.StoredServer`).

        Args:
            server_url: The MCP endpoint, canonical.
        """
        entry = await self._get(f"server {server_url}")
        try:
            return StoredServer(**entry) if entry is not None else None
        except TypeError:
            return None

    async def set_server(self, server_url: str, server: StoredServer) -> None:
        """Store (replace) the binding of this MCP server URL.

        Args:
            server_url: The MCP endpoint, canonical.
            server: What discovery established for it.
        """
        await self._set(f"server {server_url}", asdict(server))
