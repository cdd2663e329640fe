"""Server groups: several servers as one, with restarts and one merged catalogue.

:func:`open_server_group` (also ``trio_mcp.open_server_group``) opens a
:class:`ServerGroup`; each server restarts by its :class:`RestartPolicy` and reports a
:class:`ServerStatus` (:class:`ServerState`); notifications arrive as
:class:`GroupNotification`. A call to a server that is not running raises
:class:`ServerUnavailableError`; two servers offering one name raise
:class:`NameCollisionError`.
"""

from __future__ import annotations

from ._exceptions import NameCollisionError as NameCollisionError
from ._exceptions import ServerUnavailableError as ServerUnavailableError
from ._group import GroupNotification as GroupNotification
from ._group import GroupStatistics as GroupStatistics
from ._group import RestartPolicy as RestartPolicy
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
    "ServerGroup",
    "ServerState",
    "ServerStatus",
    "ServerUnavailableError",
    "open_server_group",
]


_publish(__name__, globals(), __all__)
