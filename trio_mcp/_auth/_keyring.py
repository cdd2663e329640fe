"""A token store in the operating system's keyring (the ``keyring`` extra).

``keyring`` (jaraco/keyring) is imported on first use, never by ``import trio_mcp``. Every
call runs in a worker thread: keyring backends block (D-Bus, the macOS Security framework,
the Windows Credential Manager).
"""

from __future__ import annotations

import json
from typing import Any, cast

from .._exceptions import AuthError
from ._storage import _EntryStore  # pyright: ignore[reportPrivateUsage]

__all__ = ["KeyringTokenStore"]


def _import_keyring() -> Any:
    try:
        import keyring
    except ImportError as exc:
        raise AuthError(
            "KeyringTokenStore needs the keyring library: pip install 'trio-mcp[keyring]'"
        ) from exc
    return keyring


class KeyringTokenStore(_EntryStore):
    """A [`TokenStore`][trio_mcp.auth.TokenStore] in the OS keyring (macOS Keychain, Windows
    Credential Manager, Secret Service / KWallet on Linux), through the ``keyring`` library.

    Each token, registration and server binding is one keyring entry of ``service``, its
    user name the entry's key (``token ["issuer", "resource", "client id"]``,
    ``client issuer``, ``server URL``), its secret the entry as JSON. Keyrings cannot list
    their entries, so ``trio-mcp auth status`` does not see these; use the file store there.
    Some backends limit an entry's size (Windows: 2560 bytes), which a long JWT with its
    refresh token may exceed; the store then raises [`AuthError`][trio_mcp.auth.AuthError].

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

    # the entry hooks of _EntryStore (run in a worker thread)

    def _load(self, section: str, key: str) -> dict[str, Any] | None:
        return self._get_sync(_entry_name(section, key))

    def _save(self, section: str, key: str, value: dict[str, Any] | None) -> None:
        self._set_sync(_entry_name(section, key), value)


def _entry_name(section: str, key: str) -> str:
    """The keyring user name of an entry: ``token ["issuer", ...]``, ``client ISSUER``..."""
    return f"{_ENTRY_PREFIX[section]} {key}"


_ENTRY_PREFIX = {"tokens": "token", "clients": "client", "servers": "server"}
