"""Who is talking and what each side can do: implementations, capabilities, the handshake.

The [`Implementation`][trio_mcp.types.Implementation] of a client or server, the client's and the
server's capabilities, ``initialize`` (2024-11-05 to 2025-11-25) and ``server/discover``
(2026-07-28), and the typed views of the ``_meta`` a 2026-07-28 request, result or
notification carries in place of the handshake.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ._base import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    Icon,
    LoggingLevel,
    ProgressToken,
    RequestId,
    RequestParams,
    Result,
    _Wire,
)


class Implementation(_Wire, kw_only=True):
    """The name and version of an MCP client or server implementation.

    ``title`` is 2025-06-18+; ``description``, ``icons`` and ``website_url`` are 2025-11-25+.
    """

    name: str
    version: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    website_url: str | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Capabilities
# ---------------------------------------------------------------------------------------


class RootsCapability(_Wire, kw_only=True):
    """The client's ``roots`` capability (``list_changed`` only before 2026-07-28)."""

    list_changed: bool | UnsetType = UNSET


class SamplingCapability(_Wire, kw_only=True):
    """The client's ``sampling`` capability; ``context`` and ``tools`` are 2025-11-25+."""

    context: dict[str, Any] | UnsetType = UNSET
    tools: dict[str, Any] | UnsetType = UNSET


class ElicitationCapability(_Wire, kw_only=True):
    """The client's ``elicitation`` capability (2025-06-18+); modes are 2025-11-25+."""

    form: dict[str, Any] | UnsetType = UNSET
    url: dict[str, Any] | UnsetType = UNSET


class ClientCapabilities(_Wire, kw_only=True):
    """Capabilities a client declares: at ``initialize`` (legacy) or on every request (2026).

    Attributes:
        experimental: Non-standard capabilities.
        roots: Present if the client can list roots.
        sampling: Present if the client can sample an LLM for the server.
        elicitation: Present if the client can ask its user for input (2025-06-18+).
        tasks: Task support, 2025-11-25 only (kept as sent).
        extensions: MCP extensions the client supports, keyed by identifier (2026-07-28).
    """

    experimental: dict[str, dict[str, Any]] | UnsetType = UNSET
    roots: RootsCapability | UnsetType = UNSET
    sampling: SamplingCapability | UnsetType = UNSET
    elicitation: ElicitationCapability | UnsetType = UNSET
    tasks: dict[str, Any] | UnsetType = UNSET
    extensions: dict[str, dict[str, Any]] | UnsetType = UNSET


class PromptsCapability(_Wire, kw_only=True):
    """The server's ``prompts`` capability."""

    list_changed: bool | UnsetType = UNSET


class ResourcesCapability(_Wire, kw_only=True):
    """The server's ``resources`` capability."""

    subscribe: bool | UnsetType = UNSET
    list_changed: bool | UnsetType = UNSET


class ToolsCapability(_Wire, kw_only=True):
    """The server's ``tools`` capability."""

    list_changed: bool | UnsetType = UNSET


class LoggingCapability(_Wire, kw_only=True):
    """The server's ``logging`` capability (an empty object)."""


class CompletionsCapability(_Wire, kw_only=True):
    """The server's ``completions`` capability (an empty object, 2025-03-26+)."""


class ServerCapabilities(_Wire, kw_only=True):
    """Capabilities a server declares in ``InitializeResult`` or ``DiscoverResult``.

    Attributes:
        experimental: Non-standard capabilities.
        logging: Present if the server sends log messages.
        completions: Present if the server offers argument completion (2025-03-26+).
        prompts: Present if the server offers prompts.
        resources: Present if the server offers resources.
        tools: Present if the server offers tools.
        tasks: Task support, 2025-11-25 only (kept as sent).
        extensions: MCP extensions the server supports, keyed by identifier (2026-07-28).
    """

    experimental: dict[str, dict[str, Any]] | UnsetType = UNSET
    logging: LoggingCapability | UnsetType = UNSET
    completions: CompletionsCapability | UnsetType = UNSET
    prompts: PromptsCapability | UnsetType = UNSET
    resources: ResourcesCapability | UnsetType = UNSET
    tools: ToolsCapability | UnsetType = UNSET
    tasks: dict[str, Any] | UnsetType = UNSET
    extensions: dict[str, dict[str, Any]] | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Lifecycle: initialize (legacy) and server/discover (2026-07-28)
# ---------------------------------------------------------------------------------------


class InitializeRequestParams(RequestParams, kw_only=True):
    """Params of ``initialize`` (2024-11-05 to 2025-11-25)."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


class InitializeResult(Result, kw_only=True):
    """Result of ``initialize`` (2024-11-05 to 2025-11-25).

    Attributes:
        protocol_version: The version the server chose.
        capabilities: What the server supports.
        server_info: The server implementation.
        instructions: Optional hints on how to use the server, e.g. for a system prompt.
    """

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | UnsetType = UNSET


class DiscoverResult(Result, kw_only=True):
    """Result of ``server/discover`` (2026-07-28).

    Attributes:
        supported_versions: Every protocol version the server supports.
        capabilities: What the server supports.
        instructions: Optional hints on how to use the server.
        ttl_ms: How long the result may be cached, in milliseconds.
        cache_scope: ``"public"`` or ``"private"``.
    """

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | UnsetType = UNSET
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


# ---------------------------------------------------------------------------------------
# Typed views of a 2026-07-28 message's ``_meta``
# ---------------------------------------------------------------------------------------


class RequestMetaObject(_Wire, kw_only=True):
    """Typed view of a 2026-07-28 request's ``_meta`` (use ``msgspec.convert(meta, ...)``).

    Request params structs keep ``meta`` as a plain dict; this struct names its reserved keys.
    """

    protocol_version: str | UnsetType = msgspec.field(default=UNSET, name=META_PROTOCOL_VERSION)
    client_info: Implementation | UnsetType = msgspec.field(default=UNSET, name=META_CLIENT_INFO)
    client_capabilities: ClientCapabilities | UnsetType = msgspec.field(
        default=UNSET, name=META_CLIENT_CAPABILITIES
    )
    log_level: LoggingLevel | UnsetType = msgspec.field(default=UNSET, name=META_LOG_LEVEL)
    progress_token: ProgressToken | UnsetType = UNSET


class ResultMetaObject(_Wire, kw_only=True):
    """Typed view of a 2026-07-28 result's ``_meta``: the self-reported server info."""

    server_info: Implementation | UnsetType = msgspec.field(default=UNSET, name=META_SERVER_INFO)


class NotificationMetaObject(_Wire, kw_only=True):
    """Typed view of a 2026-07-28 notification's ``_meta``: its subscription id."""

    subscription_id: RequestId | UnsetType = msgspec.field(default=UNSET, name=META_SUBSCRIPTION_ID)


class SubscriptionsListenResultMetaObject(_Wire, kw_only=True):
    """Typed view of the ``_meta`` of a 2026-07-28 ``subscriptions/listen`` result."""

    server_info: Implementation | UnsetType = msgspec.field(default=UNSET, name=META_SERVER_INFO)
    subscription_id: RequestId | UnsetType = msgspec.field(default=UNSET, name=META_SUBSCRIPTION_ID)
