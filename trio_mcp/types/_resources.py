"""Resources: listing, templates, reading, subscribing, and the ``updated`` notification.

The params of ``resources/read``
([`ReadResourceRequestParams`][trio_mcp.types.ReadResourceRequestParams]) live in
`trio_mcp.types._input` with the other requests a 2026-07-28 client may retry with input responses;
the contents a read returns are in `trio_mcp.types._content`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ._apps import UIResourceMeta, ui_meta
from ._base import Icon, NotificationParams, PaginatedResult, RequestParams, Result, _Wire
from ._content import Annotations, _resource_contents, _ResourceContentsField


class Resource(_Wire, kw_only=True):
    """A resource the server can read.

    ``title`` and ``meta`` are 2025-06-18+, ``icons`` 2025-11-25+.
    """

    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")

    @property
    def ui(self) -> UIResourceMeta | None:
        """The MCP Apps ``_meta.ui`` of a ``ui://`` resource (CSP, permissions), or None.

        None when the server sent none, or sent one that is malformed (logged at debug).
        """
        return ui_meta(self.meta, UIResourceMeta)


class ResourceTemplate(_Wire, kw_only=True):
    """A template (RFC 6570) for resources the server can read."""

    uri_template: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ListResourcesResult(PaginatedResult, kw_only=True):
    """Result of ``resources/list``; cacheable in 2026-07-28."""

    resources: list[Resource]
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


class ListResourceTemplatesResult(PaginatedResult, kw_only=True):
    """Result of ``resources/templates/list``; cacheable in 2026-07-28."""

    resource_templates: list[ResourceTemplate]
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


class ResourceRequestParams(RequestParams, kw_only=True):
    """Params of a request about one resource URI."""

    uri: str


class ReadResourceResult(Result, kw_only=True):
    """Result of ``resources/read``; cacheable in 2026-07-28.

    Attributes:
        contents: One entry per resource read:
            [`TextResourceContents`][trio_mcp.types.TextResourceContents],
            [`BlobResourceContents`][trio_mcp.types.BlobResourceContents], or a generic
            [`ResourceContents`][trio_mcp.types.ResourceContents].
    """

    contents: list[_ResourceContentsField]
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding

    def __post_init__(self) -> None:
        self.contents = [_resource_contents(item) for item in self.contents]


class SubscribeRequestParams(RequestParams, kw_only=True):
    """Params of ``resources/subscribe`` (2024-11-05 to 2025-11-25)."""

    uri: str


class UnsubscribeRequestParams(RequestParams, kw_only=True):
    """Params of ``resources/unsubscribe`` (2024-11-05 to 2025-11-25)."""

    uri: str


class ResourceUpdatedNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/resources/updated``."""

    uri: str
