"""The session against trio_mcp.testing.MockServer, in both eras: the documented testing story."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.testing import MockServer, ToolContext, demo_server


def make_server(eras: str) -> MockServer:
    server = MockServer(eras=eras)  # type: ignore[arg-type]

    @server.tool(description="Echo the text back")
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    @server.tool(description="Sleep, then answer")
    async def slow(ctx: ToolContext, seconds: float) -> str:
        await trio.sleep(seconds)
        return "done"

    @server.tool(description="Ask the user")
    async def ask(ctx: ToolContext) -> str:
        answer = await ctx.elicit({"mode": "form", "message": "name?",
                                   "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}})  # fmt: skip
        return str(answer["content"]["name"])

    return server


async def elicit(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize(
    ("eras", "era"), [("both", "modern"), ("legacy", "legacy"), ("modern", "modern")]
)
async def test_auto_mode_against_each_era(eras: str, era: str) -> None:
    server = make_server(eras)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server, elicitation=elicit) as session:
            assert session.era == era
            assert (await session.call_tool("echo", {"text": "hi"})).text == "hi"
            assert (await session.call_tool("ask", {})).text == "Ada"


@pytest.mark.parametrize("eras", ["legacy", "modern"])
async def test_timeout_is_exact_and_server_sees_cancellation(
    eras: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_server(eras)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server) as session:
            start = trio.current_time()
            with pytest.raises(trio.TooSlowError):
                await session.call_tool("slow", {"seconds": 60}, timeout=5)
            assert trio.current_time() - start == 5
            await server.wait_for_message("notifications/cancelled")
            assert len(server.cancelled) == 1


async def test_demo_server_over_stdio_subprocess() -> None:
    import sys

    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(
            nursery, [sys.executable, "-m", "trio_mcp.testing"]
        ) as session:
            assert session.era == "modern"
            names = {tool.name for tool in await session.list_tools()}
            assert {"echo", "add", "slow"} <= names


async def test_demo_server_in_memory_legacy_pinned() -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, demo_server(), protocol="legacy") as session:
            assert session.era == "legacy"
            assert (await session.call_tool("add", {"a": 2, "b": 3})).structured_content == {
                "sum": 5
            }
