"""Logging, progress, cancellation, and the 2026-07-28 subscription stream.

The notifications a server sends about a request or about itself (``notifications/message``,
``notifications/progress``, ``notifications/cancelled``), and the requests that configure
them: ``logging/setLevel`` (before 2026-07-28) and ``subscriptions/listen`` (2026-07-28).
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

from ._base import (
    LoggingLevel,
    NotificationParams,
    ProgressToken,
    RequestId,
    RequestParams,
    Result,
    _Wire,
)

# ---------------------------------------------------------------------------------------
# Logging, progress, cancellation
# ---------------------------------------------------------------------------------------


class SetLevelRequestParams(RequestParams, kw_only=True):
    """Params of ``logging/setLevel`` (2024-11-05 to 2025-11-25)."""

    level: LoggingLevel


class LoggingMessageNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/message``: one log message from the server."""

    level: str  # LoggingLevel; newer values must not break decoding
    data: Any
    logger: str | UnsetType = UNSET


class ProgressNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/progress``; ``message`` is 2025-03-26+.

    ``progress`` and ``total`` keep the number the server sent: ``4`` stays the integer
    ``4``, ``2.5`` a float (``int`` is tried first when decoding).
    """

    progress_token: ProgressToken
    progress: int | float
    total: int | float | UnsetType = UNSET
    message: str | UnsetType = UNSET


class CancelledNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/cancelled``.

    ``request_id`` is always sent except for 2025-11-25 task cancellation.
    """

    request_id: RequestId | UnsetType = UNSET
    reason: str | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Subscriptions (2026-07-28)
# ---------------------------------------------------------------------------------------


class SubscriptionFilter(_Wire, kw_only=True):
    """Which notifications a ``subscriptions/listen`` stream carries (2026-07-28)."""

    tools_list_changed: bool | UnsetType = UNSET
    prompts_list_changed: bool | UnsetType = UNSET
    resources_list_changed: bool | UnsetType = UNSET
    resource_subscriptions: list[str] | UnsetType = UNSET


class SubscriptionsListenRequestParams(RequestParams, kw_only=True):
    """Params of ``subscriptions/listen`` (2026-07-28)."""

    notifications: SubscriptionFilter


class SubscriptionsListenResult(Result, kw_only=True):
    """Result of ``subscriptions/listen``, sent when the stream closes (2026-07-28).

    The subscription id is in ``meta`` under
    [`META_SUBSCRIPTION_ID`][trio_mcp.types.META_SUBSCRIPTION_ID].
    """


class SubscriptionsAcknowledgedNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/subscriptions/acknowledged`` (2026-07-28)."""

    notifications: SubscriptionFilter
