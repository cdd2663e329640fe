"""Streamable HTTP (both eras) against scripted in-process servers (httpx.MockTransport)."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import ssl
import subprocess
import sys
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import h11
import httpx
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

import trio_mcp
from trio_mcp import _jsonrpc as jsonrpc
from trio_mcp._exceptions import (
    ConnectionClosed,
    HeaderMismatchError,
    HTTPStatusError,
    MCPError,
    MessageTooLargeError,
    ProtocolError,
    ResourceNotFoundError,
    ServerError,
    TransportError,
    UnsupportedProtocolVersionError,
)
from trio_mcp._jsonrpc import Envelope
from trio_mcp._resilience import Backoff, CircuitBreaker, CircuitOpenError, RetryPolicy
from trio_mcp._transports import _jsonpeek as jsonpeek
from trio_mcp._transports._base import MessageInfo, Transport, TransportFactory
from trio_mcp._transports._http import (
    GET_STREAM_WAIT,
    StreamableHTTPParameters,
    StreamableHTTPTransport,
    origin_of,
)
from trio_mcp._transports._http_base import INCOMING_QUEUE_SIZE, core_for
from trio_mcp._transports._http_client import HTTPOptions
from trio_mcp._transports._http_errors import parse_retry_after
from trio_mcp._transports._http_sender import close_response
from trio_mcp._transports._jsonpeek import oversized_response_id
from trio_mcp._transports._link import LinkState

from . import fuzzing

URL = "http://mcp.test/mcp"
real_peek = jsonpeek.peek
Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]
NO_JITTER = Backoff(initial=1.0, multiplier=2.0, maximum=60.0, jitter=0.0)


# -- helpers ------------------------------------------------------------------------------------


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def notification(method: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method}).encode()


def result(request_id: int | None, value: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value if value is not None else {}}


def progress(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": n}}


def event(
    data: Any = None, *, id: str | None = None, name: str | None = None, retry: int | None = None
) -> bytes:
    lines: list[str] = []
    if name is not None:
        lines.append(f"event: {name}")
    if id is not None:
        lines.append(f"id: {id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    if data is not None:
        text = data if isinstance(data, str) else json.dumps(data)
        lines.extend(f"data: {line}" for line in text.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def body(req: httpx.Request) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(req.content)
    return decoded


def sse_response(
    *chunks: bytes,
    then: Callable[[], Awaitable[None]] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        if then is not None:
            await then()

    return httpx.Response(
        200, headers={"content-type": "text/event-stream", **(headers or {})}, content=stream()
    )


def json_response(message: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(200, json=message, headers=headers)


@dataclass(frozen=True)
class Failure:
    request_id: int | str
    error: MCPError


class FailureLog:
    """The session's side of ``Transport.attach``: records every per-request failure."""

    def __init__(self) -> None:
        self.all: list[Failure] = []
        self._send, self.receive = trio.open_memory_channel[Failure](1000)

    def __call__(self, request_id: int | str, error: MCPError) -> None:
        failure = Failure(request_id, error)
        self.all.append(failure)
        self._send.send_nowait(failure)


def failure_log(transport: Transport) -> FailureLog:
    log = transport._fail_request  # what open_http attached
    assert isinstance(log, FailureLog)
    return log


async def next_failure(transport: Transport) -> Failure:
    """The next request failure the transport reported to its session."""
    return await failure_log(transport).receive.receive()


@asynccontextmanager
async def open_http(
    handler: Handler, **options: Any
) -> AsyncGenerator[tuple[StreamableHTTPTransport, list[httpx.Request]], None]:
    seen: list[httpx.Request] = []

    async def record(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return await handler(req)

    with trio.fail_after(120):
        async with httpx.AsyncClient(transport=httpx.MockTransport(record)) as client:
            async with trio.open_nursery() as nursery:
                params = StreamableHTTPParameters(URL, client=client, **options)
                async with params.open_transport(nursery) as transport:
                    transport.attach(FailureLog())
                    yield transport, seen
            assert not client.is_closed  # the user's client is not ours to close


async def legacy_session(transport: StreamableHTTPTransport) -> None:
    """Run the legacy handshake the way the session does."""
    transport.negotiated(modern=False, protocol_version=None)
    await transport.send(request(1, "initialize", {}), MessageInfo("initialize", 1))
    assert json.loads(await transport.receive()) == result(1)
    transport.negotiated(modern=False, protocol_version="2025-11-25")
    await transport.send(
        notification("notifications/initialized"), MessageInfo("notifications/initialized")
    )


def legacy_server(
    on_request: Callable[[httpx.Request, dict[str, Any]], Awaitable[httpx.Response]],
    *,
    session_id: str = "session-1",
    on_get: Handler | None = None,
) -> Handler:
    """A legacy server: initialize mints a session; GET answers 405 unless ``on_get``."""

    async def handler(req: httpx.Request) -> httpx.Response:
        if req.method == "GET":
            return await on_get(req) if on_get is not None else httpx.Response(405)
        if req.method == "DELETE":
            return httpx.Response(200)
        message = body(req)
        if message.get("method") == "initialize":
            return json_response(result(message["id"]), {"mcp-session-id": session_id})
        if "id" not in message:
            return httpx.Response(202)
        return await on_request(req, message)

    return handler


async def not_found(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
    return httpx.Response(404)


# -- basics -------------------------------------------------------------------------------------


def test_parameters_are_a_transport_factory() -> None:
    params = StreamableHTTPParameters(URL, timeout=5.0)
    assert isinstance(params, TransportFactory)
    with pytest.raises(TypeError):
        StreamableHTTPParameters(URL, None)  # type: ignore[misc]  # options are keyword-only


def test_importing_trio_mcp_does_not_load_network_libraries() -> None:
    code = (
        "import sys, trio_mcp, trio_mcp._transports._http, trio_mcp._transports._sse, "
        "trio_mcp._transports._websocket, trio_mcp._transports._headers\n"
        "loaded = [m for m in ('httpx', 'httpx_sse', 'trio_websocket', 'wsproto') "
        "if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_origin() -> None:
    assert origin_of("https://Example.COM/mcp") == "https://example.com:443"
    assert origin_of("http://example.com/mcp?x=1") == "http://example.com:80"
    assert origin_of("http://127.0.0.1:8000/mcp") == "http://127.0.0.1:8000"
    assert origin_of("http://[::1]:9/mcp") == "http://[::1]:9"


def test_parse_retry_after() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


async def test_json_response() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return json_response(result(body(req)["id"], {"tools": []}))

    async with open_http(handler) as (transport, seen):
        assert transport.origin == "http://mcp.test:80"
        await transport.send(request(7, "tools/list"), MessageInfo("tools/list", 7))
        assert json.loads(await transport.receive()) == result(7, {"tools": []})
    (req,) = seen
    assert req.method == "POST"
    assert req.headers["accept"] == "application/json, text/event-stream"
    assert req.headers["content-type"] == "application/json"
    assert "mcp-method" not in req.headers  # legacy era by default
    assert "mcp-protocol-version" not in req.headers


async def test_a_request_is_started_without_waiting() -> None:
    """``queue_request_nowait`` starts a request's POST at once (no checkpoint: the wait
    for the answer is one); anything else, or a closed transport, is left to ``send``."""

    async def handler(req: httpx.Request) -> httpx.Response:
        return json_response(result(body(req)["id"], {"n": 1}))

    async with open_http(handler) as (transport, seen):
        assert not transport.queue_request_nowait(notification("x"), MessageInfo("x"))
        assert not transport.queue_request_nowait(request(1, "a"), None)
        with trio.testing.assert_no_checkpoints():
            assert transport.queue_request_nowait(request(2, "a"), MessageInfo("a", 2))
        assert json.loads(await transport.receive()) == result(2, {"n": 1})
        await transport.aclose()
        assert not transport.queue_request_nowait(request(3, "a"), MessageInfo("a", 3))
        with pytest.raises(trio.ClosedResourceError):
            await transport.send(request(3, "a"), MessageInfo("a", 3))
    assert [body(req)["id"] for req in seen] == [2]


async def test_sse_response_with_keepalive_comments() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        rid = body(req)["id"]
        return sse_response(
            b": keep-alive\n\n",
            event(progress(1)),
            b":\r\n",
            # split inside an event and inside a CRLF
            event(progress(2))[:10],
            event(progress(2))[10:],
            b'data: {"jsonrpc":"2.0",\r\ndata: "id":%d,"result":{}}\r' % rid,
            b"\n\r\n",
        )

    async with open_http(handler) as (transport, _):
        await transport.send(request(3, "tools/call"), MessageInfo("tools/call", 3))
        assert json.loads(await transport.receive()) == progress(1)
        assert json.loads(await transport.receive()) == progress(2)
        assert json.loads(await transport.receive()) == result(3)


async def test_reading_stops_at_the_response() -> None:
    closed = trio.Event()

    async def handler(req: httpx.Request) -> httpx.Response:
        async def forever() -> None:
            try:
                await trio.sleep_forever()
            finally:
                closed.set()

        return sse_response(event(result(body(req)["id"])), then=forever)

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "ping"), MessageInfo("ping", 1))
        assert json.loads(await transport.receive()) == result(1)
        await closed.wait()


async def test_json_batch_is_split() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return json_response([progress(1), result(body(req)["id"])])

    async with open_http(handler) as (transport, _):
        await transport.send(request(4, "x"), MessageInfo("x", 4))
        assert json.loads(await transport.receive()) == progress(1)
        assert json.loads(await transport.receive()) == result(4)


async def test_messages_without_info_are_classified() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        message = body(req)
        if "id" in message:
            return json_response(result(message["id"]))
        return httpx.Response(202)

    async with open_http(handler) as (transport, seen):
        await transport.send(notification("notifications/x"))
        assert len(seen) == 1  # a notification is posted before send returns
        await transport.send(request(5, "ping"))
        assert json.loads(await transport.receive()) == result(5)


# -- failures that belong to one request ------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "content"),
    [
        (400, b"not json"),
        (401, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}'),
        (403, b'{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"bad"}}'),
        (404, b'{"error": "not JSON-RPC"}'),
        (500, b'{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"bad"}}'),
    ],
)
async def test_http_error_fails_the_request(status: int, content: bytes) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=content, headers={"retry-after": "3"})

    async with open_http(handler) as (transport, _):
        await transport.send(request(9, "server/discover"), MessageInfo("server/discover", 9))
        failure = await next_failure(transport)
    assert failure.request_id == 9
    error = failure.error
    assert isinstance(error, HTTPStatusError)
    assert error.status_code == status
    assert error.body == content.decode()
    assert error.url == URL
    assert error.retry_after == 3.0  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, -32020, HeaderMismatchError),
        (404, -32601, ServerError),
        (400, -32022, UnsupportedProtocolVersionError),
        (422, -32602, ResourceNotFoundError),  # -32602 on resources/read: not found
    ],
)
async def test_json_rpc_error_in_an_http_4xx_body_is_the_answer(
    status: int, code: int, expected: type[ServerError]
) -> None:
    error_body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": "no", "data": {"supported": ["2026-07-28"]}},
    }

    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=error_body)

    async with open_http(handler) as (transport, _):
        await transport.send(request(9, "resources/read"), MessageInfo("resources/read", 9))
        failure = await next_failure(transport)
        await trio.testing.wait_all_tasks_blocked()
    assert failure.request_id == 9
    error = failure.error
    assert type(error) is expected
    assert (error.code, error.message, error.method) == (code, "no", "resources/read")
    assert error.data == {"supported": ["2026-07-28"]}
    assert isinstance(error.__cause__, HTTPStatusError)
    assert error.__cause__.status_code == status
    assert len(failure_log(transport).all) == 1


async def test_error_body_is_truncated() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(400, content=b"x" * 200_000)

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        failure = await next_failure(transport)
    assert isinstance(failure.error, HTTPStatusError)
    assert len(failure.error.body) == 64 * 1024


async def test_connection_refused() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        failure = await next_failure(transport)
    assert isinstance(failure.error, TransportError)
    assert "could not connect" in str(failure.error)
    assert isinstance(failure.error.__cause__, httpx.ConnectError)


async def test_connection_reset_mid_stream() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        async def reset() -> None:
            raise httpx.ReadError("connection reset by peer")

        return sse_response(event(progress(1)), then=reset)

    async with open_http(handler) as (transport, _):
        await transport.send(request(2, "a"), MessageInfo("a", 2))
        assert json.loads(await transport.receive()) == progress(1)
        failure = await next_failure(transport)
    assert failure.request_id == 2
    assert isinstance(failure.error, ConnectionClosed)
    assert "broke before the response to request 2" in str(failure.error)
    causes = []
    cause: BaseException | None = failure.error
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__
    assert any(isinstance(c, httpx.ReadError) for c in causes)


async def test_stream_ending_before_the_response() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return sse_response(event(progress(1), id="e1"))

    async with open_http(handler) as (transport, seen):
        # modern streams are not resumable, even with event ids
        transport.negotiated(modern=True, protocol_version="2026-07-28")
        await transport.send(request(2, "a"), MessageInfo("a", 2))
        assert json.loads(await transport.receive()) == progress(1)
        failure = await next_failure(transport)
    assert type(failure.error) is TransportError
    assert "ended before the response to request 2" in str(failure.error)
    assert [r.method for r in seen] == ["POST"]


@pytest.mark.parametrize("sse", [False, True])
async def test_each_message_is_decoded_once_and_handed_over_decoded(
    sse: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transport decodes a message once (to route it) and the session reuses that.

    ``receive_message`` gives the envelope (and bytes for a message that does not decode,
    which the session reports); ``receive`` still gives bytes, for wrappers.
    """
    decodes: list[bytes] = []
    real = jsonrpc._envelope_decoder  # pyright: ignore[reportPrivateUsage]

    class Counting:
        def decode(self, data: bytes) -> Envelope:
            decodes.append(bytes(data))
            return real.decode(data)

    monkeypatch.setattr(jsonrpc, "_envelope_decoder", Counting())
    peeks: list[bytes] = []
    monkeypatch.setattr(jsonpeek, "peek", lambda data: peeks.append(data) or real_peek(data))

    async def handler(req: httpx.Request) -> httpx.Response:
        rid = body(req)["id"]
        messages = [progress(1), b"{not json", result(rid, {"n": rid})]
        if sse:
            return sse_response(
                *(event(m if isinstance(m, dict) else m.decode()) for m in messages)
            )
        return json_response(result(rid, {"n": rid}))

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        if sse:
            first = await transport.receive_message()
            assert isinstance(first, Envelope) and first.method == "notifications/progress"
            assert await transport.receive_message() == b"{not json"  # the session reports it
        answer = await transport.receive_message()
        assert (
            isinstance(answer, Envelope)
            and answer.id == 1
            and json.loads(bytes(answer.result)) == {"n": 1}
        )
        await transport.send(request(2, "a"), MessageInfo("a", 2))
        if sse:
            await transport.receive()
            await transport.receive()
        assert json.loads(await transport.receive()) == result(2, {"n": 2})
    assert len(decodes) == (6 if sse else 2)  # once per message, the broken one included
    assert peeks == ([b"{not json"] * 2 if sse else [])  # peeked only to salvage an id


@settings(deadline=None)  # examples: the profile's (tests/conftest.py; nox -s fuzz)
@given(
    frame=st.one_of(
        fuzzing.plausible_messages().map(fuzzing.dump),
        fuzzing.mutated_frames(),
        fuzzing.garbage_bytes,
        fuzzing.batches.map(fuzzing.dump),
    )
)
def test_routing_any_bytes_agrees_with_the_one_decode(frame: bytes) -> None:
    """What the transport hands over is what the session's own decode would have made.

    ``routed`` never raises; a message that decodes goes over as that envelope, routed by
    its id; one that does not goes over as bytes (the session reports it), routed by the
    id the peek salvages.
    """
    fuzzing.MESSAGES_FED[0] += 1
    envelope, answers = jsonpeek.routed(frame)
    try:
        expected = jsonrpc.decode_envelope(frame)
    except ProtocolError:
        assert envelope is None
        assert answers == jsonpeek.response_id(frame)
        return
    assert envelope == expected
    is_response = expected.method is UNSET and type(expected.id) in (int, str)
    assert answers == (expected.id if is_response else None)


async def test_json_answer_that_is_not_the_response() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return json_response(result(999))

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        assert json.loads(await transport.receive()) == result(999)
        failure = await next_failure(transport)
    assert "is not its response" in str(failure.error)


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(202),
        httpx.Response(200, content=b"<html/>", headers={"content-type": "text/html"}),
    ],
)
async def test_request_without_an_answer(response: httpx.Response) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return response

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        failure = await next_failure(transport)
    assert isinstance(failure.error, TransportError)


async def test_rejected_notification_raises_from_send() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text="no")

    async with open_http(handler) as (transport, _):
        with pytest.raises(HTTPStatusError) as info:
            await transport.send(notification("notifications/x"), MessageInfo("notifications/x"))
    assert info.value.status_code == 400


async def test_message_too_large_json() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return json_response(result(body(req)["id"], {"blob": "x" * 500}))

    async with open_http(handler, max_message_size=200) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        failure = await next_failure(transport)
    assert isinstance(failure.error, MessageTooLargeError)
    assert failure.error.limit == 200


async def test_message_too_large_sse() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        rid = body(req)["id"]
        return sse_response(event(progress(1)), event(result(rid, {"blob": "x" * 500})))

    async with open_http(handler, max_message_size=200) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        assert json.loads(await transport.receive()) == progress(1)
        failure = await next_failure(transport)
    assert isinstance(failure.error, MessageTooLargeError)
    assert failure.error.size > 500


# -- retries and the circuit breaker ----------------------------------------------------------


async def test_idempotent_request_is_retried_after_5xx(autojump_clock: trio.abc.Clock) -> None:
    times: list[float] = []

    async def handler(req: httpx.Request) -> httpx.Response:
        times.append(trio.current_time())
        if len(times) < 3:
            return httpx.Response(503)
        return json_response(result(body(req)["id"]))

    policy = RetryPolicy(max_attempts=3, backoff=NO_JITTER)
    async with open_http(handler, retry=policy) as (transport, _):
        start = trio.current_time()
        await transport.send(
            request(1, "tools/list"), MessageInfo("tools/list", 1, idempotent=True)
        )
        assert json.loads(await transport.receive()) == result(1)
    assert [t - start for t in times] == [0.0, 1.0, 3.0]


async def test_retry_after_is_honoured(autojump_clock: trio.abc.Clock) -> None:
    times: list[float] = []

    async def handler(req: httpx.Request) -> httpx.Response:
        times.append(trio.current_time())
        if len(times) == 1:
            return httpx.Response(429, headers={"retry-after": "7"})
        return json_response(result(body(req)["id"]))

    policy = RetryPolicy(max_attempts=2, backoff=NO_JITTER)
    async with open_http(handler, retry=policy) as (transport, _):
        start = trio.current_time()
        await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
        assert json.loads(await transport.receive()) == result(1)
    assert [t - start for t in times] == [0.0, 7.0]


async def test_non_idempotent_request_is_not_retried_after_500(
    autojump_clock: trio.abc.Clock,
) -> None:
    calls = 0

    async def handler(req: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(500)

    async with open_http(handler, retry=RetryPolicy(max_attempts=5)) as (transport, _):
        await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
        failure = await next_failure(transport)
    assert isinstance(failure.error, HTTPStatusError)
    assert calls == 1


async def test_connect_errors_are_retried_for_any_request(autojump_clock: trio.abc.Clock) -> None:
    calls = 0

    async def handler(req: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise httpx.ConnectError("refused", request=req)
        return json_response(result(body(req)["id"]))

    async with open_http(handler, retry=RetryPolicy(backoff=NO_JITTER)) as (transport, _):
        await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
        assert json.loads(await transport.receive()) == result(1)
    assert calls == 2


async def test_circuit_breaker_opens(autojump_clock: trio.abc.Clock) -> None:
    calls = 0

    async def handler(req: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(502)

    breaker = CircuitBreaker(failure_threshold=2, recovery_time=30.0)
    async with open_http(handler, breaker=breaker) as (transport, _):
        for rid in (1, 2, 3):
            await transport.send(request(rid, "a"), MessageInfo("a", rid))
            failure = await next_failure(transport)
            assert failure.request_id == rid
        assert isinstance(failure.error, CircuitOpenError)
    assert calls == 2


# -- the legacy era: sessions, the GET stream, resumption, DELETE ------------------------------


async def test_session_id_is_kept_and_sent_and_deleted() -> None:
    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return json_response(result(message["id"]))

    async with open_http(legacy_server(on_request)) as (transport, seen):
        await legacy_session(transport)
        assert transport.session_id == "session-1"
        await transport.send(request(2, "tools/list"), MessageInfo("tools/list", 2))
        assert json.loads(await transport.receive()) == result(2)
    initialize, initialized, *rest = seen
    assert "mcp-session-id" not in initialize.headers
    assert "mcp-protocol-version" not in initialize.headers
    assert initialized.headers["mcp-session-id"] == "session-1"
    assert initialized.headers["mcp-protocol-version"] == "2025-11-25"
    by_method = {r.method: r for r in rest}
    assert set(by_method) == {"GET", "POST", "DELETE"}
    assert by_method["GET"].headers["accept"] == "text/event-stream"
    for req in rest:
        assert req.headers["mcp-session-id"] == "session-1"
    assert seen[-1].method == "DELETE"


async def test_get_stream_405_is_tolerated() -> None:
    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return json_response(result(message["id"]))

    async with open_http(legacy_server(on_request)) as (transport, seen):
        await legacy_session(transport)
        await transport.send(request(2, "ping"), MessageInfo("ping", 2))
        # nothing but the response arrives: the 405 on GET is no failure
        assert json.loads(await transport.receive()) == result(2)
    assert [r.method for r in seen].count("GET") == 1


async def test_get_stream_delivers_and_resumes(autojump_clock: trio.abc.Clock) -> None:
    gets: list[tuple[float, str | None]] = []
    sampling = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {}}

    async def on_get(req: httpx.Request) -> httpx.Response:
        gets.append((trio.current_time(), req.headers.get("last-event-id")))
        if len(gets) == 1:
            return sse_response(event(retry=2500), event(sampling, id="g1"))
        if len(gets) == 2:
            return sse_response(event(progress(5), id="g2"))
        return httpx.Response(405)

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return json_response(result(message["id"]))

    async with open_http(legacy_server(on_request, on_get=on_get)) as (transport, _):
        start = trio.current_time()
        await legacy_session(transport)
        assert json.loads(await transport.receive()) == sampling
        assert json.loads(await transport.receive()) == progress(5)
        # a response to the server's request is posted like a notification
        await transport.send(json.dumps(result(0)).encode(), MessageInfo(None))
        await trio.sleep(10)
    assert [(t - start, last) for t, last in gets] == [(0.0, None), (2.5, "g1"), (5.0, "g2")]


async def test_get_stream_gives_up_after_attempts_without_progress(
    autojump_clock: trio.abc.Clock,
) -> None:
    gets: list[float] = []

    async def on_get(req: httpx.Request) -> httpx.Response:
        gets.append(trio.current_time())
        return sse_response()  # opens and ends at once, no events

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return json_response(result(message["id"]))

    policy = RetryPolicy(max_attempts=3, backoff=NO_JITTER)
    async with open_http(legacy_server(on_request, on_get=on_get), retry=policy) as (transport, _):
        start = trio.current_time()
        await legacy_session(transport)
        await trio.sleep(100)
    assert [t - start for t in gets] == [0.0, 1.0, 3.0]


async def test_post_stream_resumes_with_last_event_id(autojump_clock: trio.abc.Clock) -> None:
    gets: list[tuple[float, dict[str, str]]] = []

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        # a priming event, one progress event, the retry hint, then the connection closes
        return sse_response(event("", id="p0"), event(progress(1), id="p1"), event(retry=500))

    async def on_get(req: httpx.Request) -> httpx.Response:
        gets.append((trio.current_time(), dict(req.headers)))
        if req.headers.get("last-event-id") == "p1":
            return sse_response(event(progress(2), id="p2"), event(result(2), id="p3"))
        return httpx.Response(405)

    async with open_http(legacy_server(on_request, on_get=on_get)) as (transport, _):
        await legacy_session(transport)
        start = trio.current_time()
        await transport.send(request(2, "tools/call"), MessageInfo("tools/call", 2))
        assert json.loads(await transport.receive()) == progress(1)
        assert json.loads(await transport.receive()) == progress(2)
        assert json.loads(await transport.receive()) == result(2)
    resumed = [(t - start, h) for t, h in gets if "last-event-id" in h]
    assert len(resumed) == 1
    when, headers = resumed[0]
    assert when == 0.5  # the server's retry field, exactly
    assert headers["mcp-session-id"] == "session-1"
    assert headers["accept"] == "text/event-stream"


async def test_post_stream_resumes_after_a_reset(autojump_clock: trio.abc.Clock) -> None:
    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        async def reset() -> None:
            raise httpx.RemoteProtocolError("peer closed connection")

        return sse_response(event(progress(1), id="p1"), then=reset)

    async def on_get(req: httpx.Request) -> httpx.Response:
        if req.headers.get("last-event-id") == "p1":
            return sse_response(event(result(2), id="p2"))
        return httpx.Response(405)

    async with open_http(
        legacy_server(on_request, on_get=on_get), retry=RetryPolicy(backoff=NO_JITTER)
    ) as (transport, _):
        await legacy_session(transport)
        start = trio.current_time()
        await transport.send(request(2, "tools/call"), MessageInfo("tools/call", 2))
        assert json.loads(await transport.receive()) == progress(1)
        assert json.loads(await transport.receive()) == result(2)
        assert trio.current_time() - start == 1.0  # no retry field: the backoff's first delay


async def test_resumption_is_bounded(autojump_clock: trio.abc.Clock) -> None:
    attempts: list[float] = []

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return sse_response(event(progress(1), id="p1"))

    async def on_get(req: httpx.Request) -> httpx.Response:
        if "last-event-id" not in req.headers:
            return httpx.Response(405)
        attempts.append(trio.current_time())
        return httpx.Response(503)

    policy = RetryPolicy(max_attempts=3, backoff=NO_JITTER)
    async with open_http(legacy_server(on_request, on_get=on_get), retry=policy) as (transport, _):
        await legacy_session(transport)
        start = trio.current_time()
        await transport.send(request(2, "tools/call"), MessageInfo("tools/call", 2))
        assert json.loads(await transport.receive()) == progress(1)
        failure = await next_failure(transport)
    assert failure.request_id == 2
    assert "3 attempts to resume it failed" in str(failure.error)
    assert isinstance(failure.error.__cause__, HTTPStatusError)
    assert [t - start for t in attempts] == [1.0, 3.0, 7.0]


async def test_expired_session_is_renewed_and_the_request_replayed() -> None:
    sessions = iter(["s1", "s2"])
    expired: set[str] = set()
    log: list[tuple[str, str | None, str | None]] = []

    async def handler(req: httpx.Request) -> httpx.Response:
        sid = req.headers.get("mcp-session-id")
        if req.method != "POST":
            return httpx.Response(405)
        message = body(req)
        log.append((message.get("method", "response"), sid, str(message.get("id"))))
        if message.get("method") == "initialize":
            return json_response(result(message["id"]), {"mcp-session-id": next(sessions)})
        if sid in expired:
            return httpx.Response(404)
        if "id" not in message:
            return httpx.Response(202)
        return json_response(result(message["id"], {"session": sid}))

    async with open_http(handler) as (transport, _):
        await legacy_session(transport)
        expired.add("s1")
        await transport.send(request(2, "tools/list"), MessageInfo("tools/list", 2))
        # only the replayed request's answer arrives; the new initialize's is consumed
        assert json.loads(await transport.receive()) == result(2, {"session": "s2"})
        assert transport.session_id == "s2"
    posts = [entry for entry in log if entry[0] != "response"]
    assert posts == [
        ("initialize", None, "1"),
        ("notifications/initialized", "s1", "None"),
        ("tools/list", "s1", "2"),
        ("initialize", None, "1"),
        ("notifications/initialized", "s2", "None"),
        ("tools/list", "s2", "2"),
    ]


async def test_request_is_replayed_only_once() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        if req.method != "POST":
            return httpx.Response(405)
        message = body(req)
        if message.get("method") == "initialize":
            return json_response(result(message["id"]), {"mcp-session-id": "s"})
        if message.get("method") == "notifications/initialized":
            return httpx.Response(202)
        return httpx.Response(404)

    async with open_http(handler) as (transport, seen):
        await legacy_session(transport)
        await transport.send(request(2, "tools/list"), MessageInfo("tools/list", 2))
        failure = await next_failure(transport)
    # a server that refuses the new session too is an error naming it, not a loop
    assert type(failure.error) is TransportError
    assert "refused the new MCP session" in str(failure.error)
    cause = failure.error.__cause__
    assert isinstance(cause, HTTPStatusError)
    assert cause.status_code == 404
    assert [body(r).get("method") for r in seen if r.method == "POST"].count("tools/list") == 2


async def test_requests_during_a_session_renewal_wait_for_the_new_id() -> None:
    # M8: request A hits 404 and re-initializes slowly; request B, sent meanwhile, must not
    # go out without Mcp-Session-Id (a spec-following server answers 400 to that).
    sessions = iter(["s1", "s2"])
    renewing = trio.Event()
    finish_renewal = trio.Event()
    log: list[tuple[str, str | None]] = []

    async def handler(req: httpx.Request) -> httpx.Response:
        if req.method != "POST":
            return httpx.Response(405)
        sid = req.headers.get("mcp-session-id")
        message = body(req)
        method = message.get("method", "response")
        log.append((method, sid))
        if method == "initialize":
            if log.count(("initialize", None)) == 2:
                renewing.set()
                await finish_renewal.wait()
            return json_response(result(message["id"]), {"mcp-session-id": next(sessions)})
        if sid is None:
            return httpx.Response(400, text="missing Mcp-Session-Id")
        if sid == "s1" and method != "notifications/initialized":
            return httpx.Response(404)
        if "id" not in message:
            return httpx.Response(202)
        return json_response(result(message["id"], {"session": sid}))

    async with open_http(handler) as (transport, _):
        await legacy_session(transport)
        await transport.send(request(2, "tools/list"), MessageInfo("tools/list", 2))
        await renewing.wait()
        assert transport.session_id == "s1"  # kept until the new one arrives
        await transport.send(request(3, "prompts/list"), MessageInfo("prompts/list", 3))
        await trio.testing.wait_all_tasks_blocked()
        finish_renewal.set()
        answers = {json.loads(await transport.receive())["id"] for _ in range(2)}
        assert answers == {2, 3}
        assert failure_log(transport).all == []
        assert transport.session_id == "s2"
    assert ("prompts/list", None) not in log
    assert ("prompts/list", "s2") in log
    assert log.count(("initialize", None)) == 2  # one renewal for both requests


async def test_notification_sent_during_a_session_renewal_waits_for_it() -> None:
    sessions = iter(["s1", "s2"])
    renewing = trio.Event()
    finish_renewal = trio.Event()
    log: list[tuple[str, str | None]] = []

    async def handler(req: httpx.Request) -> httpx.Response:
        if req.method != "POST":
            return httpx.Response(405)
        sid = req.headers.get("mcp-session-id")
        message = body(req)
        method = message.get("method", "response")
        log.append((method, sid))
        if method == "initialize":
            if log.count(("initialize", None)) == 2:
                renewing.set()
                await finish_renewal.wait()
            return json_response(result(message["id"]), {"mcp-session-id": next(sessions)})
        if sid is None:
            return httpx.Response(400)
        if sid == "s1" and method not in ("notifications/initialized",):
            return httpx.Response(404)
        if "id" not in message:
            return httpx.Response(202)
        return json_response(result(message["id"]))

    async with open_http(handler) as (transport, _), trio.open_nursery() as nursery:
        await legacy_session(transport)
        await transport.send(request(2, "tools/list"), MessageInfo("tools/list", 2))
        await renewing.wait()
        nursery.start_soon(transport.send, notification("notifications/roots/list_changed"), None)
        await trio.testing.wait_all_tasks_blocked()
        finish_renewal.set()
        assert json.loads(await transport.receive()) == result(2)
    assert ("notifications/roots/list_changed", "s2") in log
    assert ("notifications/roots/list_changed", None) not in log


async def test_404_without_a_session_is_just_an_error() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(404)

    async with open_http(handler) as (transport, seen):
        await transport.send(request(1, "initialize", {}), MessageInfo("initialize", 1))
        failure = await next_failure(transport)
    assert isinstance(failure.error, HTTPStatusError)
    assert len(seen) == 1


async def test_cancel_request_is_false_in_the_legacy_era() -> None:
    closed = trio.Event()

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        if message["method"] == "ping":
            return json_response(result(message["id"]))

        async def wait_forever() -> None:
            try:
                await trio.sleep_forever()
            finally:
                closed.set()

        return sse_response(event(progress(1)), then=wait_forever)

    async with open_http(legacy_server(on_request)) as (transport, _):
        await legacy_session(transport)
        assert transport.wants_param_headers is False
        await transport.send(request(2, "tools/call"), MessageInfo("tools/call", 2))
        assert json.loads(await transport.receive()) == progress(1)
        # the session must send notifications/cancelled; the stream is closed anyway
        assert transport.cancel_request(2) is False
        await closed.wait()
        await transport.send(request(3, "ping"), MessageInfo("ping", 3))
        assert json.loads(await transport.receive()) == result(3)


# -- the transport contract ---------------------------------------------------------------------


async def test_declared_api() -> None:
    handler, _ = legacy_sse_server()
    async with open_http(handler) as (transport, _):
        assert transport.era_key == transport.origin == "http://mcp.test:80"
        assert transport.can_probe is True
        assert transport.wants_param_headers is False
        transport.negotiated(modern=True, protocol_version="2026-07-28")
        assert (transport.modern, transport.protocol_version) == (True, "2026-07-28")
        assert transport.wants_param_headers is True
        assert await transport.fallback() is True
        assert transport.modern is False
        transport.negotiated(modern=True, protocol_version="2026-07-28")
        assert transport.modern is False  # HTTP+SSE stays legacy
        assert transport.wants_param_headers is False


async def test_send_is_a_checkpoint() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return json_response(result(body(req)["id"]))

    async with open_http(handler) as (transport, _):
        with trio.testing.assert_checkpoints():
            await transport.send(request(1, "ping"), MessageInfo("ping", 1))
        assert json.loads(await transport.receive()) == result(1)


async def test_incoming_queue_is_bounded() -> None:
    produced = 0

    async def handler(req: httpx.Request) -> httpx.Response:
        rid = body(req)["id"]

        async def stream() -> AsyncIterator[bytes]:
            nonlocal produced
            for n in range(100):
                produced += 1
                yield event(progress(n))
            yield event(result(rid))

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
        await trio.testing.wait_all_tasks_blocked()
        # the reading task waits for the queue instead of buffering the whole stream
        assert produced <= INCOMING_QUEUE_SIZE + 2
        for n in range(100):
            assert json.loads(await transport.receive()) == progress(n)
        assert json.loads(await transport.receive()) == result(1)


async def test_failure_is_not_reported_after_the_response_was_delivered() -> None:
    # The GET stream carries an oversized copy of the response to request 2 while the real
    # response waits in the queue: the request gets its response, and no failure.
    get_open = trio.Event()
    gets: list[bytes] = []
    get_send, get_receive = trio.open_memory_channel[bytes](10)

    async def on_get(req: httpx.Request) -> httpx.Response:
        async def stream() -> AsyncIterator[bytes]:
            get_open.set()
            async for chunk in get_receive:
                gets.append(chunk)
                yield chunk

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return json_response(result(message["id"]))

    async with open_http(legacy_server(on_request, on_get=on_get), max_message_size=100) as (
        transport,
        _,
    ):
        await legacy_session(transport)
        await get_open.wait()
        await transport.send(request(2, "tools/list"), MessageInfo("tools/list", 2))
        await trio.testing.wait_all_tasks_blocked()  # the response to 2 is queued
        await get_send.send(event(result(2, {"blob": "x" * 500})))
        await trio.testing.wait_all_tasks_blocked()
        assert len(gets) == 1
        assert json.loads(await transport.receive()) == result(2)
        await transport.send(request(3, "ping"), MessageInfo("ping", 3))
        assert json.loads(await transport.receive()) == result(3)  # nothing else came
        assert failure_log(transport).all == []


async def test_unencodable_header_is_a_transport_error(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:  # pragma: no cover
        return json_response(result(body(req)["id"]))

    async with open_http(handler, headers={"X-User": "J\u00fcrgen"}) as (transport, seen):
        await transport.send(request(1, "ping"), MessageInfo("ping", 1))
        failure = await next_failure(transport)
        with pytest.raises(TransportError) as info:
            await transport.send(notification("notifications/x"), MessageInfo("notifications/x"))
    assert type(failure.error) is TransportError
    assert "could not build a valid HTTP request" in str(failure.error)
    assert isinstance(failure.error.__cause__, UnicodeError)
    assert isinstance(info.value.__cause__, UnicodeError)
    assert seen == []
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.mark.parametrize("method", ["t\u00f6ols/list", "tools/list\r\nX-Evil: 1", " tools/list"])
async def test_method_that_is_no_plain_header_value_fails_its_request(
    method: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:  # pragma: no cover
        return json_response(result(body(req)["id"]))

    async with open_http(handler) as (transport, seen):
        transport.negotiated(modern=True, protocol_version="2026-07-28")
        await transport.send(request(1, method), MessageInfo(method, 1))
        failure = await next_failure(transport)
        with pytest.raises(ProtocolError, match="Mcp-Method"):
            await transport.send(notification(method), MessageInfo(method))
    assert failure.request_id == 1
    assert type(failure.error) is ProtocolError
    assert "cannot be sent in the Mcp-Method header" in str(failure.error)
    assert seen == []
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # no internal crash


async def test_endless_sse_line_fails_the_request_at_once(autojump_clock: trio.abc.Clock) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        async def stream() -> AsyncIterator[bytes]:
            yield event(progress(1))
            yield b'data: {"jsonrpc":"2.0","id":1,"result":{"blob":"'
            while True:
                yield b"x" * 100
                await trio.sleep(1)

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    async with open_http(handler, max_message_size=1000) as (transport, _):
        start = trio.current_time()
        await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
        assert json.loads(await transport.receive()) == progress(1)
        failure = await next_failure(transport)
        # the line passed 1000 bytes (+ room for the field name) with its 11th chunk
        assert trio.current_time() - start == 10.0
    assert failure.request_id == 1
    assert isinstance(failure.error, MessageTooLargeError)
    assert failure.error.limit == 1000


@pytest.mark.parametrize("modern_at_cancel", [True, False])
async def test_cancel_request_stops_a_pending_post_without_a_failure(
    modern_at_cancel: bool,
) -> None:
    # m1: the session cancels a timed-out era probe (maybe after it went on to the legacy
    # handshake); its POST, still waiting for the server, must stop at once.
    started = trio.Event()
    stopped = trio.Event()

    async def handler(req: httpx.Request) -> httpx.Response:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")  # pragma: no cover

    async with open_http(handler) as (transport, _):
        transport.negotiated(modern=True, protocol_version="2026-07-28")
        await transport.send(request(1, "server/discover"), MessageInfo("server/discover", 1))
        await started.wait()
        if not modern_at_cancel:
            transport.negotiated(modern=False, protocol_version=None)
        assert transport.cancel_request(1) is modern_at_cancel
        await stopped.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert failure_log(transport).all == []
        assert transport.cancel_request(1) is modern_at_cancel  # unknown by now: harmless


async def test_initialized_waits_only_briefly_for_the_get_stream(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def on_get(req: httpx.Request) -> httpx.Response:
        await trio.sleep(100)  # a server that answers the GET only with its first event
        return sse_response(event(progress(7)))

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return json_response(result(message["id"]))

    async with open_http(legacy_server(on_request, on_get=on_get)) as (transport, _):
        start = trio.current_time()
        await legacy_session(transport)
        assert trio.current_time() - start == GET_STREAM_WAIT == 1.0
        # what the server sends on it later still arrives
        assert json.loads(await transport.receive()) == progress(7)


async def test_transports_share_one_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    # m9: creating an httpx client loads the CA bundle (~30 ms) unless given a context.
    created: list[object] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        created.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    async with trio.open_nursery() as nursery:
        for url in ("http://a.test/mcp", "http://b.test:8000/mcp"):
            async with StreamableHTTPParameters(url).open_transport(nursery):
                pass
        assert created == []  # plain HTTP loads no certificates at all
        for url in ("https://a.test/mcp", "https://b.test/mcp", "https://c.test/mcp"):
            async with StreamableHTTPParameters(url).open_transport(nursery):
                pass
    assert len(created) <= 1  # once per process


# -- the modern era -----------------------------------------------------------------------------


async def test_modern_headers() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        # a modern server mints no session; even if one did, the client must not echo it
        return json_response(result(body(req)["id"]), {"mcp-session-id": "nope"})

    async with open_http(handler, headers={"X-Api-Key": "k"}) as (transport, seen):
        transport.negotiated(modern=True, protocol_version="2026-07-28")
        assert transport.wants_param_headers is True
        info = MessageInfo(
            "tools/call", 1, name="Hello, 世界", headers={"Mcp-Param-Region": "us-west1"}
        )
        await transport.send(request(1, "tools/call", {"name": "Hello, 世界"}), info)
        await transport.receive()
        await transport.send(
            request(2, "resources/read", {"uri": "file:///a b"}), MessageInfo("resources/read", 2)
        )
        await transport.receive()
        await transport.send(request(3, "tools/list"), MessageInfo("tools/list", 3))
        await transport.receive()
    call, read, listing = seen
    assert call.headers["mcp-protocol-version"] == "2026-07-28"
    assert call.headers["mcp-method"] == "tools/call"
    assert call.headers["mcp-name"] == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert call.headers["mcp-param-region"] == "us-west1"
    assert call.headers["x-api-key"] == "k"
    # Mcp-Name is taken from the body when the session did not give it
    assert read.headers["mcp-name"] == "file:///a b"
    assert listing.headers["mcp-method"] == "tools/list"
    assert "mcp-name" not in listing.headers
    for req in seen:
        assert "mcp-session-id" not in req.headers


async def test_modern_cancel_closes_the_stream() -> None:
    closed = trio.Event()

    async def handler(req: httpx.Request) -> httpx.Response:
        message = body(req)
        if message["method"] == "ping":
            return json_response(result(message["id"]))

        async def wait_forever() -> None:
            try:
                await trio.sleep_forever()
            finally:
                closed.set()

        return sse_response(event(progress(1)), then=wait_forever)

    async with open_http(handler) as (transport, seen):
        transport.negotiated(modern=True, protocol_version="2026-07-28")
        await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
        assert json.loads(await transport.receive()) == progress(1)
        assert transport.cancel_request(1) is True
        await closed.wait()
        assert transport.cancel_request(1) is True  # already gone: still nothing to send
        await transport.send(request(2, "ping"), MessageInfo("ping", 2))
        # no failure for the cancelled request, and no notifications/cancelled
        assert json.loads(await transport.receive()) == result(2)
    assert [body(r)["method"] for r in seen] == ["tools/call", "ping"]


# -- closing ------------------------------------------------------------------------------------


async def test_aclose_cancels_streams_and_is_idempotent() -> None:
    closed = trio.Event()

    async def handler(req: httpx.Request) -> httpx.Response:
        async def wait_forever() -> None:
            try:
                await trio.sleep_forever()
            finally:
                closed.set()

        return sse_response(event(progress(1)), then=wait_forever)

    async with open_http(handler) as (transport, _):
        await transport.send(request(1, "a"), MessageInfo("a", 1))
        assert json.loads(await transport.receive()) == progress(1)
        with trio.CancelScope() as scope:
            scope.cancel()
            await transport.aclose()  # closes even when cancelled
        assert closed.is_set()
        await transport.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await transport.send(request(2, "a"), MessageInfo("a", 2))
        with pytest.raises(trio.ClosedResourceError):
            await transport.receive()
        assert isinstance(transport.closed_error(), ConnectionClosed)


async def test_delete_failure_does_not_break_close() -> None:
    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return json_response(result(message["id"]))

    inner = legacy_server(on_request)

    async def handler(req: httpx.Request) -> httpx.Response:
        if req.method == "DELETE":
            raise httpx.ConnectError("gone", request=req)
        return await inner(req)

    async with open_http(handler) as (transport, seen):
        await legacy_session(transport)
    assert seen[-1].method == "DELETE"


async def test_transport_closes_its_own_client() -> None:
    async with trio.open_nursery() as nursery:
        async with StreamableHTTPParameters(URL).open_transport(nursery) as transport:
            client = transport._core.client  # pyright: ignore[reportPrivateUsage]
            assert not client.is_closed
    assert client.is_closed


# -- fallback to HTTP+SSE -----------------------------------------------------------------------


def legacy_sse_server(
    endpoint: str = "/messages?session=1",
) -> tuple[Handler, trio.MemorySendChannel[bytes]]:
    """A 2024-11-05 server: POST /mcp is 405; GET /mcp streams; POST /messages answers there."""
    send, receive = trio.open_memory_channel[bytes](100)

    async def handler(req: httpx.Request) -> httpx.Response:
        if req.method == "GET":

            async def stream() -> AsyncIterator[bytes]:
                yield event(endpoint, name="endpoint")
                async for chunk in receive:
                    yield chunk

            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=stream()
            )
        if req.url.path == "/mcp":
            return httpx.Response(405)
        message = body(req)
        if "id" in message and "method" in message:
            await send.send(event(result(message["id"], {"via": "sse"})))
        return httpx.Response(202)

    return handler, send


async def test_fallback_to_sse() -> None:
    handler, _ = legacy_sse_server()
    async with open_http(handler) as (transport, seen):
        transport.negotiated(modern=False, protocol_version=None)
        await transport.send(request(1, "initialize", {}), MessageInfo("initialize", 1))
        failure = await next_failure(transport)
        assert isinstance(failure.error, HTTPStatusError)
        assert failure.error.status_code == 405
        assert await transport.fallback() is True
        assert transport.using_sse
        assert await transport.fallback() is True  # idempotent
        await transport.send(request(2, "initialize", {}), MessageInfo("initialize", 2))
        assert json.loads(await transport.receive()) == result(2, {"via": "sse"})
        await transport.send(
            notification("notifications/initialized"), MessageInfo("notifications/initialized")
        )
        assert transport.cancel_request(2) is False
        assert transport.wants_param_headers is False
    posts = [r for r in seen if r.method == "POST"]
    assert [str(r.url) for r in posts] == [
        URL,
        "http://mcp.test/messages?session=1",
        "http://mcp.test/messages?session=1",
    ]
    get = next(r for r in seen if r.method == "GET")
    assert get.headers["accept"] == "text/event-stream"
    assert [r.method for r in seen].count("GET") == 1  # no streamable GET stream in SSE mode
    assert "DELETE" not in [r.method for r in seen]


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(405),
        httpx.Response(200, json={"not": "sse"}),
    ],
)
async def test_fallback_to_sse_refused(answer: httpx.Response) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return answer

    async with open_http(handler) as (transport, _):
        assert await transport.fallback() is False
        assert not transport.using_sse


async def test_fallback_to_sse_can_be_disabled() -> None:
    handler, _ = legacy_sse_server()
    async with open_http(handler, sse_fallback=False) as (transport, seen):
        assert await transport.fallback() is False
    assert seen == []


async def test_fallback_to_sse_without_endpoint_event(autojump_clock: trio.abc.Clock) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return sse_response(b": nothing yet\n\n", then=trio.sleep_forever)

    async with open_http(handler, timeout=5.0) as (transport, _):
        start = trio.current_time()
        assert await transport.fallback() is False
        assert trio.current_time() - start == 5.0


async def test_sse_stream_end_reconnects_after_fallback(autojump_clock: trio.abc.Clock) -> None:
    # The HTTP+SSE connection a fallback opened reconnects by itself when its stream ends
    # (tests/test_sse_reconnect.py has the exact sequences); meanwhile sends fail fast.
    handler, server = legacy_sse_server()
    async with open_http(handler) as (transport, seen):
        assert await transport.fallback() is True
        await server.send(event(progress(1)))
        server.close()  # every stream from now on ends at once: the server is "down"
        assert json.loads(await transport.receive()) == progress(1)
        with trio.move_on_after(10):
            await transport.receive()  # pragma: no cover - waits across reconnections
        assert transport.link.state is LinkState.RECONNECTING
        assert [r.method for r in seen].count("GET") >= 4  # kept trying, with backoff
        with pytest.raises(ConnectionClosed, match="being re-established"):
            await transport.send(request(3, "ping"), MessageInfo("ping", 3))


# -- JSON peeking (_jsonpeek.py) --------------------------------------------------------------


def test_oversized_response_id() -> None:
    big = json.dumps({"jsonrpc": "2.0", "id": 12, "result": {"blob": "x" * 100}}).encode()
    assert oversized_response_id(big[:60]) == 12
    big = json.dumps({"jsonrpc": "2.0", "id": 'a"b', "error": {"code": 1}}).encode()
    assert oversized_response_id(big[:46]) == 'a"b'
    request_like = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "x", "params": {}}).encode()
    assert oversized_response_id(request_like[:40]) is None
    result_first = json.dumps({"result": {"blob": "x" * 100}, "id": 4}).encode()
    assert oversized_response_id(result_first[:50]) is None
    assert oversized_response_id(b"[1, 2") is None
    # an id cut by the end of the prefix may go on (12 -> 123): unknown
    assert oversized_response_id(b'{"jsonrpc":"2.0","result":{},"id":12') is None
    assert oversized_response_id(b'{"jsonrpc":"2.0","result":{},"id":12,') == 12
    # bytes that are not JSON never raise
    assert oversized_response_id(b'{"result":1,"id":"\xff\xfe"') is None


# -- a real loopback server (trio + h11): timeouts and disconnects on real sockets -------------


class LoopbackServer:
    """A tiny HTTP/1.1 server answering each POST with a scripted SSE stream."""

    def __init__(self, script: Callable[[trio.SocketStream, h11.Connection], Awaitable[None]]):
        self.script = script
        self.disconnected = trio.Event()

    async def handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
                continue
            if isinstance(event, h11.EndOfMessage):
                break
        await stream.send_all(
            conn.send(
                h11.Response(
                    status_code=200,
                    headers=[
                        ("content-type", "text/event-stream"),
                        ("transfer-encoding", "chunked"),
                    ],
                )
            )
        )
        await self.script(stream, conn)
        # wait for the client to go away (closing, or resetting, the connection)
        with contextlib.suppress(trio.BrokenResourceError):
            while await stream.receive_some(65536):
                pass  # pragma: no cover
        self.disconnected.set()


async def send_event(stream: trio.SocketStream, conn: h11.Connection, data: Any) -> None:
    await stream.send_all(conn.send(h11.Data(data=event(data))))


@asynccontextmanager
async def loopback(server: LoopbackServer) -> AsyncGenerator[str, None]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


async def test_slow_stream_never_hits_a_read_timeout(autojump_clock: trio.abc.Clock) -> None:
    async def script(stream: trio.SocketStream, conn: h11.Connection) -> None:
        await send_event(stream, conn, progress(1))
        await trio.sleep(100)  # far beyond the transport's timeout (virtual time)
        await send_event(stream, conn, result(1))
        await stream.send_all(conn.send(h11.EndOfMessage()))

    server = LoopbackServer(script)
    async with loopback(server) as url, trio.open_nursery() as nursery:
        async with StreamableHTTPParameters(url, timeout=1.0).open_transport(nursery) as transport:
            start = trio.current_time()
            await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
            assert json.loads(await transport.receive()) == progress(1)
            assert json.loads(await transport.receive()) == result(1)
            assert trio.current_time() - start >= 100


async def test_cancel_disconnects_on_a_real_socket() -> None:
    async def script(stream: trio.SocketStream, conn: h11.Connection) -> None:
        await send_event(stream, conn, progress(1))

    server = LoopbackServer(script)
    with trio.fail_after(10):
        async with loopback(server) as url, trio.open_nursery() as nursery:
            params = StreamableHTTPParameters(url)
            async with params.open_transport(nursery) as transport:
                transport.negotiated(modern=True, protocol_version="2026-07-28")
                await transport.send(request(1, "tools/call"), MessageInfo("tools/call", 1))
                assert json.loads(await transport.receive()) == progress(1)
                assert transport.cancel_request(1)
                await server.disconnected.wait()  # the server sees the stream close


@pytest.mark.parametrize("how", ["cancelled", "error"])
async def test_a_reader_stopped_in_its_sink_leaves_no_body_generator_open(
    how: str, autojump_clock: trio.testing.MockClock
) -> None:
    """A cancellation (the transport closing) or an error while a chunk is handed on stops
    the reading through httpx's chain of generators: every one of them finishes at once,
    none is left for the garbage collector to finalize with a ResourceWarning."""
    finished: list[str] = []

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                while True:
                    await trio.sleep(0.1)
                    yield b"data: {}\n\n"
            finally:
                finished.append("body")

    def answer(request: httpx.Request) -> httpx.Response:
        del request
        return httpx.Response(200, stream=Body())

    async def on_chunk(chunk: bytes) -> bool:
        del chunk
        if how == "error":
            raise RuntimeError("a sink that failed")
        await trio.sleep_forever()  # a full incoming queue, say

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    async with trio.open_nursery() as nursery:
        core = core_for(HTTPOptions("http://mock.test/mcp", client=client), nursery)
        response = await core.open("GET", "http://mock.test/mcp", headers={})
        with trio.move_on_after(1), contextlib.suppress(RuntimeError):
            await core.consume(response, on_chunk, "reading")
        assert finished == ["body"]
        await close_response(response)
        await core.aclose(None)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        gc.collect()
        await trio.lowlevel.checkpoint()
    assert not [w for w in seen if issubclass(w.category, ResourceWarning)]
    await client.aclose()


async def test_a_response_closed_by_a_cancelled_task_is_closed_all_the_same() -> None:
    """The close of a response is shielded: a cancellation (the transport closing while a
    POST's answer or the GET stream is being closed) cannot leave its body open."""
    closed: list[str] = []

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield b""

        async def aclose(self) -> None:
            await trio.lowlevel.checkpoint()  # a socket's close, say
            closed.append("body")

    response = httpx.Response(200, stream=Body(), request=httpx.Request("GET", URL))
    with trio.CancelScope() as scope:
        scope.cancel()
        await close_response(response)
    assert closed == ["body"]
    assert response.is_closed


async def test_a_session_cancelled_at_any_checkpoint_leaves_no_body_generator_open() -> None:
    """Cancel a legacy session over Streamable HTTP (a POST's SSE answer and the GET
    stream open) at each checkpoint in turn: no response body is left to the garbage
    collector (trio finalizes such generators with a ResourceWarning, an error here)."""
    from trio_mcp.testing import MockServer, ToolContext

    server = MockServer(eras="legacy")

    @server.tool
    async def chatty(ctx: ToolContext) -> str:
        for step in range(3):
            await ctx.progress(step, 3)
            await ctx.log("info", f"step {step}")
        return "done"

    for after in range(60):  # (the old code left generators open from 20 on)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            async with trio.open_nursery() as nursery, server.open_http(nursery) as http:
                params = StreamableHTTPParameters(http.url, client=http.client)
                with trio.CancelScope() as scope:

                    async def cancel_later(scope: trio.CancelScope = scope, n: int = after) -> None:
                        for _ in range(n):
                            await trio.lowlevel.checkpoint()
                        scope.cancel()

                    nursery.start_soon(cancel_later)
                    async with trio_mcp.open_mcp_session(nursery, params) as session:
                        while True:
                            await session.call_tool("chatty", {})
                nursery.cancel_scope.cancel()
            gc.collect()
            await trio.lowlevel.checkpoint()
        leaks = [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)]
        assert not leaks, f"cancelled after {after} checkpoints: {leaks}"
