"""Server groups: several servers as one, with restarts and one merged catalogue.

[`open_server_group`][trio_mcp.groups.open_server_group] (also
``trio_mcp.open_server_group``) opens a [`ServerGroup`][trio_mcp.groups.ServerGroup]; each
server restarts by its [`RestartPolicy`][trio_mcp.groups.RestartPolicy] and reports a
[`ServerStatus`][trio_mcp.groups.ServerStatus] (its
[`ServerState`][trio_mcp.groups.ServerState], its last
[`ServerFailure`][trio_mcp.groups.ServerFailure]); notifications arrive as
[`GroupNotification`][trio_mcp.groups.GroupNotification]. A call to a server that is not
running raises [`ServerUnavailableError`][trio_mcp.groups.ServerUnavailableError]; two
servers offering one name raise [`NameCollisionError`][trio_mcp.groups.NameCollisionError].
"""

from __future__ import annotations

from ._exceptions import NameCollisionError as NameCollisionError
from ._exceptions import ServerUnavailableError as ServerUnavailableError
from ._group import GroupNotification as GroupNotification
from ._group import GroupStatistics as GroupStatistics
from ._group import RestartPolicy as RestartPolicy
from ._group import ServerFailure as ServerFailure
from ._group import ServerGroup as ServerGroup
from ._group import ServerState as ServerState
from ._group import ServerStatus as ServerStatus
from ._group import open_server_group as open_server_group
from ._public import publish as _publish

__all__ = [
    "GroupNotification",
    "GroupStatistics",
    "NameCollisionError",
    "RestartPolicy",
    "ServerFailure",
    "ServerGroup",
    "ServerState",
    "ServerStatus",
    "ServerUnavailableError",
    "open_server_group",
]


_publish(__name__, globals(), __all__)
