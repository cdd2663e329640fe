"""What a [`MockServer`][trio_mcp.testing.MockServer] serves and records, and how it is scripted.

One job: the server as its connections see it: the scripting and inspection attributes,
registration (tools, resources, templates, prompts, methods, completion) and what a test
makes it do to its clients (notifications, crashes, requests). Connecting it (in memory,
over HTTP, over stdio) is ``_server``'s job; the protocol engine (``_connection``) and
[`ToolContext`][trio_mcp.testing.ToolContext] depend on this module only, so the kit's imports
point one way.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar, overload

from ..types._apps import APP_MIME_TYPE
from ._faults import Faults
from ._registry import (
    JSONDict,
    PromptEntry,
    ResourceEntry,
    ServerState,
    TemplateEntry,
    ToolEntry,
    accepted_parameters,
    check_handler,
    compile_uri_template,
    infer_input_schema,
    resource_contents,
)
from ._tasks import MockTask
from ._wire import RequestId

__all__ = ["LEGACY_VERSIONS", "MODERN_VERSIONS", "DiscoverResponse", "Eras", "MockServerBase"]

Eras = Literal["both", "legacy", "modern"]
DiscoverResponse = Literal[
    "result",
    "method_not_found",
    "invalid_params",
    "invalid_request",
    "silent",
    "unsupported_version",
]

F = TypeVar("F", bound=Callable[..., Any])

LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""The legacy (``initialize`` handshake) versions accepted, newest first."""
MODERN_VERSIONS = ("2026-07-28",)
"""The modern (per-request ``_meta``) versions accepted by default."""


class MockServerBase:
    """Everything of a [`MockServer`][trio_mcp.testing.MockServer] but connecting it.

    A handler's ``ctx.server`` and ``MockHTTPServer.server`` are typed as this class; at
    run time they are the ``MockServer`` itself. See ``MockServer`` for the attributes.
    """

    def __init__(
        self,
        name: str = "mock",
        version: str = "1.0",
        *,
        eras: Eras = "both",
        instructions: str | None = None,
    ) -> None:
        """Create a server with nothing registered.

        Args:
            name: The ``serverInfo`` name.
            version: The ``serverInfo`` version.
            eras: ``"both"`` (dual-era), ``"legacy"`` or ``"modern"``.
            instructions: Optional instructions for the client's LLM.

        Raises:
            ValueError: ``eras`` is not one of the three values.
        """
        if eras not in ("both", "legacy", "modern"):
            raise ValueError(f"eras must be 'both', 'legacy' or 'modern', not {eras!r}")
        self.name = name
        self.version = version
        self.eras: Eras = eras
        self.instructions = instructions
        self.page_size: int | None = None
        self.cache_hints: dict[str, tuple[int, str]] = {}
        self.respond_to_discover: DiscoverResponse = (
            "method_not_found" if eras == "legacy" else "result"
        )
        self.supported_versions: list[str] = list(MODERN_VERSIONS)
        self.legacy_versions: list[str] = list(LEGACY_VERSIONS)
        self.capabilities: dict[str, Any] | None = None
        self.received: list[dict[str, Any]] = []
        self.cancelled: list[RequestId] = []
        self.subscriptions_ended: list[RequestId] = []
        self.faults: Faults = Faults()
        self.request_states_seen: list[str] = []
        self.client_info: dict[str, Any] | None = None
        self.client_capabilities: dict[str, Any] | None = None
        self.protocol_version: str | None = None
        self.crash_count: int = 0
        self.tasks: dict[str, MockTask] = {}
        self.task_poll_interval_ms: int | None = 1000
        self.task_ttl_ms: int | None = 60_000
        self.task_field_spelling: Literal["ttlMs", "ttlSeconds"] = "ttlMs"
        self.task_serial: int = 0
        self.listen_filters: set[str] = set()
        """Extension filter fields of ``subscriptions/listen`` this server honours (and
        acknowledges); send what they select with
        [`notify_listeners()`][trio_mcp.testing.MockServer.notify_listeners]."""
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {}
        self._state = ServerState()

    # -- registration ----------------------------------------------------------------------

    @overload
    def tool(self, function: F, /) -> F: ...

    @overload
    def tool(
        self,
        function: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        x_mcp_header: Mapping[str, str] | None = None,
        task: Literal["optional", "required"] | None = None,
        ui: str | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        function: F | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        x_mcp_header: Mapping[str, str] | None = None,
        task: Literal["optional", "required"] | None = None,
        ui: str | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> F | Callable[[F], F]:
        """Register a tool; use as ``@server.tool`` or ``@server.tool(description=...)``.

        The function is called as ``function(ctx, **arguments)`` (sync or async). It may
        return a ``str`` (one text content block), a list of content blocks, a dict with
        ``content`` (the whole ``CallToolResult``), another dict (sent as
        ``structuredContent`` plus its JSON as text) or ``None``. Raising
        [`trio_mcp.ToolError`][trio_mcp.ToolError] gives an ``isError`` result (its ``result`` dict,
        if it has ``content``, is sent as is); raising [`ServerCrash`][trio_mcp.testing.ServerCrash]
        kills the connection; raising [`trio_mcp.ServerError`][trio_mcp.ServerError] ``(code,
        message, data)`` sends that JSON-RPC error as it is (``-32042`` with URL elicitations, say);
        any other exception becomes a JSON-RPC ``-32603`` error.

        Args:
            function: The tool function, when used without parentheses.
            name: The tool name (default: the function's name).
            description: The description (default: the docstring's first line).
            input_schema: The ``inputSchema``; inferred from the signature if ``None``.
            annotations: The tool's ``annotations`` object.
            x_mcp_header: Maps argument names to HTTP header names: sets the
                ``x-mcp-header`` annotation on those properties of the input schema.
            task: ``"optional"`` or ``"required"``: the tool runs as a server task when the
                client asks (2025-11-25 ``task`` param, ``execution.taskSupport`` listed)
                or advertises the Tasks extension (2026-07-28, SEP-2663); see ``tasks``.
            ui: The tool's MCP Apps ``_meta.ui``: the ``ui://`` URI of its app (see
                [`add_app`][trio_mcp.testing.MockServer.add_app]), or the whole object
                (``{"resourceUri": ..., "visibility": ["app"]}``), sent as is.
            **fields: Further tool fields, sent verbatim (``title=``, ``outputSchema=``,
                ``icons=``, ``_meta=``...).

        Returns:
            The function, unchanged (or a decorator that registers it).

        Raises:
            ValueError: ``x_mcp_header`` names an argument the schema lacks.
            TypeError: The function cannot be called as ``function(ctx, **arguments)`` with
                the schema's required arguments (the message shows the signature it needs).
        """

        def register(function: F) -> F:
            tool_name = name or function.__name__
            if input_schema is None:
                schema, accepted, required = infer_input_schema(function)
            else:
                schema = copy.deepcopy(dict(input_schema))
                accepted = accepted_parameters(function)
                raw_required: Any = schema.get("required", ())
                required = tuple(str(item) for item in raw_required)
            if x_mcp_header:
                properties: Any = schema.get("properties")
                for argument, header in x_mcp_header.items():
                    if not isinstance(properties, dict) or argument not in properties:
                        raise ValueError(f"x_mcp_header names unknown argument {argument!r}")
                    properties[argument]["x-mcp-header"] = header
            check_handler(
                f"tool {tool_name!r}", function, "function(ctx, **arguments)", ["ctx"], required
            )
            definition: JSONDict = {"name": tool_name}
            text = description if description is not None else _first_line(function)
            if text:
                definition["description"] = text
            definition["inputSchema"] = schema
            if annotations is not None:
                definition["annotations"] = dict(annotations)
            if task is not None:
                definition["execution"] = {"taskSupport": task}
            definition.update(fields)
            if ui is not None:
                meta = dict(definition.get("_meta") or {})
                meta["ui"] = {"resourceUri": ui} if isinstance(ui, str) else dict(ui)
                definition["_meta"] = meta
            self._state.tools[tool_name] = ToolEntry(
                name=tool_name,
                function=function,
                definition=definition,
                accepted=accepted,
                required=required,
                task=task,
            )
            return function

        if function is not None:
            return register(function)
        return register

    def add_method(self, method: str, handler: Callable[[dict[str, Any]], Any]) -> None:
        """Serve a further request method (an extension's, e.g. ``skills/list``), both eras.

        The handler (sync or async) gets the params dict and returns the result dict; a
        modern result gets ``resultType: "complete"`` unless it names its own (to test
        [`ClientSession.claim_result_type()`][trio_mcp.ClientSession.claim_result_type]).

        Args:
            method: The request method.
            handler: Called with the params; returns the result.
        """
        self.methods[method] = handler

    def remove_tool(self, name: str) -> None:
        """Unregister a tool (then call
        [`notify_tools_changed()`][trio_mcp.testing.MockServer.notify_tools_changed] to tell
        clients).

        Args:
            name: The tool's name.

        Raises:
            KeyError: No tool has that name.
        """
        del self._state.tools[name]

    def add_resource(
        self,
        uri: str,
        *,
        text: str | None = None,
        blob: bytes | str | None = None,
        mime_type: str | None = None,
        name: str | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        """Register (or replace) a static resource.

        Args:
            uri: The resource URI.
            text: Its text contents (the default is empty text).
            blob: Its binary contents: bytes, or a base64 string sent as is.
            mime_type: The ``mimeType`` of the resource and its contents.
            name: The resource name (default: the URI's last path segment).
            description: An optional description.
            **fields: Further ``Resource`` fields, sent verbatim (``title=``, ``size=``...);
                a ``_meta`` (e.g. MCP Apps' ``{"ui": {"csp": ...}}``) goes on the contents
                read too.
        """
        definition: JSONDict = {"uri": uri, "name": name or uri.rstrip("/").rsplit("/", 1)[-1]}
        if mime_type is not None:
            definition["mimeType"] = mime_type
        if description is not None:
            definition["description"] = description
        definition.update(fields)
        contents = resource_contents(uri, text=text, blob=blob, mime_type=mime_type)
        if "_meta" in fields:
            contents["_meta"] = fields["_meta"]
        self._state.resources[uri] = ResourceEntry(
            uri=uri, definition=definition, contents=contents
        )

    def add_app(
        self,
        uri: str,
        html: str,
        *,
        csp: Mapping[str, Any] | None = None,
        permissions: Mapping[str, Any] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        **fields: Any,
    ) -> None:
        """Register an MCP App: a ``ui://`` resource holding HTML, with its ``_meta.ui``.

        The resource is listed and read with the ``text/html;profile=mcp-app`` MIME type,
        its listing and its contents both carrying ``_meta.ui``. Link a tool to it with
        ``@server.tool(ui=uri)``.

        Args:
            uri: The app's URI (``ui://server/view``).
            html: The HTML document.
            csp: The ``csp`` object (``{"connectDomains": [...], "resourceDomains": [...]}``).
            permissions: The ``permissions`` object (``{"camera": {}}``...).
            domain: A dedicated origin for the app.
            prefers_border: Whether the app prefers a visible border.
            **fields: Further ``Resource`` fields, sent verbatim.
        """
        ui: JSONDict = {}
        if csp is not None:
            ui["csp"] = dict(csp)
        if permissions is not None:
            ui["permissions"] = dict(permissions)
        if domain is not None:
            ui["domain"] = domain
        if prefers_border is not None:
            ui["prefersBorder"] = prefers_border
        self.add_resource(uri, text=html, mime_type=APP_MIME_TYPE, _meta={"ui": ui}, **fields)
        self._state.resources[uri].contents["_meta"] = {"ui": ui}

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource.

        Args:
            uri: The resource's URI.

        Raises:
            KeyError: No resource has that URI.
        """
        del self._state.resources[uri]

    def add_resource_template(
        self,
        uri_template: str,
        name: str,
        handler: Callable[..., Any] | None = None,
        *,
        mime_type: str | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        """Register a resource template, optionally readable.

        Args:
            uri_template: A URI template with ``{variable}`` parts, e.g. ``file:///{path}``.
            name: The template name.
            handler: Called as ``handler(ctx, uri, **variables)`` (sync or async) when a
                client reads a URI matching the template. It may return ``str`` (text),
                ``bytes`` (blob), one contents dict, a list of them, or a dict with
                ``contents``. Without a handler the template is only listed.
            mime_type: The ``mimeType`` of the template and of text/blob contents.
            description: An optional description.
            **fields: Further ``ResourceTemplate`` fields, sent verbatim.

        Raises:
            TypeError: The handler cannot be called as ``handler(ctx, uri, **variables)``.
        """
        pattern = compile_uri_template(uri_template)
        if handler is not None:
            check_handler(
                f"resource template {uri_template!r}",
                handler,
                "handler(ctx, uri, **variables)",
                ["ctx", "uri"],
                pattern.groupindex,
            )
        definition: JSONDict = {"uriTemplate": uri_template, "name": name}
        if mime_type is not None:
            definition["mimeType"] = mime_type
        if description is not None:
            definition["description"] = description
        definition.update(fields)
        self._state.templates[uri_template] = TemplateEntry(
            uri_template=uri_template,
            definition=definition,
            handler=handler,
            pattern=pattern,
        )

    def add_prompt(
        self,
        name: str,
        handler_or_messages: Callable[..., Any] | Sequence[Any] | str,
        arguments: Sequence[str | Mapping[str, Any]] = (),
        *,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        """Register (or replace) a prompt.

        Args:
            name: The prompt name.
            handler_or_messages: Static messages (a list of ``PromptMessage`` dicts or
                strings, or one string: user text), or a handler called as
                ``handler(ctx, **arguments)`` (sync or async) returning the same, or a whole
                ``GetPromptResult`` dict.
            arguments: The prompt's arguments: ``PromptArgument`` dicts, or names (a bare
                name declares a required argument).
            description: An optional description.
            **fields: Further ``Prompt`` fields, sent verbatim.

        Raises:
            TypeError: The handler cannot be called as ``handler(ctx, **arguments)`` with the
                declared arguments (the message shows the signature it needs).
        """
        declared: list[JSONDict] = []
        for argument in arguments:
            if isinstance(argument, str):
                declared.append({"name": argument, "required": True})
            else:
                declared.append(dict(argument))
        definition: JSONDict = {"name": name}
        if description is not None:
            definition["description"] = description
        if declared:
            definition["arguments"] = declared
        definition.update(fields)
        required = tuple(str(a["name"]) for a in declared if a.get("required") is True)
        if callable(handler_or_messages):
            handler: Callable[..., Any] | None = handler_or_messages
            check_handler(
                f"prompt {name!r}",
                handler_or_messages,
                "handler(ctx, **arguments)",
                ["ctx"],
                [str(a["name"]) for a in declared],
            )
            messages: Any = None
        else:
            handler = None
            messages = (
                handler_or_messages
                if isinstance(handler_or_messages, str)
                else list(handler_or_messages)
            )
        self._state.prompts[name] = PromptEntry(
            name=name, definition=definition, messages=messages, handler=handler, required=required
        )

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt.

        Args:
            name: The prompt's name.

        Raises:
            KeyError: No prompt has that name.
        """
        del self._state.prompts[name]

    def set_completion(self, handler: Callable[..., Any] | None) -> None:
        """Serve ``completion/complete`` with ``handler(ref, argument, context)``.

        Args:
            handler: Called (sync or async) with the request's ``ref`` and ``argument``
                dicts and its ``context`` dict (or ``None``); returns a list of values or a
                ``completion`` dict. ``None`` removes completion support.

        Raises:
            TypeError: The handler cannot be called as ``handler(ref, argument, context)``.
        """
        if handler is not None:
            positional = ["ref", "argument", "context"]
            check_handler("completion", handler, "handler(ref, argument, context)", positional)
        self._state.completion = handler

    # -- scripting -------------------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        """Send ``notifications/tools/list_changed`` to every client that can receive it.

        Legacy connections get it once initialized; modern ones on every
        ``subscriptions/listen`` stream that asked for ``toolsListChanged``.
        """
        for connection in list(self._state.connections):
            await connection.notify_list_changed("tools")

    async def notify_prompts_changed(self) -> None:
        """Send ``notifications/prompts/list_changed`` (see
        [`notify_tools_changed()`][trio_mcp.testing.MockServer.notify_tools_changed])."""
        for connection in list(self._state.connections):
            await connection.notify_list_changed("prompts")

    async def notify_resources_changed(self) -> None:
        """Send ``notifications/resources/list_changed`` (see
        [`notify_tools_changed()`][trio_mcp.testing.MockServer.notify_tools_changed])."""
        for connection in list(self._state.connections):
            await connection.notify_list_changed("resources")

    async def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` for ``uri`` to subscribed clients.

        Legacy: connections that sent ``resources/subscribe`` for it. Modern: listen streams
        whose ``resourceSubscriptions`` name it.

        Args:
            uri: The URI of the resource that changed.
        """
        for connection in list(self._state.connections):
            await connection.notify_resource_updated(uri)

    async def notify_listeners(
        self, key: str, method: str, params: Mapping[str, Any] | None = None, *, match: Any = None
    ) -> None:
        """Send an extension's notification on the listen streams that asked for it.

        Every modern ``subscriptions/listen`` stream whose acknowledged filter has the field
        ``key`` (one of `listen_filters`, or ``taskIds``) gets ``method`` with
        ``params``, tagged with its subscription id; with ``match``, only the streams whose
        ``key`` holds ``match`` (a list) or equals it.

        Args:
            key: The filter field, e.g. ``"com.example/alerts"``.
            method: The notification method.
            params: Its params.
            match: Only streams whose filter value holds or equals this.
        """
        for connection in list(self._state.connections):
            await connection.notify_listeners(key, method, dict(params or {}), match)

    async def end_subscriptions(self) -> None:
        """End every ``subscriptions/listen`` stream gracefully (its completion result)."""
        for connection in list(self._state.connections):
            await connection.end_subscriptions()

    async def crash(self, *, exit_code: int | None = None, stderr: str = "") -> None:
        """End every connection abruptly: clients see end of stream, nothing is answered.

        Args:
            exit_code: The exit code in-memory clients are told, as a stdio client is told
                a dead process's (``None``: unknown).
            stderr: The stderr tail they are told.
        """
        for connection in list(self._state.connections):
            await connection.crash(exit_code, stderr)

    async def request_client(
        self, method: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send a request to the client (legacy era only) and return its result.

        Uses the most recent initialized legacy connection; handy for ``ping`` or
        ``roots/list`` outside any tool call.

        Args:
            method: The request method (``ping``, ``roots/list``, ...).
            params: The request params, if any.

        Returns:
            The client's result, decoded.

        Raises:
            RuntimeError: No legacy connection is open.
            ClientRequestError: The client answered with an error.
        """
        for connection in reversed(self._state.connections):
            if connection.legacy:
                return await connection.client_request(
                    method, dict(params) if params is not None else None
                )
        raise RuntimeError("request_client needs an initialized legacy connection")

    async def wait_for_message(
        self, match: str | Callable[[dict[str, Any]], bool], *, count: int = 1
    ) -> dict[str, Any]:
        """Wait until the server has received (and dispatched) a matching message.

        Args:
            match: A method name, or a predicate on the decoded message.
            count: Wait for the ``count``-th matching message.

        Returns:
            That message. Inline work (lists, cancellation, subscriptions) is done by then;
            a tool call has been started, not necessarily finished.
        """
        while True:
            seen = 0
            for message in self.received:
                if message.get("method") == match if isinstance(match, str) else match(message):
                    seen += 1
                    if seen == count:
                        return message
            await self._state.wait()


def _first_line(function: Callable[..., Any]) -> str:
    doc = inspect.getdoc(function)
    return doc.strip().splitlines()[0] if doc else ""
