"""listen() filters: the tasks extension's taskIds, other extensions' fields, typed task pushes."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.tasks import TaskState
from trio_mcp.testing import MockServer, ToolContext
from trio_mcp.testing._wire import RpcError


def task_server(eras: Any) -> MockServer:
    server = MockServer(eras=eras)

    @server.tool(task="required")
    async def slow(ctx: ToolContext, seconds: float = 5) -> str:
        await trio.sleep(seconds)
        return "done"

    return server


async def test_task_status_is_pushed_on_a_listen_stream_with_task_ids(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = task_server("modern")
    pushed: list[tuple[float, TaskState]] = []
    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        session.on_task_status(lambda state: pushed.append((trio.current_time(), state)))
        async with session.start_tool_task("slow", {"seconds": 5}) as task:
            assert task.task_id is not None
            async with (
                session.listen(task_ids=[task.task_id]) as channel,
                session.listen(task_ids=["another"]) as other,
            ):
                note = await channel.receive()
                assert note.method == "notifications/tasks"
                assert note.params["taskId"] == task.task_id
                assert note.params["status"] == "completed"
                assert trio.current_time() == 5.0
                with pytest.raises(trio.WouldBlock):
                    other.receive_nowait()  # a stream for another task got nothing
    listens = [m for m in server.received if m.get("method") == "subscriptions/listen"]
    assert listens[0]["params"]["notifications"] == {"taskIds": [task.task_id]}
    # one push per stream that named the task, typed for the callback
    assert [(at, state.status) for at, state in pushed] == [(5.0, "completed")]
    assert pushed[0][1].task_id == task.task_id


async def test_a_2025_server_pushes_status_anyway_listen_filters_it_by_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = task_server("legacy")
    async with trio_mcp.open_mcp_session(server) as session:
        assert session.protocol_version == "2025-11-25"
        await session.list_tools()  # (the tool's taskSupport: a task-augmented call)
        seen: list[str] = []
        session.on_task_status(lambda state: seen.append(state.status))
        async with session.start_tool_task("slow", {"seconds": 5}) as task:
            assert task.task_id is not None
            async with (
                session.listen(task_ids=[task.task_id]) as channel,
                session.listen(task_ids=["another"]) as other,
            ):
                note = await channel.receive()
                assert note.method == "notifications/tasks/status"
                assert note.params["taskId"] == task.task_id
                assert trio.current_time() == 5.0
                with pytest.raises(trio.WouldBlock):
                    other.receive_nowait()
        assert "completed" in seen


async def test_extension_filters_pass_through_and_select_notifications(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = MockServer(eras="modern")
    server.listen_filters.add("com.example/alerts")
    async with trio_mcp.open_mcp_session(server) as session:
        handled: list[dict[str, Any]] = []
        session.add_notification_handler(
            "notifications/com.example/alert", lambda note: handled.append(note.params)
        )
        async with (
            session.listen(filters={"com.example/alerts": {"level": "high"}}) as alerts,
            session.listen(tools=True) as plain,
        ):
            await server.notify_listeners(
                "com.example/alerts", "notifications/com.example/alert", {"text": "disk full"}
            )
            note = await alerts.receive()
            assert note.method == "notifications/com.example/alert"
            assert note.params["text"] == "disk full"
            with pytest.raises(trio.WouldBlock):
                plain.receive_nowait()  # the stream without the filter got nothing
        listens = [m for m in server.received if m.get("method") == "subscriptions/listen"]
        assert listens[0]["params"]["notifications"] == {"com.example/alerts": {"level": "high"}}
        assert [params["text"] for params in handled] == ["disk full"]


async def test_filters_cannot_spell_a_keyword_field() -> None:
    async with trio_mcp.open_mcp_session(MockServer(eras="modern")) as session:
        with pytest.raises(ValueError, match="task_ids="):
            async with session.listen(filters={"taskIds": ["t"]}):
                pass
        with pytest.raises(ValueError, match="tools="):
            async with session.listen(filters={"toolsListChanged": True}):
                pass


# -- task handles wait on pushes (issue 37) --------------------------------------------------


def listens(server: MockServer) -> list[list[str]]:
    return [
        m["params"]["notifications"].get("taskIds")
        for m in server.received
        if m.get("method") == "subscriptions/listen"
    ]


def polls(server: MockServer) -> int:
    return sum(1 for m in server.received if m.get("method") == "tasks/get")


async def test_task_handles_wait_on_pushes_on_one_shared_stream(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = task_server("modern")
    server.task_poll_interval_ms = 60_000  # polling alone would take a minute
    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        done: dict[str, float] = {}

        async def call(seconds: float) -> None:
            result = await session.call_tool("slow", {"seconds": seconds})
            assert result.text == "done"
            done[str(seconds)] = trio.current_time()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, 5)
            nursery.start_soon(call, 7)
    # each handle woke at its task's push, not at the 60 s poll
    assert done == {"5": 5.0, "7": 7.0}
    # one stream per session: reopened as the set of waiting tasks changed
    # (which call made task-1 is up to the scheduler)
    assert listens(server)[:2] == [["task-1"], ["task-1", "task-2"]]
    assert len(listens(server)) == 3 and len(listens(server)[2]) == 1  # the one still waiting
    assert polls(server) == 2  # one tasks/get per push, none on the clock


async def test_task_handles_fall_back_to_polling_when_pushes_are_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = task_server("modern")
    server.task_poll_interval_ms = 3_000

    def refuse(params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(-32601, "Method not found")

    server.add_method("subscriptions/listen", refuse)
    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        result = await session.call_tool("slow", {"seconds": 5})
        assert result.text == "done"
        assert trio.current_time() == 6.0  # polled every 3 s: 3, 6
        assert (await session.call_tool("slow", {"seconds": 1})).text == "done"
    assert listens(server) == [["task-1"]]  # method not found: not asked again


async def test_wait_for_change_wakes_at_the_push(autojump_clock: trio.testing.MockClock) -> None:
    server = task_server("modern")
    server.task_poll_interval_ms = 60_000
    async with trio_mcp.open_mcp_session(server, tasks=True) as session:
        async with session.start_tool_task("slow", {"seconds": 5}) as task:
            state = await task.wait_for_change()
            assert state is not None and state.status == "completed"
            assert trio.current_time() == 5.0
            assert (await task.result()).text == "done"
