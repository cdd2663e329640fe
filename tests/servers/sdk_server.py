"""An MCP server built with the official ``mcp`` Python SDK (2.x), for interop tests.

Run it as a separate process::

    python tests/servers/sdk_server.py --transport stdio|http|sse [--port N]
        [--mode dual|legacy|modern] [--json-response] [--start-delay SECONDS]

``--mode`` picks which protocol era(s) the server speaks:

* ``dual`` (default): the SDK's own dual-era serving. On stdio the client's first
  request decides the era for the whole process: a request whose
  ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` (other
  than ``initialize``) opens the 2026-07-28 "modern" era, anything else the
  legacy handshake era. Over HTTP each POST is routed by its
  ``MCP-Protocol-Version`` header: absent or a handshake version (2024-11-05 ..
  2025-11-25) -> the legacy session transport, anything else -> the modern
  single-exchange entry.
* ``legacy``: handshake era only, like a server written before 2026-07-28.
  Enveloped requests are refused (stdio: ``-32601 Method not found`` for
  ``server/discover``, see README.md; HTTP: the ``MCP-Protocol-Version`` header is
  dropped so the request meets the legacy transport, which answers 400).
* ``modern``: 2026-07-28 only; ``initialize`` is answered with
  ``-32022 UnsupportedProtocolVersion`` naming the served versions.

``--start-delay SECONDS`` sleeps before the server starts (on stdio: before it reads
stdin, so whatever a client sends meanwhile waits in the pipe and is then processed in
order): a stand-in for a slow start such as an SDK server's imports on a loaded machine.

HTTP binds 127.0.0.1 only (``--port 0`` lets the kernel pick; the bound address
is printed on stderr as ``TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>``). The MCP
endpoint is ``/mcp`` (``--transport http``) or ``/sse`` + ``/messages/``
(``--transport sse``, the deprecated HTTP+SSE transport, legacy era only).

Tools: ``echo``, ``add``, ``count_with_progress``, ``log_messages``,
``ask_name`` (elicitation), ``summarize`` (sampling), ``show_roots`` (roots),
``add_dynamic_tool`` (tools/list_changed), ``fail`` (a tool error).
Resources: ``test://static/text``, ``test://static/blob``, template
``test://items/{item_id}``. Prompt: ``greeting(name, style?)``. Completion for
the prompt's ``style`` and the template's ``item_id``.

This file is a test fixture driven by a pinned SDK (``mcp==2.3.0``); the
``modern`` and ``legacy`` modes reach into two SDK-internal entry points
(``mcp.server.runner._serve_modern_stream`` and
``mcp.server._streamable_http_modern.handle_modern_request``), which is why the
pin matters.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any

import anyio
from _announce import serve_announced
from mcp.server import InitializationOptions, MCPServer, NotificationOptions
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    Completion,
    CreateMessageResult,
    ListRootsResult,
    LoggingLevel,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

# ``ctx.log`` is deprecated at 2026-07-28 but still the way to log to legacy clients.
warnings.simplefilter("ignore", MCPDeprecationWarning)


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_NOTIFY_ALL = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
STATIC_TEXT = "Hello from the static text resource."
STATIC_BLOB = bytes(range(16))
ITEM_IDS = ("apple", "apricot", "banana", "cherry")
STYLES = ("friendly", "formal", "pirate")


class NameForm(BaseModel):
    """The form ``ask_name`` elicits."""

    name: str


def _ask_for_name() -> Elicit[NameForm]:
    return Elicit("What is your name?", NameForm)


def _sample_summary(text: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))],
        max_tokens=50,
    )


def _list_roots() -> ListRoots:
    return ListRoots()


def build_server() -> MCPServer[Any]:
    """Build the MCPServer with every feature the interop tests use."""
    mcp: MCPServer[Any] = MCPServer(
        "trio-mcp-sdk-test-server",
        version="1.0.0",
        instructions="Test server for trio_mcp interop tests.",
        log_level="WARNING",
    )

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    async def count_with_progress(ctx: Context, steps: int = 3) -> str:
        """Report progress ``steps`` times (needs a progressToken to be seen)."""
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i} of {steps}")
        return f"counted {steps}"

    @mcp.tool()
    async def log_messages(ctx: Context, count: int = 3) -> str:
        """Send ``count`` log notifications (debug, info, warning, ...), then return.

        Legacy era: sent unless filtered by logging/setLevel. Modern era: sent
        only when the request's _meta carries io.modelcontextprotocol/logLevel.
        """
        levels: tuple[LoggingLevel, ...] = ("debug", "info", "warning", "error")
        for i in range(count):
            await ctx.log(  # pyright: ignore[reportDeprecated]
                levels[i % len(levels)], f"log message {i}", logger_name="sdk-server"
            )
        return f"logged {count}"

    @mcp.tool()
    async def ask_name(name: Annotated[NameForm, Resolve(_ask_for_name)]) -> str:
        """Ask the client for a name (elicitation) and greet it.

        Legacy era: an ``elicitation/create`` request during the call. Modern era:
        an InputRequiredResult; the client retries with inputResponses.
        """
        return f"Hello, {name.name}!"

    @mcp.tool()
    async def summarize(
        text: str, result: Annotated[CreateMessageResult, Resolve(_sample_summary)]
    ) -> str:
        """Ask the client's LLM (sampling) to summarize ``text``."""
        content = result.content
        if isinstance(content, TextContent):
            return f"summary: {content.text}"
        return f"summary: <{content.type}>"  # pragma: no cover - fixture

    @mcp.tool()
    async def show_roots(roots: Annotated[ListRootsResult, Resolve(_list_roots)]) -> str:
        """List the client's roots (roots/list) and return their URIs, one a line."""
        return "\n".join(str(root.uri) for root in roots.roots) or "(no roots)"

    @mcp.tool()
    async def add_dynamic_tool(ctx: Context, name: str = "dynamic") -> str:
        """Register a new tool ``name`` and announce that the tool list changed.

        Legacy era: notifications/tools/list_changed on the session. Modern era:
        published to subscriptions/listen streams.
        """

        def dynamic(text: str = "") -> str:
            return f"dynamic: {text}"

        if name not in {tool.name for tool in await mcp.list_tools()}:
            mcp.add_tool(dynamic, name=name, description="Added at run time.")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @mcp.tool()
    def fail(message: str = "this tool always fails") -> str:
        """Raise ToolError, so the server returns a result with isError: true."""
        raise ToolError(message)

    @mcp.resource("test://static/text", name="static-text", mime_type="text/plain")
    def static_text() -> str:
        """A static text resource."""
        return STATIC_TEXT

    @mcp.resource("test://static/blob", name="static-blob", mime_type="application/octet-stream")
    def static_blob() -> bytes:
        """A static binary resource (bytes 0..15)."""
        return STATIC_BLOB

    @mcp.resource("test://items/{item_id}", name="item", mime_type="text/plain")
    def item(item_id: str) -> str:
        """One item by id."""
        return f"item {item_id}"

    @mcp.prompt()
    def greeting(name: str, style: str = "friendly") -> list[Message]:
        """Greet someone in a style."""
        return [UserMessage(f"Please greet {name} in a {style} style.")]

    @mcp.completion()  # type: ignore[untyped-decorator,no-untyped-call]
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if isinstance(ref, PromptReference) and ref.name == "greeting" and argument.name == "style":
            values = [s for s in STYLES if s.startswith(argument.value)]
        elif isinstance(ref, ResourceTemplateReference) and argument.name == "item_id":
            values = [i for i in ITEM_IDS if i.startswith(argument.value)]
        else:
            return None
        return Completion(values=values, total=len(values), has_more=False)

    # Legacy handshake: advertise listChanged for tools/prompts/resources (the SDK's
    # default NotificationOptions say false, but add_dynamic_tool does send it).
    lowlevel = mcp._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    create_options = lowlevel.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> InitializationOptions:
        return create_options(notification_options or _NOTIFY_ALL, *args, **kwargs)

    lowlevel.create_initialization_options = create_initialization_options  # type: ignore[method-assign]
    return mcp


# --------------------------------------------------------------------- stdio


async def run_stdio(mcp: MCPServer[Any], mode: str) -> None:
    """Serve one connection over stdin/stdout in the given era mode."""
    from mcp.server.runner import serve_dual_era_loop, serve_loop
    from mcp.server.stdio import stdio_server

    server = mcp._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        if mode == "dual":
            await serve_dual_era_loop(
                server,
                read_stream,
                write_stream,
                lifespan_state=state,
                init_options=server.create_initialization_options(),
            )
        elif mode == "legacy":
            await serve_loop(
                server,
                read_stream,
                write_stream,
                lifespan_state=state,
                init_options=server.create_initialization_options(),
            )
        else:
            from mcp.server.runner import _serve_modern_stream  # pyright: ignore[reportPrivateUsage]

            try:
                await _serve_modern_stream(
                    server, read_stream, write_stream, lifespan_state=state, raise_exceptions=False
                )
            finally:
                await write_stream.aclose()


# ---------------------------------------------------------------------- HTTP

_VERSION_HEADER = b"mcp-protocol-version"


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def legacy_only(app: ASGIApp) -> ASGIApp:
    """Make the dual-era app look like a pre-2026 server: no modern routing.

    A request whose MCP-Protocol-Version header names a non-handshake version has
    the header removed, so it reaches the legacy session transport exactly as it
    would on a server that has never heard of the modern era.
    """

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            version = _header(scope, _VERSION_HEADER)
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                scope = dict(scope)
                scope["headers"] = [(k, v) for k, v in scope["headers"] if k != _VERSION_HEADER]
        await app(scope, receive, send)

    return wrapped


def modern_only(mcp: MCPServer[Any], app: ASGIApp, json_response: bool, path: str) -> ASGIApp:
    """Send every request on ``path`` to the SDK's modern single-exchange entry.

    A legacy ``initialize`` POST (no or a handshake MCP-Protocol-Version header)
    is thereby validated by the modern entry, which answers 400 with a JSON-RPC
    error (missing header / -32022 unsupported version naming the served ones).
    """
    from mcp.server._streamable_http_modern import (  # pyright: ignore[reportPrivateUsage]
        handle_modern_request,
    )

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("path") != path:
            await app(scope, receive, send)
            return
        manager = mcp.session_manager
        await handle_modern_request(
            mcp._lowlevel_server,  # pyright: ignore[reportPrivateUsage]
            manager.security_settings,
            json_response,
            manager._lifespan_state,  # pyright: ignore[reportPrivateUsage]
            scope,
            receive,
            send,
        )

    return wrapped


async def run_http(
    mcp: MCPServer[Any], transport: str, mode: str, port: int, json_response: bool
) -> None:
    """Serve HTTP on 127.0.0.1:port until killed."""
    host = "127.0.0.1"
    app: ASGIApp
    if transport == "sse":
        if mode == "modern":
            raise SystemExit("the HTTP+SSE transport is legacy-only; use --mode legacy or dual")
        app = mcp.sse_app(host=host)
    else:
        starlette_app = mcp.streamable_http_app(host=host, json_response=json_response)
        app = starlette_app
        if mode == "legacy":
            app = legacy_only(starlette_app)
        elif mode == "modern":
            app = modern_only(mcp, starlette_app, json_response, "/mcp")

    await serve_announced(app, port, host)


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transport", choices=("stdio", "http", "sse"), default="stdio")
    parser.add_argument(
        "--port", type=int, default=0, help="HTTP port on 127.0.0.1 (0: any free one)"
    )
    parser.add_argument("--mode", choices=("dual", "legacy", "modern"), default="dual")
    parser.add_argument(
        "--json-response",
        action="store_true",
        help="HTTP: answer POSTs with application/json instead of an SSE stream",
    )
    parser.add_argument(
        "--start-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="sleep this long before serving (stdio: before reading stdin, so requests queue up)",
    )
    args = parser.parse_args(argv)
    if args.start_delay > 0:
        time.sleep(args.start_delay)  # a slow start (imports, a loaded machine): input waits
    mcp = build_server()
    if args.transport == "stdio":
        anyio.run(run_stdio, mcp, args.mode)
    else:
        anyio.run(run_http, mcp, args.transport, args.mode, args.port, args.json_response)


if __name__ == "__main__":
    main()
