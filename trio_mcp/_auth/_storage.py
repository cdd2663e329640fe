"""Token storage: the protocol, an in-memory store and a file store.

Tokens are keyed by ``(issuer, resource, client_id)``: a token is only ever offered to the
resource it was issued for, by the authorization server that issued it. Client
registrations (from Dynamic Client Registration) are keyed by issuer, so a client never
presents one server's ``client_id`` to another (SEP-2352).

Expiry is stored as wall-clock seconds (it must survive the process); the provider turns it
into a deadline on trio's clock when it loads a token.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import trio

from .._redact import hidden

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "ServerBindingStore",
    "StoredClient",
    "StoredServer",
    "StoredToken",
    "TokenStore",
]


@dataclass(frozen=True)
class StoredToken:
    """A token set as stored.

    Attributes:
        access_token: The access token.
        token_type: ``Bearer`` or ``DPoP``.
        refresh_token: The refresh token, if any.
        scope: The granted (or else requested) scope.
        expires_at: Wall-clock expiry (``time.time()`` seconds), or ``None``.
        dpop_jwk: For a DPoP-bound token (``token_type`` ``DPoP``): the private key it is
            bound to, as a JWK with its ``alg`` (RFC 7517; the token is useless without
            it, so the store keeps it beside the token, as secret as the token).
    """

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    scope: str | None = None
    expires_at: float | None = None
    dpop_jwk: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return (
            f"StoredToken(access_token={hidden(self.access_token)}, "
            f"token_type={self.token_type!r}, refresh_token={hidden(self.refresh_token)}, "
            f"scope={self.scope!r}, expires_at={self.expires_at!r}, "
            f"dpop_jwk={hidden(self.dpop_jwk)})"
        )


@dataclass(frozen=True)
class StoredClient:
    """A client registration at one issuer.

    Attributes:
        client_id: The client id.
        client_secret: Its secret, if any.
        auth_method: The token endpoint authentication method.
        redirect_uri: The redirect URI it was registered with (``None``: none, or stored
            by an older version); a login with another redirect URI registers again.
    """

    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    redirect_uri: str | None = None

    def __repr__(self) -> str:
        return (
            f"StoredClient(client_id={self.client_id!r}, client_secret="
            f"{hidden(self.client_secret)}, auth_method={self.auth_method!r}, "
            f"redirect_uri={self.redirect_uri!r})"
        )


@dataclass(frozen=True)
class StoredServer:
    """What discovery established for one MCP server URL, remembered across processes.

    With it, the first request of a new [`OAuth`][trio_mcp.auth.OAuth] to this exact URL carries
    the stored token (no ``401`` round trip first): the token of ``(issuer, resource,
    client_id)``, which that issuer issued for that resource.

    Attributes:
        issuer: The authorization server discovery validated for the URL.
        resource: The protected resource (RFC 9728 ``resource``) covering the URL.
        client_id: The client the token was issued to.
        auth_method: That client's token endpoint authentication method.
    """

    issuer: str
    resource: str
    client_id: str
    auth_method: str = "none"


@runtime_checkable
class ServerBindingStore(Protocol):
    """Optional: a [`TokenStore`][trio_mcp.auth.TokenStore] that also remembers
    [`StoredServer`][trio_mcp.auth.StoredServer] bindings.

    The built-in stores implement it. A store without these two methods still works; a new
    process then sends its first request without a token and finds the stored token after
    the server's ``401`` and discovery.
    """

    async def get_server(self, server_url: str) -> StoredServer | None:
        """The binding of this MCP server URL, or ``None``.

        Args:
            server_url: The MCP endpoint, canonical (lower-case scheme and host, no query).
        """
        ...

    async def set_server(self, server_url: str, server: StoredServer) -> None:
        """Store (replace) the binding of this MCP server URL.

        Args:
            server_url: The MCP endpoint, canonical.
            server: What discovery established for it.
        """
        ...


@runtime_checkable
class TokenStore(Protocol):
    """Where [`OAuth`][trio_mcp.auth.OAuth] keeps tokens and client registrations.

    Implement these five async methods to keep them elsewhere (a keyring, a database).
    """

    async def get_token(self, issuer: str, resource: str, client_id: str) -> StoredToken | None:
        """The stored token for this issuer, resource and client, or ``None``.

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        ...

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
        ...

    async def delete_token(self, issuer: str, resource: str, client_id: str) -> None:
        """Forget the token (missing is fine).

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        ...

    async def get_client(self, issuer: str) -> StoredClient | None:
        """The registration at this issuer, or ``None``.

        Args:
            issuer: The authorization server's issuer.
        """
        ...

    async def set_client(self, issuer: str, client: StoredClient) -> None:
        """Store (replace) the registration at this issuer.

        Args:
            issuer: The authorization server's issuer.
            client: The registration.
        """
        ...


def _token_key(issuer: str, resource: str, client_id: str) -> str:
    return json.dumps([issuer, resource, client_id])


E = TypeVar("E", StoredToken, StoredClient, StoredServer)
T = TypeVar("T")


def _entry(kind: type[E], entry: dict[str, Any] | None) -> E | None:
    """An entry read back, or ``None`` when missing or not of this version's shape."""
    try:
        return kind(**entry) if entry is not None else None
    except TypeError:
        return None


async def _in_thread(work: Callable[..., T], *args: Any) -> T:
    """Run a blocking store call in a worker thread that a cancelled caller abandons.

    A keyring may wait for the user to unlock it; the caller's ``fail_after`` still ends
    the wait (the thread finishes, or not, on its own; its result is dropped).
    """
    return await trio.to_thread.run_sync(functools.partial(work, *args), abandon_on_cancel=True)


class _EntryStore:
    """The store protocol over JSON entries kept in sections, read and written in a thread.

    A subclass provides ``_load(section, key)`` and ``_save(section, key, entry or None)``
    (blocking; sections ``tokens``, ``clients``, ``servers``).
    """

    def _load(self, section: str, key: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def _save(self, section: str, key: str, value: dict[str, Any] | None) -> None:
        raise NotImplementedError

    async def get_token(self, issuer: str, resource: str, client_id: str) -> StoredToken | None:
        """The stored token for this issuer, resource and client, or ``None``.

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        key = _token_key(issuer, resource, client_id)
        return _entry(StoredToken, await _in_thread(self._load, "tokens", key))

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
        key = _token_key(issuer, resource, client_id)
        await _in_thread(self._save, "tokens", key, asdict(token))

    async def delete_token(self, issuer: str, resource: str, client_id: str) -> None:
        """Forget the token (missing is fine).

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        key = _token_key(issuer, resource, client_id)
        await _in_thread(self._save, "tokens", key, None)

    async def get_client(self, issuer: str) -> StoredClient | None:
        """The registration at this issuer, or ``None``.

        Args:
            issuer: The authorization server's issuer.
        """
        return _entry(StoredClient, await _in_thread(self._load, "clients", issuer))

    async def set_client(self, issuer: str, client: StoredClient) -> None:
        """Store (replace) the registration at this issuer.

        Args:
            issuer: The authorization server's issuer.
            client: The registration.
        """
        await _in_thread(self._save, "clients", issuer, asdict(client))

    async def get_server(self, server_url: str) -> StoredServer | None:
        """The binding of this MCP server URL, or ``None`` (see
        [`StoredServer`][trio_mcp.auth.StoredServer]).

        Args:
            server_url: The MCP endpoint, canonical.
        """
        entry = await _in_thread(self._load, "servers", server_url)
        return _entry(StoredServer, entry)

    async def set_server(self, server_url: str, server: StoredServer) -> None:
        """Store (replace) the binding of this MCP server URL.

        Args:
            server_url: The MCP endpoint, canonical.
            server: What discovery established for it.
        """
        await _in_thread(self._save, "servers", server_url, asdict(server))


class MemoryTokenStore:
    """A [`TokenStore`][trio_mcp.auth.TokenStore] in this process's memory (the default)."""

    def __init__(self) -> None:
        self._tokens: dict[str, StoredToken] = {}
        self._clients: dict[str, StoredClient] = {}
        self._servers: dict[str, StoredServer] = {}

    async def get_token(self, issuer: str, resource: str, client_id: str) -> StoredToken | None:
        """The stored token for this issuer, resource and client, or ``None``.

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        await trio.lowlevel.checkpoint()
        return self._tokens.get(_token_key(issuer, resource, client_id))

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
        await trio.lowlevel.checkpoint()
        self._tokens[_token_key(issuer, resource, client_id)] = token

    async def delete_token(self, issuer: str, resource: str, client_id: str) -> None:
        """Forget the token (missing is fine).

        Args:
            issuer: The authorization server's issuer.
            resource: The protected resource (the MCP server).
            client_id: The client the token was issued to.
        """
        await trio.lowlevel.checkpoint()
        self._tokens.pop(_token_key(issuer, resource, client_id), None)

    async def get_client(self, issuer: str) -> StoredClient | None:
        """The registration at this issuer, or ``None``.

        Args:
            issuer: The authorization server's issuer.
        """
        await trio.lowlevel.checkpoint()
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: StoredClient) -> None:
        """Store (replace) the registration at this issuer.

        Args:
            issuer: The authorization server's issuer.
            client: The registration.
        """
        await trio.lowlevel.checkpoint()
        self._clients[issuer] = client

    async def get_server(self, server_url: str) -> StoredServer | None:
        """The binding of this MCP server URL, or ``None`` (see
        [`StoredServer`][trio_mcp.auth.StoredServer]).

        Args:
            server_url: The MCP endpoint, canonical.
        """
        await trio.lowlevel.checkpoint()
        return self._servers.get(server_url)

    async def set_server(self, server_url: str, server: StoredServer) -> None:
        """Store (replace) the binding of this MCP server URL.

        Args:
            server_url: The MCP endpoint, canonical.
            server: What discovery established for it.
        """
        await trio.lowlevel.checkpoint()
        self._servers[server_url] = server


class FileTokenStore(_EntryStore):
    """A [`TokenStore`][trio_mcp.auth.TokenStore] in one JSON file, readable by its owner only.

    Every change re-reads the file under an exclusive lock (``flock`` on ``PATH.lock``),
    applies the change and atomically replaces the file (written ``0600`` beside it, then
    ``os.replace``), so two processes sharing it never lose each other's entries and a
    reader never sees half a file. File work runs in a worker thread.

    Args:
        path: The file (``~`` is expanded; created on first write, folder ``0700``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path: Path = Path(path).expanduser()

    # the synchronous work, in a thread

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}, "servers": {}}
        try:
            data: Any = json.loads(text)
        except ValueError:
            # a corrupt store is a logged-out store
            return {"tokens": {}, "clients": {}, "servers": {}}
        if not isinstance(data, dict):
            return {"tokens": {}, "clients": {}, "servers": {}}
        found = cast("dict[str, Any]", data)
        for section in ("tokens", "clients", "servers"):
            if not isinstance(found.get(section), dict):
                found[section] = {}
        return found

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600) if sys.platform != "win32" else None
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _update(self, section: str, key: str, value: dict[str, Any] | None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "a") as lock:
            if sys.platform != "win32":
                import fcntl

                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            data = self._read()
            if value is None:
                data[section].pop(key, None)
            else:
                data[section][key] = value
            self._write(data)

    def _get(self, section: str, key: str) -> dict[str, Any] | None:
        entry: Any = self._read()[section].get(key)
        return cast("dict[str, Any]", entry) if isinstance(entry, dict) else None

    _load = _get
    _save = _update
