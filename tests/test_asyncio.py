"""The asyncio bridge (trio_mcp._asyncio): Trio in guest mode on a running asyncio loop."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import AsyncioSession
from trio_mcp.testing import MockServer, ToolContext, demo_server

from .test_blocking import DEMO, check_surface


def test_asyncio_surface_matches_client_session() -> None:
    check_surface(AsyncioSession, {"async_session"}, {})


def test_asyncio_session_has_no_public_constructor() -> None:
    with pytest.raises(TypeError, match="open_asyncio_session"):
        AsyncioSession()


def test_calls_over_stdio_and_memory_on_one_loop_without_a_second_io_thread() -> None:
    async def main() -> None:
        async with (
            trio_mcp.open_asyncio_session(DEMO) as one,
            trio_mcp.open_asyncio_session(demo_server()) as two,
        ):
            assert one.era in ("legacy", "modern")
            assert one.server_info is not None and one.server_info.name == "trio-mcp-demo"
            assert [tool.name for tool in await one.list_tools()][:2] == ["echo", "add"]
            echo, add = await asyncio.gather(
                one.call_tool("echo", {"text": "hi"}), two.call_tool("add", {"a": 1, "b": 2})
            )
            assert echo.content == [trio_mcp.TextContent(text="hi")]
            assert add.structured_content == {"sum": 3}
            assert (await two.read_resource("demo://readme")).contents
            assert (await two.get_prompt("greeting", {"name": "Ada"})).messages
            assert (await two.list_prompts_page()).prompts
            assert await two.list_resources()
            assert await two.list_resource_templates()
            await two.ping()
        assert one.closed and two.closed
        with pytest.raises(trio.ClosedResourceError):
            await one.list_tools()

    asyncio.run(main())


def test_no_thread_but_the_guest_runs_io_wait() -> None:
    async def main() -> None:
        threads_before = set(threading.enumerate())
        async with trio_mcp.open_asyncio_session(demo_server()) as session:
            reader_threads: list[str] = []
            session.add_notification_handler(
                "*", lambda note: reader_threads.append(threading.current_thread().name)
            )
            await session.set_logging_level("debug")
            await session.call_tool("log", {"level": "warning", "message": "hi"})
            # Trio's guest run parks one helper thread in its I/O wait, and that is all:
            # the session's reader (which runs this callback) runs on the asyncio thread.
            assert len(set(threading.enumerate()) - threads_before) <= 1
            assert reader_threads == [threading.current_thread().name]

    asyncio.run(main())


def test_trio_errors_arrive_as_the_same_exceptions() -> None:
    async def main() -> None:
        async with trio_mcp.open_asyncio_session(DEMO) as session:
            with pytest.raises(trio.TooSlowError):
                await session.call_tool("slow", {"seconds": 60}, timeout=0.05)
            with pytest.raises(trio_mcp.ServerError):
                await session.get_prompt("no-such-prompt")
            with pytest.raises(trio_mcp.ConnectionClosed):
                await session.call_tool("crash")

    asyncio.run(main())


def test_cancelling_the_asyncio_task_cancels_the_request_and_tells_the_server() -> None:
    server = MockServer(eras="both")
    entered = asyncio.Event()
    finished: list[str] = []

    @server.tool()
    async def hang(ctx: ToolContext) -> str:
        entered.set()  # same thread: Trio runs as a guest of this loop
        try:
            await trio.sleep_forever()
        finally:
            finished.append("cancelled")

    async def main() -> None:
        async with trio_mcp.open_asyncio_session(server) as session:
            task = asyncio.ensure_future(session.call_tool("hang"))
            await entered.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert len(server.cancelled) == 1
            assert await session.list_tools()  # still usable
            # asyncio.timeout / wait_for work the same way
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(session.call_tool("hang"), 0.05)
            assert len(server.cancelled) == 2

    asyncio.run(main())
    assert finished == ["cancelled", "cancelled"]


def test_callbacks_and_handlers_may_be_asyncio_coroutines() -> None:
    progress: list[float] = []

    async def on_progress(p: trio_mcp.types.ProgressNotificationParams) -> None:
        await asyncio.sleep(0)  # an asyncio await: this runs as an asyncio task
        progress.append(p.progress)

    async def elicit(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"action": "accept", "content": {"name": "Ada"}}

    async def main() -> None:
        async with trio_mcp.open_asyncio_session(demo_server(), elicitation=elicit) as session:
            await session.call_tool("slow", {"seconds": 0.01, "steps": 2}, on_progress=on_progress)
            result = await session.call_tool("ask_name")
            assert result.content == [trio_mcp.TextContent(text="Hello, Ada!")]
            await session.set_logging_level("debug")
            notes: list[str] = []
            remove = session.add_notification_handler("*", lambda n: notes.append(n.method))
            async with session.notifications("notifications/message") as stream:
                await session.call_tool("log", {"level": "warning", "message": "hi"})
                note = await asyncio.wait_for(stream.receive(), 5)
                assert note.method == "notifications/message"
            remove()
            assert "notifications/message" in notes

    asyncio.run(main())
    assert progress == [1.0, 2.0]


def test_start_up_errors_and_sequential_sessions() -> None:
    async def main() -> None:
        with (  # a deprecated transport keyword that does not fit the target
            pytest.warns(DeprecationWarning, match="StdioParameters"),
            pytest.raises(TypeError, match="headers"),
        ):
            async with trio_mcp.open_asyncio_session(DEMO, headers={}):
                pass
        with pytest.raises(trio_mcp.ConnectionClosed):
            async with trio_mcp.open_asyncio_session([sys.executable, "-c", "pass"]):
                pass
        for _ in range(3):  # each ends its guest run; the next starts a new one
            async with trio_mcp.open_asyncio_session(demo_server()) as session:
                await session.ping()

    asyncio.run(main())


async def test_opening_inside_trio_raises() -> None:
    with pytest.raises(RuntimeError):
        async with trio_mcp.open_asyncio_session(demo_server()):
            pass  # pragma: no cover


def test_typed_callbacks_catalogue_and_keep_alive() -> None:
    async def main() -> None:
        async with trio_mcp.open_asyncio_session(DEMO) as session:
            await session.set_logging_level("debug")
            logged = asyncio.Event()

            async def on_log(params: trio_mcp.types.LoggingMessageNotificationParams) -> None:
                await asyncio.sleep(0)
                logged.set()

            remove = session.on_log(on_log)
            await session.call_tool("log", {"level": "warning", "message": "hi"})
            await asyncio.wait_for(logged.wait(), 10)
            remove()
            async with session.catalogue() as catalogue:
                assert [tool.name for tool in catalogue.tools][:2] == ["echo", "add"]
            with pytest.raises(ValueError, match="debounce"):
                async with session.catalogue(debounce=-1):
                    pass  # pragma: no cover
            keeper = asyncio.ensure_future(session.keep_alive(0.01))
            with pytest.raises(trio_mcp.ConnectionClosed):
                await session.call_tool("crash")
            with pytest.raises(trio_mcp.ConnectionClosed):
                await keeper

    asyncio.run(main())
