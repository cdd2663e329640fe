"""Many servers at once: a supervised group with one catalogue and routing.

Each server runs in a supervisor task of its own, in the nursery you give (or one the
group owns). A server that fails to start or dies is reported (a
[`ServerStatus`][trio_mcp.groups.ServerStatus] with its error and stderr tail, kept after it runs
again) while the others keep working; a server that stops answering (its link, a routed call, a
keep-alive ping) is ``RECONNECTING`` until it answers again; servers started from a factory (a stdio
command, a URL, a ``MockServer``) are restarted with exponential backoff and a circuit breaker on
trio's clock, and their catalogue is fetched again.

The parts, each with one job:

* ``_members``: one server's life (start, watch, restart by the
  [`RestartPolicy`][trio_mcp.groups.RestartPolicy], its
  [`ServerStatus`][trio_mcp.groups.ServerStatus]);
* ``_names``: what servers and their items are called (default names, the collision
  policy, the merged catalogue);
* ``_server_group``: the [`ServerGroup`][trio_mcp.groups.ServerGroup] itself (states, listing,
  routing, event and notification streams, closing);
* ``_open``: [`open_server_group()`][trio_mcp.groups.open_server_group] (members from the servers
  given, consent, the nursery).
"""

from __future__ import annotations

from ._members import RestartPolicy as RestartPolicy
from ._members import ServerFailure as ServerFailure
from ._members import ServerState as ServerState
from ._members import ServerStatus as ServerStatus
from ._names import CollisionPolicy as CollisionPolicy
from ._names import default_name as default_name
from ._open import GroupServers as GroupServers
from ._open import open_server_group as open_server_group
from ._server_group import GroupNotification as GroupNotification
from ._server_group import GroupStatistics as GroupStatistics
from ._server_group import ServerGroup as ServerGroup

__all__ = [
    "CollisionPolicy",
    "GroupNotification",
    "GroupServers",
    "GroupStatistics",
    "RestartPolicy",
    "ServerFailure",
    "ServerGroup",
    "ServerState",
    "ServerStatus",
    "default_name",
    "open_server_group",
]
