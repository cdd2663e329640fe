"""Serve a [`MockServer`][trio_mcp.testing.MockServer] over Streamable HTTP in-process, through
``httpx.MockTransport``.

[`MockHTTPServer`][trio_mcp.testing.MockHTTPServer] answers the HTTP requests of trio_mcp's real
`StreamableHTTPTransport` (or any httpx code of yours) without a socket: a
legacy session gets an ``Mcp-Session-Id`` at ``initialize``, a GET stream for
server-initiated messages and ends with DELETE; modern requests are stateless POSTs. Each
request is answered with a Server-Sent Events stream (or a JSON body, ``json_responses=True``)
carrying the messages sent on its behalf and then its response. The server's
[`Faults`][trio_mcp.testing.Faults] apply as they do in memory, plus the HTTP-only ones:
[`Faults.expire_session()`][trio_mcp.testing.Faults.expire_session] (the next request naming the
session gets ``404``) and a crash, after which the "process" is down (every request fails to
connect) until [`restart()`][trio_mcp.testing.MockHTTPServer.restart].
[`MockHTTPServer.stop()`][trio_mcp.testing.MockHTTPServer.stop] takes it down at once (open streams
break), and [`MockHTTPServer.restart()`][trio_mcp.testing.MockHTTPServer.restart] brings it back
with every session forgotten, answering a stale session id with ``404`` (the spec) or ``400`` and
the TypeScript SDK's body, as many real servers do: the client's recovery can be tested on virtual
time.
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import msgspec
import trio

from ._connection import serve_connection
from ._faults import FaultyStream
from ._server_base import MockServerBase
from ._wire import SUBSCRIPTION_ID

if TYPE_CHECKING:
    import httpx

__all__ = ["MockHTTPServer"]

_ROUTE_BUFFER = 64
"""How many messages one response stream (or the GET stream) holds before the server waits."""

_decoder = msgspec.json.Decoder()

TS_SDK_LOST_SESSION: Final = {
    "jsonrpc": "2.0",
    "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
    "id": None,
}
"""The body the TypeScript SDK's example servers (server-everything among them) answer a request
naming an unknown session with, in an HTTP 400."""


class _Route:
    """One open HTTP response the server may write messages to."""

    def __init__(self, request_id: Any, method: str | None) -> None:
        self.request_id = request_id
        self.method = method
        self.send, self.receive = trio.open_memory_channel[bytes](_ROUTE_BUFFER)
        self.closed = False
        self.answered = False
        self.broken = False  # the "process" died: the stream breaks, it does not end

    def put(self, data: bytes) -> bool:
        if self.closed:
            return False
        try:
            self.send.send_nowait(data)
        except trio.WouldBlock:
            return False  # a client not reading its stream loses messages, as on a socket
        return True

    def close(self) -> None:
        self.closed = True
        self.send.close()


_current_route: contextvars.ContextVar[_Route | None] = contextvars.ContextVar(
    "trio_mcp_mock_http_route", default=None
)
"""The response a message received from the client belongs to: set in the connection's reader task
when it receives, inherited by the handler tasks it starts."""


class _RoutedStream:
    """The server stream of one HTTP "connection": routes each message to its response."""

    def __init__(self) -> None:
        self.inbox_send, self.inbox = trio.open_memory_channel[tuple[bytes, _Route | None]](
            _ROUTE_BUFFER
        )
        self.routes: dict[Any, _Route] = {}
        self.get_stream: _Route | None = None
        self.closed = False

    async def receive(self) -> bytes:
        try:
            data, route = await self.inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise trio.EndOfChannel from None
        _current_route.set(route)
        return data

    async def send(self, data: bytes) -> None:
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise trio.ClosedResourceError("the HTTP connection was closed")
        message = _decode(data)
        route: _Route | None
        if message is None:
            route = _current_route.get()  # garbage in a response's place
            if route is not None:
                route.answered = route.put(data)
                route.close()
            return
        if "method" not in message and "id" in message:
            route = self.routes.pop(message["id"], None)
            if route is not None and route.put(data):
                route.answered = True
                route.close()
                return
            # a second answer: only the GET stream could carry it to the client
            if self.get_stream is not None:
                self.get_stream.put(data)
            return
        params = _as_dict(message.get("params"))
        subscription = _as_dict(params.get("_meta")).get(SUBSCRIPTION_ID)
        route = self.routes.get(subscription) if subscription is not None else None
        if route is None:
            route = _current_route.get()
        if route is None or route.closed:
            route = self.get_stream
        if route is not None:
            route.put(data)  # with no stream open, the message is lost, as the spec allows

    def break_routes(self) -> None:
        """The server died: every open response stream breaks (instead of ending)."""
        for route in [*self.routes.values(), self.get_stream]:
            if route is not None:
                route.broken = True
                route.close()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()
        if self.closed:
            return
        self.closed = True
        self.inbox_send.close()
        for route in list(self.routes.values()):
            route.close()
        self.routes.clear()
        if self.get_stream is not None:
            self.get_stream.close()


class _Session:
    """One HTTP "connection" of the server: a legacy session, or the stateless one."""

    def __init__(self, session_id: str | None) -> None:
        self.session_id = session_id
        self.stream = _RoutedStream()


class MockHTTPServer:
    """A [`MockServer`][trio_mcp.testing.MockServer] served over Streamable HTTP through
    ``httpx.MockTransport``.

    Open it with [`MockServer.open_http()`][trio_mcp.testing.MockServer.open_http]; pass its
    `client` to [`open_mcp_session()`][trio_mcp.open_mcp_session] (``client=``) or to your own HTTP
    code. Any URL is served; `url` reads well.

    Attributes:
        url: ``"http://mock.test/mcp"``.
        client: An ``httpx.AsyncClient`` whose transport is this server.
        server: The [`MockServer`][trio_mcp.testing.MockServer] answering.
        json_responses: Answer requests with a JSON body instead of an SSE stream
            (messages sent on a request's behalf are then lost).
        get_stream: Offer the legacy GET stream (False: answer GET with ``405``).
        requests: Every HTTP request seen, as ``(method, headers)`` in order.
        down: True after an injected crash or [`stop()`][trio_mcp.testing.MockHTTPServer.stop],
            until [`restart()`][trio_mcp.testing.MockHTTPServer.restart]: every request fails to
            connect (``httpx.ConnectError``).
        unknown_session: How a request naming a session the server does not know (after
            [`restart()`][trio_mcp.testing.MockHTTPServer.restart] or
            [`Faults.expire_session()`][trio_mcp.testing.Faults.expire_session]) is answered:
            ``404`` (as the spec says) or ``400`` with the TypeScript SDK's body (``-32000``, "Bad
            Request: No valid session ID provided"), as server-everything and many servers do.
    """

    url = "http://mock.test/mcp"

    def __init__(self, server: MockServerBase, nursery: trio.Nursery) -> None:
        """Serve ``server``; each HTTP connection's server loop runs in ``nursery``.

        Prefer [`MockServer.open_http()`][trio_mcp.testing.MockServer.open_http], which also closes
        the client.

        Args:
            server: The server to serve.
            nursery: Where the server loops run.
        """
        import httpx  # on first use: importing trio_mcp.testing does not load httpx

        self.server = server
        self.client: httpx.AsyncClient = httpx.AsyncClient(
            transport=httpx.MockTransport(self.handle)
        )
        self.json_responses = False
        self.get_stream = True
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.down: bool = False
        self.unknown_session: Literal[404, 400] = 404
        self._nursery = nursery
        self._sessions: dict[str, _Session] = {}
        self._stateless: _Session | None = None
        self._ids = itertools.count(1)
        self._process = 0  # which "process" is serving: restart() starts the next one

    def stop(self) -> None:
        """Take the server down now, as if its process died.

        Every session ends (open response streams and GET streams break) and every
        request fails to connect (``httpx.ConnectError``) until
        [`restart()`][trio_mcp.testing.MockHTTPServer.restart].
        """
        self.down = True
        self._close_all(broken=True)

    def restart(self, *, unknown_session: Literal[404, 400] | None = None) -> None:
        """Bring the server back up, as a new process: every old session is forgotten.

        A request naming an old session is answered as `unknown_session` says;
        the client must start a new session with ``initialize``.

        Args:
            unknown_session: Set `unknown_session` too: ``404`` or ``400``.

        Raises:
            ValueError: ``unknown_session`` is neither 404 nor 400.
        """
        if unknown_session is not None:
            if unknown_session not in (404, 400):
                raise ValueError(f"unknown_session must be 404 or 400, not {unknown_session!r}")
            self.unknown_session = unknown_session
        self._close_all(broken=True)
        self._process += 1
        self.down = False

    def _start(self, session_id: str | None) -> _Session:
        session = _Session(session_id)
        stream = FaultyStream(session.stream, self.server.faults, self._nursery)
        self._nursery.start_soon(self._serve, session, stream, self._process)
        return session

    async def _serve(self, session: _Session, stream: FaultyStream, process: int) -> None:
        try:
            await serve_connection(self.server, stream)
        finally:
            await session.stream.aclose()
            # a crash takes this "process" down, not one restart() started meanwhile
            if stream.exit.crashed and process == self._process:
                self.down = True
            if session.session_id is not None:
                self._sessions.pop(session.session_id, None)
            if self._stateless is session:
                self._stateless = None

    async def aclose(self) -> None:
        """End every session (their server loops return) and close `client`."""
        self._close_all()
        await self.client.aclose()

    def _close_all(self, *, broken: bool = False) -> None:
        for session in [*self._sessions.values(), self._stateless]:
            if session is not None:
                if broken:
                    session.stream.break_routes()
                session.stream.inbox_send.close()
        self._sessions.clear()
        self._stateless = None

    async def handle(self, request: httpx.Request) -> httpx.Response:
        """Answer one HTTP request (the ``httpx.MockTransport`` handler).

        Args:
            request: The request.

        Returns:
            The response; SSE bodies stream as the server sends.

        Raises:
            httpx.ConnectError: The server is down after an injected crash.
        """
        import httpx  # on first use: importing trio_mcp.testing does not load httpx

        await trio.lowlevel.checkpoint()
        self.requests.append((request.method, dict(request.headers)))
        if self.down:
            raise httpx.ConnectError("connection refused (the mock server crashed)")
        session_id = request.headers.get("mcp-session-id")
        session: _Session | None = None
        if session_id is not None:
            if self.server.faults.session_expired:
                self.server.faults.session_expired = False
                self._close_all()
            session = self._sessions.get(session_id)
            if session is None:
                if self.unknown_session == 400:
                    return httpx.Response(400, json=TS_SDK_LOST_SESSION)
                return httpx.Response(404, json={"error": "unknown or expired session"})
        if request.method == "DELETE":
            if session is not None:
                del self._sessions[session.session_id or ""]
                session.stream.inbox_send.close()
            return httpx.Response(200 if session is not None else 405)
        if request.method == "GET":
            if session is None or not self.get_stream:
                return httpx.Response(405)
            if session.stream.get_stream is not None:
                return httpx.Response(409, json={"error": "a GET stream is already open"})
            route = session.stream.get_stream = _Route(None, None)
            return _sse_response(route, session.stream)
        if request.method != "POST":
            return httpx.Response(405)
        body = await request.aread()
        message = _decode(body)
        if message is None:
            return httpx.Response(400, json={"error": "the body is not a JSON object"})
        method = message.get("method")
        headers: dict[str, str] = {}
        if session is None:
            if method == "initialize" and self.server.eras != "modern":
                session_id = f"mock-session-{next(self._ids)}"
                session = self._sessions[session_id] = self._start(session_id)
                headers["Mcp-Session-Id"] = session_id
            else:
                if self._stateless is None:
                    self._stateless = self._start(None)
                session = self._stateless
        stream = session.stream
        if not isinstance(method, str) or "id" not in message:
            await _deliver(stream, body, None)
            return httpx.Response(202)
        route = stream.routes[message["id"]] = _Route(message["id"], method)
        await _deliver(stream, body, route)
        if self.json_responses:
            answer = b""
            async for data in route.receive:
                answer = data  # the response (or what took its place) comes last
            if not route.answered:
                raise httpx.RemoteProtocolError("the server closed the connection (mock)")
            return httpx.Response(
                200, headers={**headers, "Content-Type": "application/json"}, content=answer
            )
        return _sse_response(route, stream, headers)


async def _deliver(stream: _RoutedStream, body: bytes, route: _Route | None) -> None:
    try:
        await stream.inbox_send.send((body, route))
    except (trio.ClosedResourceError, trio.BrokenResourceError):
        if route is not None:
            route.close()


def _sse_response(
    route: _Route, stream: _RoutedStream, headers: dict[str, str] | None = None
) -> httpx.Response:
    import httpx  # on first use: importing trio_mcp.testing does not load httpx

    class _Body(httpx.AsyncByteStream):
        def __init__(self) -> None:
            self._events = itertools.count(1)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for data in route.receive:
                text = data.decode("utf-8", "replace")
                lines = "".join(f"data: {line}\n" for line in text.split("\n"))
                yield f"id: {next(self._events)}\nevent: message\n{lines}\n".encode()
            if route.broken or (route.request_id is not None and not route.answered):
                raise httpx.RemoteProtocolError("the server closed the connection (mock)")

        async def aclose(self) -> None:
            await trio.lowlevel.checkpoint()
            if not route.closed:
                route.close()
                if route.request_id is not None:
                    stream.routes.pop(route.request_id, None)
                elif stream.get_stream is route:
                    stream.get_stream = None

    return httpx.Response(
        200,
        headers={**(headers or {}), "Content-Type": "text/event-stream"},
        stream=_Body(),
    )


def _as_dict(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _decode(data: bytes) -> dict[str, Any] | None:
    try:
        message: Any = _decoder.decode(data)
    except msgspec.DecodeError:
        return None
    if isinstance(message, dict):
        return message  # pyright: ignore[reportUnknownVariableType]
    return None
