"""Long-running tools as server tasks: SEP-2663 (2026-07-28) and 2025-11-25, under MockClock."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp.testing import MockServer, ToolContext

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


def text(result: trio_mcp.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    return block.text


def methods(server: MockServer) -> list[str]:
    return [str(m.get("method")) for m in server.received if "method" in m]


def slow_server(seconds: float, *, eras: Any = "both", task: Any = "required") -> MockServer:
    server = MockServer(eras=eras)

    @server.tool(task=task)
    async def slow(ctx: ToolContext) -> str:
        await trio.sleep(seconds)
        return "done"

    return server


async def accept(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


# -- SEP-2663 (2026-07-28) ----------------------------------------------------------------


def _no_listen(params: dict[str, Any]) -> dict[str, Any]:
    from trio_mcp.testing._wire import RpcError

    raise RpcError(-32601, "Method not found")


async def test_modern_call_tool_polls_at_the_server_interval(autojump_clock: Any) -> None:
    server = slow_server(4.5)
    # a server without task pushes (they are tested in test_listen_filters.py)
    server.add_method("subscriptions/listen", _no_listen)
    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        start = trio.current_time()
        result = await session.call_tool("slow")
        assert text(result) == "done"
        assert trio.current_time() - start == 5.0  # polls at 1, 2, 3, 4, 5 s
    assert methods(server).count("tasks/get") == 5
    assert server.tasks["task-1"].status == "completed"
    caps = server.client_capabilities or {}
    assert caps["extensions"] == {"io.modelcontextprotocol/tasks": {}}


async def test_drifted_field_names_are_decoded(autojump_clock: Any) -> None:
    server = slow_server(0.6)
    server.task_field_spelling = "ttlSeconds"
    server.task_poll_interval_ms = 250
    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        async with session.start_tool_task("slow") as task:
            assert task.state is not None and task.state.ttl == 60.0
            assert task.state.poll_interval == 0.25
            await task.result()
        assert trio.current_time() == 0.6  # the status push, not the next 0.25 s poll


def test_decode_task_accepts_every_spelling() -> None:
    from trio_mcp._tasks import decode_task

    base = {"taskId": "t", "status": "working"}
    assert decode_task({**base, "ttlMs": 1500, "pollIntervalMs": 20}, "x").ttl == 1.5
    assert decode_task({**base, "ttlSeconds": 3}, "x").ttl == 3.0
    assert decode_task({**base, "pollIntervalMilliseconds": 500}, "x").poll_interval == 0.5
    assert decode_task({**base, "ttl": None, "pollInterval": 100}, "x").poll_interval == 0.1
    with pytest.raises(trio_mcp.ProtocolError, match="unknown status 'paused'"):
        decode_task({"taskId": "t", "status": "paused"}, "x")


async def test_modern_task_input_goes_through_the_elicitation_handler(autojump_clock: Any) -> None:
    server = MockServer()

    @server.tool(task="required")
    async def greet(ctx: ToolContext) -> str:
        await trio.sleep(1)
        answer = await ctx.elicit({"message": "name?", "requestedSchema": SCHEMA})
        return f"hello {answer['content']['name']}"

    async with trio_mcp.open_mcp_session(server, tasks=True, elicitation=accept) as session:
        result = await session.call_tool("greet")
    assert text(result) == "hello Ada"
    task = server.tasks["task-1"]
    assert task.updates == [{"input-1": {"action": "accept", "content": {"name": "Ada"}}}]
    assert "tasks/update" in methods(server)


async def test_modern_failed_task_raises_its_error(autojump_clock: Any) -> None:
    server = MockServer()

    @server.tool(task="required")
    async def broken(ctx: ToolContext) -> str:
        await trio.sleep(1)
        raise RuntimeError("disk on fire")

    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        with pytest.raises(trio_mcp.tasks.TaskFailedError, match="disk on fire") as info:
            await session.call_tool("broken")
    assert info.value.code == -32603
    assert info.value.task_id == "task-1"


async def test_the_callers_scope_cancels_the_task(autojump_clock: Any) -> None:
    server = slow_server(float("inf"))
    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        with trio.move_on_after(2.5):
            await session.call_tool("slow")
        task = server.tasks["task-1"]
        assert task.cancel_requested and task.status == "cancelled"
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("slow", timeout=3)
        assert server.tasks["task-2"].cancel_requested
        assert trio.current_time() == 5.5


async def test_unknown_status_is_a_protocol_error(autojump_clock: Any) -> None:
    server = MockServer()

    @server.tool(task="required")
    async def odd(ctx: ToolContext) -> str:
        assert ctx.task is not None
        ctx.task.status = "paused"
        await trio.sleep_forever()

    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        with pytest.raises(trio_mcp.ProtocolError, match="unknown status 'paused'"):
            await session.call_tool("odd")
    assert server.tasks["task-1"].cancel_requested


async def test_a_forgotten_task_raises_task_lost(autojump_clock: Any) -> None:
    server = MockServer()

    @server.tool(task="required")
    async def amnesia(ctx: ToolContext) -> str:
        assert ctx.task is not None
        del ctx.server.tasks[ctx.task.task_id]
        await trio.sleep_forever()

    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        with pytest.raises(trio_mcp.tasks.TaskLostError) as info:
            await session.call_tool("amnesia")
    assert isinstance(info.value.__cause__, trio_mcp.ServerError)


async def test_without_the_extension_the_tool_runs_inline(autojump_clock: Any) -> None:
    server = slow_server(2)
    async with trio_mcp.open_mcp_session(server) as session:
        assert text(await session.call_tool("slow")) == "done"
    assert server.tasks == {}


async def test_handle_api_status_changes_and_cleanup(autojump_clock: Any) -> None:
    server = MockServer()

    @server.tool(task="required")
    async def staged(ctx: ToolContext) -> str:
        assert ctx.task is not None
        await trio.sleep(1.5)
        ctx.task.set_status("working", "half way")
        await trio.sleep(10)
        return "finished"

    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        async with session.start_tool_task("staged") as task:
            assert task.task_id == "task-1"
            assert task.state is not None and task.state.status == "working"
            state = await task.wait_for_change()
            assert state is not None and state.status_message == "half way"
            assert trio.current_time() == 2.0
            assert text(await task.result()) == "finished"
        assert not server.tasks["task-1"].cancel_requested
        async with session.start_tool_task("staged") as task:
            assert task.task_id == "task-2"
        assert server.tasks["task-2"].cancel_requested  # nothing left running


async def test_handle_api_without_a_task(autojump_clock: Any) -> None:
    server = slow_server(1)
    async with trio_mcp.open_mcp_session(server) as session:
        async with session.start_tool_task("slow") as task:
            assert task.task_id is None and task.state is None
            assert text(await task.result()) == "done"


# -- 2025-11-25 ---------------------------------------------------------------------------


async def test_legacy_tasks_are_driven_with_tasks_result(autojump_clock: Any) -> None:
    server = slow_server(2.5, eras="legacy")
    async with trio_mcp.open_mcp_session(server) as session:
        assert session.protocol_version == "2025-11-25"
        await session.list_tools()
        result = await session.call_tool("slow")
        assert text(result) == "done"
        # the status notification at 2.5 s wakes the poll before the 3 s interval
        assert trio.current_time() == 2.5
        states = await session.list_tasks()
    assert [(s.task_id, s.status) for s in states] == [("task-1", "completed")]
    call = next(m for m in server.received if m.get("method") == "tools/call")
    assert call["params"]["task"] == {}
    assert "tasks/result" in methods(server)


async def test_legacy_task_input_carries_related_task_meta(autojump_clock: Any) -> None:
    server = MockServer(eras="legacy")
    seen: list[Any] = []

    async def elicit(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
        seen.append(ctx.meta)
        return await accept(params, ctx)

    @server.tool(task="optional")
    async def greet(ctx: ToolContext) -> str:
        answer = await ctx.elicit({"message": "name?", "requestedSchema": SCHEMA})
        return f"hello {answer['content']['name']}"

    async with trio_mcp.open_mcp_session(server, tasks=True, elicitation=elicit) as session:
        await session.list_tools()
        assert text(await session.call_tool("greet")) == "hello Ada"
    assert seen == [{"io.modelcontextprotocol/related-task": {"taskId": "task-1"}}]


async def test_legacy_optional_tool_runs_inline_unless_tasks_enabled(autojump_clock: Any) -> None:
    server = slow_server(1, eras="legacy", task="optional")
    async with trio_mcp.open_mcp_session(server) as session:
        await session.list_tools()
        assert text(await session.call_tool("slow")) == "done"
    assert server.tasks == {}


async def test_legacy_failed_and_cancelled_tasks(autojump_clock: Any) -> None:
    server = MockServer(eras="legacy")

    @server.tool(task="required")
    async def broken(ctx: ToolContext) -> str:
        await trio.sleep(1)
        raise RuntimeError("nope")

    @server.tool(task="required")
    async def endless(ctx: ToolContext) -> str:
        await trio.sleep_forever()

    async with trio_mcp.open_mcp_session(server) as session:
        await session.list_tools()
        with pytest.raises(trio_mcp.tasks.TaskFailedError, match="nope"):
            await session.call_tool("broken")
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("endless", timeout=5)
    assert server.tasks["task-2"].cancel_requested


# -- the blocking and asyncio handles --------------------------------------------------------


def staged_server() -> MockServer:
    server = MockServer()
    server.task_poll_interval_ms = 10

    @server.tool(task="required")
    async def staged(ctx: ToolContext) -> str:
        assert ctx.task is not None
        await trio.sleep(0.05)
        ctx.task.set_status("working", "half way")
        await trio.sleep(0.05)
        return "finished"

    @server.tool(task="required")
    async def forever(ctx: ToolContext) -> str:
        await trio.sleep_forever()
        return "never"

    return server


def test_blocking_task_handle() -> None:
    server = staged_server()
    with trio_mcp.open_blocking_session(server, tasks=True) as session:
        with session.start_tool_task("staged") as task:
            assert isinstance(task, trio_mcp.BlockingToolTask)
            assert task.task_id == "task-1"
            assert task.state is not None and task.state.status == "working"
            state = task.wait_for_change(timeout=10)
            assert state is not None and state.status_message == "half way"
            assert text(task.result(timeout=10)) == "finished"
        assert not server.tasks["task-1"].cancel_requested
        with session.start_tool_task("forever") as task:
            polled = task.poll(timeout=10)
            assert polled is not None and polled.status == "working"
            with pytest.raises(trio.TooSlowError):
                task.result(timeout=0.05)  # the wait ends; the task runs on
            assert not server.tasks["task-2"].cancel_requested
        assert server.tasks["task-2"].cancel_requested  # leaving the block cancels it
        with session.start_tool_task("forever") as task:
            task.cancel()
            assert task.state is not None and task.state.status == "cancelled"
            assert server.tasks["task-3"].cancel_requested
            with pytest.raises(trio_mcp.tasks.TaskCancelledError):
                task.result()


def test_asyncio_task_handle() -> None:
    import asyncio

    server = staged_server()

    async def main() -> None:
        async with trio_mcp.open_asyncio_session(server, tasks=True) as session:
            async with session.start_tool_task("staged") as task:
                assert isinstance(task, trio_mcp.AsyncioToolTask)
                assert task.task_id == "task-1"
                state = await task.wait_for_change()
                assert state is not None and state.status_message == "half way"
                assert text(await task.result()) == "finished"
            async with session.start_tool_task("forever") as task:
                polled = await task.poll()
                assert polled is not None and polled.status == "working"
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(task.result(), 0.05)
                assert not server.tasks["task-2"].cancel_requested
            assert server.tasks["task-2"].cancel_requested
            async with session.start_tool_task("forever") as task:
                await task.cancel()
                assert task.state is not None and task.state.status == "cancelled"
                with pytest.raises(trio_mcp.tasks.TaskCancelledError):
                    await task.result()

    asyncio.run(main())


# -- the client as task receiver (2025-11-25, server-side tasks/* of the client) ------------


async def test_task_receiver_serves_get_result_list_and_cancel(autojump_clock: Any) -> None:
    import msgspec

    from trio_mcp._handlers import HandlerError
    from trio_mcp._tasks import TaskReceiver

    async def handle(method: str, params: Any, ctx: Any) -> Any:
        await trio.sleep(2)
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    def raw(body: Any) -> msgspec.Raw:
        return msgspec.Raw(msgspec.json.encode(body))

    async with trio.open_nursery() as nursery:
        receiver = TaskReceiver(nursery, handle, lambda method: method != "roots/list")
        assert receiver.capabilities()["tasks"]["requests"] == {
            "sampling": {"createMessage": {}},
            "elicitation": {"create": {}},
        }
        params = raw({"messages": [], "maxTokens": 5, "task": {"ttl": 60000}})
        task = receiver.wants_task("sampling/createMessage", params)
        assert task == {"ttl": 60000}
        assert receiver.wants_task("sampling/createMessage", raw({"maxTokens": 5})) is None
        created = receiver.create("sampling/createMessage", params, None, task)
        task_id = created["task"]["taskId"]
        assert created["task"]["status"] == "working" and created["task"]["ttl"] == 60000
        result = await receiver.serve("tasks/result", raw({"taskId": task_id}))  # blocks
        assert trio.current_time() == 2.0
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        got = await receiver.serve("tasks/get", raw({"taskId": task_id}))
        assert got["status"] == "completed"
        with pytest.raises(HandlerError) as caught:
            await receiver.serve("tasks/cancel", raw({"taskId": task_id}))
        assert caught.value.code == -32602  # already ended
        second = receiver.create("sampling/createMessage", params, None, task)["task"]["taskId"]
        cancelled = await receiver.serve("tasks/cancel", raw({"taskId": second}))
        assert cancelled["status"] == "cancelled"
        listed = await receiver.serve("tasks/list", raw({}))
        assert [entry["status"] for entry in listed["tasks"]] == ["completed", "cancelled"]
        with pytest.raises(HandlerError):
            await receiver.serve("tasks/result", raw({"taskId": second}))
        await trio.sleep(61)  # past the ttl the ended tasks are dropped
        with pytest.raises(HandlerError) as caught:
            await receiver.serve("tasks/get", raw({"taskId": task_id}))
        assert caught.value.code == -32602
        assert (await receiver.serve("tasks/list", raw({})))["tasks"] == []
