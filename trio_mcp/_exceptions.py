"""The exceptions trio_mcp raises.

The tree is small on purpose:

```text
MCPError                          base of everything trio_mcp raises itself
├── ServerError                   the server answered with a JSON-RPC error
│   ├── ResourceNotFoundError     resource not found (-32002 legacy; -32602 on resources/read)
│   ├── UnsupportedProtocolVersionError   -32022, no mutually supported version
│   ├── HeaderMismatchError       -32020, HTTP headers disagree with the body
│   ├── MissingClientCapabilityError      -32021, the request needs a capability we lack
│   └── URLElicitationRequiredError       -32042, visit URL(s) first, then retry (2025-11-25)
├── ProtocolError                 an undecodable or invalid message, failed negotiation
│   └── MessageTooLargeError      a message over the configured size limit
├── TransportError                the connection failed below JSON-RPC
│   ├── ConnectionClosed          the server went away (exit code, stderr tail)
│   └── HTTPStatusError           an HTTP request failed (status code, body)
├── InputRequestError             a multi-round-trip input could not be provided
├── TaskError                     a task-augmented call did not give a result (``task_id``)
│   ├── TaskFailedError           the task ended ``failed`` (``code``, ``message``, ``data``)
│   ├── TaskCancelledError        the task ended ``cancelled`` by someone else
│   └── TaskLostError             the server no longer knows the task (``tasks/get`` error)
├── SkillVerificationError        a skill file does not match its manifest (digest, size...)
├── CircuitOpenError              the circuit breaker is open (``trio_mcp.CircuitBreaker``)
├── ConfigError                   a server config file is invalid (file, key path, problem)
├── CassetteError                 a cassette file is malformed (file, line; a ValueError)
├── ServerUnavailableError        a server of a group is not running (why, stderr tail)
├── NameCollisionError            two servers of a group offer the same name
├── AuthError                     OAuth authorization failed (``auth=trio_mcp.OAuth(...)``)
│   ├── AuthDiscoveryError        metadata missing, malformed, wrong issuer or resource
│   ├── ClientRegistrationError   no client identity (pre-registered, CIMD, DCR)
│   ├── AuthorizationDeniedError  the redirect carried an error, wrong state or iss
│   ├── TokenRequestError         the token endpoint answered an OAuth error
│   ├── InsufficientScopeError    403 insufficient_scope after the step-up limit
│   ├── DeviceCodeExpiredError    the device flow's user code expired unapproved
│   ├── DPoPError                 DPoP (RFC 9449) impossible: no common alg, unbound key
│   │   └── DPoPNonceError        a DPoP-Nonce missing or malformed, or a nonce loop
│   └── LoginRequiredError        headless: no usable stored token, a login is needed
├── ToolError                     raised by ``CallToolResult.raise_for_error()``
├── OutputValidationError         a tool result does not match its ``outputSchema``
├── SchemaError                   a JSON Schema that does not compile
├── ElicitationContentError       elicitation content does not match ``requestedSchema``
├── UnsafeURLError                a URL failed check_url()
├── ModelError                    a model adapter failed (HTTP error, malformed JSON)
└── AgentError                    the agentic tool loop stopped early (has ``transcript``)
    ├── AgentIterationLimitError  the model still asked for tools at the iteration cap
    └── AgentDeadlineError        the loop's timeout passed (also a trio.TooSlowError)
```

The exceptions a caller catches every day are exported from ``trio_mcp``; those of one
feature from its namespace (``trio_mcp.auth.TokenRequestError``,
``trio_mcp.tasks.TaskFailedError``, ``trio_mcp.groups.ServerUnavailableError``, ...).

Besides these a caller sees only trio's own: `trio.TooSlowError` (from ``timeout=``
or the caller's ``trio.fail_after``), `trio.ClosedResourceError` (the session was
closed by its owner, also for calls that were pending at that moment) and
`trio.Cancelled`. An argument the caller got wrong (a value that cannot be encoded
as JSON, an unknown option) raises `TypeError` or `ValueError` at once,
before anything is sent.

No exception from the session's own tasks ever reaches a caller as an ``ExceptionGroup``,
and every caller gets an exception object of its own (chained to the shared cause), so
tracebacks never mix across tasks.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NoReturn, TypeVar, cast

import msgspec
import trio

from ._redact import display_url

_E = TypeVar("_E", bound=BaseException)

__all__ = [
    "AgentDeadlineError",
    "AgentError",
    "AgentIterationLimitError",
    "AuthDiscoveryError",
    "AuthError",
    "AuthorizationDeniedError",
    "CassetteError",
    "CircuitOpenError",
    "ClientRegistrationError",
    "ConnectionClosed",
    "DPoPError",
    "DPoPNonceError",
    "DeviceCodeExpiredError",
    "ElicitationContentError",
    "HTTPStatusError",
    "HeaderMismatchError",
    "InputRequestError",
    "InsufficientScopeError",
    "LoginRequiredError",
    "MCPError",
    "MessageTooLargeError",
    "MissingClientCapabilityError",
    "ModelError",
    "OutputValidationError",
    "ProtocolError",
    "ResourceNotFoundError",
    "SchemaError",
    "ServerError",
    "SkillVerificationError",
    "TaskCancelledError",
    "TaskError",
    "TaskFailedError",
    "TaskLostError",
    "TokenRequestError",
    "ToolError",
    "TransportError",
    "URLElicitationRequiredError",
    "UnsafeURLError",
    "UnsupportedProtocolVersionError",
]


class MCPError(Exception):
    """Base class of every exception trio_mcp raises itself."""


class ServerError(MCPError):
    """The server answered a request with a JSON-RPC error.

    Attributes:
        code: The JSON-RPC error code.
        message: The server's error message.
        data: The optional ``data`` member of the error, decoded JSON (or ``None``).
        method: The method of the request that failed, when known.
    """

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None):
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f" to {method}" if method else ""
        super().__init__(f"server error {code}{where}: {message}")


class ResourceNotFoundError(ServerError):
    """The resource asked for does not exist (``-32002`` legacy, ``-32602`` modern)."""


class UnsupportedProtocolVersionError(ServerError):
    """The server supports none of the protocol versions this client offered (``-32022``).

    Attributes:
        supported: The versions the server said it supports.
        requested: The version the client requested.
    """

    @property
    def supported(self) -> list[str]:
        """The versions the server listed in the error data."""
        data: object = self.data
        if isinstance(data, dict):
            versions: object = cast("dict[str, object]", data).get("supported")
            if isinstance(versions, list):
                return [str(v) for v in cast("list[object]", versions)]
        return []

    @property
    def requested(self) -> str | None:
        """The version the client requested, as echoed by the server."""
        data: object = self.data
        if isinstance(data, dict):
            requested = cast("dict[str, object]", data).get("requested")
            return str(requested) if requested is not None else None
        return None


class HeaderMismatchError(ServerError):
    """The server found HTTP headers that disagree with the JSON-RPC body (``-32020``)."""


class MissingClientCapabilityError(ServerError):
    """The request needs a client capability this session did not declare (``-32021``)."""


class ProtocolError(MCPError):
    """A message could not be decoded or broke the protocol, or negotiation failed."""


class MessageTooLargeError(ProtocolError):
    """A message was larger than the configured maximum message size.

    Attributes:
        size: How many bytes had been seen when the limit was hit.
        limit: The configured limit in bytes.
    """

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(
            f"message too large: {size} bytes exceeds the limit of {limit} bytes "
            "(raise max_message_size to accept larger messages)"
        )


class TransportError(MCPError):
    """The connection to the server failed below the JSON-RPC layer."""


class ConnectionClosed(TransportError):
    """The server went away: its stream ended, it crashed, or the connection broke.

    Attributes:
        exit_code: The exit code of a stdio server process, when known.
        stderr_tail: The last lines the stdio server wrote to stderr (may be empty).
    """

    def __init__(
        self,
        message: str = "the MCP server closed the connection",
        *,
        exit_code: int | None = None,
        stderr_tail: str = "",
    ):
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        text = message
        if exit_code is not None:
            text += f" (exit code {exit_code})"
        if stderr_tail:
            text += f"; last stderr output:\n{stderr_tail}"
        super().__init__(text)


class HTTPStatusError(TransportError):
    """An HTTP request to the server failed with a non-success status.

    Attributes:
        status_code: The HTTP status code.
        body: The response body as text (truncated to 64 KiB).
        url: The URL that was requested.
        retry_after: Seconds from a ``Retry-After`` header, if the server sent one.
    """

    def __init__(
        self, status_code: int, body: str, url: str = "", retry_after: float | None = None
    ):
        self.status_code = status_code
        self.body = body
        self.url = url
        self.retry_after = retry_after
        shown = body if len(body) <= 500 else body[:500] + "..."
        where = display_url(url) if url else "server"
        super().__init__(f"HTTP {status_code} from {where}: {shown}")


class InputRequestError(MCPError):
    """A multi-round-trip request needed input this client could not provide.

    Raised when an input request has no handler, its handler failed or declined, or the
    server kept asking for input past the configured round limit.
    """


class TaskError(MCPError):
    """A task-augmented call (a long-running tool, see ``docs/tasks.md``) gave no result.

    Attributes:
        task_id: The server's id of the task.
    """

    def __init__(self, message: str, *, task_id: str) -> None:
        self.task_id = task_id
        super().__init__(message)


class TaskFailedError(TaskError):
    """The task ended with status ``failed``; its JSON-RPC error is kept.

    Attributes:
        code: The error's JSON-RPC code (``-32603`` when the server sent none).
        error_message: The server's error message (or its status message).
        data: The error's ``data`` member, or ``None``.
    """

    def __init__(self, task_id: str, code: int, error_message: str, data: Any = None) -> None:
        self.code = code
        self.error_message = error_message
        self.data = data
        super().__init__(f"task {task_id} failed: {error_message} (code {code})", task_id=task_id)


class TaskCancelledError(TaskError):
    """The task ended with status ``cancelled``, though this client did not cancel it."""


class TaskLostError(TaskError):
    """The server no longer knows the task: ``tasks/get`` (or ``tasks/result``) failed.

    The server's [`ServerError`][trio_mcp.ServerError] is the ``__cause__``. The task may have
    expired (its ``ttl`` passed) or the server restarted without keeping its tasks.
    """


class SkillVerificationError(MCPError):
    """A skill's file does not match its manifest entry (SEP-2640): do not use the skill.

    Raised for a wrong ``sha256`` digest, a wrong size, a missing digest, a file outside
    the manifest, or frontmatter that differs from the ``skills/list`` entry.

    Attributes:
        uri: The URI of the file (or skill) that failed.
    """

    def __init__(self, message: str, *, uri: str) -> None:
        self.uri = uri
        super().__init__(message)


class CircuitState(enum.Enum):
    """The states of a [`CircuitBreaker`][trio_mcp.CircuitBreaker].

    Defined beside [`CircuitOpenError`][trio_mcp.CircuitOpenError], which carries one, so that this
    module depends on nothing of the package (``_resilience`` imports it from here).
    """

    CLOSED = "closed"
    """Calls go through; consecutive failures are counted."""
    OPEN = "open"
    """Calls are refused with [`CircuitOpenError`][trio_mcp.CircuitOpenError] until the recovery
    time has passed."""
    HALF_OPEN = "half_open"
    """A limited number of trial calls go through to probe whether the service recovered."""


class CircuitOpenError(MCPError):
    """A [`CircuitBreaker`][trio_mcp.CircuitBreaker] refused a call without making it.

    Attributes:
        retry_at: The earliest trio time (`trio.current_time()`) at which the breaker
            may admit a call again. For a half-open breaker whose trial calls are all in
            flight it is the current time: retry once they finish.
        state: The breaker's state when it refused the call.
    """

    def __init__(self, message: str, *, retry_at: float, state: CircuitState):
        self.retry_at = retry_at
        self.state = state
        super().__init__(message)


class AuthError(MCPError):
    """OAuth authorization of an HTTP session failed (see ``docs/authorization.md``).

    No token is ever sent to a server whose authorization server did not issue it: each
    subclass names what was wrong and what to do.
    """


class AuthDiscoveryError(AuthError):
    """Protected-resource or authorization-server metadata is missing, malformed or wrong.

    Wrong means: an ``issuer`` that differs from the one the metadata URL was built from, or
    a protected resource whose ``resource`` does not cover the server's URL.
    """


class ClientRegistrationError(AuthError):
    """No client identity: not pre-registered, no Client ID Metadata Document, no DCR."""


class AuthorizationDeniedError(AuthError):
    """The authorization response was refused or is not to be trusted.

    The redirect carried an ``error``, a ``state`` or ``iss`` that does not match, or no
    code. ``error`` is the OAuth error code when the server sent one.
    """

    def __init__(self, message: str, *, error: str | None = None):
        self.error = error
        super().__init__(message)


class TokenRequestError(AuthError):
    """The token (or registration) endpoint answered with an OAuth error.

    Attributes:
        error: The OAuth ``error`` code (``invalid_grant``, ``invalid_client``, ...).
        description: The ``error_description``, if any.
        status_code: The HTTP status of the answer.
    """

    def __init__(
        self, message: str, *, error: str, description: str | None = None, status_code: int = 400
    ):
        self.error = error
        self.description = description
        self.status_code = status_code
        super().__init__(message)


class InsufficientScopeError(AuthError):
    """The server kept answering 403 ``insufficient_scope`` after the step-up limit.

    Attributes:
        scope: The scope the server asked for last, if it said.
    """

    def __init__(self, message: str, *, scope: str | None = None):
        self.scope = scope
        super().__init__(message)


class DPoPError(AuthError):
    """DPoP (RFC 9449) proof of possession cannot be done with this server.

    The server demands DPoP but advertises no signing algorithm trio_mcp can use (ES256,
    ES384, ES512, EdDSA, PS256..., RS256...), the key given as ``OAuth(dpop=...)`` is not
    one of them, or the authorization server issued a DPoP token for a request that
    carried no proof. A DPoP-bound token is never sent as a bearer token instead.
    """


class DPoPNonceError(DPoPError):
    """A server's DPoP nonce challenge (``use_dpop_nonce``) cannot be met.

    Its ``DPoP-Nonce`` header is missing or malformed, or it asked for a nonce again after
    the one retry that carried its nonce (a nonce loop; retries are bounded).
    """


class DeviceCodeExpiredError(AuthError):
    """The device authorization grant (RFC 8628) ran out of time.

    The user did not approve the ``user_code`` before it expired (the server's
    ``expires_in``, or its ``expired_token`` error). Start the authorization again: a new
    request gets a new code. A user who refused raises
    [`AuthorizationDeniedError`][trio_mcp.auth.AuthorizationDeniedError] (``error="access_denied"``)
    instead.
    """


class LoginRequiredError(AuthError):
    """Headless mode: no usable stored token, and an interactive login would be needed.

    Log in once where a browser is available (``trio-mcp auth login TARGET``, or the same
    ``OAuth`` with ``interactive=True``) so the token store holds a token, then retry.
    """


class ConfigError(MCPError):
    """A server configuration file (``mcpServers``, ``.vscode/mcp.json``) is invalid.

    The message names the file, the key path inside it and what is wrong, e.g.
    ``.vscode/mcp.json: servers.github.args[1]: expected a string, got an integer``.
    It never contains the value of an environment variable, header or input.

    Attributes:
        path: The file (or the name given for text that came from elsewhere).
        key_path: Where in the document, like ``mcpServers.github.env.TOKEN`` (empty for a
            problem with the whole document).
        problem: What is wrong, in words.
        line: The 1-based line of a syntax error, when known.
        column: The 1-based column of a syntax error, when known.
    """

    def __init__(
        self,
        path: str,
        key_path: str,
        problem: str,
        *,
        line: int | None = None,
        column: int | None = None,
    ):
        self.path = path
        self.key_path = key_path
        self.problem = problem
        self.line = line
        self.column = column
        where = path
        if line is not None:
            where += f":{line}" + (f":{column}" if column is not None else "")
        if key_path:
            where += f": {key_path}"
        super().__init__(f"{where}: {problem}")


class CassetteError(MCPError, ValueError):
    """A cassette file (``trio_mcp.testing.ReplayServer``) is malformed: truncated, edited.

    Raised when the cassette is loaded, before anything is replayed, for every way a line
    can be wrong: not JSON, not an object, a missing or mistyped field, an unknown
    direction, no header. It is also a `ValueError`.

    Attributes:
        path: The cassette file.
        line: The 1-based line of the file that is wrong (``None`` for the whole file).
        problem: What is wrong, in words.
    """

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        where = path if line is None else f"{path}, line {line}"
        super().__init__(f"{where}: {problem}")


class ServerUnavailableError(MCPError):
    """A server of a [`ServerGroup`][trio_mcp.groups.ServerGroup] is not running, so a call cannot
    reach it.

    Attributes:
        server: The server's name in the group.
        cause: Why it is not running (the failure that stopped it), if known.
        stderr_tail: The last lines a stdio server wrote to stderr (may be empty).
        retry_at: The trio time of the next restart attempt, or None if none is planned.
    """

    def __init__(
        self,
        server: str,
        message: str,
        *,
        cause: BaseException | None = None,
        stderr_tail: str = "",
        retry_at: float | None = None,
    ):
        self.server = server
        self.cause = cause
        self.stderr_tail = stderr_tail
        self.retry_at = retry_at
        super().__init__(f"server {server!r}: {message}")


class NameCollisionError(MCPError):
    """Two servers of a group offer a tool, prompt or resource under the same name.

    Raised under ``collisions="error"``, when a hook left names clashing, and when a
    resource URI served by several servers is read without naming the server.

    Attributes:
        kind: ``"tool"``, ``"prompt"``, ``"resource"`` or ``"resource template"``.
        name: The clashing name (or URI).
        servers: The servers that offer it.
    """

    def __init__(self, kind: str, name: str, servers: list[str]):
        self.kind = kind
        self.name = name
        self.servers = servers
        super().__init__(
            f"{kind} {name!r} is offered by several servers ({', '.join(servers)}); use "
            "collisions='prefix' or a rename hook, or name the server"
        )


class ToolError(MCPError):
    """A tool call returned ``isError: true``; raised by ``CallToolResult.raise_for_error()``.

    Attributes:
        result: The [`CallToolResult`][trio_mcp.types.CallToolResult] that carried the error.
    """

    def __init__(self, message: str, result: Any = None):
        self.result = result
        super().__init__(message)


class URLElicitationRequiredError(ServerError):
    """The request needs URL-mode elicitations completed first (``-32042``, 2025-11-25).

    Show each of `elicitations` to the user (check it with
    [`check_url()`][trio_mcp.urls.check_url] first), wait for ``notifications/elicitation/complete``
    ([`wait_elicitation_complete()`][trio_mcp.ClientSession.wait_elicitation_complete]), then retry
    the request.

    Args:
        code: The JSON-RPC error code (``-32042``).
        message: The error message.
        data: The ``data`` member of the error; defaults to ``{"elicitations": [...]}``
            built from ``elicitations`` (what a test server sends on the wire).
        method: The method of the request that failed, when known.
        elicitations: The required elicitations, as
            [`ElicitRequestURLParams`][trio_mcp.types.ElicitRequestURLParams].

    Attributes:
        elicitations: The required elicitations, as
            [`ElicitRequestURLParams`][trio_mcp.types.ElicitRequestURLParams]: for an error the
            server sent, parsed from ``data["elicitations"]`` when the error was decoded (entries
            that are not valid URL-mode elicitations are left out); otherwise those given to the
            constructor.
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        method: str | None = None,
        elicitations: Sequence[Any] = (),
    ):
        self.elicitations: list[Any] = list(elicitations)
        if data is None and self.elicitations:
            data = {"elicitations": msgspec.to_builtins(self.elicitations)}
        super().__init__(code, message, data, method=method)


class OutputValidationError(MCPError):
    """A tool result's ``structuredContent`` does not match the tool's ``outputSchema``.

    Raised only in strict mode (``open_mcp_session(output_validation="strict")``) or when
    ``call_tool(..., result_type=T)`` cannot decode the result; by default the outcome is
    reported on [`CallToolResult.validation`][trio_mcp.types.CallToolResult.validation] instead, and
    the result kept.

    Attributes:
        result: The [`CallToolResult`][trio_mcp.types.CallToolResult], intact.
        validation: The [`OutputValidation`][trio_mcp.validation.OutputValidation] outcome.
    """

    def __init__(self, message: str, result: Any, validation: Any) -> None:
        self.result = result
        self.validation = validation
        super().__init__(message)


class SchemaError(MCPError):
    """A JSON Schema (a tool's ``outputSchema``, ...) does not compile.

    Attributes:
        schema: The schema as given.
    """

    def __init__(self, message: str, schema: Any = None) -> None:
        self.schema = schema
        super().__init__(message)


class ElicitationContentError(MCPError):
    """The content an elicitation handler returned does not match ``requestedSchema``.

    The server gets a JSON-RPC error instead of the invalid content.

    Attributes:
        problems: One line per problem (``"age: must be an integer"``).
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            "the elicitation handler returned content that does not match the requested "
            "schema: " + "; ".join(problems)
        )


class UnsafeURLError(MCPError):
    """A URL failed [`check_url()`][trio_mcp.urls.check_url] (raised by
    ``URLCheck.raise_for_error()``).

    Attributes:
        check: The [`URLCheck`][trio_mcp.urls.URLCheck] with the reason in ``error``.
    """

    def __init__(self, message: str, check: Any) -> None:
        self.check = check
        super().__init__(message)


class ModelError(MCPError):
    """A model adapter failed: the API was unreachable, answered an HTTP error, or sent
    something that is not the documented wire format.

    Attributes:
        status_code: The HTTP status, for an error status.
        body: The response body (truncated to 64 KiB), when there was one.
    """

    def __init__(self, message: str, *, status_code: int | None = None, body: str = "") -> None:
        self.status_code = status_code
        self.body = body
        super().__init__(message)


class AgentError(MCPError):
    """The agentic tool loop ([`run_agent()`][trio_mcp.agent.run_agent]) stopped before the model
    finished.

    Attributes:
        transcript: The conversation so far (a list of
            [`SamplingMessage`][trio_mcp.types.SamplingMessage]).
    """

    def __init__(self, message: str, transcript: list[Any]) -> None:
        self.transcript = transcript
        super().__init__(message)


class AgentIterationLimitError(AgentError):
    """The model still asked for tools when the iteration cap was reached."""


class AgentDeadlineError(AgentError, trio.TooSlowError):
    """The agentic tool loop's ``timeout`` passed; tool calls in flight were cancelled."""


def fresh_copy(error: _E) -> _E:
    """A new exception object equal to ``error``, for raising in one more caller.

    Raising one object in many tasks mixes their tracebacks and grows the object's
    traceback without bound; each caller gets its own copy, chained to the same cause.
    """
    cls = type(error)
    copy = cls.__new__(cls)
    copy.__dict__.update(error.__dict__)
    copy.args = error.args
    copy.__cause__ = error.__cause__
    copy.__suppress_context__ = True
    return copy


def raise_bare(error: BaseException) -> NoReturn:
    """Re-raise ``error`` out of the exception group being handled, its own chain untouched.

    A plain ``raise error`` inside ``except`` would replace its ``__context__`` with the
    group, and ``raise ... from None`` would hide the context (and with it the traceback
    of what led to it); this is the pattern of Trio's own ``raise_saving_context``
    (trio/_util.py, private there): raise, then put back the ``__context__`` the exception
    had. ``__cause__`` and ``__suppress_context__`` are never touched.
    """
    context = error.__context__
    try:
        raise error
    finally:
        error.__context__ = context
        del error, context
