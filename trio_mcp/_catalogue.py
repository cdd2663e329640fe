"""A live catalogue of a server's tools, prompts and resources (``ClientSession.catalogue``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar, Protocol

import trio

from . import types as t
from ._construction import NoPublicConstructor
from ._exceptions import MCPError

if TYPE_CHECKING:
    from ._subscriptions import Notification

__all__ = ["Catalogue"]

logger = logging.getLogger("trio_mcp")

_KINDS = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


class Lister(Protocol):
    """What a catalogue uses of its session (a [`ClientSession`][trio_mcp.ClientSession]): the full
    listings."""

    async def list_tools(self, *, cache: bool = True) -> list[t.Tool]:
        """Every tool ([`ClientSession.list_tools()`][trio_mcp.ClientSession.list_tools])."""
        ...

    async def list_prompts(self, *, cache: bool = True) -> list[t.Prompt]:
        """Every prompt ([`ClientSession.list_prompts()`][trio_mcp.ClientSession.list_prompts])."""
        ...

    async def list_resources(self, *, cache: bool = True) -> list[t.Resource]:
        """Every resource
        ([`ClientSession.list_resources()`][trio_mcp.ClientSession.list_resources])."""
        ...


class Catalogue(metaclass=NoPublicConstructor):
    """The server's tools, prompts and resources, kept up to date.

    Made by [`ClientSession.catalogue()`][trio_mcp.ClientSession.catalogue]. Read the lists at any
    time; they are replaced (never mutated) on each refresh.

    Attributes:
        tools: The tools (empty unless kept).
        prompts: The prompts (empty unless kept).
        resources: The resources (empty unless kept).
        version: How many refreshes have completed (1 after the first listing).
        last_error: Why the last refresh failed (the old lists were kept), or None.
    """

    _open_with: ClassVar[str] = "ClientSession.catalogue()"

    def __init__(self, session: Lister, *, tools: bool, prompts: bool, resources: bool) -> None:
        self._session = session
        self._kinds = {
            kind for kind, kept in (("tools", tools), ("prompts", prompts),
                                    ("resources", resources)) if kept
        }  # fmt: skip
        self.tools: list[t.Tool] = []
        self.prompts: list[t.Prompt] = []
        self.resources: list[t.Resource] = []
        self.version: int = 0
        self.last_error: MCPError | None = None
        self._updated = trio.Event()

    async def refresh(self, kinds: set[str] | None = None) -> None:
        """List the kept kinds (or ``kinds`` of them) again now.

        Args:
            kinds: Some of ``"tools"``, ``"prompts"``, ``"resources"`` (default: all kept).

        Raises:
            MCPError: Listing failed (the old lists are kept).
        """
        wanted = self._kinds if kinds is None else self._kinds & kinds
        session = self._session
        if "tools" in wanted:
            self.tools = await session.list_tools(cache=False)
        if "prompts" in wanted:
            self.prompts = await session.list_prompts(cache=False)
        if "resources" in wanted:
            self.resources = await session.list_resources(cache=False)
        self.version += 1
        self.last_error = None
        self._updated.set()
        self._updated = trio.Event()

    async def wait_updated(self) -> None:
        """Wait until the next refresh has completed."""
        await self._updated.wait()


async def run_catalogue(
    catalogue: Catalogue,
    channel: trio.MemoryReceiveChannel[Notification],
    debounce: float,
    scope: trio.CancelScope,
) -> None:
    """Internal: refresh ``catalogue`` on list-changed notifications, debounced."""
    with scope:
        async for note in channel:
            kinds = {_KINDS[note.method]} if note.method in _KINDS else set[str]()
            with trio.move_on_after(debounce):
                async for more in channel:
                    if more.method in _KINDS:
                        kinds.add(_KINDS[more.method])
            if not kinds:
                continue
            try:
                await catalogue.refresh(kinds)
            except MCPError as exc:
                catalogue.last_error = exc
                logger.warning("refreshing the catalogue failed: %r", exc)
            except trio.ClosedResourceError:
                return
