"""Long-running tool calls as tasks: the handle, its state, and how a task can fail.

``session.start_tool_task(...)`` gives a [`ToolTask`][trio_mcp.tasks.ToolTask] whose
[`TaskState`][trio_mcp.tasks.TaskState] follows the server's task; a task that does not give a
result raises a [`TaskError`][trio_mcp.tasks.TaskError]
([`TaskFailedError`][trio_mcp.tasks.TaskFailedError],
[`TaskCancelledError`][trio_mcp.tasks.TaskCancelledError],
[`TaskLostError`][trio_mcp.tasks.TaskLostError]).
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
