"""Tasks (2025-11-25 only): task-augmented requests, ``tasks/*`` and their status notification."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, UnsetType

from ._base import NotificationParams, PaginatedResult, RequestParams, Result, _Wire

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""The state of a 2025-11-25 task."""


class TaskMetadata(_Wire, kw_only=True):
    """Asks for task-augmented execution of a request (2025-11-25 only)."""

    ttl: int | UnsetType = UNSET


class RelatedTaskMetadata(_Wire, kw_only=True):
    """Associates a message with a task, under ``_meta`` (2025-11-25 only)."""

    task_id: str


class TaskAugmentedRequestParams(RequestParams, kw_only=True):
    """Params of a request that may run as a task (2025-11-25 only)."""

    task: TaskMetadata | UnsetType = UNSET


class Task(_Wire, kw_only=True):
    """A task's state (2025-11-25 only).

    Attributes:
        task_id: The task identifier.
        status: The current state.
        created_at: ISO 8601 creation time.
        last_updated_at: ISO 8601 time of the last change.
        ttl: Retention in milliseconds from creation, ``None`` for unlimited.
        status_message: Optional human-readable status.
        poll_interval: Suggested polling interval in milliseconds.
    """

    task_id: str
    status: str  # TaskStatus; newer values must not break decoding
    created_at: str
    last_updated_at: str
    ttl: int | None
    status_message: str | UnsetType = UNSET
    poll_interval: int | UnsetType = UNSET


class CreateTaskResult(Result, kw_only=True):
    """The immediate answer to a task-augmented request (2025-11-25 only)."""

    task: Task


class GetTaskRequestParams(RequestParams, kw_only=True):
    """Params of ``tasks/get`` (2025-11-25 only)."""

    task_id: str


class GetTaskPayloadRequestParams(RequestParams, kw_only=True):
    """Params of ``tasks/result`` (2025-11-25 only)."""

    task_id: str


class CancelTaskRequestParams(RequestParams, kw_only=True):
    """Params of ``tasks/cancel`` (2025-11-25 only)."""

    task_id: str


class GetTaskResult(Result, kw_only=True):
    """Result of ``tasks/get``: the task's state (2025-11-25 only)."""

    task_id: str
    status: str  # TaskStatus; newer values must not break decoding
    created_at: str
    last_updated_at: str
    ttl: int | None
    status_message: str | UnsetType = UNSET
    poll_interval: int | UnsetType = UNSET


class CancelTaskResult(Result, kw_only=True):
    """Result of ``tasks/cancel``: the task's state (2025-11-25 only)."""

    task_id: str
    status: str  # TaskStatus; newer values must not break decoding
    created_at: str
    last_updated_at: str
    ttl: int | None
    status_message: str | UnsetType = UNSET
    poll_interval: int | UnsetType = UNSET


class GetTaskPayloadResult(Result, kw_only=True):
    """Result of ``tasks/result`` (2025-11-25 only).

    Its real shape is the original request's result; decode the raw result with that type.
    """


class ListTasksResult(PaginatedResult, kw_only=True):
    """Result of ``tasks/list`` (2025-11-25 only)."""

    tasks: list[Task]


class TaskStatusNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/tasks/status``: the task's state (2025-11-25 only)."""

    task_id: str
    status: str  # TaskStatus; newer values must not break decoding
    created_at: str
    last_updated_at: str
    ttl: int | None
    status_message: str | UnsetType = UNSET
    poll_interval: int | UnsetType = UNSET
