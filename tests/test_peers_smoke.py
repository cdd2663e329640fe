"""Smoke tests for the interop peers: each starts and answers raw JSON-RPC.

These pin down how each real peer answers the era probes (``server/discover``
before ``initialize`` and the other way round) that trio_mcp's era detection
relies on; tests/servers/README.md has the full table. They talk raw JSON-RPC
(stdio lines, HTTP with httpx), not through trio_mcp.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any, Literal

import httpx
import pytest
import trio

from .interop_peers import (
    LEGACY_VERSION,
    LOOPBACK,
    MODERN_VERSION,
    NODE22,
    HttpPeer,
    everything_argv,
    everything_env,
    first_sse_data,
    initialize_params,
    legacy_http_headers,
    listening_addresses,
    modern_http_headers,
    modern_meta,
    open_everything_http,
    open_sdk_http,
    open_sse_stream,
    open_stdio_peer,
    sdk_server_argv,
    sdk_server_env,
    server_everything_version,
    skip_unless_node22,
    skip_unless_peers,
    skip_unless_sdk,
)

pytestmark = pytest.mark.interop

# Real processes on the real clock: a generous bound, never a sleep.
TIMEOUT = 60

METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
UNSUPPORTED_PROTOCOL_VERSION = -32022

# Skips are taken in sync fixtures: raised inside an async test, pytest-trio reports
# a skip without its reason.


@pytest.fixture
def everything() -> None:
    """Skip (fail under CI=true) unless server-everything is installed."""
    skip_unless_peers()


@pytest.fixture
def sdk() -> None:
    """Skip (fail under CI=true) unless the official mcp SDK is importable."""
    skip_unless_sdk()


INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _discover() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": modern_meta()},
    }


def _initialize(request_id: int = 2) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": initialize_params(),
    }


# ----------------------------------------------------------------- server-everything


def test_server_everything_is_the_pinned_version(everything: None) -> None:
    assert server_everything_version() == "2026.8.31"


def test_node22_binary_runs() -> None:
    skip_unless_node22()
    result = subprocess.run(
        [str(NODE22), "--version"], capture_output=True, check=True, timeout=TIMEOUT
    )
    assert result.stdout.decode().startswith("v22.")


async def test_everything_stdio_rejects_discover_and_serves_legacy(everything: None) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_stdio_peer(everything_argv("stdio"), everything_env()) as peer:
            discover = await peer.request(1, "server/discover", {"_meta": modern_meta()})
            assert discover["error"]["code"] == METHOD_NOT_FOUND
            init = await peer.request(2, "initialize", initialize_params())
            assert init["result"]["protocolVersion"] == LEGACY_VERSION
            assert init["result"]["serverInfo"]["name"] == "mcp-servers/everything"
            await peer.send(INITIALIZED)
            tools = await peer.request(3, "tools/list")
            names = {tool["name"] for tool in tools["result"]["tools"]}
            assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
            echo = await peer.request(
                4, "tools/call", {"name": "echo", "arguments": {"message": "hi"}}
            )
            assert echo["result"]["content"][0]["text"] == "Echo: hi"
            # Still a legacy server after the handshake.
            again = await peer.request(5, "server/discover", {"_meta": modern_meta()})
            assert again["error"]["code"] == METHOD_NOT_FOUND


async def test_everything_streamable_http_on_loopback_only(everything: None) -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            open_everything_http("streamableHttp") as peer,
            httpx.AsyncClient(timeout=10) as client,
        ):
            assert listening_addresses(peer.port) == {LOOPBACK}
            modern = await client.post(
                peer.url, json=_discover(), headers=modern_http_headers("server/discover")
            )
            assert modern.status_code == 400
            assert modern.json()["error"]["code"] == -32000  # "Bad Request: Server not initialized"
            init = await client.post(peer.url, json=_initialize(), headers=legacy_http_headers())
            assert init.status_code == 200
            session_id = init.headers["mcp-session-id"]
            assert first_sse_data(init.text)["result"]["protocolVersion"] == LEGACY_VERSION
            closed = await client.delete(
                peer.url, headers=legacy_http_headers(session_id, LEGACY_VERSION)
            )
            assert closed.status_code == 200


# ----------------------------------------------------------------- legacy HTTP+SSE


async def _sse_round_trip(peer: HttpPeer, endpoint_prefix: str) -> None:
    """GET the SSE stream, POST initialize to its endpoint, read the answer on the stream."""
    async with (
        httpx.AsyncClient(timeout=10) as client,
        open_sse_stream(client, peer.url) as stream,
    ):
        assert stream.response.status_code == 200
        kind, endpoint = await stream.next_event()
        assert kind == "endpoint"
        assert endpoint.startswith(endpoint_prefix)
        posted = await client.post(
            httpx.URL(peer.base_url).join(endpoint),
            json=_initialize(7),
            headers=legacy_http_headers(),
        )
        assert posted.status_code == 202
        kind, data = await stream.next_event()
        assert kind == "message"
        answer = json.loads(data)
        assert answer["id"] == 7
        assert answer["result"]["protocolVersion"] == LEGACY_VERSION


async def test_everything_sse_round_trip(everything: None) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_everything_http("sse") as peer:
            assert listening_addresses(peer.port) == {LOOPBACK}
            await _sse_round_trip(peer, "/message?sessionId=")


async def test_sdk_sse_round_trip(sdk: None) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_sdk_http("sse") as peer:
            assert listening_addresses(peer.port) == {LOOPBACK}
            await _sse_round_trip(peer, "/messages/?session_id=")


# ----------------------------------------------------------------- SDK server, stdio


async def test_sdk_stdio_dual_discover_first_locks_modern(sdk: None) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_stdio_peer(sdk_server_argv("stdio"), sdk_server_env()) as peer:
            discover = await peer.request(1, "server/discover", {"_meta": modern_meta()})
            assert discover["result"]["supportedVersions"] == [MODERN_VERSION]
            assert discover["result"]["resultType"] == "complete"
            init = await peer.request(2, "initialize", initialize_params())
            assert init["error"]["code"] == UNSUPPORTED_PROTOCOL_VERSION
            assert init["error"]["data"] == {
                "supported": [MODERN_VERSION],
                "requested": LEGACY_VERSION,
            }


async def test_sdk_stdio_dual_initialize_first_locks_legacy(sdk: None) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_stdio_peer(sdk_server_argv("stdio"), sdk_server_env()) as peer:
            init = await peer.request(2, "initialize", initialize_params())
            assert init["result"]["protocolVersion"] == LEGACY_VERSION
            await peer.send(INITIALIZED)
            discover = await peer.request(3, "server/discover", {"_meta": modern_meta()})
            assert discover["error"]["code"] == INVALID_REQUEST
            echo = await peer.request(
                4, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
            )
            assert echo["result"]["content"] == [{"type": "text", "text": "hi"}]


async def test_sdk_stdio_legacy_mode_answers_method_not_found(sdk: None) -> None:
    argv = sdk_server_argv("stdio", mode="legacy")
    with trio.fail_after(TIMEOUT):
        async with open_stdio_peer(argv, sdk_server_env()) as peer:
            discover = await peer.request(1, "server/discover", {"_meta": modern_meta()})
            assert discover["error"]["code"] == METHOD_NOT_FOUND
            init = await peer.request(2, "initialize", initialize_params())
            assert init["result"]["protocolVersion"] == LEGACY_VERSION
            assert init["result"]["capabilities"]["tools"] == {"listChanged": True}


async def test_sdk_stdio_modern_mode_refuses_initialize_and_runs_mrtr(sdk: None) -> None:
    argv = sdk_server_argv("stdio", mode="modern")
    meta = modern_meta({"elicitation": {"form": {}}})
    with trio.fail_after(TIMEOUT):
        async with open_stdio_peer(argv, sdk_server_env()) as peer:
            init = await peer.request(1, "initialize", initialize_params())
            assert init["error"]["code"] == UNSUPPORTED_PROTOCOL_VERSION
            assert init["error"]["data"]["supported"] == [MODERN_VERSION]
            # The refused initialize did not lock the process into the legacy era.
            first = await peer.request(
                2, "tools/call", {"name": "ask_name", "arguments": {}, "_meta": meta}
            )
            result = first["result"]
            assert result["resultType"] == "input_required"
            [(key, question)] = result["inputRequests"].items()
            assert question["method"] == "elicitation/create"
            retry = await peer.request(
                3,
                "tools/call",
                {
                    "name": "ask_name",
                    "arguments": {},
                    "_meta": meta,
                    "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                    "requestState": result["requestState"],
                },
            )
            assert retry["result"]["resultType"] == "complete"
            assert retry["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


# ----------------------------------------------------------------- SDK server, HTTP


@pytest.mark.parametrize(
    ("mode", "discover_status", "init_status"),
    [("dual", 200, 200), ("legacy", 400, 200), ("modern", 200, 400)],
)
async def test_sdk_http_era_routing(
    sdk: None, mode: Literal["dual", "legacy", "modern"], discover_status: int, init_status: int
) -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            open_sdk_http("http", mode=mode) as peer,
            httpx.AsyncClient(timeout=10) as client,
        ):
            assert listening_addresses(peer.port) == {LOOPBACK}
            discover = await client.post(
                peer.url, json=_discover(), headers=modern_http_headers("server/discover")
            )
            assert discover.status_code == discover_status
            if discover_status == 200:
                assert discover.json()["result"]["supportedVersions"] == [MODERN_VERSION]
                assert "mcp-session-id" not in discover.headers
            else:
                # The legacy transport knows nothing of the modern header: no session yet.
                assert discover.json()["error"]["code"] == INVALID_REQUEST
            init = await client.post(peer.url, json=_initialize(), headers=legacy_http_headers())
            assert init.status_code == init_status
            if init_status == 200:
                assert "mcp-session-id" in init.headers
                assert first_sse_data(init.text)["result"]["protocolVersion"] == LEGACY_VERSION
            else:
                assert init.json()["error"]["code"] == INVALID_PARAMS
