"""Names in a group: what each server is called, and what each of its items is exposed as.

`default_name()` names a server given in a list. A [`Catalogue`][trio_mcp.Catalogue] merges the
items of the running servers into one namespace by the collision policy (``"prefix"``,
``"error"`` or a renaming hook), so a tool, prompt or resource routes back to the server
that offers it.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Literal, TypeAlias, cast
from urllib.parse import urlsplit

from .._config import ServerConfig
from .._connect import Target
from .._exceptions import NameCollisionError
from ._members import DOWN_FOR_GOOD, Member

__all__ = ["Catalogue", "CollisionPolicy", "default_name", "template_matches"]

logger = logging.getLogger("trio_mcp")

CollisionPolicy: TypeAlias = "Literal['prefix', 'error'] | Callable[[str, str, str], str]"
"""``"prefix"``, ``"error"``, or a hook ``(kind, server, name) -> exposed name``."""

_LAUNCHERS: Final = frozenset(
    {"python", "python3", "node", "npx", "uvx", "uv", "bunx", "bun", "deno", "pipx", "docker"}
)
_MAX_CLASHES_LOGGED: Final = 1024
"""How many distinct name clashes are remembered as logged (then the memory starts over)."""


def default_name(target: Target | ServerConfig) -> str:
    """The name a target gets in a group built from a list.

    A config entry keeps its name; a parameters object with a ``name`` (``MockServer``)
    uses it; an argv gives the program (or, for a launcher such as ``python``, ``npx`` or
    ``uvx``, the module or package it runs); a URL gives its host and port.
    """
    if isinstance(target, ServerConfig):
        return target.name
    argv: list[str] | None = None
    if isinstance(target, str):
        if "://" in target:
            parts = urlsplit(target)
            return parts.netloc or target
        argv = target.split()
    elif isinstance(target, Sequence):
        argv = [os.fspath(part) for part in target]
    else:
        name: object = getattr(target, "name", None)
        if isinstance(name, str) and name:
            return name
        url: object = getattr(target, "url", None)
        if isinstance(url, str):
            return urlsplit(url).netloc or url
        command: object = getattr(target, "argv", None)
        if isinstance(command, list):
            argv = [str(part) for part in cast("list[object]", command)]
    if not argv:
        return type(target).__name__.lower()
    program = os.path.basename(argv[0])
    stem = program.split(".")[0] if program.startswith("python") else program
    if stem.rstrip("0123456789.") in _LAUNCHERS or stem in _LAUNCHERS:
        rest = argv[1:]
        if "-m" in rest and rest.index("-m") + 1 < len(rest):
            return rest[rest.index("-m") + 1]
        for arg in rest:
            if not arg.startswith("-"):
                base = arg.rstrip("/").rsplit("/", 1)[-1]
                return base.removesuffix(".py").removesuffix(".js") or base
    return program


class Catalogue:
    """The items of a group's servers under the names the collision policy exposes.

    Args:
        collisions: The collision policy.
        separator: Between server name and item name under ``"prefix"``.
    """

    def __init__(self, collisions: CollisionPolicy, separator: str) -> None:
        self.collisions: CollisionPolicy = collisions
        self._separator = separator
        self._clashes_logged: set[tuple[str, str, tuple[str, ...], str | None]] = set()

    def exposed(self, kind: str, members: Iterable[Member]) -> dict[str, tuple[Member, Any]]:
        """Exposed name -> (member, item) for tools or prompts, by the collision policy.

        A clash affects only the names that clash. Items sharing a name are renamed by the
        policy (``"error"`` raises instead). When a renamed item lands on a name another
        server offers as is (server ``b`` offering ``a_x`` while ``a`` and ``c`` both
        offer ``x``), the renamed one keeps it (it carries its server's name) and the other
        is renamed too; a name still claimed twice after that is exposed for nobody. Each
        such clash is logged once.

        Raises:
            NameCollisionError: Under ``"error"``, two servers offer a name.
        """
        offers: dict[str, list[tuple[Member, Any]]] = {}
        for member in members:
            if member.state in DOWN_FOR_GOOD:
                continue
            for item in member.items.get(kind, ()):
                offers.setdefault(item.name, []).append((member, item))
        policy = self.collisions
        # exposed name -> its claimants: (member, item, whether the policy renamed it)
        claims: dict[str, list[tuple[Member, Any, bool]]] = {}
        for name, found in offers.items():
            if len(found) == 1:
                claims.setdefault(name, []).append((*found[0], False))
                continue
            if policy == "error":
                raise NameCollisionError(kind, name, [member.name for member, _ in found])
            for member, item in found:
                claims.setdefault(self._renamed(kind, member, name), []).append(
                    (member, item, True)
                )
        exposed: dict[str, tuple[Member, Any]] = {}
        second: dict[str, list[tuple[Member, Any]]] = {}
        for new, claimants in claims.items():
            if len(claimants) == 1:
                exposed[new] = claimants[0][:2]
                continue
            renamed = [(member, item) for member, item, was in claimants if was]
            if len(renamed) == 1:  # a renamed item keeps the name; the bare ones move
                exposed[new] = renamed[0]
            else:
                self._log_clash(kind, new, claimants, None)
            for member, item, was in claimants:
                if not was:
                    second.setdefault(self._renamed(kind, member, item.name), []).append(
                        (member, item)
                    )
        for new, found in second.items():
            if len(found) == 1 and new not in claims:
                exposed[new] = found[0]
            else:
                self._log_clash(kind, new, [(*f, True) for f in found], None)
                continue
            member, item = found[0]
            self._log_clash(kind, item.name, claims[item.name], new)
        return exposed

    def every(self, kind: str, key: str, members: Iterable[Member]) -> list[tuple[Member, Any]]:
        """Every resource (or template) of the running members, never renamed.

        Raises:
            NameCollisionError: Under ``"error"``, two servers offer the same ``key``.
        """
        found: list[tuple[Member, Any]] = []
        owners: dict[str, str] = {}
        for member in members:
            if member.state in DOWN_FOR_GOOD:
                continue
            for item in member.items.get(kind, ()):
                value: str = getattr(item, key)
                if value in owners and self.collisions == "error":
                    raise NameCollisionError(kind, value, [owners[value], member.name])
                owners.setdefault(value, member.name)
                found.append((member, item))
        return found

    def _renamed(self, kind: str, member: Member, name: str) -> str:
        if self.collisions == "prefix":
            return f"{member.name}{self._separator}{name}"
        return _rename(self.collisions, kind, member.name, name)

    def _log_clash(
        self,
        kind: str,
        name: str,
        claimants: Sequence[tuple[Member, Any, bool]],
        moved: str | None,
    ) -> None:
        """Log a name clash the collision policy could not settle alone (once per clash)."""
        servers = tuple(sorted(member.name for member, _item, _was in claimants))
        key = (kind, name, servers, moved)
        if key in self._clashes_logged:
            return
        if len(self._clashes_logged) >= _MAX_CLASHES_LOGGED:
            self._clashes_logged.clear()
        self._clashes_logged.add(key)
        if moved is None:
            logger.warning(
                "servers %s all claim the %s name %r: it is exposed for none of them",
                ", ".join(repr(server) for server in servers), kind, name,
            )  # fmt: skip
        else:
            logger.warning(
                "servers %s claim the %s name %r: the renamed one keeps it, the other is "
                "exposed as %r", ", ".join(repr(server) for server in servers), kind, name, moved,
            )  # fmt: skip


def _rename(hook: Any, kind: str, server: str, name: str) -> str:
    new: object = hook(kind, server, name)
    if not isinstance(new, str) or not new:
        raise TypeError(f"the collisions hook returned {new!r} for {kind} {name!r}, not a name")
    return new


def template_matches(template: str, uri: str) -> bool:
    """Level-1 RFC 6570 matching: each ``{var}`` stands for one or more non-``/`` chars."""
    pattern = ""
    for index, part in enumerate(re.split(r"\{[^}]*\}", template)):
        pattern += ("[^/]+" if index else "") + re.escape(part)
    return re.fullmatch(pattern, uri) is not None
