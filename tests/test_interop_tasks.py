"""Tasks against real servers, both wire forms.

* 2025-11-25 (SEP-1686): server-everything's ``simulate-research-query`` declares
  ``execution.taskSupport: "required"``; the server announces ``tasks.requests.tools.call``,
  so ``call_tool`` sends ``task`` and drives the task through ``tasks/get`` and
  ``tasks/result`` (with the elicitation it asks for when ``ambiguous``).
* 2026-07-28 (SEP-2663, ``io.modelcontextprotocol/tasks``): fastmcp with ``fastmcp-tasks``
  (``tests/servers/fastmcp_tasks_server.py``): ``tasks/get`` polling at the server's
  ``pollIntervalMs``, input through ``tasks/update``, ``tasks/cancel``, a failed task.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import StdioParameters

from .interop_peers import (
    everything_argv,
    everything_env,
    fastmcp_tasks_argv,
    methods_log_env,
    read_methods_log,
    skip_unless_fastmcp,
    skip_unless_peers,
)

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


# ------------------------------------------- 2025-11-25: the client as task receiver
# server-everything's trigger-*-async tools send sampling/elicitation with a `task`
# param, then poll the client's tasks/get and fetch tasks/result.


async def sample(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    return {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"}


async def give_name(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    return {"action": "accept", "content": {"name": "Ada"}}


async def broken_sampler(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    raise RuntimeError("no model today")


async def async_tool(session: trio_mcp.ClientSession, name: str) -> None:
    if name not in {tool.name for tool in await session.list_tools()}:
        pytest.skip(f"this server-everything has no {name}")


async def test_everything_async_sampling_runs_as_a_client_task(
    everything: StdioParameters,
) -> None:
    async with trio_mcp.open_mcp_session(
        everything, protocol="legacy", tasks=True, sampling=sample
    ) as session:
        await async_tool(session, "trigger-sampling-request-async")
        with trio.fail_after(30):
            result = await session.call_tool("trigger-sampling-request-async", {"prompt": "hi"})
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    assert block.text.startswith("[COMPLETED]"), block.text
    assert "Task created: client-task-1" in block.text
    assert "forty-two" in block.text and '"io.modelcontextprotocol/related-task"' in block.text


async def test_everything_async_elicitation_runs_as_a_client_task(
    everything: StdioParameters,
) -> None:
    async with trio_mcp.open_mcp_session(
        everything, protocol="legacy", tasks=True, elicitation=give_name
    ) as session:
        await async_tool(session, "trigger-elicitation-request-async")
        with trio.fail_after(30):
            result = await session.call_tool("trigger-elicitation-request-async")
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    assert block.text.startswith("[COMPLETED]"), block.text


async def test_everything_async_sampling_failure_is_a_failed_client_task(
    everything: StdioParameters,
) -> None:
    async with trio_mcp.open_mcp_session(
        everything, protocol="legacy", tasks=True, sampling=broken_sampler
    ) as session:
        await async_tool(session, "trigger-sampling-request-async")
        with trio.fail_after(30):
            result = await session.call_tool("trigger-sampling-request-async", {"prompt": "hi"})
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    assert block.text.startswith("[FAILED]"), block.text
    # a handler's exception is a generic internal error: its text stays on the client
    assert "could not handle sampling/createMessage" in block.text, block.text
    assert "no model today" not in block.text


async def test_without_tasks_the_async_tools_are_not_offered(everything: StdioParameters) -> None:
    async with trio_mcp.open_mcp_session(everything, protocol="legacy", sampling=sample) as session:
        names = {tool.name for tool in await session.list_tools()}
    assert "trigger-sampling-request-async" not in names


# ------------------------------------------------- 2026-07-28: fastmcp + fastmcp-tasks


@dataclass
class FastmcpPeer:
    params: StdioParameters
    log: Path

    def lines(self) -> list[str]:
        return read_methods_log(self.log)

    async def wait_for_line(self, line: str) -> None:
        """Wait (bounded by the caller's scope) until the server logged ``line``."""
        while True:
            if line in self.lines():
                return
            await trio.sleep(0.05)  # a real process's worker, not test synchronisation


@pytest.fixture
def fastmcp_peer(tmp_path: Path) -> FastmcpPeer:
    skip_unless_fastmcp()
    log = tmp_path / "methods.log"
    return FastmcpPeer(StdioParameters(fastmcp_tasks_argv(), env=methods_log_env(log)), log)


async def test_fastmcp_task_runs_through_call_tool(fastmcp_peer: FastmcpPeer) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_peer.params, tasks=True) as session:
        assert session.protocol_version == "2026-07-28"
        extensions = session.server_capabilities.extensions
        assert isinstance(extensions, dict) and "io.modelcontextprotocol/tasks" in extensions
        with trio.fail_after(30):
            result = await session.call_tool("crunch", {"n": 3})
    assert not result.is_error
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent) and block.text == "crunched 3"


async def test_fastmcp_task_handle_sees_fields_and_status(fastmcp_peer: FastmcpPeer) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_peer.params, tasks=True) as session:
        with trio.fail_after(30):
            async with session.start_tool_task("crunch", {"n": 4}) as task:
                assert task.task_id
                state = task.state
                assert state is not None and state.status == "working"
                # fastmcp-tasks spells them pollIntervalMs and ttlMs; both become seconds.
                assert state.poll_interval == pytest.approx(0.2)
                assert state.ttl is not None and state.ttl > 0
                changed = await task.wait_for_change()
                assert changed is not None and changed.status == "completed"
                result = await task.result()
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent) and block.text == "crunched 4"


async def test_fastmcp_task_handle_cancel_reaches_the_server(fastmcp_peer: FastmcpPeer) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_peer.params, tasks=True) as session:
        with trio.fail_after(30):
            async with session.start_tool_task("slow") as task:
                await fastmcp_peer.wait_for_line("slow started")
                polled = await task.poll()
                assert polled is not None and polled.status == "working"
                await task.cancel()
                assert task.state is not None and task.state.status == "cancelled"
                assert task.state.created_at == polled.created_at  # kept from tasks/get
            with pytest.raises(trio_mcp.tasks.TaskCancelledError):
                await task.result()
            await fastmcp_peer.wait_for_line("slow cancelled")


async def test_fastmcp_task_cancelled_by_the_callers_scope(fastmcp_peer: FastmcpPeer) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_peer.params, tasks=True) as session:
        with trio.fail_after(30):
            with trio.move_on_after(1.0) as scope:
                await session.call_tool("slow")
            assert scope.cancelled_caught
            await fastmcp_peer.wait_for_line("slow cancelled")
            # the session is still usable afterwards
            result = await session.call_tool("crunch", {"n": 5})
    assert not result.is_error


async def test_fastmcp_failed_task_raises_task_failed_error(fastmcp_peer: FastmcpPeer) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_peer.params, tasks=True) as session:
        with trio.fail_after(30), pytest.raises(trio_mcp.tasks.TaskFailedError) as caught:
            await session.call_tool("explode")
    assert caught.value.code == -32099
    assert caught.value.error_message == "the render farm is on fire"
    assert caught.value.task_id


async def test_fastmcp_task_input_goes_through_the_elicitation_handler(
    fastmcp_peer: FastmcpPeer,
) -> None:
    asked: list[Any] = []

    async def pick(params: Any, ctx: trio_mcp.RequestContext) -> Any:
        asked.append(params)
        return {"action": "accept", "content": {"format": "mp4"}}

    async with trio_mcp.open_mcp_session(
        fastmcp_peer.params, tasks=True, elicitation=pick
    ) as session:
        with trio.fail_after(30):
            result = await session.call_tool("ask")
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent) and block.text == "format mp4"
    assert len(asked) == 1 and asked[0].message == "Format?"


async def test_fastmcp_required_task_tool_needs_the_extension(fastmcp_peer: FastmcpPeer) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_peer.params) as session:
        with trio.fail_after(30), pytest.raises(trio_mcp.MissingClientCapabilityError):
            await session.call_tool("only_task")
    async with trio_mcp.open_mcp_session(fastmcp_peer.params, tasks=True) as session:
        with trio.fail_after(30):
            result = await session.call_tool("only_task")
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent) and block.text == "ran as a task"
