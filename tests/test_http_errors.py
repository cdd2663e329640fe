"""``_http_errors.session_lost``: which HTTP answers say the server lost the legacy session."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trio_mcp._exceptions import ConnectionClosed, HTTPStatusError, TransportError
from trio_mcp._transports._http_errors import session_lost


def jsonrpc_error(message: str, code: int = -32000) -> str:
    return json.dumps({"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": None})


@pytest.mark.parametrize(
    "body",
    [
        # the TypeScript SDK's example servers (server-everything): 400, -32000
        jsonrpc_error("Bad Request: No valid session ID provided"),
        # the TypeScript SDK's transport, when a restarted process gets a non-initialize
        jsonrpc_error("Bad Request: Server not initialized"),
        # the official Python SDK before 1.10, and fastmcp 2 on it: plain text
        "Bad Request: No valid session ID provided",
        # the 404 wordings, when something turns them into a 400
        jsonrpc_error("Session not found", -32001),
        "Not Found: Invalid or expired session ID",
    ],
)
def test_a_400_in_the_words_of_real_servers_is_a_lost_session(body: str) -> None:
    assert session_lost(HTTPStatusError(400, body))


@pytest.mark.parametrize("body", ["", "Session not found", jsonrpc_error("whatever"), "x" * 999])
def test_a_404_is_always_a_lost_session(body: str) -> None:
    assert session_lost(HTTPStatusError(404, body))


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, jsonrpc_error("Parse error: Invalid JSON", -32700)),
        (400, jsonrpc_error("Bad Request: Mcp-Session-Id header is required")),
        (400, "Bad Request: Unsupported protocol version"),
        (400, ""),
        (400, "{not json, but no valid session id"),
        # a long plain-text page quoting the words is not the short message servers send
        (400, "<html>" + "x" * 300 + "no valid session id</html>"),
        # the words somewhere else than the error message
        (400, json.dumps({"error": {"message": "bad"}, "hint": "no valid session id"})),
        (400, json.dumps({"error": "Session not found"})),  # not a JSON-RPC error object
        (401, jsonrpc_error("Session not found")),
        (403, "Session not found"),
        (500, "Session not found"),
    ],
)
def test_other_answers_are_not_a_lost_session(status: int, body: str) -> None:
    assert not session_lost(HTTPStatusError(status, body))


def test_errors_without_a_status_are_not_a_lost_session() -> None:
    assert not session_lost(TransportError("could not connect"))
    assert not session_lost(ConnectionClosed("broke"))


@given(status=st.integers(100, 599), body=st.text(max_size=400))
def test_any_body_gives_an_answer_and_never_raises(status: int, body: str) -> None:
    assert session_lost(HTTPStatusError(status, body)) in (True, False)


@given(
    message=st.text(max_size=100),
    extra=st.dictionaries(
        st.text(max_size=5).filter(lambda key: key != "message"),
        st.integers() | st.text(max_size=5),
        max_size=3,
    ),
)
def test_any_json_error_body_gives_an_answer(message: str, extra: dict[str, object]) -> None:
    body = json.dumps({"jsonrpc": "2.0", "error": {"message": message, **extra}, "id": None})
    lost = session_lost(HTTPStatusError(400, body))
    assert lost == any(
        words in message.lower()
        for words in (
            "no valid session id",
            "server not initialized",
            "session not found",
            "invalid or expired session",
            "unknown session",
        )
    )
