"""The result cache: listings and reads kept while the server's ``ttlMs`` hint says so.

Modern-era (2026-07-28) results may carry ``ttlMs``; a session keeps such results, keyed by
method and cursor (or URI), until they expire, the server says the list changed, or the
resource was updated. Bounded: at most 1024 entries (expired ones swept first, then the
oldest).
"""

from __future__ import annotations

from typing import Any, Final

import trio
from msgspec import UNSET

__all__ = ["MAX_CACHE_ENTRIES", "ResultCache"]

MAX_CACHE_ENTRIES: Final = 1024


class ResultCache:
    """One session's cached results, with their expiry times on trio's clock."""

    __slots__ = ("enabled", "entries")

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        """whether results are kept at all (``open_mcp_session(cache=...)``)"""
        self.entries: dict[tuple[str, str], tuple[float, Any]] = {}
        """(method, key) -> (expiry time, value); read ``if cache.entries:`` first (cheap)"""

    def __len__(self) -> int:
        return len(self.entries)

    def invalidate(self, method: str) -> None:
        """Drop every entry of ``method``."""
        entries = self.entries
        for key in [key for key in entries if key[0] == method]:
            del entries[key]

    def forget(self, method: str, key: str) -> None:
        """Drop one entry, if there is one."""
        self.entries.pop((method, key), None)

    def get(self, method: str, key: str) -> Any:
        """The fresh value cached for ``(method, key)``, or None."""
        entry = self.entries.get((method, key))
        if entry is None:
            return None
        expires, value = entry
        if trio.current_time() >= expires:
            del self.entries[(method, key)]
            return None
        return value

    def put(self, method: str, key: str, value: Any) -> None:
        """Keep ``value`` for its ``ttl_ms`` (nothing when it has none, or caching is off)."""
        ttl = getattr(value, "ttl_ms", UNSET)
        if not self.enabled or ttl is UNSET or not isinstance(ttl, (int, float)) or ttl <= 0:
            return
        entries = self.entries
        now = trio.current_time()
        if len(entries) >= MAX_CACHE_ENTRIES:  # sweep expired entries, then the oldest
            for old in [k for k, (expires, _) in entries.items() if expires <= now]:
                del entries[old]
            while len(entries) >= MAX_CACHE_ENTRIES:
                del entries[next(iter(entries))]
        entries[(method, key)] = (now + ttl / 1000.0, value)
