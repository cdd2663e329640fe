"""trio_mcp.types: the msgspec Structs of every MCP protocol type, 2024-11-05 through 2026-07-28.

This public module holds every protocol struct (requests' params, results, notifications'
params, content blocks, capabilities, JSON Schema pieces for elicitation), the type aliases
that name unions of them (``ContentBlock``, ``AnyResourceContents``, ...), the ``_meta`` key
constants (``META_*``) and [`to_builtins()`][trio_mcp.types.to_builtins]. The handful a caller names
every day (``Tool``, ``CallToolResult``, ``TextContent``, ...) are re-exported from ``trio_mcp``
too; spell every other one ``trio_mcp.types.X``.

One set of types covers every revision a client may meet. A field that only some
revisions define is optional (``T | UnsetType = UNSET``); a field that is required in every
revision that has it is required here; test one with ``value.title is not UNSET``
(``UNSET`` and ``UnsetType`` are msgspec's own, re-exported here so a caller need not import
msgspec). Python names are snake_case, wire names camelCase;
``_meta`` is exposed as ``meta``. Unknown fields are ignored, never rejected.

JSON Schemas carried by the protocol (``Tool.input_schema``, ``Tool.output_schema``,
``ElicitRequestFormParams.requested_schema``) are plain ``dict[str, Any]``, kept exactly as
the server sent them (``$ref``, ``$defs``, 2020-12 keywords and all).

Content blocks are a tagged union on ``type`` and are meant to be consumed with ``match``:

```python
for block in result.content:
    match block:
        case TextContent(text=text): ...
        case ImageContent(data=data, mime_type=mime): ...
        case UnknownContent(type=tag): ...   # a block type from a newer revision
```

A block whose ``type`` this library does not know decodes to
[`UnknownContent`][trio_mcp.types.UnknownContent] (which keeps the whole JSON object) instead of
failing the message. Resource contents have no tag: they decode to
[`TextResourceContents`][trio_mcp.types.TextResourceContents] or
[`BlobResourceContents`][trio_mcp.types.BlobResourceContents] by which key is present, and to the
generic [`ResourceContents`][trio_mcp.types.ResourceContents] otherwise.

Use `decoder_for()` (not a bare ``msgspec.json.Decoder``) to decode these types: it is
fast on the common path and only falls back to the tolerant slow path when a message holds
something the strict decoder rejects, such as an unknown content block.
"""

# The types live in private modules, one spec area each, and every public name is re-exported
# here and shows as ``trio_mcp.types.X`` (its ``__module__``), so reprs, pickles, help() and
# the docs name the one public home. Each module imports only those before it:
#
#   _base           scalars, META_* keys, the _Wire base, base params/results, Error, to_builtins
#   _apps           MCP Apps: the typed _meta.ui of tools and resources
#   _content        content blocks, resource contents, UnknownContent, Annotations
#   _tolerant       the slow path that keeps unknown content blocks (msgspec.convert, repaired)
#   _lifecycle      Implementation, capabilities, initialize, server/discover, typed _meta views
#   _tasks          2025-11-25 tasks
#   _tools          Tool, tools/list, CallToolResult
#   _resources      resources, templates, reads, subscriptions
#   _prompts        prompts
#   _completion     completion/complete
#   _notifications  logging, progress, cancellation, subscriptions/listen
#   _roots          roots/list
#   _sampling       sampling/createMessage (it names Tool)
#   _elicitation    elicitation/create, form schemas
#   _input          2026-07-28 multi round-trip input, and the three requests retried with it
#
# (roots, sampling and elicitation also hold their request's 2026-07-28 input-request form:
# ListRootsRequest, CreateMessageRequest, ElicitRequest.)
#
# This module itself adds the session engine's decoding entry points, which need every area:
# Decoder, decoder_for, from_builtins and peek_result_type.

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType
from typing import Any, Final, Generic, TypeVar, overload

# ClassVar and Literal are not used in this module: the structs' field annotations spell them,
# and are evaluated here (see _adopt below). UNSET and UnsetType are public too: a caller tests
# an optional field with ``if tool.title is not UNSET`` without importing msgspec.
from typing import ClassVar as ClassVar
from typing import Literal as Literal

import msgspec
from msgspec import UNSET as UNSET
from msgspec import UnsetType as UnsetType

# The order of these imports is the order of the API reference page (mkdocstrings lists
# re-exported names in source order): by area as the modules go, then as each module goes.
# isort: off
from ._base import (
    Role,
    LoggingLevel,
    RequestId,
    ProgressToken,
    Cursor,
    ResultType,
    CacheScope,
    META_PROGRESS_TOKEN,
    META_PROTOCOL_VERSION,
    META_CLIENT_INFO,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    META_RELATED_TASK,
    Icon,
    Icons,
    BaseMetadata,
    RequestParams,
    NotificationParams,
    Result,
    EmptyResult,
    PaginatedResult,
    CacheableResult,
    PaginatedRequestParams,
    Error,
    to_builtins,
)
from ._apps import (
    APPS_EXTENSION,
    APP_MIME_TYPE,
    UIToolMeta,
    UIResourceCsp,
    UIResourcePermissions,
    UIResourceMeta,
)
from ._content import (
    Annotations,
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    ResourceContents,
    TextResourceContents,
    BlobResourceContents,
    EmbeddedResource,
    ToolUseContent,
    ToolResultContent,
    UnknownContent,
    ContentBlock,
    SamplingMessageContentBlock,
    AnyResourceContents,
)
from ._lifecycle import (
    Implementation,
    RootsCapability,
    SamplingCapability,
    ElicitationCapability,
    ClientCapabilities,
    PromptsCapability,
    ResourcesCapability,
    ToolsCapability,
    LoggingCapability,
    CompletionsCapability,
    ServerCapabilities,
    InitializeRequestParams,
    InitializeResult,
    DiscoverResult,
    RequestMetaObject,
    ResultMetaObject,
    NotificationMetaObject,
    SubscriptionsListenResultMetaObject,
)
from ._tasks import (
    TaskStatus,
    TaskMetadata,
    RelatedTaskMetadata,
    TaskAugmentedRequestParams,
    Task,
    CreateTaskResult,
    GetTaskRequestParams,
    GetTaskPayloadRequestParams,
    CancelTaskRequestParams,
    GetTaskResult,
    CancelTaskResult,
    GetTaskPayloadResult,
    ListTasksResult,
    TaskStatusNotificationParams,
)
from ._tools import (
    ToolAnnotations,
    ToolExecution,
    Tool,
    ListToolsResult,
    CallToolResult,
)
from ._resources import (
    Resource,
    ResourceTemplate,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ResourceRequestParams,
    ReadResourceResult,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
    ResourceUpdatedNotificationParams,
)
from ._prompts import (
    PromptArgument,
    Prompt,
    PromptMessage,
    ListPromptsResult,
    GetPromptResult,
)
from ._completion import (
    PromptReference,
    ResourceTemplateReference,
    ResourceReference,
    CompletionArgument,
    CompletionContext,
    CompleteRequestParams,
    Completion,
    CompleteResult,
)
from ._notifications import (
    SetLevelRequestParams,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    CancelledNotificationParams,
    SubscriptionFilter,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    SubscriptionsAcknowledgedNotificationParams,
)
from ._roots import (
    Root,
    ListRootsResult,
    ListRootsRequest,
)
from ._sampling import (
    IncludeContext,
    ModelHint,
    ModelPreferences,
    ToolChoice,
    SamplingMessage,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageRequest,
)
from ._elicitation import (
    StringSchema,
    NumberSchema,
    BooleanSchema,
    UntitledSingleSelectEnumSchema,
    TitledEnumOption,
    TitledSingleSelectEnumSchema,
    UntitledEnumItems,
    TitledEnumItems,
    UntitledMultiSelectEnumSchema,
    TitledMultiSelectEnumSchema,
    LegacyTitledEnumSchema,
    SingleSelectEnumSchema,
    MultiSelectEnumSchema,
    EnumSchema,
    PrimitiveSchemaDefinition,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitRequestParams,
    ElicitResult,
    ElicitationCompleteNotificationParams,
    ElicitRequest,
)
from ._input import (
    InputRequest,
    InputRequests,
    InputResponse,
    InputResponses,
    InputRequiredResult,
    InputResponseRequestParams,
    CallToolRequestParams,
    ReadResourceRequestParams,
    GetPromptRequestParams,
)

# isort: on
from ._base import _Wire as _Wire
from ._content import _ContentField as _ContentField
from ._content import _resource_contents
from ._content import _ResourceContentsField as _ResourceContentsField
from ._elicitation import _elicit_params
from ._elicitation import _ElicitParamsField as _ElicitParamsField
from ._input import _input_response
from ._input import _InputResponsesField as _InputResponsesField
from ._tolerant import _convert, _mapping, _repair

# Public protocol names and to_builtins; the decoding helpers at the bottom (decoder_for, ...)
# are for the session engine and stay out of the star-export.
__all__ = [
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
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
    "UIResourceCsp",
    "UIResourceMeta",
    "UIResourcePermissions",
    "UIToolMeta",
    "UNSET",
    "UnknownContent",
    "UnsetType",
    "UnsubscribeRequestParams",
    "UntitledEnumItems",
    "UntitledMultiSelectEnumSchema",
    "UntitledSingleSelectEnumSchema",
    "to_builtins",
]


def _adopt() -> None:
    """Make every class and function of the private modules bound here show as trio_mcp.types.X.

    That is the public names, and the private ``_Wire`` base that ``help()`` shows in every
    struct's bases.

    msgspec and ``typing.get_type_hints`` evaluate a struct's string annotations (every module
    here uses ``from __future__ import annotations``) in the namespace of the struct's
    ``__module__``, this package once this has run: so every name a field annotation spells
    is bound here too, the private field aliases and ``Any``, ``ClassVar``, ``Literal``,
    ``UnsetType`` included (tests/test_types_namespace.py resolves every struct's annotations).

    Type aliases are left alone: they are typing objects (``Literal[...]``, ``str | int``, or
    ``str`` itself) that other code may share, not objects of ours.
    """
    for value in list(globals().values()):
        if isinstance(value, (type, FunctionType)) and value.__module__.startswith(f"{__name__}._"):
            value.__module__ = __name__


_adopt()


# ---------------------------------------------------------------------------------------
# Decoding: the fast strict path, and the tolerant one when it fails
# ---------------------------------------------------------------------------------------

_T = TypeVar("_T")

_any_decoder: Final = msgspec.json.Decoder()


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
    path run, which keeps such blocks as [`UnknownContent`][trio_mcp.types.UnknownContent].
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
            data: The JSON bytes (a `msgspec.Raw` slice of an envelope works too).

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
    """Return the cached `Decoder` for a protocol type (or union, list, dict of them).

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

    Like `msgspec.convert()`, but unknown content blocks become
    [`UnknownContent`][trio_mcp.types.UnknownContent].

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
