"""Interop over HTTP with real servers from the registries (loopback only).

* ``@modelcontextprotocol/server-everything`` over ``streamableHttp`` and ``sse`` (legacy);
* the official ``mcp`` 2.3.0 SDK's server over Streamable HTTP, modern and legacy, including
  a server restart mid-session (the legacy session expires; the next call re-initializes).
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp._eras import era_cache

from .interop_peers import (
    LISTENING_MARKER,
    LOOPBACK,
    _Output,
    _wait_until_accepting,
    free_loopback_port,
    open_everything_http,
    open_sdk_http,
    sdk_server_argv,
    sdk_server_env,
    skip_unless_peers,
    skip_unless_sdk,
    terminate_process,
)

pytestmark = pytest.mark.interop


@pytest.fixture(autouse=True)
def fresh_era_cache() -> None:
    era_cache.clear()


@pytest.fixture
def peers() -> None:
    skip_unless_peers()


@pytest.fixture
def sdk() -> None:
    skip_unless_sdk()


async def sample(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "sampled-answer"},
        "model": "fake",
    }


async def elicit(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    return {"action": "accept", "content": {"name": "Ada"}}


HANDLERS: dict[str, Any] = {
    "sampling": sample,
    "elicitation": elicit,
    "roots": ["file:///tmp/project"],
}


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
async def test_everything_over_http(peers: None, transport: str) -> None:
    async with open_everything_http(transport) as peer:  # type: ignore[arg-type]
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url, **HANDLERS) as session:
                assert session.era == "legacy"
                if transport == "sse":
                    assert session.transport.using_sse  # type: ignore[attr-defined]
                names = {tool.name for tool in await session.list_tools()}
                assert {"echo", "get-sum", "trigger-sampling-request"} <= names
                assert (await session.call_tool("echo", {"message": "hi"})).text == "Echo: hi"
                seen: list[float] = []
                await session.call_tool(
                    "trigger-long-running-operation", {"duration": 0.3, "steps": 3},
                    on_progress=lambda p: seen.append(p.progress),
                )  # fmt: skip
                assert seen == [1, 2, 3]
                assert (
                    "sampled-answer"
                    in (await session.call_tool("trigger-sampling-request", {"prompt": "x"})).text
                )
                assert not (await session.call_tool("trigger-elicitation-request", {})).is_error
                assert "file:///tmp/project" in (await session.call_tool("get-roots-list", {})).text
                resources = await session.list_resources()
                assert (await session.read_resource(resources[0].uri)).contents
                assert await session.list_prompts()
                await session.set_logging_level("debug")
                async with session.notifications("notifications/message") as rx:
                    await session.call_tool("toggle-simulated-logging", {})
                    with trio.fail_after(30):
                        assert "level" in (await rx.receive()).params


@pytest.mark.parametrize(
    ("mode", "era"), [("dual", "modern"), ("modern", "modern"), ("legacy", "legacy")]
)
async def test_sdk_server_over_streamable_http(sdk: None, mode: str, era: str) -> None:
    async with open_sdk_http("http", mode=mode) as peer:  # type: ignore[arg-type]
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url, **HANDLERS) as session:
                assert session.era == era
                assert {"echo", "ask_name"} <= {tool.name for tool in await session.list_tools()}
                assert (await session.call_tool("echo", {"text": "x"})).text == "x"
                assert "Ada" in (await session.call_tool("ask_name", {})).text
                assert (
                    "sampled-answer" in (await session.call_tool("summarize", {"text": "t"})).text
                )
                assert "file:///tmp/project" in (await session.call_tool("show_roots", {})).text
                assert (await session.read_resource("test://static/text")).contents
                prompt = await session.get_prompt("greeting", {"name": "Ada"})
                assert "Ada" in str(prompt.messages[0].content)
                seen: list[float] = []
                await session.call_tool(
                    "count_with_progress",
                    {"steps": 3},
                    on_progress=lambda p: seen.append(p.progress),
                )
                assert len(seen) == 3
                if era == "modern":
                    await session.set_logging_level("info")
                async with session.notifications("notifications/message") as rx:
                    await session.call_tool("log_messages", {"count": 2})
                    with trio.fail_after(10):
                        await rx.receive()
                async with session.listen(tools=True) as changes:
                    await session.call_tool("add_dynamic_tool", {"name": "fresh"})
                    with trio.fail_after(10):
                        assert (
                            await changes.receive()
                        ).method == "notifications/tools/list_changed"


async def start_sdk(port: int, mode: str) -> tuple[trio.Process, _Output]:
    output = _Output()
    process = await trio.lowlevel.open_process(
        sdk_server_argv("http", mode=mode, port=port),  # type: ignore[arg-type]
        stdin=subprocess.DEVNULL, stdout=output.file, stderr=output.file, env=sdk_server_env(),
    )  # fmt: skip
    with trio.fail_after(30):
        assert await _wait_until_accepting(
            process, port, output, f"{LISTENING_MARKER} {LOOPBACK}:{port}"
        )
    return process, output


async def test_legacy_session_expiry_reinitializes(sdk: None) -> None:
    port = free_loopback_port()
    process, output = await start_sdk(port, "legacy")
    try:
        async with trio.open_nursery() as nursery:
            url = f"http://{LOOPBACK}:{port}/mcp"
            async with trio_mcp.open_mcp_session(nursery, url) as session:
                assert session.era == "legacy"
                first_id = session.transport.session_id  # type: ignore[attr-defined]
                assert (await session.call_tool("echo", {"text": "before"})).text == "before"
                await terminate_process(process)
                output.file.close()
                process, output = await start_sdk(port, "legacy")
                # the restarted server does not know the session: 404, re-initialize, replay
                assert (await session.call_tool("echo", {"text": "after"})).text == "after"
                assert session.transport.session_id not in (None, first_id)  # type: ignore[attr-defined]
    finally:
        await terminate_process(process)
        output.file.close()


async def test_modern_server_restart_is_invisible(sdk: None) -> None:
    port = free_loopback_port()
    process, output = await start_sdk(port, "modern")
    try:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(
                nursery, f"http://{LOOPBACK}:{port}/mcp"
            ) as session:
                assert session.era == "modern"
                assert (await session.call_tool("echo", {"text": "a"})).text == "a"
                await terminate_process(process)
                output.file.close()
                process, output = await start_sdk(port, "modern")
                assert (await session.call_tool("echo", {"text": "b"})).text == "b"
    finally:
        await terminate_process(process)
        output.file.close()


async def test_era_verdict_is_cached_per_origin(sdk: None) -> None:
    async with open_sdk_http("http", mode="legacy") as peer:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, peer.url) as session:
                assert session.era == "legacy"
            origin = f"http://{LOOPBACK}:{peer.port}"
            assert era_cache[origin] == "legacy"
            async with trio_mcp.open_mcp_session(nursery, peer.url) as session:
                assert session.era == "legacy"
