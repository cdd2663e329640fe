"""The ground every protocol type stands on: scalars, ``_meta`` keys, base params and results.

This module holds the scalar aliases (``RequestId``, ``Cursor``, ``LoggingLevel``, ...), the
reserved ``_meta`` keys (``META_*``), the private ``_Wire`` base of every struct (camelCase on
the wire, unset fields omitted), the mixin shapes (``Icon``, ``Icons``, ``BaseMetadata``),
the bases of every request's params, notification's params and result (pagination and
caching included), the JSON-RPC ``Error`` object and [`to_builtins()`][trio_mcp.types.to_builtins].
It imports no other part of ``trio_mcp.types``; every other part imports it.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

# ---------------------------------------------------------------------------------------
# Scalars, literals and reserved ``_meta`` keys
# ---------------------------------------------------------------------------------------


Role = Literal["user", "assistant"]
"""The sender or recipient of a message."""

LoggingLevel = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""Syslog severities (RFC 5424) used by ``logging/setLevel`` and ``notifications/message``."""

RequestId: TypeAlias = str | int
"""A JSON-RPC request id."""

ProgressToken: TypeAlias = str | int
"""A token associating progress notifications with the request that asked for them."""

Cursor = str
"""An opaque pagination cursor."""

ResultType = str
"""``resultType`` of a 2026-07-28 result: ``"complete"`` or ``"input_required"``."""

CacheScope = Literal["public", "private"]
"""Who may reuse a cacheable 2026-07-28 result: any client or only the requesting one."""


META_PROGRESS_TOKEN: Final = "progressToken"
"""``_meta`` key of a request's progress token."""
META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
"""``_meta`` key of the protocol version on every 2026-07-28 request."""
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
"""``_meta`` key of the client [`Implementation`][trio_mcp.types.Implementation] on 2026-07-28
requests."""
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
"""``_meta`` key of the [`ClientCapabilities`][trio_mcp.types.ClientCapabilities] on every
2026-07-28 request."""
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
"""``_meta`` key of the wanted [`LoggingLevel`][trio_mcp.types.LoggingLevel] on 2026-07-28
requests."""
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
"""``_meta`` key of the server [`Implementation`][trio_mcp.types.Implementation] on 2026-07-28
results."""
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
"""``_meta`` key tying 2026-07-28 notifications to their ``subscriptions/listen`` request."""
META_RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
"""``_meta`` key of the [`RelatedTaskMetadata`][trio_mcp.types.RelatedTaskMetadata] of 2025-11-25
task messages."""


class _Wire(
    msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True, repr_omit_defaults=True
):
    """Base of every protocol struct: camelCase on the wire, unset fields omitted."""


# ---------------------------------------------------------------------------------------
# Shared building blocks
# ---------------------------------------------------------------------------------------


class Icon(_Wire, kw_only=True):
    """An icon a client may display for a server, tool, resource or prompt (2025-11-25+).

    Attributes:
        src: An HTTP(S) or ``data:`` URI of the image.
        mime_type: Optional MIME type, for when the URI does not imply it.
        sizes: Sizes such as ``"48x48"`` or ``"any"``.
        theme: The background the icon is designed for (``"light"`` or ``"dark"``).
    """

    src: str
    mime_type: str | UnsetType = UNSET
    sizes: list[str] | UnsetType = UNSET
    theme: str | UnsetType = UNSET  # "light" or "dark" today


class Icons(_Wire, kw_only=True):
    """Mixin shape of anything that carries ``icons`` (2025-11-25+)."""

    icons: list[Icon] | UnsetType = UNSET


class BaseMetadata(_Wire, kw_only=True):
    """Mixin shape of anything with a programmatic ``name`` and display ``title`` (2025-06-18+)."""

    name: str
    title: str | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Base params and results
# ---------------------------------------------------------------------------------------


class RequestParams(_Wire, kw_only=True):
    """Params every request may carry: ``_meta`` (required on 2026-07-28 requests)."""

    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class NotificationParams(_Wire, kw_only=True):
    """Params every notification may carry: ``_meta``."""

    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class Result(_Wire, kw_only=True):
    """Base of every result; also the shape of any result this library has no struct for.

    Attributes:
        meta: The ``_meta`` object.
        result_type: ``"complete"`` or ``"input_required"`` (2026-07-28; absent before,
            which means ``"complete"``).
    """

    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")
    result_type: ResultType | UnsetType = UNSET


class EmptyResult(Result, kw_only=True):
    """A result that only says the request succeeded (``ping``, ``logging/setLevel``, ...)."""


class PaginatedResult(Result, kw_only=True):
    """Base of paginated results; ``next_cursor`` is set when more pages exist."""

    next_cursor: Cursor | UnsetType = UNSET


class CacheableResult(Result, kw_only=True):
    """Base shape of results a 2026-07-28 client may cache.

    Attributes:
        ttl_ms: How long the result may be reused, in milliseconds.
        cache_scope: ``"public"`` (any client) or ``"private"`` (this client only).
    """

    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


class PaginatedRequestParams(RequestParams, kw_only=True):
    """Params of ``*/list`` requests."""

    cursor: Cursor | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


class Error(_Wire, kw_only=True):
    """The ``error`` object of a JSON-RPC error response (named ``Error`` in the schema)."""

    code: int
    message: str
    data: Any | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------------------


_UNSET_MARK: Final = "\x00trio_mcp.unset\x00"


def _mark_unset(obj: Any) -> Any:
    if obj is UNSET:
        return _UNSET_MARK
    raise NotImplementedError(f"cannot convert {type(obj).__name__} to JSON builtins")


def _prune(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _prune(v) for k, v in obj.items() if v is not _UNSET_MARK}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(obj, list):
        return [_prune(v) for v in obj if v is not _UNSET_MARK]  # pyright: ignore[reportUnknownVariableType]
    return obj


def to_builtins(obj: Any) -> Any:
    """Convert a protocol value to JSON builtins (dicts with wire names, lists, ...).

    Unset struct fields are omitted, and so are ``UNSET`` values in plain dicts and lists, so
    ``to_builtins({"cursor": cursor})`` drops an unset cursor. A top-level ``UNSET`` gives
    ``None``.

    Args:
        obj: A Struct, or dicts/lists/scalars containing Structs.

    Returns:
        The JSON-compatible builtin value.
    """
    if obj is UNSET:
        return None
    try:
        return msgspec.to_builtins(obj)
    except TypeError:
        return _prune(msgspec.to_builtins(obj, enc_hook=_mark_unset))
