"""The [`ServerGroup`][trio_mcp.groups.ServerGroup] a user holds: its servers' states, one
catalogue, routing.

It asks its `Supervisor` to run each member, its
`Catalogue` for the exposed names, routes each call to the
server offering the item, and fans state changes and notifications out to subscribers.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import msgspec
import trio

from .. import types as t
from .._droplog import DropLog
from .._exceptions import (
    NameCollisionError,
    ResourceNotFoundError,
    ServerError,
    ServerUnavailableError,
    TransportError,
)
from .._session import ClientSession, Notification
from .._statistics import SessionStatistics
from .._toolsearch import ToolIndex
from ._members import Member, RestartPolicy, ServerState, ServerStatus, Supervisor
from ._names import Catalogue, CollisionPolicy, template_matches

__all__ = ["GroupNotification", "GroupStatistics", "ServerGroup"]

logger = logging.getLogger("trio_mcp")

T = TypeVar("T")

_ROUTED: Final = frozenset({ServerState.RUNNING, ServerState.RECONNECTING})
"""The states in which calls are routed to a member's session."""


class GroupNotification(msgspec.Struct, frozen=True):
    """A notification from one server of a group.

    Attributes:
        server: The server's name in the group.
        notification: The notification itself.
    """

    server: str
    notification: Notification


@dataclass(frozen=True, slots=True)
class GroupStatistics:
    """A snapshot of a [`ServerGroup`][trio_mcp.groups.ServerGroup], from its ``statistics()``.

    Attributes:
        servers: Each server's [`ServerStatus`][trio_mcp.groups.ServerStatus] by name: its
            state, restarts and the failure that ended its last run.
        sessions: The [`SessionStatistics`][trio_mcp.SessionStatistics] of each running
            server, by name.
    """

    servers: Mapping[str, ServerStatus]
    sessions: Mapping[str, SessionStatistics]

    @property
    def restarts(self) -> int:
        """Restarts of every server, in all."""
        return sum(status.restarts for status in self.servers.values())


class ServerGroup:
    """Several MCP servers behind one catalogue. Open it with
    [`open_server_group()`][trio_mcp.groups.open_server_group].

    The catalogue ([`list_tools()`][trio_mcp.groups.ServerGroup.list_tools], ...) holds the items of
    every server that has run, named by the collision policy;
    [`call_tool()`][trio_mcp.groups.ServerGroup.call_tool],
    [`get_prompt()`][trio_mcp.groups.ServerGroup.get_prompt] and
    [`read_resource()`][trio_mcp.groups.ServerGroup.read_resource] route to the server that offers
    the item. A server that is down answers
    [`ServerUnavailableError`][trio_mcp.groups.ServerUnavailableError] (with the reason and stderr
    tail) while the others keep working. What a routed call shows about a server's link is its state
    at that instant: a transport error makes it ``RECONNECTING`` before the caller sees the
    exception, an answer makes it ``RUNNING`` again.
    """

    def __init__(
        self,
        members: list[Member],
        *,
        collisions: CollisionPolicy,
        prefix_separator: str,
        restart: RestartPolicy,
        notification_buffer: int,
    ) -> None:
        self._members = {member.name: member for member in members}
        self._catalogue = Catalogue(collisions, prefix_separator)
        self._supervisor = Supervisor(
            restart=restart,
            buffer=notification_buffer,
            publish=self._publish,
            forward=self._forward,
        )
        self._buffer = notification_buffer
        self._note_subscribers: list[
            tuple[frozenset[str] | None, trio.MemorySendChannel[GroupNotification]]
        ] = []
        self._event_subscribers: list[trio.MemorySendChannel[ServerStatus]] = []
        self._event_drops = DropLog("server group event subscriber is full; dropped")
        self._note_drops = DropLog("group notification subscriber is full; dropped")
        self._closed = False
        self._search_index: tuple[tuple[str, ...], tuple[Any, ...], ToolIndex] | None = None

    # -- state -----------------------------------------------------------------------------

    @property
    def servers(self) -> list[str]:
        """The names of the servers, in the order they were given."""
        return list(self._members)

    def status(self, server: str) -> ServerStatus:
        """A snapshot of one server's state.

        Args:
            server: The server's name.

        Raises:
            KeyError: No server has that name.
        """
        return self._member(server).status()

    def statuses(self) -> dict[str, ServerStatus]:
        """A snapshot of every server's state, by name."""
        return {name: member.status() for name, member in self._members.items()}

    def statistics(self) -> GroupStatistics:
        """A frozen snapshot of the group: each server's status, and each running session's.

        Cheap enough to call every second (see
        [`ClientSession.statistics`][trio_mcp.ClientSession.statistics]).
        """
        sessions = {
            name: member.session.statistics()
            for name, member in self._members.items()
            if member.session is not None and member.state is ServerState.RUNNING
        }
        return GroupStatistics(servers=self.statuses(), sessions=sessions)

    def session(self, server: str) -> ClientSession:
        """The session of a running (or reconnecting) server, for anything the group does
        not route.

        Calls made on it directly are not watched by the group: a transport error there
        does not change the server's state (the transport's link and the keep-alive do).

        Args:
            server: The server's name.

        Raises:
            KeyError: No server has that name.
            ServerUnavailableError: The server is not running.
        """
        return self._live(self._member(server))

    def history(self, server: str) -> list[ServerStatus]:
        """The server's most recent statuses (up to 64), oldest first.

        Args:
            server: The server's name.

        Raises:
            KeyError: No server has that name.
        """
        return list(self._member(server).history)

    async def wait_for(
        self, server: str, *states: ServerState, since: int | None = None
    ) -> ServerStatus:
        """Wait until a server is in one of ``states`` (default: ``RUNNING``).

        Without ``since``: return its status at once if it is in one of ``states`` now,
        else wait for the next change into one of them.

        With ``since`` (a [`ServerStatus.seq`][trio_mcp.groups.ServerStatus] you saw, e.g.
        ``group.status(name).seq`` taken before you act): return the first change after it
        into one of ``states``, even one that already happened and passed (the server was
        ``RESTARTING`` and is ``RUNNING`` again); wait only if there was none. The returned
        status is the snapshot taken at that change. Never misses one: each server keeps
        its last 64 changes, and beyond them the latest change into each state.

        Args:
            server: The server's name.
            *states: The states to wait for.
            since: Only changes with a larger ``seq`` count.

        Returns:
            Its status once it got there.

        Raises:
            KeyError: No server has that name.
        """
        member = self._member(server)
        wanted = frozenset(states or (ServerState.RUNNING,))
        await trio.lowlevel.checkpoint()
        if since is None:
            if member.state in wanted:
                return member.status()
            since = member.seq
        while True:
            found = member.since(since, wanted)
            if found is not None:
                return found
            await member.changed.wait()

    def _member(self, server: str) -> Member:
        try:
            return self._members[server]
        except KeyError:
            raise KeyError(f"no server named {server!r} in the group ({self.servers})") from None

    def _live(self, member: Member) -> ClientSession:
        session = member.session
        # A closed session is one the supervisor is closing after its server died (state
        # still RUNNING for that moment): unavailable, never the session's "you closed me".
        if member.state not in _ROUTED or session is None or session.closed:
            raise _unavailable(member)
        return session

    async def _routed(self, member: Member, call: Callable[[ClientSession], Awaitable[T]]) -> T:
        """Make one call on the member's session; what it shows about the link is its
        status at that instant (a transport error: ``RECONNECTING``; an answer:
        ``RUNNING``). A session the group closed meanwhile (its server died) gives
        [`ServerUnavailableError`][trio_mcp.groups.ServerUnavailableError], as a down
        server does."""
        try:
            session = self._live(member)
        except ServerUnavailableError:
            await trio.lowlevel.checkpoint()
            raise
        try:
            result = await call(session)
        except TransportError as exc:
            self._supervisor.suspect(member, session, exc)
            raise
        except trio.ClosedResourceError as exc:
            if self._closed or not session.closed:
                raise  # the application closed the group, or not about this session
            raise _unavailable(member) from exc
        self._supervisor.answered(member, session)
        return result

    # -- what the supervisor reports -------------------------------------------------------

    def _publish(self, status: ServerStatus) -> None:
        for send in list(self._event_subscribers):
            try:
                send.send_nowait(status)
            except trio.WouldBlock:
                self._event_drops.dropped(f"{status.server!r}: {status.state.name}")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    def _forward(self, member: Member, note: Notification) -> None:
        if not self._note_subscribers:
            return
        item = GroupNotification(member.name, note)
        for methods, send in list(self._note_subscribers):
            if methods is not None and note.method not in methods:
                continue
            try:
                send.send_nowait(item)
            except trio.WouldBlock:
                self._note_drops.dropped(f"{note.method} from {member.name!r}")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    # -- catalogue -------------------------------------------------------------------------

    async def list_tools(self) -> list[t.Tool]:
        """Every tool of the group, under its exposed name (see the collision policy).

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a name.
        """
        await trio.lowlevel.checkpoint()
        return [
            item if item.name == name else msgspec.structs.replace(item, name=name)
            for name, (_member, item) in self._exposed("tool").items()
        ]

    async def search_tools(self, query: str, *, limit: int | None = None) -> list[t.Tool]:
        """Search the group's tools (exposed names) by name, title, description, arguments.

        The [`ToolIndex`][trio_mcp.agent.ToolIndex] is built when the group's catalogue
        changed since the last search (a server restarted, a list changed), else reused.

        Args:
            query: The words to look for; an empty query returns every tool.
            limit: At most this many tools (None: every match).

        Returns:
            The matching tools under their exposed names, best first.

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a name.
        """
        await trio.lowlevel.checkpoint()
        exposed = self._exposed("tool")
        names, items = tuple(exposed), tuple(item for _member, item in exposed.values())
        cached = self._search_index
        if cached is None or cached[0] != names or any(map(operator.is_not, cached[1], items)):
            tools = [
                item if item.name == name else msgspec.structs.replace(item, name=name)
                for name, item in zip(names, items, strict=True)
            ]
            cached = self._search_index = (names, items, ToolIndex(tools))
        return cached[2].search(query, limit=limit)

    async def list_prompts(self) -> list[t.Prompt]:
        """Every prompt of the group, under its exposed name.

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a name.
        """
        await trio.lowlevel.checkpoint()
        return [
            item if item.name == name else msgspec.structs.replace(item, name=name)
            for name, (_member, item) in self._exposed("prompt").items()
        ]

    async def list_resources(self) -> list[t.Resource]:
        """Every resource of the group (URIs are never renamed).

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a URI.
        """
        await trio.lowlevel.checkpoint()
        return [item for _member, item in self._every("resource", "uri")]

    async def list_resource_templates(self) -> list[t.ResourceTemplate]:
        """Every resource template of the group.

        Raises:
            NameCollisionError: Under ``collisions="error"``, two servers offer a template.
        """
        await trio.lowlevel.checkpoint()
        return [item for _member, item in self._every("resource template", "uri_template")]

    def route_tool(self, name: str) -> tuple[str, str]:
        """Which server serves the tool exposed as ``name``, and its name there.

        Args:
            name: The exposed name (as [`list_tools()`][trio_mcp.groups.ServerGroup.list_tools]
                gives it).

        Returns:
            ``(server, original_name)``.

        Raises:
            KeyError: No server offers such a tool.
        """
        member, item = self._find("tool", name)
        return member.name, item.name

    def _exposed(self, kind: str) -> dict[str, tuple[Member, Any]]:
        return self._catalogue.exposed(kind, self._members.values())

    def _every(self, kind: str, key: str) -> list[tuple[Member, Any]]:
        return self._catalogue.every(kind, key, self._members.values())

    def _find(self, kind: str, name: str) -> tuple[Member, Any]:
        found = self._exposed(kind).get(name)
        if found is None:
            raise KeyError(f"no server of the group offers a {kind} named {name!r}")
        return found

    # -- routing ---------------------------------------------------------------------------

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> t.CallToolResult:
        """Call the tool exposed as ``name`` on the server that offers it.

        Args:
            name: The exposed name.
            arguments: The tool's arguments.
            **kwargs: ``timeout`` and ``on_progress``, as
                [`ClientSession.call_tool()`][trio_mcp.ClientSession.call_tool].

        Raises:
            ServerError: No server offers the tool (``-32602``, as a server would say), or
                the server answered with an error.
            ServerUnavailableError: Its server is not running (why, stderr tail).
        """
        try:
            member, item = self._find("tool", name)
        except KeyError:
            await trio.lowlevel.checkpoint()
            raise ServerError(
                -32602, f"unknown tool {name!r}: no server of the group offers it",
                method="tools/call",
            ) from None  # fmt: skip
        return await self._routed(
            member, lambda session: session.call_tool(item.name, arguments, **kwargs)
        )

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, **kwargs: Any
    ) -> t.GetPromptResult:
        """Get the prompt exposed as ``name`` from the server that offers it.

        Args:
            name: The exposed name.
            arguments: The prompt's arguments.
            **kwargs: ``timeout``, as
                [`ClientSession.get_prompt()`][trio_mcp.ClientSession.get_prompt].

        Raises:
            ServerError: No server offers the prompt (``-32602``), or the server failed.
            ServerUnavailableError: Its server is not running.
        """
        try:
            member, item = self._find("prompt", name)
        except KeyError:
            await trio.lowlevel.checkpoint()
            raise ServerError(
                -32602, f"unknown prompt {name!r}: no server of the group offers it",
                method="prompts/get",
            ) from None  # fmt: skip
        return await self._routed(
            member, lambda session: session.get_prompt(item.name, arguments, **kwargs)
        )

    async def read_resource(
        self, uri: str, *, server: str | None = None, **kwargs: Any
    ) -> t.ReadResourceResult:
        """Read a resource from the server that lists it (or whose template matches it).

        Args:
            uri: The resource's URI.
            server: Read from this server, without looking the URI up.
            **kwargs: ``cache`` and ``timeout``, as
                [`ClientSession.read_resource()`][trio_mcp.ClientSession.read_resource].

        Raises:
            ResourceNotFoundError: No server lists the URI or a template matching it.
            NameCollisionError: Several servers do: pass ``server=``.
            ServerUnavailableError: Its server is not running.
        """
        if server is not None:
            return await self._routed(
                self._member(server), lambda session: session.read_resource(uri, **kwargs)
            )
        owners = [m for m, item in self._every("resource", "uri") if item.uri == uri]
        if not owners:
            owners = [
                m
                for m, item in self._every("resource template", "uri_template")
                if template_matches(item.uri_template, uri)
            ]
        names = list(dict.fromkeys(member.name for member in owners))
        if not names:
            await trio.lowlevel.checkpoint()
            raise ResourceNotFoundError(
                -32002, f"no server of the group offers {uri!r}", method="resources/read"
            )
        if len(names) > 1:
            await trio.lowlevel.checkpoint()
            raise NameCollisionError("resource", uri, names)
        return await self._routed(owners[0], lambda session: session.read_resource(uri, **kwargs))

    # -- streams ---------------------------------------------------------------------------

    @asynccontextmanager
    async def notifications(
        self, *methods: str, buffer: int | None = None
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[GroupNotification], None]:
        """Receive the notifications of every server while the block runs.

        Args:
            *methods: Only these methods (all when none are given).
            buffer: How many may wait unread before newer ones are dropped (with a warning).

        Yields:
            A channel of [`GroupNotification`][trio_mcp.groups.GroupNotification]; it ends when the
                group closes.
        """
        send, receive = trio.open_memory_channel[GroupNotification](
            self._buffer if buffer is None else buffer
        )
        entry = (frozenset(methods) if methods else None, send)
        self._note_subscribers.append(entry)
        if self._closed:
            send.close()
        try:
            async with receive:
                yield receive
        finally:
            self._note_subscribers.remove(entry)
            send.close()
            self._note_drops.flush()

    @asynccontextmanager
    async def events(
        self, *, buffer: int = 100
    ) -> AsyncGenerator[trio.MemoryReceiveChannel[ServerStatus], None]:
        """Receive every state change of every server while the block runs.

        Args:
            buffer: How many may wait unread before newer ones are dropped (with a warning).

        Yields:
            A channel of [`ServerStatus`][trio_mcp.groups.ServerStatus]; it ends when the group
                closes.
        """
        send, receive = trio.open_memory_channel[ServerStatus](buffer)
        self._event_subscribers.append(send)
        if self._closed:
            send.close()
        try:
            async with receive:
                yield receive
        finally:
            self._event_subscribers.remove(send)
            send.close()
            self._event_drops.flush()

    # -- starting and closing --------------------------------------------------------------

    def _start(self, nursery: trio.Nursery, approved: Mapping[str, bool]) -> None:
        """Start a supervisor per member in ``nursery``; mark those not approved rejected."""
        for member in self._members.values():
            if approved.get(member.name, True):
                nursery.start_soon(
                    self._supervisor.supervise, member, name=f"trio_mcp group server {member.name}"
                )
            else:
                member.error = ServerUnavailableError(member.name, "not approved to start")
                self._supervisor.set(member, ServerState.REJECTED)
                member.settled.set()
                member.done.set()

    async def _settled(self) -> None:
        """Wait until every member has started or failed its first start."""
        for member in self._members.values():
            await member.settled.wait()

    async def aclose(self) -> None:
        """Stop every server (each session closes shielded and bounded). Idempotent."""
        if self._closed:
            await trio.lowlevel.checkpoint()
            return
        self._closed = True
        for member in self._members.values():
            member.scope.cancel()
        with trio.CancelScope(shield=True):
            for member in self._members.values():
                await member.done.wait()
        for events in self._event_subscribers:
            events.close()
        for _methods, notes in self._note_subscribers:
            notes.close()


def _unavailable(member: Member) -> ServerUnavailableError:
    reason = {
        ServerState.STARTING: "is starting",
        ServerState.RESTARTING: "is down and waiting to restart",
        ServerState.FAILED: "is down for good",
        ServerState.REJECTED: "was not approved to start",
        ServerState.STOPPED: "was stopped (the group is closed)",
    }.get(member.state, "is down (its session ended)")
    if member.state is ServerState.RESTARTING and member.retry_at is not None:
        reason += f" (in {max(0.0, member.retry_at - trio.current_time()):.1f} s)"
    if member.error is not None and member.state is not ServerState.REJECTED:
        reason += f": {member.error}"
    return ServerUnavailableError(
        member.name,
        reason,
        cause=member.error,
        stderr_tail=member.stderr_tail,
        retry_at=member.retry_at if member.state is ServerState.RESTARTING else None,
    )
