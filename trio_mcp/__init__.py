"""trio_mcp: a Trio-native client for the Model Context Protocol, both protocol eras.

Start with :func:`open_mcp_session`::

    async with trio_mcp.open_mcp_session(["python", "-m", "server"]) as session:
        tools = await session.list_tools()

or, to run the session's tasks in a nursery of yours::

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, ["python", "-m", "server"]) as session:
            tools = await session.list_tools()
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ._agent import AgentResult as AgentResult
from ._agent import AnthropicModel as AnthropicModel
from ._agent import Model as Model
from ._agent import ModelRequest as ModelRequest
from ._agent import OpenAIChatModel as OpenAIChatModel
from ._agent import run_agent as run_agent
from ._agent import sampling_handler as sampling_handler
from ._blocking import BlockingNotifications as BlockingNotifications
from ._blocking import BlockingToolTask as BlockingToolTask
from ._blocking_api import BlockingSession as BlockingSession
from ._blocking_open import open_blocking_session as open_blocking_session
from ._catalogue import Catalogue as Catalogue
from ._config import ConfigInput as ConfigInput
from ._config import ConsentRequest as ConsentRequest
from ._config import ConsentStore as ConsentStore
from ._config import FileConsentStore as FileConsentStore
from ._config import MCPConfig as MCPConfig
from ._config import MemoryConsentStore as MemoryConsentStore
from ._config import ServerConfig as ServerConfig
from ._config import check_consent as check_consent
from ._config import load_config as load_config
from ._config import parse_config as parse_config
from ._connect import open_mcp_session as open_mcp_session
from ._eras import EraCache as EraCache
from ._exceptions import AgentDeadlineError as AgentDeadlineError
from ._exceptions import AgentError as AgentError
from ._exceptions import AgentIterationLimitError as AgentIterationLimitError
from ._exceptions import AuthDiscoveryError as AuthDiscoveryError
from ._exceptions import AuthError as AuthError
from ._exceptions import AuthorizationDeniedError as AuthorizationDeniedError
from ._exceptions import CassetteError as CassetteError
from ._exceptions import CircuitOpenError as CircuitOpenError
from ._exceptions import ClientRegistrationError as ClientRegistrationError
from ._exceptions import ConfigError as ConfigError
from ._exceptions import ConnectionClosed as ConnectionClosed
from ._exceptions import DeviceCodeExpiredError as DeviceCodeExpiredError
from ._exceptions import DPoPError as DPoPError
from ._exceptions import DPoPNonceError as DPoPNonceError
from ._exceptions import ElicitationContentError as ElicitationContentError
from ._exceptions import HeaderMismatchError as HeaderMismatchError
from ._exceptions import HTTPStatusError as HTTPStatusError
from ._exceptions import InputRequestError as InputRequestError
from ._exceptions import InsufficientScopeError as InsufficientScopeError
from ._exceptions import LoginRequiredError as LoginRequiredError
from ._exceptions import MCPError as MCPError
from ._exceptions import MessageTooLargeError as MessageTooLargeError
from ._exceptions import MissingClientCapabilityError as MissingClientCapabilityError
from ._exceptions import ModelError as ModelError
from ._exceptions import NameCollisionError as NameCollisionError
from ._exceptions import OutputValidationError as OutputValidationError
from ._exceptions import ProtocolError as ProtocolError
from ._exceptions import ResourceNotFoundError as ResourceNotFoundError
from ._exceptions import SchemaError as SchemaError
from ._exceptions import ServerError as ServerError
from ._exceptions import ServerUnavailableError as ServerUnavailableError
from ._exceptions import SkillVerificationError as SkillVerificationError
from ._exceptions import TaskCancelledError as TaskCancelledError
from ._exceptions import TaskError as TaskError
from ._exceptions import TaskFailedError as TaskFailedError
from ._exceptions import TaskLostError as TaskLostError
from ._exceptions import TokenRequestError as TokenRequestError
from ._exceptions import ToolError as ToolError
from ._exceptions import TransportError as TransportError
from ._exceptions import UnsafeURLError as UnsafeURLError
from ._exceptions import UnsupportedProtocolVersionError as UnsupportedProtocolVersionError
from ._exceptions import URLElicitationRequiredError as URLElicitationRequiredError
from ._group import GroupNotification as GroupNotification
from ._group import RestartPolicy as RestartPolicy
from ._group import ServerGroup as ServerGroup
from ._group import ServerState as ServerState
from ._group import ServerStatus as ServerStatus
from ._group import open_server_group as open_server_group
from ._handlers import ElicitationHandler as ElicitationHandler
from ._handlers import HandlerError as HandlerError
from ._handlers import RequestContext as RequestContext
from ._handlers import Roots as Roots
from ._handlers import RootsHandler as RootsHandler
from ._handlers import SamplingHandler as SamplingHandler
from ._resilience import Backoff as Backoff
from ._resilience import CircuitBreaker as CircuitBreaker
from ._resilience import CircuitState as CircuitState
from ._resilience import RetryPolicy as RetryPolicy
from ._session import ClientSession as ClientSession
from ._session import Notification as Notification
from ._skills import Skill as Skill
from ._skills import SkillFile as SkillFile
from ._skills import list_skills as list_skills
from ._skills import load_skill as load_skill
from ._skills import read_skill_file as read_skill_file
from ._tasks import TaskState as TaskState
from ._tasks import ToolTask as ToolTask
from ._terminal import for_terminal as for_terminal
from ._transports._base import MessageInfo as MessageInfo
from ._transports._base import RequestFailure as RequestFailure
from ._transports._base import Transport as Transport
from ._transports._base import TransportFactory as TransportFactory
from ._transports._stdio import StdioParameters as StdioParameters
from ._types import Annotations as Annotations
from ._types import AnyResourceContents as AnyResourceContents
from ._types import AudioContent as AudioContent
from ._types import BaseMetadata as BaseMetadata
from ._types import BlobResourceContents as BlobResourceContents
from ._types import BooleanSchema as BooleanSchema
from ._types import CacheableResult as CacheableResult
from ._types import CacheScope as CacheScope
from ._types import CallToolRequestParams as CallToolRequestParams
from ._types import CallToolResult as CallToolResult
from ._types import CancelledNotificationParams as CancelledNotificationParams
from ._types import CancelTaskRequestParams as CancelTaskRequestParams
from ._types import CancelTaskResult as CancelTaskResult
from ._types import ClientCapabilities as ClientCapabilities
from ._types import CompleteRequestParams as CompleteRequestParams
from ._types import CompleteResult as CompleteResult
from ._types import Completion as Completion
from ._types import CompletionArgument as CompletionArgument
from ._types import CompletionContext as CompletionContext
from ._types import CompletionsCapability as CompletionsCapability
from ._types import ContentBlock as ContentBlock
from ._types import CreateMessageRequest as CreateMessageRequest
from ._types import CreateMessageRequestParams as CreateMessageRequestParams
from ._types import CreateMessageResult as CreateMessageResult
from ._types import CreateTaskResult as CreateTaskResult
from ._types import DiscoverResult as DiscoverResult
from ._types import ElicitationCapability as ElicitationCapability
from ._types import ElicitationCompleteNotificationParams as ElicitationCompleteNotificationParams
from ._types import ElicitRequest as ElicitRequest
from ._types import ElicitRequestFormParams as ElicitRequestFormParams
from ._types import ElicitRequestParams as ElicitRequestParams
from ._types import ElicitRequestURLParams as ElicitRequestURLParams
from ._types import ElicitResult as ElicitResult
from ._types import EmbeddedResource as EmbeddedResource
from ._types import EmptyResult as EmptyResult
from ._types import EnumSchema as EnumSchema
from ._types import GetPromptRequestParams as GetPromptRequestParams
from ._types import GetPromptResult as GetPromptResult
from ._types import GetTaskPayloadRequestParams as GetTaskPayloadRequestParams
from ._types import GetTaskPayloadResult as GetTaskPayloadResult
from ._types import GetTaskRequestParams as GetTaskRequestParams
from ._types import GetTaskResult as GetTaskResult
from ._types import Icon as Icon
from ._types import Icons as Icons
from ._types import ImageContent as ImageContent
from ._types import Implementation as Implementation
from ._types import IncludeContext as IncludeContext
from ._types import InitializeRequestParams as InitializeRequestParams
from ._types import InitializeResult as InitializeResult
from ._types import InputRequest as InputRequest
from ._types import InputRequests as InputRequests
from ._types import InputRequiredResult as InputRequiredResult
from ._types import InputResponse as InputResponse
from ._types import InputResponseRequestParams as InputResponseRequestParams
from ._types import InputResponses as InputResponses
from ._types import LegacyTitledEnumSchema as LegacyTitledEnumSchema
from ._types import ListPromptsResult as ListPromptsResult
from ._types import ListResourcesResult as ListResourcesResult
from ._types import ListResourceTemplatesResult as ListResourceTemplatesResult
from ._types import ListRootsRequest as ListRootsRequest
from ._types import ListRootsResult as ListRootsResult
from ._types import ListTasksResult as ListTasksResult
from ._types import ListToolsResult as ListToolsResult
from ._types import LoggingCapability as LoggingCapability
from ._types import LoggingLevel as LoggingLevel
from ._types import LoggingMessageNotificationParams as LoggingMessageNotificationParams
from ._types import ModelHint as ModelHint
from ._types import ModelPreferences as ModelPreferences
from ._types import MultiSelectEnumSchema as MultiSelectEnumSchema
from ._types import NotificationMetaObject as NotificationMetaObject
from ._types import NotificationParams as NotificationParams
from ._types import NumberSchema as NumberSchema
from ._types import PaginatedRequestParams as PaginatedRequestParams
from ._types import PaginatedResult as PaginatedResult
from ._types import PrimitiveSchemaDefinition as PrimitiveSchemaDefinition
from ._types import ProgressNotificationParams as ProgressNotificationParams
from ._types import ProgressToken as ProgressToken
from ._types import Prompt as Prompt
from ._types import PromptArgument as PromptArgument
from ._types import PromptMessage as PromptMessage
from ._types import PromptReference as PromptReference
from ._types import PromptsCapability as PromptsCapability
from ._types import ReadResourceRequestParams as ReadResourceRequestParams
from ._types import ReadResourceResult as ReadResourceResult
from ._types import RelatedTaskMetadata as RelatedTaskMetadata
from ._types import RequestMetaObject as RequestMetaObject
from ._types import RequestParams as RequestParams
from ._types import Resource as Resource
from ._types import ResourceContents as ResourceContents
from ._types import ResourceLink as ResourceLink
from ._types import ResourceReference as ResourceReference
from ._types import ResourceRequestParams as ResourceRequestParams
from ._types import ResourcesCapability as ResourcesCapability
from ._types import ResourceTemplate as ResourceTemplate
from ._types import ResourceTemplateReference as ResourceTemplateReference
from ._types import ResourceUpdatedNotificationParams as ResourceUpdatedNotificationParams
from ._types import Result as Result
from ._types import ResultMetaObject as ResultMetaObject
from ._types import Role as Role
from ._types import Root as Root
from ._types import RootsCapability as RootsCapability
from ._types import SamplingCapability as SamplingCapability
from ._types import SamplingMessage as SamplingMessage
from ._types import SamplingMessageContentBlock as SamplingMessageContentBlock
from ._types import ServerCapabilities as ServerCapabilities
from ._types import SetLevelRequestParams as SetLevelRequestParams
from ._types import SingleSelectEnumSchema as SingleSelectEnumSchema
from ._types import StringSchema as StringSchema
from ._types import SubscribeRequestParams as SubscribeRequestParams
from ._types import SubscriptionFilter as SubscriptionFilter
from ._types import (
    SubscriptionsAcknowledgedNotificationParams as SubscriptionsAcknowledgedNotificationParams,
)
from ._types import SubscriptionsListenRequestParams as SubscriptionsListenRequestParams
from ._types import SubscriptionsListenResult as SubscriptionsListenResult
from ._types import SubscriptionsListenResultMetaObject as SubscriptionsListenResultMetaObject
from ._types import Task as Task
from ._types import TaskAugmentedRequestParams as TaskAugmentedRequestParams
from ._types import TaskMetadata as TaskMetadata
from ._types import TaskStatus as TaskStatus
from ._types import TaskStatusNotificationParams as TaskStatusNotificationParams
from ._types import TextContent as TextContent
from ._types import TextResourceContents as TextResourceContents
from ._types import TitledEnumItems as TitledEnumItems
from ._types import TitledEnumOption as TitledEnumOption
from ._types import TitledMultiSelectEnumSchema as TitledMultiSelectEnumSchema
from ._types import TitledSingleSelectEnumSchema as TitledSingleSelectEnumSchema
from ._types import Tool as Tool
from ._types import ToolAnnotations as ToolAnnotations
from ._types import ToolChoice as ToolChoice
from ._types import ToolExecution as ToolExecution
from ._types import ToolResultContent as ToolResultContent
from ._types import ToolsCapability as ToolsCapability
from ._types import ToolUseContent as ToolUseContent
from ._types import UnknownContent as UnknownContent
from ._types import UnsubscribeRequestParams as UnsubscribeRequestParams
from ._types import UntitledEnumItems as UntitledEnumItems
from ._types import UntitledMultiSelectEnumSchema as UntitledMultiSelectEnumSchema
from ._types import UntitledSingleSelectEnumSchema as UntitledSingleSelectEnumSchema
from ._types import to_builtins as to_builtins
from ._urls import URLCheck as URLCheck
from ._urls import URLConsent as URLConsent
from ._urls import URLPolicy as URLPolicy
from ._urls import check_url as check_url
from ._urls import url_elicitation_handler as url_elicitation_handler
from ._validation import CompiledSchema as CompiledSchema
from ._validation import OutputValidation as OutputValidation
from ._validation import SchemaViolation as SchemaViolation
from ._validation import compile_schema as compile_schema

if TYPE_CHECKING:
    from ._asyncio import AsyncioNotifications as AsyncioNotifications
    from ._asyncio import AsyncioToolTask as AsyncioToolTask
    from ._asyncio_api import AsyncioSession as AsyncioSession
    from ._asyncio_open import open_asyncio_session as open_asyncio_session
    from ._auth import DeviceCode as DeviceCode
    from ._auth import DeviceFlow as DeviceFlow
    from ._auth import FileTokenStore as FileTokenStore
    from ._auth import IdentityAssertionGrant as IdentityAssertionGrant
    from ._auth import JWTBearerGrant as JWTBearerGrant
    from ._auth import KeyringTokenStore as KeyringTokenStore
    from ._auth import LoopbackBrowser as LoopbackBrowser
    from ._auth import MemoryTokenStore as MemoryTokenStore
    from ._auth import OAuth as OAuth
    from ._auth import Redirect as Redirect
    from ._auth import ServerBindingStore as ServerBindingStore
    from ._auth import StoredClient as StoredClient
    from ._auth import StoredServer as StoredServer
    from ._auth import StoredToken as StoredToken
    from ._auth import TokenStore as TokenStore
    from ._auth import UserAgent as UserAgent
    from ._transports._http import StreamableHTTPParameters as StreamableHTTPParameters
    from ._transports._sse import SSEParameters as SSEParameters
    from ._transports._websocket import WebSocketParameters as WebSocketParameters

_LAZY = {
    "AsyncioNotifications": "._asyncio",
    "AsyncioSession": "._asyncio_api",
    "AsyncioToolTask": "._asyncio",
    "open_asyncio_session": "._asyncio_open",
    "DeviceCode": "._auth",
    "DeviceFlow": "._auth",
    "FileTokenStore": "._auth",
    "IdentityAssertionGrant": "._auth",
    "JWTBearerGrant": "._auth",
    "KeyringTokenStore": "._auth",
    "LoopbackBrowser": "._auth",
    "MemoryTokenStore": "._auth",
    "OAuth": "._auth",
    "Redirect": "._auth",
    "ServerBindingStore": "._auth",
    "StoredClient": "._auth",
    "StoredServer": "._auth",
    "StoredToken": "._auth",
    "TokenStore": "._auth",
    "UserAgent": "._auth",
    "SSEParameters": "._transports._sse",
    "StreamableHTTPParameters": "._transports._http",
    "WebSocketParameters": "._transports._websocket",
}


def __getattr__(name: str) -> Any:
    # The HTTP and WebSocket transports import httpx / trio-websocket: load them on demand,
    # so `import trio_mcp` for stdio use stays light.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trio_mcp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AgentDeadlineError",
    "AgentError",
    "AgentIterationLimitError",
    "AgentResult",
    "Annotations",
    "AnthropicModel",
    "AnyResourceContents",
    "AsyncioNotifications",
    "AsyncioSession",
    "AsyncioToolTask",
    "AudioContent",
    "AuthDiscoveryError",
    "AuthError",
    "AuthorizationDeniedError",
    "Backoff",
    "BaseMetadata",
    "BlobResourceContents",
    "BlockingNotifications",
    "BlockingSession",
    "BlockingToolTask",
    "BooleanSchema",
    "CacheScope",
    "CacheableResult",
    "CallToolRequestParams",
    "CallToolResult",
    "CancelTaskRequestParams",
    "CancelTaskResult",
    "CancelledNotificationParams",
    "CassetteError",
    "Catalogue",
    "CircuitBreaker",
    "CircuitOpenError",
    "CircuitState",
    "ClientCapabilities",
    "ClientRegistrationError",
    "ClientSession",
    "CompiledSchema",
    "CompleteRequestParams",
    "CompleteResult",
    "Completion",
    "CompletionArgument",
    "CompletionContext",
    "CompletionsCapability",
    "ConfigError",
    "ConfigInput",
    "ConnectionClosed",
    "ConsentRequest",
    "ConsentStore",
    "ContentBlock",
    "CreateMessageRequest",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "CreateTaskResult",
    "DPoPError",
    "DPoPNonceError",
    "DeviceCode",
    "DeviceCodeExpiredError",
    "DeviceFlow",
    "DiscoverResult",
    "ElicitRequest",
    "ElicitRequestFormParams",
    "ElicitRequestParams",
    "ElicitRequestURLParams",
    "ElicitResult",
    "ElicitationCapability",
    "ElicitationCompleteNotificationParams",
    "ElicitationContentError",
    "ElicitationHandler",
    "EmbeddedResource",
    "EmptyResult",
    "EnumSchema",
    "EraCache",
    "FileConsentStore",
    "FileTokenStore",
    "GetPromptRequestParams",
    "GetPromptResult",
    "GetTaskPayloadRequestParams",
    "GetTaskPayloadResult",
    "GetTaskRequestParams",
    "GetTaskResult",
    "GroupNotification",
    "HTTPStatusError",
    "HandlerError",
    "HeaderMismatchError",
    "Icon",
    "Icons",
    "IdentityAssertionGrant",
    "ImageContent",
    "Implementation",
    "IncludeContext",
    "InitializeRequestParams",
    "InitializeResult",
    "InputRequest",
    "InputRequestError",
    "InputRequests",
    "InputRequiredResult",
    "InputResponse",
    "InputResponseRequestParams",
    "InputResponses",
    "InsufficientScopeError",
    "JWTBearerGrant",
    "KeyringTokenStore",
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
    "LoginRequiredError",
    "LoopbackBrowser",
    "MCPConfig",
    "MCPError",
    "MemoryConsentStore",
    "MemoryTokenStore",
    "MessageInfo",
    "MessageTooLargeError",
    "MissingClientCapabilityError",
    "Model",
    "ModelError",
    "ModelHint",
    "ModelPreferences",
    "ModelRequest",
    "MultiSelectEnumSchema",
    "NameCollisionError",
    "Notification",
    "NotificationMetaObject",
    "NotificationParams",
    "NumberSchema",
    "OAuth",
    "OpenAIChatModel",
    "OutputValidation",
    "OutputValidationError",
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
    "ProtocolError",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "Redirect",
    "RelatedTaskMetadata",
    "RequestContext",
    "RequestFailure",
    "RequestMetaObject",
    "RequestParams",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceNotFoundError",
    "ResourceReference",
    "ResourceRequestParams",
    "ResourceTemplate",
    "ResourceTemplateReference",
    "ResourceUpdatedNotificationParams",
    "ResourcesCapability",
    "RestartPolicy",
    "Result",
    "ResultMetaObject",
    "RetryPolicy",
    "Role",
    "Root",
    "Roots",
    "RootsCapability",
    "RootsHandler",
    "SSEParameters",
    "SamplingCapability",
    "SamplingHandler",
    "SamplingMessage",
    "SamplingMessageContentBlock",
    "SchemaError",
    "SchemaViolation",
    "ServerBindingStore",
    "ServerCapabilities",
    "ServerConfig",
    "ServerError",
    "ServerGroup",
    "ServerState",
    "ServerStatus",
    "ServerUnavailableError",
    "SetLevelRequestParams",
    "SingleSelectEnumSchema",
    "Skill",
    "SkillFile",
    "SkillVerificationError",
    "StdioParameters",
    "StoredClient",
    "StoredServer",
    "StoredToken",
    "StreamableHTTPParameters",
    "StringSchema",
    "SubscribeRequestParams",
    "SubscriptionFilter",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsListenRequestParams",
    "SubscriptionsListenResult",
    "SubscriptionsListenResultMetaObject",
    "Task",
    "TaskAugmentedRequestParams",
    "TaskCancelledError",
    "TaskError",
    "TaskFailedError",
    "TaskLostError",
    "TaskMetadata",
    "TaskState",
    "TaskStatus",
    "TaskStatusNotificationParams",
    "TextContent",
    "TextResourceContents",
    "TitledEnumItems",
    "TitledEnumOption",
    "TitledMultiSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "TokenRequestError",
    "TokenStore",
    "Tool",
    "ToolAnnotations",
    "ToolChoice",
    "ToolError",
    "ToolExecution",
    "ToolResultContent",
    "ToolTask",
    "ToolUseContent",
    "ToolsCapability",
    "Transport",
    "TransportError",
    "TransportFactory",
    "URLCheck",
    "URLConsent",
    "URLElicitationRequiredError",
    "URLPolicy",
    "UnknownContent",
    "UnsafeURLError",
    "UnsubscribeRequestParams",
    "UnsupportedProtocolVersionError",
    "UntitledEnumItems",
    "UntitledMultiSelectEnumSchema",
    "UntitledSingleSelectEnumSchema",
    "UserAgent",
    "WebSocketParameters",
    "check_consent",
    "check_url",
    "compile_schema",
    "for_terminal",
    "list_skills",
    "load_config",
    "load_skill",
    "open_asyncio_session",
    "open_blocking_session",
    "open_mcp_session",
    "open_server_group",
    "parse_config",
    "read_skill_file",
    "run_agent",
    "sampling_handler",
    "to_builtins",
    "url_elicitation_handler",
]


def _fixup_module_metadata() -> None:
    # Public names show as trio_mcp.X (in reprs and tracebacks), not trio_mcp._mod.X.
    # msgspec Structs keep theirs: msgspec resolves their annotations in that module.
    import msgspec

    for name in __all__:
        value = globals().get(name)
        if isinstance(value, type) and issubclass(value, msgspec.Struct):
            continue
        if isinstance(value, type) or inspect.isfunction(value):
            module = getattr(value, "__module__", "")
            if module.startswith("trio_mcp._"):
                try:
                    value.__module__ = "trio_mcp"
                except (AttributeError, TypeError):  # pragma: no cover
                    pass


_fixup_module_metadata()
del _fixup_module_metadata
