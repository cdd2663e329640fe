"""The blocking client (trio_mcp._blocking), from plain threads: no Trio in the test itself."""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import BlockingSession, ClientSession
from trio_mcp.testing import MockServer, ToolContext, demo_server

DEMO = [sys.executable, "-m", "trio_mcp.testing"]

# Parameters whose type is deliberately wider than ClientSession's: these callbacks may be
# plain functions (run in a worker thread / by asyncio) as well as async ones.
WIDENED = {("set_request_handler", "handler")}  # (method, parameter)
# Async context managers become plain (blocking) / async context managers of a stream.
STREAMS = {"notifications", "listen", "catalogue", "start_tool_task"}
RENAMED = {"aclose": "close"}


def public_members(cls: type) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):  # inherited members too, object excepted
        members.update(
            (name, value)
            for name, value in vars(klass).items()
            if not name.startswith("_")
            and (inspect.isfunction(value) or isinstance(value, property))
        )
    return members


def check_surface(cls: type, extra: set[str], renamed: dict[str, str]) -> None:
    ours = public_members(cls)
    theirs = public_members(ClientSession)
    expected = {renamed.get(name, name) for name in theirs}
    assert sorted(set(ours) - expected - extra) == []
    assert sorted(expected - set(ours)) == []
    for name, member in theirs.items():
        mine = ours[renamed.get(name, name)]
        if isinstance(member, property):
            assert isinstance(mine, property), name
            assert inspect.signature(mine.fget) == inspect.signature(member.fget), name
            continue
        sig, my_sig = inspect.signature(member), inspect.signature(mine)
        params = [
            p.replace(annotation=inspect.Parameter.empty) if (name, p.name) in WIDENED else p
            for p in sig.parameters.values()
        ]
        my_params = [
            p.replace(annotation=inspect.Parameter.empty) if (name, p.name) in WIDENED else p
            for p in my_sig.parameters.values()
        ]
        assert my_params == params, name
        if name not in STREAMS and name not in renamed:
            assert my_sig.return_annotation == sig.return_annotation, name


def test_blocking_surface_matches_client_session() -> None:
    check_surface(BlockingSession, {"async_session"}, RENAMED)


def test_blocking_session_has_no_public_constructor() -> None:
    with pytest.raises(TypeError, match="open_blocking_session"):
        BlockingSession()


def test_stdio_demo_server_every_kind_of_call() -> None:
    with trio_mcp.open_blocking_session(DEMO) as session:
        assert session.era in ("legacy", "modern")
        assert session.server_info is not None and session.server_info.name == "trio-mcp-demo"
        assert session.instructions
        assert session.server_capabilities.tools is not trio_mcp.types.ServerCapabilities().tools
        assert [tool.name for tool in session.list_tools()][:2] == ["echo", "add"]
        assert session.list_tools_page().tools
        result = session.call_tool("echo", {"text": "hi"})
        assert isinstance(result, trio_mcp.CallToolResult)
        assert result.content == [trio_mcp.TextContent(text="hi")]
        assert session.call_tool("add", {"a": 1, "b": 2}).structured_content == {"sum": 3}
        assert [r.uri for r in session.list_resources()] == ["demo://readme"]
        assert session.list_resources_page().resources
        assert session.list_resource_templates()
        assert session.list_resource_templates_page().resource_templates
        assert session.read_resource("demo://readme").contents
        assert session.list_prompts()[0].name == "greeting"
        assert session.list_prompts_page().prompts
        assert session.get_prompt("greeting", {"name": "Ada"}).messages
        completion = session.complete(
            trio_mcp.types.PromptReference(name="greeting"), "name", "A"
        ).completion
        assert completion.values
        session.set_logging_level("info")
        session.ping()
        assert session.request("tools/list")["tools"]
        assert session.request("tools/list", result_type=trio_mcp.types.ListToolsResult).tools
        session.notify("notifications/roots/list_changed")
        session.subscribe_resource("demo://readme")
        session.unsubscribe_resource("demo://readme")
        pid = session.transport.pid  # type: ignore[attr-defined]
        assert not session.closed
    assert session.closed
    assert not os.path.exists(f"/proc/{pid}")  # leaving the block ended the server process
    with pytest.raises(trio.ClosedResourceError):
        session.list_tools()
    session.close()  # idempotent


def test_timeout_and_progress_callback_in_a_worker_thread() -> None:
    seen: list[tuple[float, bool]] = []

    def on_progress(progress: trio_mcp.types.ProgressNotificationParams) -> None:
        seen.append((progress.progress, trio.lowlevel.in_trio_run()))

    server = demo_server()
    with trio_mcp.open_blocking_session(server) as session:
        session.call_tool("slow", {"seconds": 0.01, "steps": 2}, on_progress=on_progress)
        assert seen == [(1.0, False), (2.0, False)]
        with pytest.raises(trio.TooSlowError):
            session.call_tool("slow", {"seconds": 60}, timeout=0.05)
        assert len(server.cancelled) == 1  # the server was told


def test_plain_function_handlers_run_outside_the_trio_thread() -> None:
    where: list[str] = []

    def elicit(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
        where.append(threading.current_thread().name)
        assert not trio.lowlevel.in_trio_run()
        return {"action": "accept", "content": {"name": "Ada"}}

    with trio_mcp.open_blocking_session(demo_server(), elicitation=elicit) as session:
        result = session.call_tool("ask_name")
    assert result.content == [trio_mcp.TextContent(text="Hello, Ada!")]
    assert len(where) == 1 and where[0] not in ("trio_mcp", threading.current_thread().name)


def test_custom_request_handler_and_notification_handler() -> None:
    server = MockServer(eras="legacy")
    got: list[tuple[str, bool]] = []
    noted = threading.Event()

    @server.tool()
    async def ask(ctx: ToolContext) -> str:
        answer = await ctx.server.request_client("x-test/ask", {"q": 1})
        await ctx.log("info", "hello")
        return str(answer["a"])

    def on_log(note: trio_mcp.Notification) -> None:
        got.append((note.method, trio.lowlevel.in_trio_run()))
        noted.set()

    def handler(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
        assert not trio.lowlevel.in_trio_run()
        return {"a": params["q"] + 1}

    with trio_mcp.open_blocking_session(server) as session:
        remove = session.add_notification_handler("notifications/message", on_log)
        session.set_request_handler("x-test/ask", handler)
        assert session.call_tool("ask").content == [trio_mcp.TextContent(text="2")]
        assert noted.wait(10)
        remove()
        session.set_request_handler("x-test/ask", None)
    assert got == [("notifications/message", False)]


def test_notifications_stream_is_a_blocking_iterator() -> None:
    with trio_mcp.open_blocking_session(demo_server()) as session:
        session.set_logging_level("debug")
        with session.notifications("notifications/message") as stream:
            session.call_tool("log", {"level": "warning", "message": "hi"})
            note = stream.receive(timeout=5)
            assert note.method == "notifications/message"
            with pytest.raises(trio.TooSlowError):
                stream.receive(timeout=0.01)
        with session.listen(tools=True) as stream:
            assert isinstance(stream, trio_mcp.BlockingNotifications)
    with pytest.raises(trio.EndOfChannel):
        stream.receive()
    assert list(stream) == []


def test_many_threads_one_session_and_many_sessions() -> None:
    errors: list[BaseException] = []
    with (
        trio_mcp.open_blocking_session(demo_server()) as one,
        trio_mcp.open_blocking_session(DEMO) as two,
    ):

        def work(session: BlockingSession, n: int) -> None:
            try:
                for i in range(10):
                    text = f"{n}-{i}"
                    assert session.call_tool("echo", {"text": text}).content == [
                        trio_mcp.TextContent(text=text)
                    ]
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=work, args=(session, n))
            for n in range(4)
            for session in (one, two)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []


async def test_calling_from_inside_trio_raises_at_once() -> None:
    with pytest.raises(RuntimeError, match="inside a Trio task"):
        trio_mcp.open_blocking_session(demo_server())
    session = await trio.to_thread.run_sync(trio_mcp.open_blocking_session, demo_server())
    try:
        with pytest.raises(RuntimeError, match="inside a Trio task"):
            session.list_tools()
        assert await trio.to_thread.run_sync(session.list_tools)
    finally:
        await trio.to_thread.run_sync(session.close)


def test_server_dying_mid_call_fails_like_the_async_api() -> None:
    with trio_mcp.open_blocking_session(DEMO) as session:
        with pytest.raises(trio_mcp.ConnectionClosed):
            session.call_tool("crash")
        assert isinstance(session.failure, trio_mcp.ConnectionClosed)
        with pytest.raises(trio_mcp.ConnectionClosed):
            session.list_tools()


def test_start_up_errors_arrive_bare() -> None:
    with (  # a deprecated transport keyword that does not fit the target
        pytest.warns(DeprecationWarning, match="StdioParameters"),
        pytest.raises(TypeError, match="headers"),
    ):
        trio_mcp.open_blocking_session(DEMO, headers={})
    with pytest.raises(trio_mcp.ConnectionClosed):
        trio_mcp.open_blocking_session([sys.executable, "-c", "pass"])


def test_close_fails_calls_in_flight_in_other_threads() -> None:
    session = trio_mcp.open_blocking_session(demo_server())
    outcome: list[BaseException] = []
    started = threading.Event()

    def call() -> None:
        started.set()
        try:
            session.call_tool("slow", {"seconds": 60})
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    started.wait()
    session.close()
    thread.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], trio.ClosedResourceError)


#: A fresh program's Ctrl-C, whatever the test runner inherited; a stack dump if it hangs.
_CHILD_PROLOGUE = """\
import faulthandler, signal
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
faulthandler.dump_traceback_later(55)  # to stderr; the program goes on
"""


def run_script(code: str, *, interrupt_after: str | None = None) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD_PROLOGUE + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if interrupt_after is not None:
        line = proc.stdout.readline()
        assert line.strip() == interrupt_after, (line, proc.stderr.read() if proc.stderr else "")
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # pragma: no cover - show where it hung
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the program did not end within 60 s: {out}\n{err}") from None
    assert proc.returncode == 0, err
    return out


def test_ctrl_c_cancels_the_call_tells_the_server_and_raises_keyboard_interrupt() -> None:
    out = run_script(
        """
        import trio, trio_mcp
        from trio_mcp.testing import MockServer

        server = MockServer(eras="both")
        entered = []

        @server.tool()
        async def hang(ctx) -> str:
            entered.append(1)
            print("calling", flush=True)
            await trio.sleep_forever()

        with trio_mcp.open_blocking_session(server) as session:
            try:
                session.call_tool("hang")
            except KeyboardInterrupt:
                print("KeyboardInterrupt", len(server.cancelled))
            print("still usable", session.ping())
        """,
        interrupt_after="calling",
    )
    assert out.split("\n")[0] == "KeyboardInterrupt 1"
    assert "still usable None" in out


def test_interpreter_exit_closes_the_session_and_the_server() -> None:
    out = run_script(
        f"""
        import sys, trio_mcp
        session = trio_mcp.open_blocking_session({DEMO!r})
        print(session.transport.pid, flush=True)
        """
    )
    pid = int(out.split()[0])
    assert not os.path.exists(f"/proc/{pid}")


def test_typed_callbacks_catalogue_and_keep_alive() -> None:
    with trio_mcp.open_blocking_session(DEMO) as session:
        session.set_logging_level("debug")
        levels: list[tuple[str, bool]] = []
        logged = threading.Event()

        def on_log(params: trio_mcp.types.LoggingMessageNotificationParams) -> None:
            levels.append((params.level, trio.lowlevel.in_trio_run()))
            logged.set()

        remove = session.on_log(on_log)
        session.call_tool("log", {"level": "warning", "message": "hi"})
        assert logged.wait(10)
        remove()
        assert levels == [("warning", False)]
        with session.catalogue(prompts=True) as catalogue:
            assert [tool.name for tool in catalogue.tools][:2] == ["echo", "add"]
            assert [prompt.name for prompt in catalogue.prompts] == ["greeting"]
        with pytest.raises(ValueError, match="debounce"):
            with session.catalogue(debounce=-1):
                pass  # pragma: no cover
        with pytest.raises(ValueError, match="interval"):
            session.keep_alive(0)
        ended: list[BaseException] = []

        def keep() -> None:
            try:
                session.keep_alive(0.01)
            except BaseException as exc:
                ended.append(exc)

        thread = threading.Thread(target=keep)
        thread.start()
        with pytest.raises(trio_mcp.ConnectionClosed):
            session.call_tool("crash")
        thread.join(10)
        assert len(ended) == 1 and isinstance(ended[0], trio_mcp.ConnectionClosed)
