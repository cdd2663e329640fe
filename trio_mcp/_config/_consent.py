"""Consent pinning: ask the user before a new or changed config entry may start.

One job. Each :class:`~trio_mcp.config.ServerConfig` carries the fingerprint of the entry as
written (and of its ``envFile``); :func:`check_consent` asks the application's approval
callback for every entry whose fingerprint is not the one a :class:`ConsentStore`
(:class:`MemoryConsentStore`, or :class:`FileConsentStore` with locked, atomic writes)
holds for it, and stores the approvals.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import msgspec
import trio

from ._model import MCPConfig, ServerConfig

__all__ = [
    "ApprovalCallback",
    "ConsentRequest",
    "ConsentStore",
    "FileConsentStore",
    "MemoryConsentStore",
    "check_consent",
    "consent_key",
]

logger = logging.getLogger("trio_mcp")


class ConsentStore(Protocol):
    """Where the approved fingerprint of each server entry is kept."""

    def get(self, key: str) -> str | None:
        """Return the fingerprint approved for ``key``, or None.

        Args:
            key: The entry's key (``file::name``).
        """
        ...

    def set(self, key: str, fingerprint: str) -> None:
        """Remember that ``fingerprint`` was approved for ``key``.

        Args:
            key: The entry's key.
            fingerprint: Its approved fingerprint.
        """
        ...


class MemoryConsentStore:
    """A :class:`ConsentStore` in memory (tests, or approval per run).

    Args:
        approved: Fingerprints approved already, by key.
    """

    def __init__(self, approved: Mapping[str, str] | None = None) -> None:
        self.approved: dict[str, str] = dict(approved or {})

    def get(self, key: str) -> str | None:
        """Return the fingerprint approved for ``key``, or None.

        Args:
            key: The entry's key (``file::name``).
        """
        return self.approved.get(key)

    def set(self, key: str, fingerprint: str) -> None:
        """Remember an approval.

        Args:
            key: The entry's key.
            fingerprint: Its approved fingerprint.
        """
        self.approved[key] = fingerprint


def _user_config_dir() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or os.path.expanduser("~/AppData/Roaming")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "trio-mcp"


class FileConsentStore:
    """A :class:`ConsentStore` in a JSON file (fingerprints only, never values).

    The file is read on each :meth:`get`. Each :meth:`set` takes an exclusive lock
    (``flock`` on ``PATH.lock``), re-reads the file, adds the approval and replaces the
    file atomically (a uniquely named temporary file beside it, flushed to disk, then
    ``os.replace``), so processes approving at the same time never lose each other's
    approvals and a reader never sees half a file. The methods block:
    :func:`check_consent` calls them in a worker thread.

    Args:
        path: The file; default ``consent.json`` in the user's config folder
            (``$XDG_CONFIG_HOME/trio-mcp``, ``~/Library/Application Support/trio-mcp``,
            ``%APPDATA%\\trio-mcp``).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path: Path = Path(path) if path is not None else _user_config_dir() / "consent.json"

    def _read(self) -> dict[str, str]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            decoded: object = msgspec.json.decode(data)
        except (msgspec.DecodeError, RecursionError):  # corrupt, or nested absurdly deep
            logger.warning("ignoring the unreadable consent store %s", self.path)
            return {}
        if not isinstance(decoded, dict):
            return {}
        items = cast("dict[object, object]", decoded).items()
        return {str(k): v for k, v in items if isinstance(v, str)}

    def get(self, key: str) -> str | None:
        """Return the fingerprint approved for ``key``, or None.

        Args:
            key: The entry's key (``file::name``).
        """
        return self._read().get(key)

    def set(self, key: str, fingerprint: str) -> None:
        """Remember an approval (the file and its folder are created as needed).

        Args:
            key: The entry's key.
            fingerprint: Its approved fingerprint.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "ab") as lock:
            if sys.platform != "win32":
                import fcntl  # POSIX only: imported where the platform has it

                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
            approved = self._read()
            approved[key] = fingerprint
            encoded = msgspec.json.format(msgspec.json.encode(approved, order="sorted"))
            fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(encoded)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """What the approval callback is asked about.

    Attributes:
        server: The entry (its ``repr`` hides secrets; show ``command``/``args``/``url``).
        key: The key it is pinned under (``file::name``).
        previous: The fingerprint approved before, or None for an entry never approved.
    """

    server: ServerConfig
    key: str
    previous: str | None

    @property
    def changed(self) -> bool:
        """Whether an earlier version of the entry was approved (it changed since)."""
        return self.previous is not None


ApprovalCallback = Callable[[ConsentRequest], Awaitable[bool]]


def consent_key(server: ServerConfig) -> str:
    """The key a server entry is pinned under: its absolute file path and name."""
    source = os.path.abspath(server.source) if server.source else "<config>"
    return f"{source}::{server.name}"


async def check_consent(
    servers: Mapping[str, ServerConfig] | MCPConfig,
    approve: ApprovalCallback,
    store: ConsentStore | None = None,
) -> dict[str, bool]:
    """Ask ``approve`` about every entry that is new or changed since it was last approved.

    Entries whose fingerprint is in ``store`` are approved without asking; approved ones
    are stored. The callback is called one entry at a time, in file order. The store's
    (blocking) methods run in a worker thread, never on the event loop.

    Args:
        servers: A loaded config or its servers.
        approve: Returns True to let the server start.
        store: Where approvals are kept (default: :class:`FileConsentStore` in the user's
            config folder).

    Returns:
        For each server name, whether it may start.
    """
    if isinstance(servers, MCPConfig):
        servers = servers.servers
    store = store if store is not None else FileConsentStore()
    verdict: dict[str, bool] = {}
    for name, server in servers.items():
        key = consent_key(server)
        previous = await trio.to_thread.run_sync(store.get, key, abandon_on_cancel=True)
        if previous == server.fingerprint:
            await trio.lowlevel.checkpoint()
            verdict[name] = True
            continue
        allowed = bool(await approve(ConsentRequest(server, key, previous)))
        if allowed:  # not abandoned on cancel: the approval is written or it fails
            await trio.to_thread.run_sync(store.set, key, server.fingerprint)
        verdict[name] = allowed
    return verdict
