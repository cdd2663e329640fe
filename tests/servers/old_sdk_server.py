"""A legacy MCP server on an OLD official Python SDK (``mcp==1.9.3``), for the era tests.

Run it with the interpreter of the separate virtualenv that ``scripts/install-peers.sh``
makes (``.peers/py-mcp-old/``; it cannot share one with ``mcp==2.3.0``)::

    .peers/py-mcp-old/bin/python tests/servers/old_sdk_server.py \\
        --transport stdio|http|sse [--port N] [--stateless] [--json-response]

Why this version: up to ``mcp==1.9.3`` the SDK's session receive loop validates every
incoming request against the union of the requests it knows, and an unknown method
such as ``server/discover`` raises a pydantic ``ValidationError`` that nothing catches.
Over stdio the process exits (status 1) without answering; ``mcp==1.9.4`` answers
``-32602 Invalid request parameters`` instead and lives on. Over HTTP:

* ``--transport http`` (Streamable HTTP, ``/mcp``, stateful by default): a request
  without ``Mcp-Session-Id`` that is not ``initialize`` gets ``400 Bad Request: Missing
  session ID`` before it reaches the session, so the probe is harmless there. With
  ``--stateless`` every POST reaches a fresh per-request session, which crashes on the
  probe (see tests/servers/README.md for the exact answer).
* ``--transport sse`` (the deprecated HTTP+SSE transport, ``GET /sse`` +
  ``POST /messages/?session_id=...``): the POST is accepted (202) and the session
  dies, so the event stream ends without an answer.

Tool: ``echo(text)``. HTTP binds 127.0.0.1 only (``--port 0``: any free port) and prints
``TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>`` on stderr once bound.

Observability: when env ``TRIO_MCP_METHODS_LOG`` names a file, the server appends
``start <pid>`` when the process starts and then, for every JSON-RPC message it
receives, the message's method (one a line, before the SDK handles it), so a test can
tell whether a client sent ``server/discover`` and how often the process was started.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from _announce import serve_announced
from mcp.server.fastmcp import FastMCP

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

METHODS_LOG_ENV = "TRIO_MCP_METHODS_LOG"


def log_line(line: str) -> None:
    """Append ``line`` to the methods log, if one is configured (opened per line: crash-safe)."""
    path = os.environ.get(METHODS_LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def log_methods(payload: Any) -> None:
    """Log the method of each JSON-RPC message in a decoded body (a message or a batch)."""
    for message in payload if isinstance(payload, list) else [payload]:
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            log_line(message["method"])


def build_server(*, stateless: bool = False, json_response: bool = False) -> FastMCP:
    """The FastMCP server with its one tool."""
    mcp = FastMCP(
        "trio-mcp-old-sdk-server",
        log_level="WARNING",
        stateless_http=stateless,
        json_response=json_response,
    )

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return mcp


# --------------------------------------------------------------------- stdio


@asynccontextmanager
async def logged_stream(read_stream: Any) -> AsyncIterator[Any]:
    """A copy of the SDK's stdio read stream that logs each message's method first."""
    send, receive = anyio.create_memory_object_stream[Any](0)

    async def pump() -> None:
        async with send:
            async for item in read_stream:
                root = getattr(getattr(item, "message", None), "root", None)
                method = getattr(root, "method", None)
                if isinstance(method, str):
                    log_line(method)
                await send.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            yield receive
        finally:
            tg.cancel_scope.cancel()


async def run_stdio(mcp: FastMCP) -> None:
    """Serve one connection over stdin/stdout (the SDK's own loop, as FastMCP.run does)."""
    from mcp.server.stdio import stdio_server

    server = mcp._mcp_server
    async with stdio_server() as (read_stream, write_stream):
        async with logged_stream(read_stream) as logged:
            await server.run(logged, write_stream, server.create_initialization_options())


# ---------------------------------------------------------------------- HTTP


LOGGED_PATHS = frozenset({"/mcp/", "/messages/"})
"""The paths where POSTs reach the SDK (``/mcp`` itself only redirects: 307 to ``/mcp/``)."""


def logging_app(app: ASGIApp) -> ASGIApp:
    """ASGI middleware: log the methods of each POST to an MCP endpoint, then pass it on."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") != "POST"
            or scope.get("path") not in LOGGED_PATHS
        ):
            await app(scope, receive, send)
            return
        body = b""
        while True:
            event = await receive()
            if event["type"] != "http.request":  # a disconnect: let the app see it
                break
            body += event.get("body", b"")
            if not event.get("more_body", False):
                break
        try:
            log_methods(json.loads(body))
        except ValueError:
            pass
        replayed = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


async def run_http(mcp: FastMCP, transport: str, port: int) -> None:
    """Serve HTTP on 127.0.0.1:port until killed."""
    app = logging_app(mcp.sse_app() if transport == "sse" else mcp.streamable_http_app())

    await serve_announced(app, port)


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transport", choices=("stdio", "http", "sse"), default="stdio")
    parser.add_argument(
        "--port", type=int, default=0, help="HTTP port on 127.0.0.1 (0: any free one)"
    )
    parser.add_argument(
        "--stateless", action="store_true", help="Streamable HTTP: no sessions (a fresh one a POST)"
    )
    parser.add_argument(
        "--json-response", action="store_true", help="Streamable HTTP: answer with JSON, not SSE"
    )
    args = parser.parse_args(argv)
    log_line(f"start {os.getpid()}")
    mcp = build_server(stateless=args.stateless, json_response=args.json_response)
    if args.transport == "stdio":
        anyio.run(run_stdio, mcp)
    else:
        anyio.run(run_http, mcp, args.transport, args.port)


if __name__ == "__main__":
    main()
