"""Every value from a peer's bytes that goes back into a request header is checked once,
where it is received, and a value that fails the check fails the request that brought it
at once (an SSE event id, a legacy ``Mcp-Session-Id``, an access token)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from trio_mcp._auth._grants import decode_token_response
from trio_mcp._exceptions import TokenRequestError, TransportError
from trio_mcp._transports._base import MessageInfo
from trio_mcp._transports._eventstream import SSEDecoder
from trio_mcp._transports._headers import ECHO_LIMIT, echo_problem
from trio_mcp._transports._http_base import StreamState

from .test_http_transport import (
    event,
    json_response,
    legacy_server,
    legacy_session,
    next_failure,
    open_http,
    progress,
    request,
    result,
    sse_response,
)

NOT_UTF8_ID = b"id: \xf4\x90\x80\x80\n"  # beyond U+10FFFF: not UTF-8


@given(st.binary(max_size=64))
def test_echo_check_over_any_bytes(raw: bytes) -> None:
    """Whatever bytes a peer sends, a value the check accepts can be put in a request
    header and arrives unchanged; every other value is refused with a reason."""
    value = raw.decode("utf-8", "replace")
    problem = echo_problem(value)
    if problem is None:
        sent = httpx.Request("GET", "http://mcp.test/", headers={"Last-Event-ID": value})
        assert sent.headers["last-event-id"] == value
        assert value.isascii() and value.isprintable() and value == value.strip()
    else:
        assert problem
        assert not value or not value.isascii() or not value.isprintable() or value != value.strip()


@given(st.binary(max_size=64))
def test_a_stream_never_keeps_an_event_id_it_cannot_send_back(raw: bytes) -> None:
    """Any bytes as an SSE ``id``: the resumption state keeps only an id that builds a
    ``Last-Event-ID`` header, or says why it cannot (never both, never a crash)."""
    decoder = SSEDecoder()
    decoder.feed(b"id: " + raw.replace(b"\n", b"").replace(b"\r", b"") + b"\n\n")
    state = StreamState()
    state.saw_id(decoder.last_event_id or None)
    if state.last_event_id is not None:
        assert state.unsendable_id is None
        sent = httpx.Request(
            "GET", "http://mcp.test/", headers={"Last-Event-ID": state.last_event_id}
        )
        assert sent.headers["last-event-id"] == state.last_event_id
    else:
        assert (state.unsendable_id is None) == (not decoder.last_event_id)


def test_echo_limit() -> None:
    assert echo_problem("a" * ECHO_LIMIT) is None
    assert "8193 characters" in (echo_problem("a" * (ECHO_LIMIT + 1)) or "")
    assert echo_problem("a b") is None  # inner spaces are fine
    assert echo_problem("") == "is empty"


async def test_a_stream_whose_event_id_cannot_be_sent_back_fails_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The stream ends before the response; its id is not UTF-8, so it cannot be resumed:
    the request fails at once (it used to retry building the GET until a deadline)."""
    gets: list[httpx.Request] = []

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return sse_response(NOT_UTF8_ID + event(progress(1)))

    async def on_get(req: httpx.Request) -> httpx.Response:
        gets.append(req)
        return httpx.Response(405)

    async with open_http(legacy_server(on_request, on_get=on_get)) as (transport, _):
        await legacy_session(transport)
        start = trio.current_time()
        await transport.send(request(2, "tools/call"), MessageInfo("tools/call", 2))
        assert json.loads(await transport.receive()) == progress(1)
        failure = await next_failure(transport)
        assert trio.current_time() - start == 0.0
    assert failure.request_id == 2
    assert isinstance(failure.error, TransportError)
    assert "cannot be resumed: its event id" in str(failure.error)
    assert not [req for req in gets if "last-event-id" in req.headers]


async def test_a_later_good_id_is_resumed_from(autojump_clock: trio.abc.Clock) -> None:
    """Only the last id counts: a bad id followed by a good one resumes from the good one."""

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return sse_response(NOT_UTF8_ID + event(progress(1)), event(progress(2), id="p2"))

    async def on_get(req: httpx.Request) -> httpx.Response:
        if req.headers.get("last-event-id") == "p2":
            return sse_response(event(result(2), id="p3"))
        return httpx.Response(405)

    async with open_http(legacy_server(on_request, on_get=on_get)) as (transport, _):
        await legacy_session(transport)
        await transport.send(request(2, "tools/call"), MessageInfo("tools/call", 2))
        assert json.loads(await transport.receive()) == progress(1)
        assert json.loads(await transport.receive()) == progress(2)
        assert json.loads(await transport.receive()) == result(2)


async def test_a_resumed_stream_whose_new_id_cannot_be_sent_back_fails_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    gets: list[tuple[float, str | None]] = []

    async def on_request(req: httpx.Request, message: dict[str, Any]) -> httpx.Response:
        return sse_response(event(progress(1), id="p1"), event(retry=500))

    async def on_get(req: httpx.Request) -> httpx.Response:
        if "last-event-id" not in req.headers:
            return httpx.Response(405)
        gets.append((trio.current_time(), req.headers["last-event-id"]))
        return sse_response(b"id: \x7f\n" + event(progress(2)))

    async with open_http(legacy_server(on_request, on_get=on_get)) as (transport, _):
        await legacy_session(transport)
        start = trio.current_time()
        await transport.send(request(2, "tools/call"), MessageInfo("tools/call", 2))
        assert json.loads(await transport.receive()) == progress(1)
        assert json.loads(await transport.receive()) == progress(2)
        failure = await next_failure(transport)
        assert trio.current_time() - start == 0.5
    assert "cannot be resumed: its event id '\\x7f' holds characters" in str(failure.error)
    assert [(t - start, last) for t, last in gets] == [(0.5, "p1")]


@pytest.mark.parametrize("session_id", ["", "bad id\x01", "é", "x" * (ECHO_LIMIT + 1)])
async def test_a_session_id_that_cannot_be_sent_back_fails_initialize(session_id: str) -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        message = json.loads(req.content)
        headers = [("content-type", "application/json"), ("mcp-session-id", session_id)]
        body = json.dumps(result(message["id"])).encode()
        return httpx.Response(200, headers=[(k, v.encode()) for k, v in headers], content=body)

    async with open_http(handler) as (transport, seen):
        transport.negotiated(modern=False, protocol_version=None)
        await transport.send(request(1, "initialize"), MessageInfo("initialize", 1))
        failure = await next_failure(transport)
    assert failure.request_id == 1
    assert "Mcp-Session-Id that cannot be sent back" in str(failure.error)
    assert len(seen) == 1


async def test_a_good_session_id_is_kept() -> None:
    async def handler(req: httpx.Request) -> httpx.Response:
        return json_response(result(json.loads(req.content)["id"]), {"mcp-session-id": "a b"})

    async with open_http(handler) as (transport, _):
        transport.negotiated(modern=False, protocol_version=None)
        await transport.send(request(1, "initialize"), MessageInfo("initialize", 1))
        assert json.loads(await transport.receive()) == result(1)
        assert transport.session_id == "a b"


@pytest.mark.parametrize("token", ["", "s3cr3t\r\nX-Evil: 1", "s3cr3tø", " s3cr3t"])
def test_an_access_token_that_cannot_be_sent_in_a_header_is_refused(token: str) -> None:
    body = json.dumps({"access_token": token, "token_type": "Bearer"}).encode()
    with pytest.raises(TokenRequestError, match="cannot be sent in a header") as caught:
        decode_token_response(body, "https://as.test/token")
    assert caught.value.error == "invalid_response"
    assert "s3cr3t" not in str(caught.value)  # never shown
