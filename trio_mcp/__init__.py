"""trio_mcp: a Trio-native client for the Model Context Protocol, both protocol eras.

Start with :func:`open_mcp_session`::

    async with trio_mcp.open_mcp_session(["python", "-m", "server"]) as session:
        tools = await session.list_tools()

or, to run the session's tasks in a nursery of yours::

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, ["python", "-m", "server"]) as session:
            tools = await session.list_tools()

Every protocol type lives in :mod:`trio_mcp.types`; the few an application names every day
(``Tool``, ``CallToolResult``, ``TextContent``, ...) are re-exported here too.
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
from ._handlers import HandlerError as HandlerError
from ._handlers import Roots as Roots
from ._resilience import Backoff as Backoff
from ._resilience import CircuitBreaker as CircuitBreaker
from ._resilience import CircuitState as CircuitState
from ._resilience import RetryPolicy as RetryPolicy
from ._session import ClientSession as ClientSession
from ._session import ElicitationHandler as ElicitationHandler
from ._session import Notification as Notification
from ._session import RequestContext as RequestContext
from ._session import RootsHandler as RootsHandler
from ._session import SamplingHandler as SamplingHandler
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
from ._urls import URLCheck as URLCheck
from ._urls import URLConsent as URLConsent
from ._urls import URLPolicy as URLPolicy
from ._urls import check_url as check_url
from ._urls import url_elicitation_handler as url_elicitation_handler
from ._validation import CompiledSchema as CompiledSchema
from ._validation import OutputValidation as OutputValidation
from ._validation import SchemaViolation as SchemaViolation
from ._validation import compile_schema as compile_schema
from .types import AudioContent as AudioContent
from .types import CallToolResult as CallToolResult
from .types import ClientCapabilities as ClientCapabilities
from .types import CreateMessageRequestParams as CreateMessageRequestParams
from .types import CreateMessageResult as CreateMessageResult
from .types import ElicitRequestParams as ElicitRequestParams
from .types import ElicitResult as ElicitResult
from .types import EmbeddedResource as EmbeddedResource
from .types import GetPromptResult as GetPromptResult
from .types import ImageContent as ImageContent
from .types import Implementation as Implementation
from .types import LoggingMessageNotificationParams as LoggingMessageNotificationParams
from .types import ProgressNotificationParams as ProgressNotificationParams
from .types import Prompt as Prompt
from .types import PromptMessage as PromptMessage
from .types import ReadResourceResult as ReadResourceResult
from .types import Resource as Resource
from .types import ResourceLink as ResourceLink
from .types import ResourceTemplate as ResourceTemplate
from .types import Root as Root
from .types import ServerCapabilities as ServerCapabilities
from .types import TextContent as TextContent
from .types import Tool as Tool
from .types import to_builtins as to_builtins

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


# Protocol types that moved to trio_mcp.types: the old spelling trio_mcp.X still works, with a
# DeprecationWarning, for one release.
_MOVED_TO_TYPES = frozenset(
    {
        "Annotations",
        "AnyResourceContents",
        "BaseMetadata",
        "BlobResourceContents",
        "BooleanSchema",
        "CacheScope",
        "CacheableResult",
        "CallToolRequestParams",
        "CancelTaskRequestParams",
        "CancelTaskResult",
        "CancelledNotificationParams",
        "CompleteRequestParams",
        "CompleteResult",
        "Completion",
        "CompletionArgument",
        "CompletionContext",
        "CompletionsCapability",
        "ContentBlock",
        "CreateMessageRequest",
        "CreateTaskResult",
        "DiscoverResult",
        "ElicitRequest",
        "ElicitRequestFormParams",
        "ElicitRequestURLParams",
        "ElicitationCapability",
        "ElicitationCompleteNotificationParams",
        "EmptyResult",
        "EnumSchema",
        "GetPromptRequestParams",
        "GetTaskPayloadRequestParams",
        "GetTaskPayloadResult",
        "GetTaskRequestParams",
        "GetTaskResult",
        "Icon",
        "Icons",
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
        "ModelHint",
        "ModelPreferences",
        "MultiSelectEnumSchema",
        "NotificationMetaObject",
        "NotificationParams",
        "NumberSchema",
        "PaginatedRequestParams",
        "PaginatedResult",
        "PrimitiveSchemaDefinition",
        "ProgressToken",
        "PromptArgument",
        "PromptReference",
        "PromptsCapability",
        "ReadResourceRequestParams",
        "RelatedTaskMetadata",
        "RequestMetaObject",
        "RequestParams",
        "ResourceContents",
        "ResourceReference",
        "ResourceRequestParams",
        "ResourceTemplateReference",
        "ResourceUpdatedNotificationParams",
        "ResourcesCapability",
        "Result",
        "ResultMetaObject",
        "Role",
        "RootsCapability",
        "SamplingCapability",
        "SamplingMessage",
        "SamplingMessageContentBlock",
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
        "TextResourceContents",
        "TitledEnumItems",
        "TitledEnumOption",
        "TitledMultiSelectEnumSchema",
        "TitledSingleSelectEnumSchema",
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
    }
)


def __getattr__(name: str) -> Any:
    # The HTTP and WebSocket transports import httpx / trio-websocket: load them on demand,
    # so `import trio_mcp` for stdio use stays light.
    if name in _MOVED_TO_TYPES:
        import warnings

        from . import types

        warnings.warn(
            f"trio_mcp.{name} moved to trio_mcp.types.{name}; the old spelling goes away "
            "in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(types, name)
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
    "AnthropicModel",
    "AsyncioNotifications",
    "AsyncioSession",
    "AsyncioToolTask",
    "AudioContent",
    "AuthDiscoveryError",
    "AuthError",
    "AuthorizationDeniedError",
    "Backoff",
    "BlockingNotifications",
    "BlockingSession",
    "BlockingToolTask",
    "CallToolResult",
    "CassetteError",
    "Catalogue",
    "CircuitBreaker",
    "CircuitOpenError",
    "CircuitState",
    "ClientCapabilities",
    "ClientRegistrationError",
    "ClientSession",
    "CompiledSchema",
    "ConfigError",
    "ConfigInput",
    "ConnectionClosed",
    "ConsentRequest",
    "ConsentStore",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "DPoPError",
    "DPoPNonceError",
    "DeviceCode",
    "DeviceCodeExpiredError",
    "DeviceFlow",
    "ElicitRequestParams",
    "ElicitResult",
    "ElicitationContentError",
    "ElicitationHandler",
    "EmbeddedResource",
    "EraCache",
    "FileConsentStore",
    "FileTokenStore",
    "GetPromptResult",
    "GroupNotification",
    "HTTPStatusError",
    "HandlerError",
    "HeaderMismatchError",
    "IdentityAssertionGrant",
    "ImageContent",
    "Implementation",
    "InputRequestError",
    "InsufficientScopeError",
    "JWTBearerGrant",
    "KeyringTokenStore",
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
    "ModelRequest",
    "NameCollisionError",
    "Notification",
    "OAuth",
    "OpenAIChatModel",
    "OutputValidation",
    "OutputValidationError",
    "ProgressNotificationParams",
    "Prompt",
    "PromptMessage",
    "ProtocolError",
    "ReadResourceResult",
    "Redirect",
    "RequestContext",
    "RequestFailure",
    "Resource",
    "ResourceLink",
    "ResourceNotFoundError",
    "ResourceTemplate",
    "RestartPolicy",
    "RetryPolicy",
    "Root",
    "Roots",
    "RootsHandler",
    "SSEParameters",
    "SamplingHandler",
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
    "Skill",
    "SkillFile",
    "SkillVerificationError",
    "StdioParameters",
    "StoredClient",
    "StoredServer",
    "StoredToken",
    "StreamableHTTPParameters",
    "TaskCancelledError",
    "TaskError",
    "TaskFailedError",
    "TaskLostError",
    "TaskState",
    "TextContent",
    "TokenRequestError",
    "TokenStore",
    "Tool",
    "ToolError",
    "ToolTask",
    "Transport",
    "TransportError",
    "TransportFactory",
    "URLCheck",
    "URLConsent",
    "URLElicitationRequiredError",
    "URLPolicy",
    "UnsafeURLError",
    "UnsupportedProtocolVersionError",
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
