"""Secret-free reprs: what a type holding a token, secret, key, header or env value shows.

Reprs end up in logs, tracebacks and ``pytest --showlocals``; a secret must not. A field
named as secret shows ``'***'`` (a mapping shows its keys, each value ``'***'``): a reader
still sees *which* header or variable is set, never its value. A URL shows without its
userinfo (``https://user:password@host/`` as ``https://host/``): `display_url()`, the
one function every repr, exception message and log line that quotes a URL uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["display_url", "hidden", "redacted_repr", "URL_FIELDS"]

URL_FIELDS = frozenset({"url", "endpoint", "proxy", "server_url"})
"""Fields that hold a URL: `redacted_repr()` shows them with `display_url()`."""


def display_url(url: object) -> str:
    """A URL as trio_mcp shows it anywhere (reprs, messages, logs): userinfo dropped.

    ``https://alice:pw@host:8443/mcp?x=1`` shows as ``https://host:8443/mcp?x=1``. Anything
    that is not a ``scheme://authority`` URL is returned as ``str(url)``.

    Args:
        url: A URL (a string, or an ``httpx.URL``).
    """
    text = str(url)
    scheme, separator, rest = text.partition("://")
    if not separator:
        return text
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            end = min(end, found)
    authority = rest[:end]
    if "@" not in authority:
        return text
    return f"{scheme}://{authority.rpartition('@')[2]}{rest[end:]}"


def hidden(value: object) -> str:
    """How a secret value shows: ``None``, ``'***'``, or a mapping's keys with ``'***'``."""
    if value is None:
        return "None"
    if isinstance(value, Mapping):
        items: Mapping[Any, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return "{" + ", ".join(f"{key!r}: '***'" for key in items) + "}"
    return "'***'"


def redacted_repr(obj: Any, secret: Collection[str]) -> str:
    """The dataclass repr of ``obj`` with the fields in ``secret`` shown by `hidden()`."""
    parts: list[str] = []
    for item in dataclasses.fields(obj):
        if not item.repr:
            continue
        value = getattr(obj, item.name)
        if item.name in secret:
            shown = hidden(value)
        elif item.name in URL_FIELDS and isinstance(value, str):
            shown = repr(display_url(value))
        else:
            shown = repr(value)
        parts.append(f"{item.name}={shown}")
    return f"{type(obj).__name__}({', '.join(parts)})"
