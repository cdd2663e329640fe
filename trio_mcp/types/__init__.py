"""trio_mcp.types: the msgspec Structs of every MCP protocol type, 2024-11-05 through 2026-07-28.

This public module holds every protocol struct (requests' params, results, notifications'
params, content blocks, capabilities, JSON Schema pieces for elicitation), the type aliases
that name unions of them (``ContentBlock``, ``AnyResourceContents``, ...), the ``_meta`` key
constants (``META_*``) and :func:`to_builtins`. The handful a caller names every day
(``Tool``, ``CallToolResult``, ``TextContent``, ...) are re-exported from ``trio_mcp`` too;
spell every other one ``trio_mcp.types.X``.

One set of types covers every revision a client may meet. A field that only some
revisions define is optional (``T | UnsetType = UNSET``); a field that is required in every
revision that has it is required here. Python names are snake_case, wire names camelCase;
``_meta`` is exposed as ``meta``. Unknown fields are ignored, never rejected.

JSON Schemas carried by the protocol (``Tool.input_schema``, ``Tool.output_schema``,
``ElicitRequestFormParams.requested_schema``) are plain ``dict[str, Any]``, kept exactly as
the server sent them (``$ref``, ``$defs``, 2020-12 keywords and all).

Content blocks are a tagged union on ``type`` and are meant to be consumed with ``match``::

    for block in result.content:
        match block:
            case TextContent(text=text): ...
            case ImageContent(data=data, mime_type=mime): ...
            case UnknownContent(type=tag): ...   # a block type from a newer revision

A block whose ``type`` this library does not know decodes to :class:`UnknownContent` (which
keeps the whole JSON object) instead of failing the message. Resource contents have no tag:
they decode to :class:`TextResourceContents` or :class:`BlobResourceContents` by which key
is present, and to the generic :class:`ResourceContents` otherwise.

Use :func:`decoder_for` (not a bare ``msgspec.json.Decoder``) to decode these types: it is
fast on the common path and only falls back to the tolerant slow path when a message holds
something the strict decoder rejects, such as an unknown content block.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Generic,
    Literal,
    TypeAlias,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    overload,
)

import msgspec
from msgspec import UNSET, UnsetType

from .._exceptions import ToolError

if TYPE_CHECKING:
    from typing_extensions import Self

    from .._validation import OutputValidation

# Public protocol names and to_builtins; the other helpers at the bottom (decoder_for, ...)
# are for the session engine and stay out of the star-export.
__all__ = [
    "Annotations",
    "AnyResourceContents",
    "AudioContent",
    "BaseMetadata",
    "BlobResourceContents",
    "BooleanSchema",
    "CacheScope",
    "CacheableResult",
    "CallToolRequestParams",
    "CallToolResult",
    "CancelTaskRequestParams",
    "CancelTaskResult",
    "CancelledNotificationParams",
    "ClientCapabilities",
    "CompleteRequestParams",
    "CompleteResult",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "CompletionsCapability",
    "ContentBlock",
    "CreateMessageRequest",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "CreateTaskResult",
    "Cursor",
    "DiscoverResult",
    "ElicitRequest",
    "ElicitRequestFormParams",
    "ElicitRequestParams",
    "ElicitRequestURLParams",
    "ElicitResult",
    "ElicitationCapability",
    "ElicitationCompleteNotificationParams",
    "EmbeddedResource",
    "EmptyResult",
    "EnumSchema",
    "Error",
    "GetPromptRequestParams",
    "GetPromptResult",
    "GetTaskPayloadRequestParams",
    "GetTaskPayloadResult",
    "GetTaskRequestParams",
    "GetTaskResult",
    "Icon",
    "Icons",
    "ImageContent",
    "Implementation",
    "IncludeContext",
    "InitializeRequestParams",
    "InitializeResult",
    "InputRequest",
    "InputRequests",
    "InputRequiredResult",
    "InputResponse",
    "InputResponseRequestParams",
    "InputResponses",
    "LegacyTitledEnumSchema",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListRootsRequest",
    "ListRootsResult",
    "ListTasksResult",
    "ListToolsResult",
    "LoggingCapability",
    "LoggingLevel",
    "LoggingMessageNotificationParams",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROGRESS_TOKEN",
    "META_PROTOCOL_VERSION",
    "META_RELATED_TASK",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "ModelHint",
    "ModelPreferences",
    "MultiSelectEnumSchema",
    "NotificationMetaObject",
    "NotificationParams",
    "NumberSchema",
    "PaginatedRequestParams",
    "PaginatedResult",
    "PrimitiveSchemaDefinition",
    "ProgressNotificationParams",
    "ProgressToken",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptReference",
    "PromptsCapability",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "RelatedTaskMetadata",
    "RequestId",
    "RequestMetaObject",
    "RequestParams",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceReference",
    "ResourceRequestParams",
    "ResourceTemplate",
    "ResourceTemplateReference",
    "ResourceUpdatedNotificationParams",
    "ResourcesCapability",
    "Result",
    "ResultMetaObject",
    "ResultType",
    "Role",
    "Root",
    "RootsCapability",
    "SamplingCapability",
    "SamplingMessage",
    "SamplingMessageContentBlock",
    "ServerCapabilities",
    "SetLevelRequestParams",
    "SingleSelectEnumSchema",
    "StringSchema",
    "SubscribeRequestParams",
    "SubscriptionFilter",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsListenRequestParams",
    "SubscriptionsListenResult",
    "SubscriptionsListenResultMetaObject",
    "Task",
    "TaskAugmentedRequestParams",
    "TaskMetadata",
    "TaskStatus",
    "TaskStatusNotificationParams",
    "TextContent",
    "TextResourceContents",
    "TitledEnumItems",
    "TitledEnumOption",
    "TitledMultiSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "Tool",
    "ToolAnnotations",
    "ToolChoice",
    "ToolExecution",
    "ToolResultContent",
    "ToolUseContent",
    "ToolsCapability",
    "UnknownContent",
    "UnsubscribeRequestParams",
    "UntitledEnumItems",
    "UntitledMultiSelectEnumSchema",
    "UntitledSingleSelectEnumSchema",
    "to_builtins",
]

_T = TypeVar("_T")

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

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""The state of a 2025-11-25 task."""

IncludeContext = Literal["none", "thisServer", "allServers"]
"""Which MCP context a sampling request wants included."""

META_PROGRESS_TOKEN: Final = "progressToken"
"""``_meta`` key of a request's progress token."""
META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
"""``_meta`` key of the protocol version on every 2026-07-28 request."""
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
"""``_meta`` key of the client :class:`Implementation` on 2026-07-28 requests."""
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
"""``_meta`` key of the :class:`ClientCapabilities` on every 2026-07-28 request."""
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
"""``_meta`` key of the wanted :data:`LoggingLevel` on 2026-07-28 requests."""
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
"""``_meta`` key of the server :class:`Implementation` on 2026-07-28 results."""
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
"""``_meta`` key tying 2026-07-28 notifications to their ``subscriptions/listen`` request."""
META_RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
"""``_meta`` key of the :class:`RelatedTaskMetadata` of 2025-11-25 task messages."""


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


class Annotations(_Wire, kw_only=True):
    """Hints to the client about how to use or display an object.

    Attributes:
        audience: Who the object is meant for.
        priority: Importance from 0 (optional) to 1 (required).
        last_modified: ISO 8601 timestamp of the last change (2025-06-18+).
    """

    audience: list[str] | UnsetType = UNSET  # Role values; newer ones must not break decoding
    priority: float | UnsetType = UNSET
    last_modified: str | UnsetType = UNSET


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


class TaskMetadata(_Wire, kw_only=True):
    """Asks for task-augmented execution of a request (2025-11-25 only)."""

    ttl: int | UnsetType = UNSET


class RelatedTaskMetadata(_Wire, kw_only=True):
    """Associates a message with a task, under ``_meta`` (2025-11-25 only)."""

    task_id: str


class TaskAugmentedRequestParams(RequestParams, kw_only=True):
    """Params of a request that may run as a task (2025-11-25 only)."""

    task: TaskMetadata | UnsetType = UNSET


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


class SetLevelRequestParams(RequestParams, kw_only=True):
    """Params of ``logging/setLevel`` (2024-11-05 to 2025-11-25)."""

    level: LoggingLevel


# ---------------------------------------------------------------------------------------
# Content blocks
# ---------------------------------------------------------------------------------------


class TextContent(_Wire, kw_only=True, tag_field="type", tag="text"):
    """Text content (``"type": "text"``)."""

    type: ClassVar[Literal["text"]] = "text"
    text: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ImageContent(_Wire, kw_only=True, tag_field="type", tag="image"):
    """Base64-encoded image content (``"type": "image"``)."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class AudioContent(_Wire, kw_only=True, tag_field="type", tag="audio"):
    """Base64-encoded audio content (``"type": "audio"``, 2025-03-26+)."""

    type: ClassVar[Literal["audio"]] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceLink(_Wire, kw_only=True, tag_field="type", tag="resource_link"):
    """A link to a resource the client may read (``"type": "resource_link"``, 2025-06-18+)."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"
    uri: str
    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    size: int | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ResourceContents(_Wire, kw_only=True):
    """The contents of a resource; a bare instance stands for a shape this library lacks.

    Known shapes decode to the subclasses :class:`TextResourceContents` (``text``) and
    :class:`BlobResourceContents` (``blob``); anything else keeps its URI, MIME type and
    ``_meta`` as a plain :class:`ResourceContents`.
    """

    uri: str
    mime_type: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class TextResourceContents(ResourceContents, kw_only=True):
    """Resource contents that are text."""

    text: str


class BlobResourceContents(ResourceContents, kw_only=True):
    """Resource contents that are binary, base64-encoded in ``blob``."""

    blob: str


def _resource_contents(value: Any) -> Any:
    """Turn one decoded resource-contents object into the struct its keys call for."""
    if isinstance(value, ResourceContents):
        return value
    if isinstance(value, dict):
        if "text" in value:
            return msgspec.convert(value, TextResourceContents)
        if "blob" in value:
            return msgspec.convert(value, BlobResourceContents)
    return msgspec.convert(value, ResourceContents)


class EmbeddedResource(_Wire, kw_only=True, tag_field="type", tag="resource"):
    """The contents of a resource embedded in a message (``"type": "resource"``)."""

    type: ClassVar[Literal["resource"]] = "resource"
    resource: _ResourceContentsField
    annotations: Annotations | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")

    def __post_init__(self) -> None:
        self.resource = _resource_contents(self.resource)


class ToolUseContent(_Wire, kw_only=True, tag_field="type", tag="tool_use"):
    """A model's request to use a tool, in sampling (``"type": "tool_use"``, 2025-11-25+)."""

    type: ClassVar[Literal["tool_use"]] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ToolResultContent(_Wire, kw_only=True, tag_field="type", tag="tool_result"):
    """The result of a tool use, in sampling (``"type": "tool_result"``, 2025-11-25+)."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    tool_use_id: str
    content: list[_ContentField]
    structured_content: Any | UnsetType = UNSET
    is_error: bool | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class UnknownContent(dict[str, Any]):
    """A content block of a type this library does not know, kept exactly as received.

    It is the block's JSON object itself (a ``dict``), so it re-encodes unchanged with any
    msgspec encoder. ``type`` is the block's tag; ``raw`` is a plain-dict copy.
    """

    __slots__ = ()
    __match_args__ = ("type",)

    @property
    def type(self) -> str:
        """The block's ``type`` tag."""
        return str(self.get("type", ""))

    @property
    def raw(self) -> dict[str, Any]:
        """The whole block as a plain dict."""
        return dict(self)

    def __repr__(self) -> str:
        return f"UnknownContent({dict(self)!r})"


_CONTENT_TYPES: Final[tuple[type[Any], ...]] = (
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
    ToolUseContent,
    ToolResultContent,
)

ContentBlock: TypeAlias = (
    TextContent
    | ImageContent
    | AudioContent
    | ResourceLink
    | EmbeddedResource
    | ToolUseContent
    | ToolResultContent
    | UnknownContent
)
"""Any content block. Every known ``type`` decodes anywhere content may appear; an unknown
``type`` decodes to :class:`UnknownContent`."""

SamplingMessageContentBlock: TypeAlias = ContentBlock
"""Content of sampling messages (the schema lists text, image, audio, tool_use and tool_result;
any known block decodes)."""

AnyResourceContents: TypeAlias = TextResourceContents | BlobResourceContents | ResourceContents
"""Resource contents as decoded: text, blob, or the generic shape."""


# ---------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------


class ToolAnnotations(_Wire, kw_only=True):
    """Untrusted hints describing a tool's behaviour (2025-03-26+)."""

    title: str | UnsetType = UNSET
    read_only_hint: bool | UnsetType = UNSET
    destructive_hint: bool | UnsetType = UNSET
    idempotent_hint: bool | UnsetType = UNSET
    open_world_hint: bool | UnsetType = UNSET


class ToolExecution(_Wire, kw_only=True):
    """Execution properties of a tool: task support (2025-11-25 only)."""

    task_support: str | UnsetType = UNSET  # "forbidden", "optional" or "required" today


class Tool(_Wire, kw_only=True):
    """A tool the server offers.

    Attributes:
        name: The name to call it by.
        input_schema: JSON Schema of the arguments, exactly as sent.
        title: Display name (2025-06-18+).
        description: What the tool does.
        output_schema: JSON Schema of ``structured_content``, exactly as sent (2025-06-18+).
        annotations: Behaviour hints (2025-03-26+).
        icons: Icons (2025-11-25+).
        execution: Task support (2025-11-25 only).
        meta: The ``_meta`` object (2025-06-18+).
    """

    name: str
    input_schema: dict[str, Any]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    output_schema: dict[str, Any] | UnsetType = UNSET
    annotations: ToolAnnotations | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    execution: ToolExecution | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ListToolsResult(PaginatedResult, kw_only=True):
    """Result of ``tools/list``; cacheable in 2026-07-28."""

    tools: list[Tool]
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


class CallToolRequestParams(RequestParams, kw_only=True):
    """Params of ``tools/call``.

    ``task`` is 2025-11-25 only; ``input_responses`` and ``request_state`` are 2026-07-28,
    sent when retrying after an :class:`InputRequiredResult`.
    """

    name: str
    arguments: dict[str, Any] | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET
    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)


class CallToolResult(Result, kw_only=True, dict=True):
    """Result of ``tools/call``.

    A tool that failed returns ``is_error=True``: a value, not an exception. Call
    :meth:`raise_for_error` to turn it into a :class:`~trio_mcp.ToolError`.
    :attr:`validation` tells whether ``structured_content`` matched the tool's
    ``outputSchema`` (it is no wire field: it is never encoded).

    Attributes:
        content: The unstructured result, as content blocks.
        structured_content: The structured result (an object; any JSON value in 2026-07-28;
            2025-06-18+).
        is_error: Whether the tool call failed.
    """

    content: list[_ContentField]
    structured_content: Any | UnsetType = UNSET
    is_error: bool | UnsetType = UNSET

    @property
    def text(self) -> str:
        """The text of every :class:`TextContent` block, joined with newlines."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))

    @property
    def validation(self) -> OutputValidation | None:
        """The :class:`~trio_mcp.OutputValidation` outcome set by ``call_tool``, or None.

        None for a result not made by :meth:`~trio_mcp.ClientSession.call_tool` (decoded
        by hand, or validation switched off).
        """
        found: OutputValidation | None = getattr(self, "_trio_mcp_validation", None)
        return found

    def raise_for_error(self) -> Self:
        """Raise if the tool reported an error; otherwise return this result.

        Returns:
            This result, so calls can be chained.

        Raises:
            ToolError: ``is_error`` is true. Its message is the tool's text output and its
                ``result`` attribute is this result.
        """
        if self.is_error is True:
            text = self.text
            message = f"tool call failed: {text}" if text else "tool call failed (no text content)"
            raise ToolError(message, self)
        return self


# ---------------------------------------------------------------------------------------
# Resources
# ---------------------------------------------------------------------------------------


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


class ReadResourceRequestParams(RequestParams, kw_only=True):
    """Params of ``resources/read``; ``input_responses``/``request_state`` are 2026-07-28."""

    uri: str
    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)


class ReadResourceResult(Result, kw_only=True):
    """Result of ``resources/read``; cacheable in 2026-07-28.

    Attributes:
        contents: One entry per resource read: :class:`TextResourceContents`,
            :class:`BlobResourceContents`, or a generic :class:`ResourceContents`.
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


# ---------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------


class PromptArgument(_Wire, kw_only=True):
    """An argument a prompt accepts; ``title`` is 2025-06-18+."""

    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    required: bool | UnsetType = UNSET


class Prompt(_Wire, kw_only=True):
    """A prompt or prompt template the server offers."""

    name: str
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    arguments: list[PromptArgument] | UnsetType = UNSET
    icons: list[Icon] | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class PromptMessage(_Wire, kw_only=True):
    """One message of a prompt."""

    role: str  # Role ("user" or "assistant" today)
    content: _ContentField


class ListPromptsResult(PaginatedResult, kw_only=True):
    """Result of ``prompts/list``; cacheable in 2026-07-28."""

    prompts: list[Prompt]
    ttl_ms: int | UnsetType = UNSET
    cache_scope: str | UnsetType = UNSET  # CacheScope; a newer value must not break decoding


class GetPromptRequestParams(RequestParams, kw_only=True):
    """Params of ``prompts/get``; ``input_responses``/``request_state`` are 2026-07-28."""

    name: str
    arguments: dict[str, str] | UnsetType = UNSET
    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)


class GetPromptResult(Result, kw_only=True):
    """Result of ``prompts/get``."""

    messages: list[PromptMessage]
    description: str | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Completion
# ---------------------------------------------------------------------------------------


class PromptReference(_Wire, kw_only=True, tag_field="type", tag="ref/prompt"):
    """Identifies a prompt to complete arguments for (``"type": "ref/prompt"``)."""

    type: ClassVar[Literal["ref/prompt"]] = "ref/prompt"
    name: str
    title: str | UnsetType = UNSET


class ResourceTemplateReference(_Wire, kw_only=True, tag_field="type", tag="ref/resource"):
    """Identifies a resource template to complete (``"type": "ref/resource"``)."""

    type: ClassVar[Literal["ref/resource"]] = "ref/resource"
    uri: str


ResourceReference: TypeAlias = ResourceTemplateReference
"""The 2024-11-05/2025-03-26 name of :class:`ResourceTemplateReference`."""


class CompletionArgument(_Wire, kw_only=True):
    """The argument being completed and its partial value."""

    name: str
    value: str


class CompletionContext(_Wire, kw_only=True):
    """Already-resolved arguments that give a completion context (2025-06-18+)."""

    arguments: dict[str, str] | UnsetType = UNSET


class CompleteRequestParams(RequestParams, kw_only=True):
    """Params of ``completion/complete``."""

    ref: PromptReference | ResourceTemplateReference
    argument: CompletionArgument
    context: CompletionContext | UnsetType = UNSET


class Completion(_Wire, kw_only=True):
    """Completion values for an argument."""

    values: list[str]
    total: int | UnsetType = UNSET
    has_more: bool | UnsetType = UNSET


class CompleteResult(Result, kw_only=True):
    """Result of ``completion/complete``."""

    completion: Completion


# ---------------------------------------------------------------------------------------
# Logging, progress, cancellation
# ---------------------------------------------------------------------------------------


class LoggingMessageNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/message``: one log message from the server."""

    level: str  # LoggingLevel; newer values must not break decoding
    data: Any
    logger: str | UnsetType = UNSET


class ProgressNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/progress``; ``message`` is 2025-03-26+."""

    progress_token: ProgressToken
    progress: float
    total: float | UnsetType = UNSET
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

    The subscription id is in ``meta`` under :data:`META_SUBSCRIPTION_ID`.
    """


class SubscriptionsAcknowledgedNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/subscriptions/acknowledged`` (2026-07-28)."""

    notifications: SubscriptionFilter


# ---------------------------------------------------------------------------------------
# Roots
# ---------------------------------------------------------------------------------------


class Root(_Wire, kw_only=True):
    """A directory or file the server may operate on."""

    uri: str
    name: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ListRootsResult(Result, kw_only=True):
    """The client's answer to ``roots/list``."""

    roots: list[Root]


# ---------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------


class ModelHint(_Wire, kw_only=True):
    """A hint for model selection, e.g. a name substring such as ``"claude-3-5-sonnet"``."""

    name: str | UnsetType = UNSET


class ModelPreferences(_Wire, kw_only=True):
    """The server's model preferences for sampling; priorities range from 0 to 1."""

    hints: list[ModelHint] | UnsetType = UNSET
    cost_priority: float | UnsetType = UNSET
    speed_priority: float | UnsetType = UNSET
    intelligence_priority: float | UnsetType = UNSET


class ToolChoice(_Wire, kw_only=True):
    """How the model may use tools during sampling (2025-11-25+)."""

    mode: str | UnsetType = UNSET  # "auto", "required" or "none" today


class SamplingMessage(_Wire, kw_only=True):
    """A message in a sampling request; content lists are 2025-11-25+."""

    role: str  # Role ("user" or "assistant" today)
    content: _ContentField | list[_ContentField]
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class CreateMessageRequestParams(RequestParams, kw_only=True):
    """Params of ``sampling/createMessage``, sent by the server.

    ``tools`` and ``tool_choice`` are 2025-11-25+, ``task`` 2025-11-25 only.
    """

    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | UnsetType = UNSET
    system_prompt: str | UnsetType = UNSET
    include_context: str | UnsetType = UNSET  # IncludeContext; newer values must decode
    temperature: float | UnsetType = UNSET
    stop_sequences: list[str] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    tools: list[Tool] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET


class CreateMessageResult(Result, kw_only=True):
    """The client's answer to ``sampling/createMessage``; content lists are 2025-11-25+."""

    role: str  # Role ("user" or "assistant" today)
    content: _ContentField | list[_ContentField]
    model: str
    stop_reason: str | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Elicitation
# ---------------------------------------------------------------------------------------


class StringSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A string field of an elicitation form (2025-06-18+; ``default`` 2025-11-25+)."""

    type: ClassVar[Literal["string"]] = "string"
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_length: int | UnsetType = UNSET
    max_length: int | UnsetType = UNSET
    format: str | UnsetType = UNSET  # "email", "uri", "date" or "date-time" today
    default: str | UnsetType = UNSET


class NumberSchema(_Wire, kw_only=True):
    """A number or integer field of an elicitation form (2025-06-18+)."""

    type: Literal["number", "integer"]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    minimum: float | UnsetType = UNSET
    maximum: float | UnsetType = UNSET
    default: float | UnsetType = UNSET


class BooleanSchema(_Wire, kw_only=True, tag_field="type", tag="boolean"):
    """A boolean field of an elicitation form (2025-06-18+)."""

    type: ClassVar[Literal["boolean"]] = "boolean"
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: bool | UnsetType = UNSET


class UntitledSingleSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A single choice among plain values (2025-11-25+)."""

    type: ClassVar[Literal["string"]] = "string"
    enum: list[str]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


class TitledEnumOption(_Wire, kw_only=True):
    """One option of a titled enum: its value and display title."""

    const: str
    title: str


class TitledSingleSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A single choice among titled options (2025-11-25+)."""

    type: ClassVar[Literal["string"]] = "string"
    one_of: list[TitledEnumOption]
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


class UntitledEnumItems(_Wire, kw_only=True, tag_field="type", tag="string"):
    """The ``items`` of an untitled multi-select enum."""

    type: ClassVar[Literal["string"]] = "string"
    enum: list[str]


class TitledEnumItems(_Wire, kw_only=True):
    """The ``items`` of a titled multi-select enum."""

    any_of: list[TitledEnumOption]


class UntitledMultiSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="array"):
    """Several choices among plain values (2025-11-25+)."""

    type: ClassVar[Literal["array"]] = "array"
    items: UntitledEnumItems
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_items: int | UnsetType = UNSET
    max_items: int | UnsetType = UNSET
    default: list[str] | UnsetType = UNSET


class TitledMultiSelectEnumSchema(_Wire, kw_only=True, tag_field="type", tag="array"):
    """Several choices among titled options (2025-11-25+)."""

    type: ClassVar[Literal["array"]] = "array"
    items: TitledEnumItems
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    min_items: int | UnsetType = UNSET
    max_items: int | UnsetType = UNSET
    default: list[str] | UnsetType = UNSET


class LegacyTitledEnumSchema(_Wire, kw_only=True, tag_field="type", tag="string"):
    """A single choice with parallel ``enum_names`` (2025-06-18's EnumSchema; deprecated)."""

    type: ClassVar[Literal["string"]] = "string"
    enum: list[str]
    enum_names: list[str] | UnsetType = UNSET
    title: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    default: str | UnsetType = UNSET


SingleSelectEnumSchema: TypeAlias = UntitledSingleSelectEnumSchema | TitledSingleSelectEnumSchema
"""A single-select enum field (2025-11-25+)."""

MultiSelectEnumSchema: TypeAlias = UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema
"""A multi-select enum field (2025-11-25+)."""

EnumSchema: TypeAlias = (
    UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
"""Any enum field of an elicitation form."""

PrimitiveSchemaDefinition: TypeAlias = (
    StringSchema
    | NumberSchema
    | BooleanSchema
    | UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
"""A field of an elicitation form. Type-only: ``requested_schema`` stays a plain dict;
build one with ``trio_mcp.to_builtins(StringSchema(...))`` and friends."""


class ElicitRequestFormParams(RequestParams, kw_only=True):
    """Params of a form-mode ``elicitation/create`` (2025-06-18+).

    Attributes:
        message: What to show the user.
        requested_schema: A flat JSON Schema object of primitive fields, exactly as sent.
        mode: ``"form"`` (2025-11-25+; absent means form).
        task: Task augmentation (2025-11-25 only).
    """

    message: str
    requested_schema: dict[str, Any]
    mode: Literal["form"] | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET


class ElicitRequestURLParams(RequestParams, kw_only=True, tag_field="mode", tag="url"):
    """Params of a URL-mode ``elicitation/create`` (``"mode": "url"``, 2025-11-25+).

    Attributes:
        message: Why the user should visit the URL.
        url: The URL to open.
        elicitation_id: Opaque id of the elicitation (2025-11-25; not in 2026-07-28).
        task: Task augmentation (2025-11-25 only).
    """

    mode: ClassVar[Literal["url"]] = "url"
    message: str
    url: str
    elicitation_id: str | UnsetType = UNSET
    task: TaskMetadata | UnsetType = UNSET


ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams
"""Params of ``elicitation/create``: form or URL mode, told apart by ``mode``."""


def _elicit_params(value: Any) -> Any:
    """Turn decoded ``elicitation/create`` params into the struct their ``mode`` calls for."""
    if isinstance(value, (ElicitRequestFormParams, ElicitRequestURLParams)):
        return value
    mapping = _mapping(value)
    if mapping is not None and mapping.get("mode") == "url":
        return _convert(value, ElicitRequestURLParams)
    return _convert(value, ElicitRequestFormParams)


class ElicitResult(Result, kw_only=True):
    """The client's answer to ``elicitation/create`` (2025-06-18+).

    Attributes:
        action: ``"accept"`` (with ``content`` in form mode), ``"decline"`` or ``"cancel"``.
        content: The submitted form values; string lists are 2025-11-25+.
    """

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str]] | UnsetType = UNSET


class ElicitationCompleteNotificationParams(NotificationParams, kw_only=True):
    """Params of ``notifications/elicitation/complete`` (2025-11-25 only)."""

    elicitation_id: str


# ---------------------------------------------------------------------------------------
# Multi round-trip input (2026-07-28)
# ---------------------------------------------------------------------------------------


class CreateMessageRequest(_Wire, kw_only=True, tag_field="method", tag="sampling/createMessage"):
    """A sampling input request inside an :class:`InputRequiredResult` (2026-07-28)."""

    method: ClassVar[Literal["sampling/createMessage"]] = "sampling/createMessage"
    params: CreateMessageRequestParams


class ListRootsRequest(_Wire, kw_only=True, tag_field="method", tag="roots/list"):
    """A roots input request inside an :class:`InputRequiredResult` (2026-07-28)."""

    method: ClassVar[Literal["roots/list"]] = "roots/list"
    params: RequestParams | UnsetType = UNSET


class ElicitRequest(_Wire, kw_only=True, tag_field="method", tag="elicitation/create"):
    """An elicitation input request inside an :class:`InputRequiredResult` (2026-07-28)."""

    method: ClassVar[Literal["elicitation/create"]] = "elicitation/create"
    params: _ElicitParamsField

    def __post_init__(self) -> None:
        self.params = _elicit_params(self.params)


InputRequest: TypeAlias = CreateMessageRequest | ListRootsRequest | ElicitRequest
"""A request the server needs the client to fulfil before retrying (tagged by ``method``)."""

InputRequests: TypeAlias = dict[str, InputRequest]
"""Input requests keyed by server-assigned ids."""

InputResponse: TypeAlias = CreateMessageResult | ListRootsResult | ElicitResult
"""The client's answer to one :data:`InputRequest`."""

InputResponses: TypeAlias = dict[str, InputResponse]
"""Input responses keyed by the ids of the :data:`InputRequests` they answer."""

# Field annotations: what msgspec decodes with at runtime (always msgspec-compatible) versus
# what type checkers see (includes the values the tolerant paths produce).
if TYPE_CHECKING:
    _ContentField: TypeAlias = ContentBlock
    _ResourceContentsField: TypeAlias = AnyResourceContents
    _ElicitParamsField: TypeAlias = ElicitRequestParams
    _InputResponsesField: TypeAlias = InputResponses
else:
    _ContentField: TypeAlias = (
        TextContent
        | ImageContent
        | AudioContent
        | ResourceLink
        | EmbeddedResource
        | ToolUseContent
        | ToolResultContent
    )
    _ResourceContentsField = dict[str, Any]
    _ElicitParamsField = dict[str, Any]
    _InputResponsesField = dict[str, dict[str, Any]]


def _input_response(value: Any) -> Any:
    """Turn one decoded input response into the result struct its keys call for."""
    if isinstance(value, (CreateMessageResult, ListRootsResult, ElicitResult)):
        return value
    if isinstance(value, dict):
        if "action" in value:
            return _convert(value, ElicitResult)
        if "roots" in value:
            return _convert(value, ListRootsResult)
        if "model" in value or "role" in value:
            return _convert(value, CreateMessageResult)
    raise msgspec.ValidationError(
        "input response is none of CreateMessageResult, ListRootsResult, ElicitResult"
    )


def _input_responses(value: Any) -> Any:
    if value is UNSET:
        return value
    return {key: _input_response(item) for key, item in value.items()}


class InputRequiredResult(Result, kw_only=True):
    """The server needs input from the client before it can answer (2026-07-28).

    Fulfil every entry of ``input_requests`` and retry the original request with
    ``input_responses`` and this ``request_state``.
    """

    input_requests: InputRequests | UnsetType = UNSET
    request_state: str | UnsetType = UNSET


class InputResponseRequestParams(RequestParams, kw_only=True):
    """Params of a retried request carrying input responses (2026-07-28)."""

    input_responses: _InputResponsesField | UnsetType = UNSET
    request_state: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        self.input_responses = _input_responses(self.input_responses)


# ---------------------------------------------------------------------------------------
# Tasks (2025-11-25 only)
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


class Error(_Wire, kw_only=True):
    """The ``error`` object of a JSON-RPC error response (named ``Error`` in the schema)."""

    code: int
    message: str
    data: Any | UnsetType = UNSET


# ---------------------------------------------------------------------------------------
# Decoding and encoding helpers
# ---------------------------------------------------------------------------------------

_any_decoder: Final = msgspec.json.Decoder()
_UNION_ORIGINS: Final = (Union, types.UnionType)


def _convert(obj: Any, tp: Any) -> Any:
    """Convert builtins to ``tp``, tolerating unknown content blocks anywhere inside."""
    try:
        return msgspec.convert(obj, tp)
    except msgspec.ValidationError as exc:
        return _repair(obj, tp, exc)


def _mapping(obj: Any) -> dict[str, Any] | None:
    """Return ``obj`` typed as a JSON object, or None if it is not one."""
    return cast("dict[str, Any]", obj) if isinstance(obj, dict) else None


@functools.cache
def _fields(tp: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """The fields of a struct type, resolved once."""
    return msgspec.structs.fields(tp)


def _is_object_type(tp: Any) -> bool:
    """Whether ``tp`` decodes from a JSON object (a Struct or a dict type)."""
    if isinstance(tp, type):
        return issubclass(tp, (msgspec.Struct, dict))
    return get_origin(tp) is dict


def _repair(obj: Any, tp: Any, exc: msgspec.ValidationError) -> Any:
    """Slow path: descend into ``obj`` and rebuild it, keeping unknown content blocks."""
    mapping = _mapping(obj)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        if mapping is None:
            raise exc
        config = tp.__struct_config__
        if config.tag_field is not None and mapping.get(config.tag_field, config.tag) != config.tag:
            raise exc
        kwargs: dict[str, Any] = {}
        for info in _fields(tp):
            if info.encode_name in mapping:
                kwargs[info.name] = _convert(mapping[info.encode_name], info.type)
            elif info.required:
                raise msgspec.ValidationError(
                    f"Object missing required field `{info.encode_name}`"
                ) from exc
        return tp(**kwargs)
    origin = get_origin(tp)
    args = get_args(tp)
    if origin in _UNION_ORIGINS:
        members = [arg for arg in args if arg is not UnsetType]
        if mapping is not None:
            tagged = [
                m
                for m in members
                if isinstance(m, type)
                and issubclass(m, msgspec.Struct)
                and m.__struct_config__.tag_field is not None
            ]
            for member in tagged:
                config = member.__struct_config__
                if config.tag_field is not None and mapping.get(config.tag_field) == config.tag:
                    return _convert(mapping, member)
            if isinstance(mapping.get("type"), str) and any(m in _CONTENT_TYPES for m in tagged):
                return UnknownContent(mapping)
            for member in members:  # msgspec allows one untagged object type per union
                if member not in tagged and _is_object_type(member):
                    return _convert(mapping, member)
        elif isinstance(obj, list):
            for member in members:
                if get_origin(member) is list:
                    return _convert(obj, member)
        raise exc
    if origin is list and isinstance(obj, list):
        return [_convert(item, args[0]) for item in cast("list[object]", obj)]
    if origin is dict and mapping is not None:
        return {key: _convert(value, args[1]) for key, value in mapping.items()}
    raise exc


def _input_responses_from(value: Any) -> Any:
    mapping = _mapping(value)
    if mapping is None:
        raise msgspec.ValidationError(f"Expected `object`, got `{type(value).__name__}`")
    return {key: _input_response(item) for key, item in mapping.items()}


_UNTAGGED: Final[dict[Any, Callable[[Any], Any]]] = {
    ElicitRequestParams: _elicit_params,
    AnyResourceContents: _resource_contents,
    InputResponse: _input_response,
    InputResponses: _input_responses_from,
}


class Decoder(Generic[_T]):
    """A reusable JSON decoder for one protocol type, tolerant of unknown content blocks.

    The strict msgspec decoder runs first; only when it rejects a message (for instance
    because a content block has a ``type`` from a newer revision) does the slower tolerant
    path run, which keeps such blocks as :class:`UnknownContent`.
    """

    __slots__ = ("_fast", "_special", "_type")

    def __init__(self, tp: Any) -> None:
        self._type = tp
        self._special = _UNTAGGED.get(tp)
        self._fast: msgspec.json.Decoder[Any] | None = (
            None if self._special is not None else msgspec.json.Decoder(tp)
        )

    def decode(self, data: bytes | bytearray | memoryview | msgspec.Raw) -> _T:
        """Decode one JSON document.

        Args:
            data: The JSON bytes (a :class:`msgspec.Raw` slice of an envelope works too).

        Returns:
            The decoded value.

        Raises:
            msgspec.DecodeError: The bytes are not valid JSON.
            msgspec.ValidationError: The JSON does not match the type.
        """
        if self._fast is not None:
            try:
                return self._fast.decode(data)  # type: ignore[no-any-return]
            except msgspec.ValidationError as exc:
                return _repair(_any_decoder.decode(data), self._type, exc)  # type: ignore[no-any-return]
        assert self._special is not None
        return self._special(_any_decoder.decode(data))  # type: ignore[no-any-return]


_decoders: dict[Any, Decoder[Any]] = {}


@overload
def decoder_for(tp: type[_T]) -> Decoder[_T]: ...
@overload
def decoder_for(tp: Any) -> Decoder[Any]: ...
def decoder_for(tp: Any) -> Decoder[Any]:
    """Return the cached :class:`Decoder` for a protocol type (or union, list, dict of them).

    Args:
        tp: The type to decode, e.g. ``CallToolResult`` or ``list[Tool]``.

    Returns:
        A decoder built once per type and reused.
    """
    decoder = _decoders.get(tp)
    if decoder is None:
        decoder = _decoders[tp] = Decoder(tp)
    return decoder


@overload
def from_builtins(obj: Any, tp: type[_T]) -> _T: ...
@overload
def from_builtins(obj: Any, tp: Any) -> Any: ...
def from_builtins(obj: Any, tp: Any) -> Any:
    """Convert already-decoded JSON (dicts, lists, ...) to a protocol type, tolerantly.

    Like :func:`msgspec.convert`, but unknown content blocks become :class:`UnknownContent`.

    Args:
        obj: Decoded JSON.
        tp: The target type.

    Returns:
        The converted value.

    Raises:
        msgspec.ValidationError: ``obj`` does not match the type.
    """
    special = _UNTAGGED.get(tp)
    if special is not None:
        return special(obj)
    return _convert(obj, tp)


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


class _ResultTypePeek(msgspec.Struct):
    result_type: str = msgspec.field(default="complete", name="resultType")


_peek_decoder: Final = msgspec.json.Decoder(_ResultTypePeek)


def peek_result_type(data: bytes | bytearray | memoryview | msgspec.Raw) -> str:
    """Return a raw result's ``resultType`` (``"complete"`` when absent, as legacy servers do).

    Args:
        data: The raw JSON of a ``result`` member.

    Returns:
        ``"complete"``, ``"input_required"``, or whatever newer value the server sent.

    Raises:
        msgspec.DecodeError: The bytes are not valid JSON.
        msgspec.ValidationError: The result is not an object or ``resultType`` is not a string.
    """
    return _peek_decoder.decode(data).result_type
