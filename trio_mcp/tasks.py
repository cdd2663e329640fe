"""Long-running tool calls as tasks: the handle, its state, and how a task can fail.

``session.start_tool_task(...)`` gives a :class:`ToolTask` whose :class:`TaskState` follows
the server's task; a task that does not give a result raises a :class:`TaskError`
(:class:`TaskFailedError`, :class:`TaskCancelledError`, :class:`TaskLostError`).
"""

from __future__ import annotations

from ._exceptions import TaskCancelledError as TaskCancelledError
from ._exceptions import TaskError as TaskError
from ._exceptions import TaskFailedError as TaskFailedError
from ._exceptions import TaskLostError as TaskLostError
from ._public import publish as _publish
from ._tasks import TaskState as TaskState
from ._tasks import ToolTask as ToolTask

__all__ = [
    "TaskCancelledError",
    "TaskError",
    "TaskFailedError",
    "TaskLostError",
    "TaskState",
    "ToolTask",
]


_publish(__name__, globals(), __all__)
