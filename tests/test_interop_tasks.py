"""Tasks against a real server: server-everything's ``simulate-research-query`` (2025-11-25).

The tool declares ``execution.taskSupport: "required"``; the server announces
``tasks.requests.tools.call``, so ``call_tool`` sends ``task`` and drives the task through
``tasks/get`` and ``tasks/result`` (with the elicitation it asks for when ``ambiguous``).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import StdioParameters

from .interop_peers import everything_argv, everything_env, skip_unless_peers

pytestmark = pytest.mark.interop


@pytest.fixture
def everything() -> StdioParameters:
    skip_unless_peers()
    return StdioParameters(everything_argv("stdio"), env=everything_env())


async def choose(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    return {"action": "accept", "content": {"interpretation": "technical"}}


async def research_tool(session: trio_mcp.ClientSession) -> None:
    tools = {tool.name: tool for tool in await session.list_tools()}
    tool = tools.get("simulate-research-query")
    if tool is None:
        pytest.skip("this server-everything has no task tool")


async def test_everything_task_tool_runs_through_call_tool(everything: StdioParameters) -> None:
    async with trio_mcp.open_mcp_session(everything, protocol="legacy") as session:
        await research_tool(session)
        with trio.fail_after(30):
            result = await session.call_tool("simulate-research-query", {"topic": "trio"})
        assert not result.is_error
        block = result.content[0]
        assert isinstance(block, trio_mcp.TextContent) and "Research Report" in block.text
        states = await session.list_tasks()
        assert any(state.status == "completed" for state in states)


async def test_everything_task_asks_for_input(everything: StdioParameters) -> None:
    async with trio_mcp.open_mcp_session(
        everything, protocol="legacy", elicitation=choose
    ) as session:
        await research_tool(session)
        with trio.fail_after(30):
            result = await session.call_tool(
                "simulate-research-query", {"topic": "python", "ambiguous": True}
            )
        block = result.content[0]
        assert isinstance(block, trio_mcp.TextContent)
        assert "Clarification" in block.text


async def test_everything_task_cancelled_by_the_callers_scope(
    everything: StdioParameters,
) -> None:
    async with trio_mcp.open_mcp_session(everything, protocol="legacy") as session:
        await research_tool(session)
        with trio.move_on_after(1.5):
            await session.call_tool("simulate-research-query", {"topic": "slow"})
        states = await session.list_tasks()
        assert [state.status for state in states] == ["cancelled"]
