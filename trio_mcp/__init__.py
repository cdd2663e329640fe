"""trio_mcp: a Trio-native client for the Model Context Protocol, both protocol eras.

Start with [`open_mcp_session()`][trio_mcp.open_mcp_session]:

```python
async with trio_mcp.open_mcp_session(["python", "-m", "server"]) as session:
    tools = await session.list_tools()
```

or, to run the session's tasks in a nursery of yours:

```python
async with trio.open_nursery() as nursery:
    async with trio_mcp.open_mcp_session(nursery, ["python", "-m", "server"]) as session:
        tools = await session.list_tools()
```

``trio_mcp`` itself holds the entry points, the sessions, their options, the exceptions a
caller catches every day and the few protocol types an application names every day
(``Tool``, ``CallToolResult``, ``TextContent``, ...). Everything else lives in one public
namespace per feature:

* [`trio_mcp.types`][trio_mcp.types]: every protocol type;
* [`trio_mcp.transports`][trio_mcp.transports]: the transports' parameters, and the contract to
  write one;
* [`trio_mcp.handlers`][trio_mcp.handlers]: sampling, elicitation and roots handlers;
* [`trio_mcp.auth`][trio_mcp.auth]: OAuth, token stores, grants and their errors;
* [`trio_mcp.tasks`][trio_mcp.tasks]: long-running tool calls as tasks;
* [`trio_mcp.validation`][trio_mcp.validation]: tool results checked against ``outputSchema``;
* [`trio_mcp.urls`][trio_mcp.urls]: URL checks for URL-mode elicitation;
* [`trio_mcp.groups`][trio_mcp.groups]: server groups;
* [`trio_mcp.config`][trio_mcp.config]: config files and consent;
* [`trio_mcp.agent`][trio_mcp.agent]: the agentic tool loop and model adapters;
* [`trio_mcp.skills`][trio_mcp.skills]: agent skills;
* [`trio_mcp.testing`][trio_mcp.testing]: the testing kit (imported on its own).

A name that moved from ``trio_mcp`` to a namespace still works under its old spelling for
one release, with a `DeprecationWarning` naming its new place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import agent as agent
from . import auth as auth
from . import config as config
from . import groups as groups
from . import handlers as handlers
from . import skills as skills
from . import tasks as tasks
from . import transports as transports
from . import types as types
from . import urls as urls
from . import validation as validation
from ._blocking import BlockingNotifications as BlockingNotifications
from ._blocking import BlockingToolTask as BlockingToolTask
from ._blocking_api import BlockingSession as BlockingSession
from ._blocking_open import open_blocking_session as open_blocking_session
from ._catalogue import Catalogue as Catalogue
from ._connect import open_mcp_session as open_mcp_session
from ._eras import EraCache as EraCache
from ._exceptions import CircuitOpenError as CircuitOpenError
from ._exceptions import ConnectionClosed as ConnectionClosed
from ._exceptions import HeaderMismatchError as HeaderMismatchError
from ._exceptions import HTTPStatusError as HTTPStatusError
from ._exceptions import InputRequestError as InputRequestError
from ._exceptions import MCPError as MCPError
from ._exceptions import MessageTooLargeError as MessageTooLargeError
from ._exceptions import MissingClientCapabilityError as MissingClientCapabilityError
from ._exceptions import ProtocolError as ProtocolError
from ._exceptions import ResourceNotFoundError as ResourceNotFoundError
from ._exceptions import ServerError as ServerError
from ._exceptions import ToolError as ToolError
from ._exceptions import TransportError as TransportError
from ._exceptions import UnsupportedProtocolVersionError as UnsupportedProtocolVersionError
from ._exceptions import URLElicitationRequiredError as URLElicitationRequiredError
from ._public import publish as _publish
from ._resilience import Backoff as Backoff
from ._resilience import CircuitBreaker as CircuitBreaker
from ._resilience import CircuitState as CircuitState
from ._resilience import RetryPolicy as RetryPolicy
from ._session import ClientSession as ClientSession
from ._session import Notification as Notification
from ._statistics import SessionStatistics as SessionStatistics
from ._terminal import for_terminal as for_terminal
from ._version import __version__ as __version__
from .agent import run_agent as run_agent
from .auth import AuthError as AuthError
from .config import ConfigError as ConfigError
from .config import load_config as load_config
from .groups import ServerGroup as ServerGroup
from .groups import open_server_group as open_server_group
from .handlers import HandlerError as HandlerError
from .handlers import RequestContext as RequestContext
from .handlers import Roots as Roots
from .transports import StdioParameters as StdioParameters
from .types import AudioContent as AudioContent
from .types import CallToolResult as CallToolResult
from .types import CreateMessageRequestParams as CreateMessageRequestParams
from .types import CreateMessageResult as CreateMessageResult
from .types import ElicitRequestParams as ElicitRequestParams
from .types import ElicitResult as ElicitResult
from .types import EmbeddedResource as EmbeddedResource
from .types import ImageContent as ImageContent
from .types import Prompt as Prompt
from .types import Resource as Resource
from .types import ResourceLink as ResourceLink
from .types import Root as Root
from .types import TextContent as TextContent
from .types import Tool as Tool
from .types import to_builtins as to_builtins
from .validation import OutputValidation as OutputValidation
from .validation import OutputValidationError as OutputValidationError

if TYPE_CHECKING:
    from ._asyncio import AsyncioNotifications as AsyncioNotifications
    from ._asyncio import AsyncioToolTask as AsyncioToolTask
    from ._asyncio_api import AsyncioSession as AsyncioSession
    from ._asyncio_open import open_asyncio_session as open_asyncio_session
    from .auth import OAuth as OAuth
    from .transports import SSEParameters as SSEParameters
    from .transports import StreamableHTTPParameters as StreamableHTTPParameters
    from .transports import WebSocketParameters as WebSocketParameters

# Loaded on first use: the asyncio bridge imports asyncio, the HTTP and WebSocket transports
# and OAuth import httpx / trio-websocket, so `import trio_mcp` for stdio use stays light.
_LAZY = {
    "AsyncioNotifications": "._asyncio",
    "AsyncioSession": "._asyncio_api",
    "AsyncioToolTask": "._asyncio",
    "OAuth": ".auth",
    "open_asyncio_session": "._asyncio_open",
    "SSEParameters": ".transports",
    "StreamableHTTPParameters": ".transports",
    "WebSocketParameters": ".transports",
}
_ASYNCIO = frozenset(name for name, module in _LAZY.items() if module.startswith("._asyncio"))

# Names that moved from trio_mcp to a namespace: the old spelling trio_mcp.X still works,
# with a DeprecationWarning naming the new place, for one release.
_MOVED_TO = {
    "agent": (
        "AgentDeadlineError",
        "AgentError",
        "AgentIterationLimitError",
        "AgentResult",
        "AnthropicModel",
        "Model",
        "ModelError",
        "ModelRequest",
        "OpenAIChatModel",
        "sampling_handler",
    ),
    "auth": (
        "AuthDiscoveryError",
        "AuthorizationDeniedError",
        "ClientRegistrationError",
        "DPoPError",
        "DPoPNonceError",
        "DeviceCode",
        "DeviceCodeExpiredError",
        "DeviceFlow",
        "FileTokenStore",
        "IdentityAssertionGrant",
        "InsufficientScopeError",
        "JWTBearerGrant",
        "KeyringTokenStore",
        "LoginRequiredError",
        "LoopbackBrowser",
        "MemoryTokenStore",
        "Redirect",
        "ServerBindingStore",
        "StoredClient",
        "StoredServer",
        "StoredToken",
        "TokenRequestError",
        "TokenStore",
        "UserAgent",
    ),
    "config": (
        "ConfigInput",
        "ConsentRequest",
        "ConsentStore",
        "FileConsentStore",
        "MCPConfig",
        "MemoryConsentStore",
        "ServerConfig",
        "check_consent",
        "parse_config",
    ),
    "groups": (
        "GroupNotification",
        "NameCollisionError",
        "RestartPolicy",
        "ServerState",
        "ServerStatus",
        "ServerUnavailableError",
    ),
    "handlers": (
        "ElicitationContentError",
        "ElicitationHandler",
        "RootsHandler",
        "SamplingHandler",
    ),
    "skills": (
        "Skill",
        "SkillFile",
        "SkillVerificationError",
        "list_skills",
        "load_skill",
        "read_skill_file",
    ),
    "tasks": (
        "TaskCancelledError",
        "TaskError",
        "TaskFailedError",
        "TaskLostError",
        "TaskState",
        "ToolTask",
    ),
    "testing": ("CassetteError",),
    "transports": (
        "MessageInfo",
        "RequestFailure",
        "Transport",
        "TransportFactory",
    ),
    "types": (
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
        "ClientCapabilities",
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
        "GetPromptResult",
        "GetTaskPayloadRequestParams",
        "GetTaskPayloadResult",
        "GetTaskRequestParams",
        "GetTaskResult",
        "Icon",
        "Icons",
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
        "PromptArgument",
        "PromptMessage",
        "PromptReference",
        "PromptsCapability",
        "ReadResourceRequestParams",
        "ReadResourceResult",
        "RelatedTaskMetadata",
        "RequestMetaObject",
        "RequestParams",
        "ResourceContents",
        "ResourceReference",
        "ResourceRequestParams",
        "ResourceTemplate",
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
    ),
    "urls": (
        "URLCheck",
        "URLConsent",
        "URLPolicy",
        "UnsafeURLError",
        "check_url",
        "url_elicitation_handler",
    ),
    "validation": (
        "CompiledSchema",
        "SchemaError",
        "SchemaViolation",
        "compile_schema",
    ),
}
_MOVED = {name: namespace for namespace, names in _MOVED_TO.items() for name in names}


def __getattr__(name: str) -> Any:
    import importlib  # (import cost: only for a moved or lazily loaded name)

    namespace = _MOVED.get(name)
    if namespace is not None:
        import warnings

        warnings.warn(
            f"trio_mcp.{name} moved to trio_mcp.{namespace}.{name}; the old spelling goes away "
            "in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(f".{namespace}", __name__), name)
    if name not in _LAZY:
        raise AttributeError(f"module 'trio_mcp' has no attribute {name!r}")
    # The asyncio bridge's session, tool tasks and notifications load together, so each
    # shows trio_mcp whichever of them was named first.
    together = [other for other in _LAZY if other in _ASYNCIO] if name in _ASYNCIO else [name]
    loaded = {
        other: getattr(importlib.import_module(_LAZY[other], __name__), other) for other in together
    }
    _publish(__name__, loaded, together)
    globals().update(loaded)
    return loaded[name]


def __dir__() -> list[str]:
    # Only the names kept here and the public namespaces: moved names are not advertised.
    return sorted({*__all__, *_NAMESPACES})


_NAMESPACES = (
    "agent",
    "auth",
    "config",
    "groups",
    "handlers",
    "skills",
    "tasks",
    "transports",
    "urls",
    "validation",
    "types",
)

__all__ = [
    "AsyncioNotifications",
    "AsyncioSession",
    "AsyncioToolTask",
    "AudioContent",
    "AuthError",
    "Backoff",
    "BlockingNotifications",
    "BlockingSession",
    "BlockingToolTask",
    "CallToolResult",
    "Catalogue",
    "CircuitBreaker",
    "CircuitOpenError",
    "CircuitState",
    "ClientSession",
    "ConfigError",
    "ConnectionClosed",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "EraCache",
    "HTTPStatusError",
    "HandlerError",
    "HeaderMismatchError",
    "ImageContent",
    "InputRequestError",
    "MCPError",
    "MessageTooLargeError",
    "MissingClientCapabilityError",
    "Notification",
    "OAuth",
    "OutputValidation",
    "OutputValidationError",
    "Prompt",
    "ProtocolError",
    "RequestContext",
    "Resource",
    "ResourceLink",
    "ResourceNotFoundError",
    "RetryPolicy",
    "Root",
    "Roots",
    "SSEParameters",
    "ServerError",
    "ServerGroup",
    "SessionStatistics",
    "StdioParameters",
    "StreamableHTTPParameters",
    "TextContent",
    "Tool",
    "ToolError",
    "TransportError",
    "URLElicitationRequiredError",
    "UnsupportedProtocolVersionError",
    "WebSocketParameters",
    "for_terminal",
    "load_config",
    "open_asyncio_session",
    "open_blocking_session",
    "open_mcp_session",
    "open_server_group",
    "run_agent",
    "to_builtins",
]

_publish(__name__, globals(), __all__)
