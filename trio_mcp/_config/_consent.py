"""Consent pinning: ask the user before a new or changed config entry may start.

One job. Each [`ServerConfig`][trio_mcp.config.ServerConfig] carries the fingerprint of the entry as
written (and of its ``envFile``); [`check_consent()`][trio_mcp.config.check_consent] asks the
application's approval callback for every entry whose fingerprint is not the one a
[`ConsentStore`][trio_mcp.config.ConsentStore]
([`MemoryConsentStore`][trio_mcp.config.MemoryConsentStore], or
[`FileConsentStore`][trio_mcp.config.FileConsentStore] with locked, atomic writes) holds for it, and
stores the approvals.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, cast

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
    "pinned_parts",
    "runs_code",
]

logger = logging.getLogger("trio_mcp")

_PARTS: Final = "#parts"
"""The suffix of the store key under which an approval's part digests are kept."""


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
    """A [`ConsentStore`][trio_mcp.config.ConsentStore] in memory (tests, or approval per run).

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
    """A [`ConsentStore`][trio_mcp.config.ConsentStore] in a JSON file (fingerprints only, never
    values).

    The file is read on each [`get()`][trio_mcp.config.FileConsentStore.get]. Each
    [`set()`][trio_mcp.config.FileConsentStore.set] takes an exclusive lock (``flock`` on
    ``PATH.lock``), re-reads the file, adds the approval and replaces the file atomically (a
    uniquely named temporary file beside it, flushed to disk, then ``os.replace``), so processes
    approving at the same time never lose each other's approvals and a reader never sees half a
    file. The methods block: [`check_consent()`][trio_mcp.config.check_consent] calls them in a
    worker thread.

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


# Environment variables whose value changes what a program loads or runs (preloaded
# libraries, interpreter options, search paths): their values are shown, others masked.
_RUNS_CODE: Final = re.compile(
    r"(?:LD_|DYLD_|PYTHON|NODE_|NPM_CONFIG_|BUN_|DENO_|RUBY|PERL|JAVA_|_JAVA_|GIT_|UV_|PIP_).*"
    r"|.*(?:_OPTIONS|_OPTS|OPT|PATH|LIB|_HOME|RC)|BASH_ENV|ENV|SHELL|HOME|TMPDIR|EDITOR",
    re.IGNORECASE,
)
_MASKED: Final = "***"


def runs_code(name: str) -> bool:
    """Whether an environment variable's value can change what a program loads or runs.

    ``LD_*``, ``DYLD_*``, ``PYTHON*``, ``NODE_*``, ``*_OPTIONS``, ``*PATH``, ``*LIB`` and
    the like: consent shows their values (others are masked).

    Args:
        name: The variable's name.
    """
    return _RUNS_CODE.fullmatch(name) is not None


def pinned_parts(server: ServerConfig) -> dict[str, str]:
    """Everything an entry's fingerprint pins, by part, as shown to the person asked.

    The parts: ``type``, ``command`` (with its arguments), ``cwd``, ``url``, ``envFile``,
    ``env NAME`` for every variable (the ``envFile``'s too), ``header NAME`` for every
    header. An environment value is shown when the variable can change what runs
    (``runs_code``), else masked; header values are always
    masked; values put in by ``${...}`` show as their template. Shown on a terminal, each
    value still goes through the terminal filter.

    Args:
        server: The entry.

    Returns:
        Part name to what is shown of it, in a stable order.
    """
    redact = server.redact
    # Imported here for import cost: the URL display lives with the session's modules.
    from .._redact import display_url

    parts: dict[str, str] = {"type": server.transport}
    if server.command is not None:
        parts["command"] = redact(shlex.join([server.command, *server.args]))
    if server.cwd is not None:
        parts["cwd"] = redact(server.cwd)
    if server.url is not None:
        parts["url"] = redact(display_url(server.url))
    if server.env_file is not None:
        parts["envFile"] = redact(server.env_file)
    for name in sorted(server.env):
        parts[f"env {name}"] = redact(server.env[name]) if runs_code(name) else _MASKED
    for name in sorted(server.headers):
        parts[f"header {name}"] = _MASKED
    return parts


def _digests(server: ServerConfig) -> str:
    """A short digest of each part as written into the store (to tell what changed).

    Values themselves are never stored: 8 hex digits of the SHA-256 of each part's full
    value, too short to recover a value from.
    """
    full: dict[str, str] = {"type": server.transport}
    if server.command is not None:
        full["command"] = shlex.join([server.command, *server.args])
    for part, value in (("cwd", server.cwd), ("url", server.url), ("envFile", server.env_file)):
        if value is not None:
            full[part] = value
    full.update({f"env {name}": value for name, value in server.env.items()})
    full.update({f"header {name}": value for name, value in server.headers.items()})
    return "\n".join(
        f"{part}={hashlib.sha256(value.encode()).hexdigest()[:8]}"
        for part, value in sorted(full.items())
    )


def _remember(store: ConsentStore, key: str, fingerprint: str, digests: str) -> None:
    """Store an approval: its part digests first, then the fingerprint that counts."""
    store.set(key + _PARTS, digests)
    store.set(key, fingerprint)


def _parse_digests(text: str) -> dict[str, str]:
    pairs = (line.rpartition("=") for line in text.splitlines())
    return {part: digest for part, _, digest in pairs}


def _changes(before: str | None, after: str) -> tuple[str, ...]:
    """The parts whose digest differs between two ``_digests`` (added, removed too)."""
    if before is None:
        return ()
    old, new = _parse_digests(before), _parse_digests(after)
    return tuple(sorted(part for part in old.keys() | new.keys() if old.get(part) != new.get(part)))


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """What the approval callback is asked about.

    Show the person everything in [`details`][trio_mcp.config.ConsentRequest.details]
    (what the approval pins), and on a change `changes`.

    Attributes:
        server: The entry (its ``repr`` hides secrets).
        key: The key it is pinned under (``file::name``).
        previous: The fingerprint approved before, or None for an entry never approved.
        changes: The parts (names as in ``details``) that changed since the approval, when
            the store knows (empty for a new entry or an approval stored without them).
    """

    server: ServerConfig
    key: str
    previous: str | None
    changes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether an earlier version of the entry was approved (it changed since)."""
        return self.previous is not None

    @property
    def details(self) -> dict[str, str]:
        """Everything the approval pins, by part: ``type``, ``command`` (with its arguments),
        ``cwd``, ``url`` (without userinfo), ``envFile``, ``env NAME`` for every variable
        (the ``envFile``'s too; the value shown when the variable can change what loads or
        runs, such as ``LD_*``, ``DYLD_*``, ``PYTHON*``, ``NODE_*``, ``*_OPTIONS``,
        ``*PATH``; else ``***``), ``header NAME`` (values ``***``). A value put in by
        ``${...}`` shows as its template."""
        return pinned_parts(self.server)


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
        store: Where approvals are kept (default:
            [`FileConsentStore`][trio_mcp.config.FileConsentStore] in the user's config folder).

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
        digests = _digests(server)
        before = None
        if previous is not None:
            before = await trio.to_thread.run_sync(store.get, key + _PARTS, abandon_on_cancel=True)
        request = ConsentRequest(server, key, previous, _changes(before, digests))
        allowed = bool(await approve(request))
        if allowed:  # not abandoned on cancel: the approval is written or it fails
            await trio.to_thread.run_sync(_remember, store, key, server.fingerprint, digests)
        verdict[name] = allowed
    return verdict
