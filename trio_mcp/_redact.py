"""Secret-free reprs: what a type holding a token, secret, key, header or env value shows.

Reprs end up in logs, tracebacks and ``pytest --showlocals``; a secret must not. A field
named as secret shows ``'***'`` (a mapping shows its keys, each value ``'***'``): a reader
still sees *which* header or variable is set, never its value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["hidden", "redacted_repr"]


def hidden(value: object) -> str:
    """How a secret value shows: ``None``, ``'***'``, or a mapping's keys with ``'***'``."""
    if value is None:
        return "None"
    if isinstance(value, Mapping):
        items: Mapping[Any, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return "{" + ", ".join(f"{key!r}: '***'" for key in items) + "}"
    return "'***'"


def redacted_repr(obj: Any, secret: Collection[str]) -> str:
    """The dataclass repr of ``obj`` with the fields in ``secret`` shown by :func:`hidden`."""
    parts: list[str] = []
    for item in dataclasses.fields(obj):
        if not item.repr:
            continue
        value = getattr(obj, item.name)
        shown = hidden(value) if item.name in secret else repr(value)
        parts.append(f"{item.name}={shown}")
    return f"{type(obj).__name__}({', '.join(parts)})"
