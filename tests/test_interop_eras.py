"""Era detection (``protocol="auto"``) against real servers that make it hard.

* a dual-era server (official SDK ``mcp==2.3.0``, ``sdk_server.py --mode dual``) that
  starts slower than the probe timeout: the late ``server/discover``, read first once the
  server starts, commits it to the modern era, so a fallback ``initialize`` gets -32022;
  the session must end up modern;
* a legacy server that never answers unknown methods (``silent_legacy_server.py``): the
  session falls back to ``initialize`` after the probe timeout;
* a server on an old official SDK (``mcp==1.9.3``, ``old_sdk_server.py``) that dies on
  ``server/discover``: over stdio the session restarts it once and uses the handshake,
  remembering that per command; over Streamable HTTP (stateful, the SDK's default) the
  probe is refused with a 400 and the handshake works; over HTTP+SSE the session must
  never send the probe, which would kill the SSE session.

Our fixture servers append the methods they receive to a file
(``TRIO_MCP_METHODS_LOG``, ``start <pid>`` per process), which is how these tests see
what the client sent. Real subprocesses on the real clock, each test bounded.

The first section pins down the fixtures' own behaviour with raw JSON-RPC, so that a
failure below is the client's and not a changed peer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

import trio_mcp
from trio_mcp import SSEParameters, StdioParameters

from .interop_peers import (
    LEGACY_VERSION,
    OLD_SDK_VERSION,
    HttpPeer,
    initialize_params,
    legacy_http_headers,
    modern_http_headers,
    modern_meta,
    old_sdk_server_argv,
    old_sdk_server_env,
    open_old_sdk_http,
    open_sse_stream,
    open_stdio_peer,
    read_methods_log,
    sdk_server_argv,
    sdk_server_env,
    silent_legacy_argv,
    silent_legacy_env,
    skip_unless_old_sdk,
    skip_unless_sdk,
)

pytestmark = pytest.mark.interop

PROBE_TIMEOUT = 3.0
"""The session's default ``probe_timeout``, passed explicitly."""
DISCOVER = "server/discover"
OLD_SDK_PROTOCOL = "2025-03-26"
"""What ``mcp==1.9.3`` answers ``initialize`` with (its newest revision)."""


# -- fixtures --------------------------------------------------------------------------


@pytest.fixture
def era_options() -> Iterator[dict[str, Any]]:
    """A fresh era cache for the test: ``era_cache=`` if the engine takes one.

    The process-wide cache (``trio_mcp._eras.era_cache``) is cleared before and after
    either way, so no verdict leaks between tests.
    """
    from trio_mcp import _eras

    shared = getattr(_eras, "era_cache", None)
    if shared is not None:
        shared.clear()
    cache_type = getattr(trio_mcp, "EraCache", None)
    yield {"era_cache": cache_type()} if cache_type is not None else {}
    if shared is not None:
        shared.clear()


@pytest.fixture
def sdk() -> None:
    skip_unless_sdk()


@pytest.fixture
def old_sdk() -> None:
    skip_unless_old_sdk()


@pytest.fixture
def methods_log(tmp_path: Path) -> Path:
    return tmp_path / "methods.log"


def starts(log: list[str]) -> int:
    """How many server processes wrote to the methods log."""
    return sum(1 for line in log if line.startswith("start "))


def after_last_start(log: list[str]) -> list[str]:
    """The methods the last server process received."""
    for index in range(len(log) - 1, -1, -1):
        if log[index].startswith("start "):
            return log[index + 1 :]
    return log


def _discover(request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": DISCOVER,
        "params": {"_meta": modern_meta()},
    }


def _initialize(request_id: int = 2) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": initialize_params(),
    }


# -- the fixtures themselves, raw JSON-RPC ---------------------------------------------


async def test_fact_slow_dual_server_reads_queued_probe_first(sdk: None) -> None:
    """Probe and initialize queued before the server reads: modern wins, init gets -32022."""
    argv = sdk_server_argv("stdio", mode="dual", start_delay=1.0)
    with trio.fail_after(20):
        async with open_stdio_peer(argv, sdk_server_env()) as peer:
            await peer.send(_discover(1))
            await peer.send(_initialize(2))
            discovered = await peer.receive_response(1)
            assert "2026-07-28" in discovered["result"]["supportedVersions"]
            refused = await peer.receive_response(2)
            assert refused["error"]["code"] == -32022


async def test_fact_silent_legacy_server_ignores_probe(methods_log: Path) -> None:
    with trio.fail_after(20):
        async with open_stdio_peer(silent_legacy_argv(), silent_legacy_env(methods_log)) as peer:
            await peer.send(_discover(1))
            with trio.move_on_after(1.0) as waited:
                await peer.receive()
            assert waited.cancelled_caught, "the silent server answered server/discover"
            init = await peer.request(2, "initialize", initialize_params())
            assert init["result"]["protocolVersion"] == LEGACY_VERSION
    assert read_methods_log(methods_log)[1:] == [DISCOVER, "initialize"]


async def test_fact_old_sdk_stdio_dies_on_probe(old_sdk: None, methods_log: Path) -> None:
    """mcp==1.9.3 over stdio: server/discover kills the session, never an answer.

    The process does not exit at once: the SDK's stdin reader is a worker thread blocked
    in ``readline`` that the interpreter waits for, so the process hangs until the next
    line (or the end of input) arrives, then exits 1, again without an answer.
    """
    with trio.fail_after(20):
        async with open_stdio_peer(old_sdk_server_argv(), old_sdk_server_env(methods_log)) as peer:
            await peer.send(_discover(1))
            with trio.move_on_after(2.0) as waited:
                await peer.receive()
            assert waited.cancelled_caught, "the old SDK answered server/discover"
            assert peer.process.returncode is None  # hung, not gone
            await peer.send(_initialize(2))
            with pytest.raises(EOFError):
                await peer.receive()
            await peer.process.wait()
            assert peer.process.returncode == 1
            assert "ValidationError" in peer.stderr()
    # the second line was read, but by the dying process's reader thread: never handled
    assert read_methods_log(methods_log)[1:] == [DISCOVER]


async def test_fact_old_sdk_stdio_handshake(old_sdk: None) -> None:
    with trio.fail_after(20):
        async with open_stdio_peer(old_sdk_server_argv(), old_sdk_server_env()) as peer:
            init = await peer.request(2, "initialize", initialize_params())
            assert init["result"]["protocolVersion"] == OLD_SDK_PROTOCOL
            assert init["result"]["serverInfo"]["version"] == OLD_SDK_VERSION


async def test_fact_old_sdk_http_probe(old_sdk: None, methods_log: Path) -> None:
    """Stateful Streamable HTTP refuses the probe (400, no session) and stays usable."""
    async with open_old_sdk_http("http", methods_log=methods_log) as peer:
        with trio.fail_after(20):
            async with httpx.AsyncClient(timeout=10) as client:
                probe = await client.post(
                    peer.url, json=_discover(1), headers=modern_http_headers(DISCOVER)
                )
                assert probe.status_code == 400
                assert probe.json()["error"] == {
                    "code": -32600,
                    "message": "Bad Request: Missing session ID",
                }
                init = await client.post(
                    peer.url, json=_initialize(2), headers=legacy_http_headers()
                )
                assert init.status_code == 200
                assert init.headers["mcp-session-id"]
                # /mcp without the slash is only a redirect
                redirect = await client.post(
                    peer.base_url + "/mcp", json=_initialize(3), headers=legacy_http_headers()
                )
                assert redirect.status_code == 307


async def test_fact_old_sdk_stateless_http_is_poisoned_by_probe(old_sdk: None) -> None:
    """Stateless Streamable HTTP: the probe's stream ends empty, then every request is a 500.

    (The crash escapes into the SDK's session manager.) No client can open such a server
    after probing it; documented here, not tested through the session.
    """
    async with open_old_sdk_http("http", stateless=True) as peer:
        with trio.fail_after(20):
            async with httpx.AsyncClient(timeout=10) as client:
                probe = await client.post(
                    peer.url, json=_discover(1), headers=modern_http_headers(DISCOVER)
                )
                assert probe.status_code == 200
                assert probe.headers["content-type"].startswith("text/event-stream")
                assert probe.text == ""
                init = await client.post(
                    peer.url, json=_initialize(2), headers=legacy_http_headers()
                )
                assert init.status_code == 500


async def test_fact_old_sdk_sse_probe_ends_stream(old_sdk: None) -> None:
    """HTTP+SSE: the probe POST is accepted (202), then the session's event stream ends."""
    async with open_old_sdk_http("sse") as peer:
        with trio.fail_after(20):
            async with httpx.AsyncClient(timeout=10) as client:
                async with open_sse_stream(client, peer.url) as events:
                    event, endpoint = await events.next_event()
                    assert event == "endpoint"
                    posted = await client.post(
                        peer.base_url + endpoint, json=_discover(1), headers=legacy_http_headers()
                    )
                    assert posted.status_code == 202
                    with pytest.raises((StopAsyncIteration, httpx.TransportError)):
                        await events.next_event()
            # The server lives on: a new SSE session works. (A new client: right after the
            # crash, the POST's pooled keep-alive connection may be reset by the server.)
            async with httpx.AsyncClient(timeout=10) as client:
                async with open_sse_stream(client, peer.url) as events:
                    _event, endpoint = await events.next_event()
                    posted = await client.post(
                        peer.base_url + endpoint, json=_initialize(2), headers=legacy_http_headers()
                    )
                    assert posted.status_code == 202
                    _event, data = await events.next_event()
                    assert json.loads(data)["result"]["protocolVersion"] == OLD_SDK_PROTOCOL


# -- the session against them ----------------------------------------------------------


@pytest.mark.parametrize("delay", [4.0, 20.0])
async def test_auto_opens_slow_dual_era_server_modern(
    sdk: None, era_options: dict[str, Any], delay: float
) -> None:
    """A dual-era server slower to start than the probe timeout still ends up modern."""
    params = StdioParameters(
        sdk_server_argv("stdio", mode="dual", start_delay=delay), env=sdk_server_env()
    )
    with trio.fail_after(delay + 15):
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(
                nursery, params, protocol="auto", probe_timeout=PROBE_TIMEOUT, **era_options
            ) as session:
                assert session.era == "modern"
                assert session.protocol_version == "2026-07-28"
                result = await session.call_tool("echo", {"text": "slow"})
                assert not result.is_error
                assert result.text == "slow"


async def test_auto_opens_silent_legacy_server_in_time(
    era_options: dict[str, Any], methods_log: Path
) -> None:
    """No answer to the probe: ``initialize`` within probe_timeout + a handshake."""
    params = StdioParameters(silent_legacy_argv(), env=silent_legacy_env(methods_log))
    with trio.fail_after(PROBE_TIMEOUT + 10):
        async with trio.open_nursery() as nursery:
            started = trio.current_time()
            async with trio_mcp.open_mcp_session(
                nursery, params, protocol="auto", probe_timeout=PROBE_TIMEOUT, **era_options
            ) as session:
                elapsed = trio.current_time() - started
                assert session.era == "legacy"
                assert session.protocol_version == LEGACY_VERSION
                assert (await session.call_tool("echo", {"text": "quiet"})).text == "quiet"
    assert elapsed < PROBE_TIMEOUT + 2, f"opening took {elapsed:.2f} s"
    log = read_methods_log(methods_log)
    assert starts(log) == 1
    assert log[1:3] == [DISCOVER, "initialize"]
    assert "tools/call" in log


async def test_auto_restarts_old_sdk_stdio_server_once_then_remembers(
    old_sdk: None, era_options: dict[str, Any], methods_log: Path
) -> None:
    """mcp==1.9.3 dies on the probe: restart once, handshake; the next open does not probe."""
    params = StdioParameters(old_sdk_server_argv("stdio"), env=old_sdk_server_env(methods_log))
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(
                nursery, params, protocol="auto", probe_timeout=PROBE_TIMEOUT, **era_options
            ) as session:
                assert session.era == "legacy"
                assert session.protocol_version == OLD_SDK_PROTOCOL
                assert (await session.call_tool("echo", {"text": "old"})).text == "old"
            first = read_methods_log(methods_log)
            assert starts(first) == 2, first  # the probed process died; one restart
            assert first.count(DISCOVER) == 1, first
            assert DISCOVER not in after_last_start(first)

            started = trio.current_time()
            async with trio_mcp.open_mcp_session(
                nursery, params, protocol="auto", probe_timeout=PROBE_TIMEOUT, **era_options
            ) as session:
                elapsed = trio.current_time() - started
                assert session.era == "legacy"
                assert (await session.call_tool("echo", {"text": "again"})).text == "again"
    second = read_methods_log(methods_log)[len(first) :]
    assert starts(second) == 1, second
    assert DISCOVER not in second, second
    assert second[1] == "initialize", second
    assert elapsed < PROBE_TIMEOUT, f"the second open took {elapsed:.2f} s"


async def _open_old_http(peer: HttpPeer, era_options: dict[str, Any], target: Any) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(
            nursery, target, protocol="auto", probe_timeout=PROBE_TIMEOUT, **era_options
        ) as session:
            assert session.era == "legacy"
            assert session.protocol_version == OLD_SDK_PROTOCOL
            assert (await session.call_tool("echo", {"text": "one"})).text == "one"
            assert (await session.call_tool("echo", {"text": "two"})).text == "two"


async def test_auto_opens_old_sdk_streamable_http(
    old_sdk: None, era_options: dict[str, Any], methods_log: Path
) -> None:
    """Stateful Streamable HTTP: the probe's 400 means legacy; the origin is remembered."""
    async with open_old_sdk_http("http", methods_log=methods_log) as peer:
        with trio.fail_after(20):
            await _open_old_http(peer, era_options, peer.url)
            assert read_methods_log(methods_log).count(DISCOVER) <= 1
            await _open_old_http(peer, era_options, peer.url)
    log = read_methods_log(methods_log)
    assert log.count(DISCOVER) <= 1, log  # the second session did not probe again
    assert log.count("initialize") == 2, log


async def test_auto_opens_old_sdk_sse_endpoint(
    old_sdk: None, era_options: dict[str, Any], methods_log: Path
) -> None:
    """The SSE endpoint's URL: Streamable HTTP fails, HTTP+SSE fallback, never a probe on it."""
    async with open_old_sdk_http("sse", methods_log=methods_log) as peer:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                async with trio_mcp.open_mcp_session(
                    nursery, peer.url, protocol="auto", probe_timeout=PROBE_TIMEOUT, **era_options
                ) as session:
                    assert session.era == "legacy"
                    assert session.transport.using_sse  # type: ignore[attr-defined]
                    assert (await session.call_tool("echo", {"text": "sse"})).text == "sse"
                    assert (await session.call_tool("echo", {"text": "alive"})).text == "alive"
    log = read_methods_log(methods_log)
    assert DISCOVER not in log, log  # logged: what reached the SDK's SSE sessions
    assert "initialize" in log


async def test_explicit_sse_parameters_never_probe(
    old_sdk: None, era_options: dict[str, Any], methods_log: Path
) -> None:
    """``SSEParameters`` (HTTP+SSE, legacy by definition): no server/discover, ever."""
    async with open_old_sdk_http("sse", methods_log=methods_log) as peer:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                async with trio_mcp.open_mcp_session(
                    nursery,
                    SSEParameters(peer.url),
                    protocol="auto",
                    probe_timeout=PROBE_TIMEOUT,
                    **era_options,
                ) as session:
                    assert session.era == "legacy"
                    assert session.protocol_version == OLD_SDK_PROTOCOL
                    assert (await session.call_tool("echo", {"text": "sse"})).text == "sse"
    log = read_methods_log(methods_log)
    assert DISCOVER not in log, log
    assert log.count("initialize") == 1, log
