"""Server tasks of the [`MockServer`][trio_mcp.testing.MockServer]: SEP-2663 (2026-07-28) and
2025-11-25 tasks."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Literal

import trio

from ._registry import JSONDict

__all__ = ["MockTask", "TaskStatus"]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _timestamp() -> str:
    """An ISO 8601 time from trio's clock (so MockClock tests see fixed values)."""
    moment = _EPOCH + datetime.timedelta(seconds=trio.current_time())
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(eq=False)
class MockTask:
    """One task of a [`MockServer`][trio_mcp.testing.MockServer] (see ``MockServer.tasks``).

    Change ``status`` (even to a value no client knows) or ``status_message`` in a test to
    script what ``tasks/get`` answers; delete the task from ``MockServer.tasks`` to make
    the server forget it.

    Attributes:
        task_id: The task's id (``task-1``, ``task-2``, ...).
        tool: The name of the tool it runs.
        era: ``"modern"`` (SEP-2663) or ``"legacy"`` (2025-11-25).
        status: The current status.
        status_message: The current status message, or ``None``.
        result: The final ``CallToolResult`` (wire form) once completed.
        error: The JSON-RPC error object once failed.
        input_requests: The outstanding input requests while ``input_required`` (modern).
        updates: Every ``inputResponses`` object received by ``tasks/update``.
        cancel_requested: Whether the client sent ``tasks/cancel``.
    """

    task_id: str
    tool: str
    era: Literal["modern", "legacy"]
    status: str = "working"
    status_message: str | None = None
    result: JSONDict | None = None
    error: JSONDict | None = None
    input_requests: JSONDict = field(default_factory=dict[str, Any])
    updates: list[JSONDict] = field(default_factory=list[JSONDict])
    cancel_requested: bool = False
    created_at: str = field(default_factory=_timestamp)
    last_updated_at: str = field(default_factory=_timestamp)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    done: trio.Event = field(default_factory=trio.Event)
    answered: trio.Event = field(default_factory=trio.Event)
    responses: JSONDict = field(default_factory=dict[str, Any])

    def set_status(self, status: str, message: str | None = None) -> None:
        """Move to ``status`` (terminal statuses are final, as the spec demands).

        Args:
            status: The new status.
            message: The new status message, or None.
        """
        if self.status in TERMINAL:
            return
        self.status = status
        self.status_message = message
        self.last_updated_at = _timestamp()
        if status in TERMINAL:
            self.done.set()

    def wire(self, *, ttl_ms: int | None, poll_ms: int | None, spelling: str = "ttlMs") -> JSONDict:
        """The task object: SEP-2663's flat fields, or 2025-11-25's ``Task``.

        Args:
            ttl_ms: The retention to announce, in milliseconds (None: unlimited).
            poll_ms: The poll interval to suggest, in milliseconds (None: none).
            spelling: ``"ttlMs"`` or ``"ttlSeconds"`` (an earlier SEP-2663 draft's names).

        Returns:
            The task object in wire form.
        """
        body: JSONDict = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
        }
        if self.status_message is not None:
            body["statusMessage"] = self.status_message
        if self.era == "legacy":
            body["ttl"] = ttl_ms
            if poll_ms is not None:
                body["pollInterval"] = poll_ms
        elif spelling == "ttlSeconds":
            body["ttlSeconds"] = None if ttl_ms is None else ttl_ms / 1000
            if poll_ms is not None:
                body["pollIntervalMilliseconds"] = poll_ms
        else:
            body["ttlMs"] = ttl_ms
            if poll_ms is not None:
                body["pollIntervalMs"] = poll_ms
        return body
