"""Protocol eras: which revisions trio_mcp speaks and how it tells a server's era.

The decision logic lives here, in one place, for every transport: the session sends a
modern request (``server/discover``) and `classify_probe()` turns the outcome into a
verdict following ``2026-07-28/basic/versioning.mdx`` and the transport binding pages:

* a ``DiscoverResult`` with a mutual modern version: modern;
* a recognized modern error (``-32022`` with a mutual modern version): retry at that version
  (an HTTP transport turns a JSON-RPC error in an HTTP 4xx body into that error);
* HTTP 401/403: not an era verdict, the error is raised;
* anything else (another JSON-RPC error, an HTTP 4xx, a probe whose HTTP stream ended
  without an answer, a ``DiscoverResult`` without a mutual modern version, a result that
  is not a ``DiscoverResult`` at all): legacy, ``initialize``.

No answer within the probe timeout is not a verdict: the session sends ``initialize`` and
keeps the probe pending, and whichever the server answers first decides (see
``trio_mcp._negotiation``). Verdicts are remembered per origin or command in an
[`EraCache`][trio_mcp.EraCache].
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ._exceptions import (
    ConnectionClosed,
    HTTPStatusError,
    ProtocolError,
    ServerError,
    UnsupportedProtocolVersionError,
)

__all__ = [
    "LATEST_LEGACY_VERSION",
    "LEGACY_VERSIONS",
    "MODERN_ERROR_CODES",
    "MODERN_VERSIONS",
    "Era",
    "EraCache",
    "ProbeVerdict",
    "Verdict",
    "classify_probe",
    "era_cache",
]

Era = Literal["legacy", "modern"]
"""A session's era: ``"legacy"`` (``initialize`` handshake) or ``"modern"`` (stateless)."""

MODERN_VERSIONS: Final = ("2026-07-28",)
"""Modern (stateless, per-request ``_meta``) revisions, newest first."""
LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Legacy (``initialize`` handshake) revisions, newest first."""
LATEST_LEGACY_VERSION: Final = LEGACY_VERSIONS[0]
MODERN_ERROR_CODES: Final = frozenset({-32020, -32021, -32022})
"""JSON-RPC error codes only a modern server sends."""


class EraCache:
    """Which era a server spoke, per HTTP origin or stdio command (bounded, LRU).

    The spec says clients SHOULD cache the era per origin and re-probe when the cached
    assumption fails; the session does both. One cache is shared by the process
    (``trio_mcp._eras.era_cache``); pass ``era_cache=EraCache()`` to
    [`open_mcp_session()`][trio_mcp.open_mcp_session] to isolate a group of sessions (tests,
    tenants).

    Args:
        max_entries: How many servers are remembered; the least recently used is dropped.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._entries: OrderedDict[str, str] = OrderedDict()

    def get(self, key: str) -> str | None:
        """The remembered era (``"legacy"`` or ``"modern"``) for ``key``, or None.

        Args:
            key: An origin (``https://host:port``) or a stdio command key.
        """
        era = self._entries.get(key)
        if era is not None:
            self._entries.move_to_end(key)
        return era

    def put(self, key: str, era: str) -> None:
        """Remember ``era`` for ``key``.

        Args:
            key: An origin or a stdio command key.
            era: ``"legacy"`` or ``"modern"``.
        """
        self._entries[key] = era
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def forget(self, key: str) -> None:
        """Drop what is remembered for ``key``.

        Args:
            key: An origin or a stdio command key.
        """
        self._entries.pop(key, None)

    def clear(self) -> None:
        """Forget everything."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __getitem__(self, key: str) -> str:
        return self._entries[key]

    def __setitem__(self, key: str, era: str) -> None:
        self.put(key, era)


era_cache: EraCache = EraCache()
"""The era verdicts of this process (see [`EraCache`][trio_mcp.EraCache])."""


class ProbeVerdict(enum.Enum):
    """What a ``server/discover`` probe tells."""

    MODERN = "modern"
    RETRY = "retry"
    LEGACY = "legacy"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A probe's verdict: the era, the version to use next, and why."""

    kind: ProbeVerdict
    version: str | None = None
    reason: str = ""


def _mutual(offered: Sequence[str], ours: Sequence[str]) -> str | None:
    for version in ours:
        if version in offered:
            return version
    return None


def classify_probe(
    discovered: Any,
    error: BaseException | None,
    modern: Sequence[str] = MODERN_VERSIONS,
    legacy: Sequence[str] = LEGACY_VERSIONS,
) -> Verdict:
    """Classify the outcome of a ``server/discover`` probe.

    Args:
        discovered: The decoded ``DiscoverResult`` (anything with ``supported_versions``),
            or None if the probe failed.
        error: The exception the probe raised, if any.
        modern: The modern versions this client speaks, preferred first.
        legacy: The legacy versions this client speaks, preferred first.
    """
    if discovered is not None:
        offered = list(getattr(discovered, "supported_versions", None) or [])
        version = _mutual(offered, modern)
        if version is not None:
            return Verdict(ProbeVerdict.MODERN, version, "server/discover succeeded")
        return Verdict(
            ProbeVerdict.LEGACY,
            None,
            f"server/discover listed no modern version we speak ({offered})",
        )
    if isinstance(error, UnsupportedProtocolVersionError):
        version = _mutual(error.supported, modern)
        if version is not None:
            return Verdict(ProbeVerdict.RETRY, version, "server asked for another modern version")
        if _mutual(error.supported, legacy) is not None:
            return Verdict(
                ProbeVerdict.LEGACY, None, "server supports only legacy versions we speak"
            )
        return Verdict(
            ProbeVerdict.FAIL,
            None,
            f"the server supports only {error.supported}, none of which trio_mcp speaks",
        )
    if isinstance(error, ServerError) and error.code in MODERN_ERROR_CODES:
        return Verdict(ProbeVerdict.FAIL, None, f"modern server rejected the probe: {error}")
    if isinstance(error, HTTPStatusError):  # a JSON-RPC error in the body is a ServerError
        status = error.status_code
        if status in (401, 403):
            return Verdict(ProbeVerdict.FAIL, None, f"HTTP {status}: authorization is required")
        if 400 <= status < 500:
            return Verdict(ProbeVerdict.LEGACY, None, f"HTTP {status} without a modern error body")
        return Verdict(ProbeVerdict.FAIL, None, f"HTTP {status} from the server")
    if isinstance(error, ConnectionClosed):
        return Verdict(
            ProbeVerdict.LEGACY, None, f"the server ended the probe without an answer: {error}"
        )
    if isinstance(error, ServerError):
        return Verdict(ProbeVerdict.LEGACY, None, f"server/discover failed with {error.code}")
    if isinstance(error, ProtocolError):
        return Verdict(ProbeVerdict.LEGACY, None, f"the answer is not a DiscoverResult: {error}")
    return Verdict(ProbeVerdict.FAIL, None, f"server/discover failed: {error!r}")
