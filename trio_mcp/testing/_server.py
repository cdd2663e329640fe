"""The scriptable in-process MCP server users drive in their tests: connecting it.

[`MockServer`][trio_mcp.testing.MockServer] adds to ``_server_base.MockServerBase`` (what it serves
and records) the ways to connect a client: an in-memory transport, Streamable HTTP through
``httpx.MockTransport``, and stdio.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import trio

from .._transports._base import Transport
from .._transports._memory import MEMORY_BUFFER_SIZE, MemoryServerStream
from ._connection import serve_connection
from ._faults import FaultyStream, MockClientTransport
from ._http import MockHTTPServer
from ._server_base import MockServerBase
from ._stdio import StdioStream
from ._wire import ServerStream

__all__ = ["MockServer"]


class MockServer(MockServerBase):
    """A scriptable MCP server that runs inside your test, like httpx's ``MockTransport``.

    Register tools, resources, templates and prompts, then connect a session to it: a
    ``MockServer`` is a transport factory, so ``open_mcp_session(nursery, server)`` works,
    and [`open_transport()`][trio_mcp.testing.MockServer.open_transport] hands out the client end of
    an in-memory connection whose server loop runs in the nursery you pass. The server speaks the
    legacy era (``initialize`` handshake, 2025-11-25 and earlier), the modern era (2026-07-28,
    per-request ``_meta``, multi round-trip requests, ``subscriptions/listen``) or both, as a
    dual-era server does: a request carrying modern ``_meta`` is served modern, and ``initialize``
    selects legacy for the rest of the connection.

    For example:

    ```python
    server = MockServer(name="mock", version="1.0")

    @server.tool(description="Echo the text back")
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server) as session:
            result = await session.call_tool("echo", {"text": "hi"})
    assert server.received[0]["method"] in ("server/discover", "initialize")
    ```

    Scripting attributes (set them any time):

    Attributes:
        page_size: Paginate every list result into pages of this many items, with
            ``nextCursor``; ``None`` (the default) returns everything in one page.
        cache_hints: Modern era: ``{method: (ttl_ms, "public" | "private")}`` for the
            cacheable results (``server/discover``, the four lists, ``resources/read``);
            methods not named get ``(0, "public")``.
        respond_to_discover: How to answer ``server/discover`` (the era probe):
            ``"result"`` (a ``DiscoverResult``; the default unless ``eras="legacy"``),
            ``"method_not_found"`` (-32601; the default of a legacy-only server),
            ``"invalid_params"`` (-32602), ``"invalid_request"`` (-32600), ``"silent"`` (never
            answer), or ``"unsupported_version"`` (-32022 whatever version was asked).
        supported_versions: The modern protocol versions accepted (default ``["2026-07-28"]``).
            A dual-era server also names its ``legacy_versions`` in ``supportedVersions``
            and in ``-32022`` errors, as the spec's example does.
        legacy_versions: The legacy versions accepted by ``initialize``, newest first; an
            unknown version gets the first one as counter-offer.
        capabilities: Server capabilities to announce verbatim; ``None`` (the default)
            derives them from what is registered (``tools`` only if a tool exists, ...).
        instructions: The ``instructions`` sent in ``initialize``/``server/discover`` results.

    Inspection attributes (for assertions):

    Attributes:
        received: Every message the client sent, decoded, in arrival order (requests,
            notifications and responses to server-to-client requests).
        cancelled: The request ids named in ``notifications/cancelled``, in order, except
            those ending a ``subscriptions/listen`` stream.
        subscriptions_ended: The ``subscriptions/listen`` request ids the client ended with
            ``notifications/cancelled`` (as a session does when ``listen()`` exits).
        faults: The [`Faults`][trio_mcp.testing.Faults] injected into every connection (delays,
            drops, crashes...).
        request_states_seen: Every ``requestState`` the client echoed on a modern retry.
        client_info: The last ``clientInfo`` seen (from ``initialize`` or modern ``_meta``).
        client_capabilities: The last client capabilities seen.
        protocol_version: The last protocol version negotiated or requested.
        crash_count: How many connections ended by [`crash()`][trio_mcp.testing.MockServer.crash] or
            [`ServerCrash`][trio_mcp.testing.ServerCrash].

    Tasks (tools registered with ``task=``; see ``docs/tasks.md``):

    Attributes:
        tasks: Every task by id ([`MockTask`][trio_mcp.testing.MockTask]); edit one to script
            ``tasks/get``, delete it to make the server forget it.
        task_poll_interval_ms: The ``pollIntervalMs`` suggested (None: none).
        task_ttl_ms: The ``ttlMs`` announced (None: unlimited).
        task_field_spelling: ``"ttlMs"`` (``ttlMs``/``pollIntervalMs``) or ``"ttlSeconds"``
            (``ttlSeconds``/``pollIntervalMilliseconds``, an earlier SEP-2663 draft).
    """

    # -- connecting ------------------------------------------------------------------------

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        """Open an in-memory connection to this server (the ``TransportFactory`` method).

        The server loop for this connection runs in ``nursery``; it ends when the client
        closes the transport (leaving the block closes it) or the server crashes.

        Args:
            nursery: Where the server loop runs.

        Yields:
            The client end: a transport carrying whole JSON-RPC messages.
        """
        to_server_send, to_server_receive = trio.open_memory_channel[bytes](MEMORY_BUFFER_SIZE)
        to_client_send, to_client_receive = trio.open_memory_channel[bytes](MEMORY_BUFFER_SIZE)
        stream = FaultyStream(
            MemoryServerStream(to_client_send, to_server_receive), self.faults, nursery
        )
        client = MockClientTransport(to_server_send, to_client_receive, stream.exit)
        nursery.start_soon(self.serve, stream)
        try:
            yield client
        finally:
            await client.aclose()

    @asynccontextmanager
    async def open_http(self, nursery: trio.Nursery) -> AsyncGenerator[MockHTTPServer, None]:
        """Serve this server over Streamable HTTP in-process, through ``httpx.MockTransport``.

        The real HTTP client code runs (trio_mcp's transport, or yours) with no socket:

        ```python
        async with server.open_http(nursery) as http:
            params = StreamableHTTPParameters(http.url, client=http.client)
            async with open_mcp_session(nursery, params) as s:
                ...
        ```

        Args:
            nursery: Where each HTTP session's server loop runs.

        Yields:
            The [`MockHTTPServer`][trio_mcp.testing.MockHTTPServer]; leaving the block ends its
                sessions and closes
            its client.
        """
        http = MockHTTPServer(self, nursery)
        try:
            yield http
        finally:
            await http.aclose()

    async def serve(self, stream: ServerStream) -> None:
        """Serve one connection until the client ends the stream or the server crashes.

        Args:
            stream: The server end of a connection, like
                `MemoryServerStream`. Closed on return.
        """
        await serve_connection(self, stream)

    async def serve_stdio(self) -> None:
        """Serve newline-delimited JSON-RPC on this process's stdin and stdout.

        Returns when stdin reaches end of file or the server crashes. Nothing else may
        write to stdout meanwhile.
        """
        stream = StdioStream(sys.stdin.fileno(), sys.stdout.fileno())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stream.pump_output)
            try:
                await self.serve(stream)
            finally:
                await stream.aclose()
