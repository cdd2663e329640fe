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
Use :func:`decoder_for` (not a bare ``msgspec.json.Decoder``) to decode these types: it is
fast on the common path and only falls back to the tolerant slow path when a message holds
something the strict decoder rejects, such as an unknown content block.
"""

# The types live in private modules, one spec area each, and every public name is re-exported
# here and shows as ``trio_mcp.types.X`` (its ``__module__``), so reprs, pickles, help() and
# the docs name the one public home. Each module imports only those before it:
#
#   _base           scalars, META_* keys, the _Wire base, base params/results, Error, to_builtins
#   _content        content blocks, resource contents, UnknownContent, Annotations
#   _tolerant       the slow path that keeps unknown content blocks (msgspec.convert, repaired)
#   _lifecycle      Implementation, capabilities, initialize, server/discover, typed _meta views
#   _tasks          2025-11-25 tasks
#   _tools          Tool, tools/list, CallToolResult
#   _resources      resources, templates, reads, subscriptions
#   _prompts        prompts
#   _completion     completion/complete
#   _notifications  logging, progress, cancellation, subscriptions/listen
#   _roots          roots
#   _sampling       sampling/createMessage (it names Tool)
#   _elicitation    elicitation/create, form schemas
#   _input          2026-07-28 multi round-trip input, and the three requests retried with it
#   _decoding       Decoder, decoder_for, from_builtins, peek_result_type

from __future__ import annotations

from types import FunctionType

# Bound for the annotations of the structs (see _adopt below), not used in this module.
from typing import Any, ClassVar, Literal  # noqa: F401

from msgspec import UnsetType  # noqa: F401

from ._base import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROGRESS_TOKEN,
    META_PROTOCOL_VERSION,
    META_RELATED_TASK,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    BaseMetadata,
    CacheableResult,
    CacheScope,
    Cursor,
    EmptyResult,
    Error,
    Icon,
    Icons,
    LoggingLevel,
    NotificationParams,
    PaginatedRequestParams,
    PaginatedResult,
    ProgressToken,
    RequestId,
    RequestParams,
    Result,
    ResultType,
    Role,
    to_builtins,
)
from ._completion import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceReference,
    ResourceTemplateReference,
)
from ._content import (
    Annotations,
    AnyResourceContents,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    SamplingMessageContentBlock,
    TextContent,
    TextResourceContents,
    ToolResultContent,
    ToolUseContent,
    UnknownContent,
)
from ._content import _ContentField as _ContentField
from ._content import _ResourceContentsField as _ResourceContentsField
from ._decoding import Decoder as Decoder
from ._decoding import decoder_for as decoder_for
from ._decoding import from_builtins as from_builtins
from ._decoding import peek_result_type as peek_result_type
from ._elicitation import (
    BooleanSchema,
    ElicitationCompleteNotificationParams,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    EnumSchema,
    LegacyTitledEnumSchema,
    MultiSelectEnumSchema,
    NumberSchema,
    PrimitiveSchemaDefinition,
    SingleSelectEnumSchema,
    StringSchema,
    TitledEnumItems,
    TitledEnumOption,
    TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    UntitledEnumItems,
    UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
)
from ._elicitation import _ElicitParamsField as _ElicitParamsField
from ._input import (
    CallToolRequestParams,
    CreateMessageRequest,
    ElicitRequest,
    GetPromptRequestParams,
    InputRequest,
    InputRequests,
    InputRequiredResult,
    InputResponse,
    InputResponseRequestParams,
    InputResponses,
    ListRootsRequest,
    ReadResourceRequestParams,
)
from ._input import _InputResponsesField as _InputResponsesField
from ._lifecycle import (
    ClientCapabilities,
    CompletionsCapability,
    DiscoverResult,
    ElicitationCapability,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingCapability,
    NotificationMetaObject,
    PromptsCapability,
    RequestMetaObject,
    ResourcesCapability,
    ResultMetaObject,
    RootsCapability,
    SamplingCapability,
    ServerCapabilities,
    SubscriptionsListenResultMetaObject,
    ToolsCapability,
)
from ._notifications import (
    CancelledNotificationParams,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    SetLevelRequestParams,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)
from ._prompts import (
    GetPromptResult,
    ListPromptsResult,
    Prompt,
    PromptArgument,
    PromptMessage,
)
from ._resources import (
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    Resource,
    ResourceRequestParams,
    ResourceTemplate,
    ResourceUpdatedNotificationParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from ._roots import (
    ListRootsResult,
    Root,
)
from ._sampling import (
    CreateMessageRequestParams,
    CreateMessageResult,
    IncludeContext,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    ToolChoice,
)
from ._tasks import (
    CancelTaskRequestParams,
    CancelTaskResult,
    CreateTaskResult,
    GetTaskPayloadRequestParams,
    GetTaskPayloadResult,
    GetTaskRequestParams,
    GetTaskResult,
    ListTasksResult,
    RelatedTaskMetadata,
    Task,
    TaskAugmentedRequestParams,
    TaskMetadata,
    TaskStatus,
    TaskStatusNotificationParams,
)
from ._tools import (
    CallToolResult,
    ListToolsResult,
    Tool,
    ToolAnnotations,
    ToolExecution,
)

# Public protocol names and to_builtins; the helpers of _decoding (decoder_for, ...) are for
# the session engine and stay out of the star-export.
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


def _adopt() -> None:
    """Make every public class and function of the private modules show as trio_mcp.types.X.

    msgspec and ``typing.get_type_hints`` evaluate a struct's string annotations (every module
    here uses ``from __future__ import annotations``) in the namespace of the struct's
    ``__module__``, this package once this has run: so every name a field annotation spells
    is bound here too, the private field aliases and ``Any``, ``ClassVar``, ``Literal``,
    ``UnsetType`` included (tests/test_types_namespace.py resolves every struct's annotations).

    Type aliases are left alone: they are typing objects (``Literal[...]``, ``str | int``, or
    ``str`` itself) that other code may share, not objects of ours.
    """
    for name in (*__all__, "Decoder", "decoder_for", "from_builtins", "peek_result_type"):
        value = globals()[name]
        if isinstance(value, (type, FunctionType)) and value.__module__.startswith(f"{__name__}._"):
            value.__module__ = __name__


_adopt()
