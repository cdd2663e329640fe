"""trio_mcp.testing as a product: fault injection, record/replay, bookkeeping, the pytest plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp.testing import (
    DEFAULT_CRASH_STDERR,
    REDACTED,
    CassetteMismatch,
    MockServer,
    Recorder,
    ReplayServer,
    ServerCrash,
    ToolContext,
    load_cassette,
    scrub,
)

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE / "plugin_example"
DEMO = [sys.executable, "-m", "trio_mcp.testing"]


def make_server(eras: str = "both") -> MockServer:
    server = MockServer(eras=eras)  # type: ignore[arg-type]

    @server.tool(description="Echo the text back")
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    @server.tool(description="Die like a process would")
    async def die(ctx: ToolContext) -> str:
        raise ServerCrash("boom", exit_code=3, stderr="fatal: out of memory")

    return server


@asynccontextmanager
async def session_to(target: Any, **options: Any) -> AsyncGenerator[trio_mcp.ClientSession, None]:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, target, **options) as session:
            yield session
        nursery.cancel_scope.cancel()


# -- bookkeeping ------------------------------------------------------------------------------


async def test_listen_end_is_not_counted_as_a_cancelled_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = make_server("modern")

    @server.tool(description="Slow")
    async def slow(ctx: ToolContext) -> str:
        await trio.sleep(60)
        return "done"

    async with session_to(server) as session:
        async with session.listen(tools=True):
            with pytest.raises(trio.TooSlowError):
                await session.call_tool("slow", {}, timeout=5)
        await server.wait_for_message("notifications/cancelled", count=2)
    assert len(server.cancelled) == 1
    assert len(server.subscriptions_ended) == 1
    assert server.subscriptions_ended[0] != server.cancelled[0]


# -- fault injection --------------------------------------------------------------------------


@pytest.mark.parametrize("eras", ["legacy", "modern"])
async def test_delay_is_exact_on_the_virtual_clock(
    autojump_clock: trio.testing.MockClock, eras: str
) -> None:
    server = make_server(eras)
    server.faults.delay("tools/call", 7.5)
    async with session_to(server) as session:
        start = trio.current_time()
        assert (await session.call_tool("echo", {"text": "late"})).text == "late"
        assert trio.current_time() - start == 7.5
        start = trio.current_time()
        assert (await session.call_tool("echo", {"text": "now"})).text == "now"  # times=1
        assert trio.current_time() == start


async def test_delayed_answer_is_overtaken(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server()
    server.faults.delay(lambda r: r["params"]["arguments"]["text"] == "slow", 10)
    order: list[str] = []
    async with session_to(server) as session:

        async def call(text: str) -> None:
            await session.call_tool("echo", {"text": text})
            order.append(text)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "slow")
            await server.wait_for_message("tools/call")
            nursery.start_soon(call, "fast")
    assert order == ["fast", "slow"]


async def test_dropped_answer_times_out(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server()
    server.faults.drop("tools/call")
    async with session_to(server) as session:
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("echo", {"text": "x"}, timeout=3)
        assert (await session.call_tool("echo", {"text": "y"})).text == "y"


async def test_duplicate_answer_is_ignored(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server()
    server.faults.duplicate("tools/call", times=None)
    async with session_to(server) as session:
        for text in ("a", "b", "c"):
            assert (await session.call_tool("echo", {"text": text})).text == text


async def test_error_answer(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server()
    server.faults.error("tools/call", -32001, "overloaded", {"retryAfter": 2})
    async with session_to(server) as session:
        with pytest.raises(trio_mcp.ServerError) as caught:
            await session.call_tool("echo", {"text": "x"})
        assert caught.value.code == -32001
        assert caught.value.data == {"retryAfter": 2}


async def test_garbage_answer_is_dropped(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server()
    server.faults.garbage("tools/call")
    async with session_to(server) as session:
        with pytest.raises(trio.TooSlowError):  # the answer never arrives
            await session.call_tool("echo", {"text": "x" * 100}, timeout=2)
        assert (await session.call_tool("echo", {"text": "ok"})).text == "ok"


async def test_truncated_answer_fails_its_request(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server()
    server.faults.truncate("tools/call")
    async with session_to(server) as session:
        with pytest.raises(trio_mcp.ProtocolError, match="truncated"):
            await session.call_tool("echo", {"text": "x" * 100})
        assert (await session.call_tool("echo", {"text": "ok"})).text == "ok"


async def test_close_at_message_n(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server("legacy")
    # 1: the discover error, 2: initialize result, 3: the first tools/list result
    server.faults.close_at(3)
    async with session_to(server) as session:
        with pytest.raises(trio_mcp.ConnectionClosed) as caught:
            await session.call_tool("echo", {"text": "x"})
        assert caught.value.exit_code is None


@pytest.mark.parametrize("eras", ["legacy", "modern"])
async def test_injected_crash_shows_exit_code_and_stderr(
    autojump_clock: trio.testing.MockClock, eras: str
) -> None:
    server = make_server(eras)
    server.faults.crash(lambda r: r.get("params", {}).get("name") == "echo", exit_code=139)
    async with session_to(server) as session:
        with pytest.raises(trio_mcp.ConnectionClosed) as caught:
            await session.call_tool("echo", {"text": "x"})
    assert caught.value.exit_code == 139
    assert caught.value.stderr_tail == DEFAULT_CRASH_STDERR
    assert "(exit code 139)" in str(caught.value)
    assert "RuntimeError: injected crash" in str(caught.value)


async def test_server_crash_in_a_tool_and_crash_now() -> None:
    server = make_server()
    async with session_to(server) as session:
        with pytest.raises(trio_mcp.ConnectionClosed) as caught:
            await session.call_tool("die", {})
    assert (caught.value.exit_code, caught.value.stderr_tail) == (3, "fatal: out of memory")
    assert server.crash_count == 1
    async with session_to(server) as session:
        await session.call_tool("echo", {"text": "x"})
        await server.crash(exit_code=1, stderr="killed")
        with pytest.raises(trio_mcp.ConnectionClosed, match="exit code 1"):
            await session.call_tool("echo", {"text": "x"})


async def test_stall_and_release(autojump_clock: trio.testing.MockClock) -> None:
    server = make_server()
    async with session_to(server) as session:
        server.faults.stall_now()
        with pytest.raises(trio.TooSlowError):
            await session.call_tool("echo", {"text": "x"}, timeout=10)
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.call_tool, "echo", {"text": "y"})
            await trio.sleep(4)
            server.faults.release()
        assert trio.current_time() - start == 4


async def test_fault_arguments_are_checked() -> None:
    server = MockServer()
    with pytest.raises(ValueError, match="times must be at least 1"):
        server.faults.drop("ping", times=0)
    with pytest.raises(ValueError, match="close_at counts from 1"):
        server.faults.close_at(0)


# -- record and replay ------------------------------------------------------------------------


async def test_record_a_real_server_then_replay_it_on_virtual_time(tmp_path: Path) -> None:
    cassette = tmp_path / "demo.jsonl"
    recorder = Recorder(DEMO, cassette, secrets=["sk-live-123456"])
    with trio.fail_after(30):
        async with session_to(recorder) as session:
            tools = {tool.name for tool in await session.list_tools()}
            echoed = (await session.call_tool("echo", {"text": "key sk-live-123456"})).text
            progress: list[float] = []
            slow = await session.call_tool(
                "slow",
                {"seconds": 0.2, "steps": 2},
                on_progress=lambda p: progress.append(p.progress),
            )
    assert echoed == "key sk-live-123456"
    text = cassette.read_text()
    assert "sk-live-123456" not in text and REDACTED in text
    header, events = load_cassette(cassette)
    assert header["target"]["command"] == DEMO
    recorded = [e for e in events if e["from"] == "server" and "progressToken" in json.dumps(e)]
    assert len(recorded) == 2
    slow_request = next(
        e for e in events if e.get("message", {}).get("params", {}).get("name") == "slow"
    )
    slow_answer = next(
        e
        for e in events
        if e["from"] == "server" and e.get("message", {}).get("id") == slow_request["message"]["id"]
    )
    recorded_duration = slow_answer["t"] - slow_request["t"]

    replay = ReplayServer(cassette)
    clock = trio.testing.MockClock(autojump_threshold=0)

    async def replayed() -> None:
        async with session_to(replay) as session:
            assert {tool.name for tool in await session.list_tools()} == tools
            await session.call_tool("echo", {"text": "key sk-live-123456"})
            seen: list[float] = []
            start = trio.current_time()
            again = await session.call_tool(
                "slow", {"seconds": 0.2, "steps": 2}, on_progress=lambda p: seen.append(p.progress)
            )
            assert trio.current_time() - start == pytest.approx(recorded_duration, abs=1e-9)
            assert again.text == slow.text and seen == progress

    real_start = trio.current_time()
    await trio.to_thread.run_sync(lambda: trio.run(replayed, clock=clock))
    replay.check()
    assert trio.current_time() - real_start < 5  # instant, whatever was recorded


def _cassette(path: Path, events: list[dict[str, Any]]) -> Path:
    lines = [json.dumps({"cassette": "trio_mcp", "version": 1, "target": "test"})]
    path.write_text("\n".join(lines + [json.dumps(e) for e in events]) + "\n")
    return path


def _handshake() -> list[dict[str, Any]]:
    return [
        {
            "t": 0,
            "from": "client",
            "message": {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "x", "version": "1"},
                },
            },
        },
        {
            "t": 0.5,
            "from": "server",
            "message": {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "rec", "version": "1"},
                },
            },
        },
        {
            "t": 0.5,
            "from": "client",
            "message": {"jsonrpc": "2.0", "method": "notifications/initialized"},
        },
        {
            "t": 1,
            "from": "client",
            "message": {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}},
            },
        },
        {
            "t": 3,
            "from": "server",
            "message": {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {"content": [{"type": "text", "text": "hi"}]},
            },
        },
    ]


async def test_replay_mismatch_names_expected_and_actual(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    replay = ReplayServer(_cassette(tmp_path / "c.jsonl", _handshake()))
    async with session_to(replay, protocol="legacy") as session:
        start = trio.current_time()
        with pytest.raises(trio_mcp.ServerError) as caught:
            await session.call_tool("echo", {"text": "bye"})
        assert trio.current_time() == start
    message = caught.value.message
    assert "cassette mismatch at c.jsonl, line 5" in message
    assert 'expected tools/call {"name": "echo", "arguments": {"text": "hi"}}' in message
    assert '"text": "bye"' in message
    with pytest.raises(CassetteMismatch, match="cassette mismatch"):
        replay.check()


async def test_replay_method_only_matching_and_recorded_gaps(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    replay = ReplayServer(_cassette(tmp_path / "c.jsonl", _handshake()), match="method")
    async with session_to(replay, protocol="legacy") as session:
        start = trio.current_time()
        result = await session.call_tool("echo", {"text": "other"})
        assert trio.current_time() - start == 2  # recorded: asked at 1, answered at 3
    assert result.text == "hi"
    replay.check()


async def test_replay_reports_what_the_client_left_unplayed(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    replay = ReplayServer(_cassette(tmp_path / "c.jsonl", _handshake()))
    async with session_to(replay, protocol="legacy"):
        pass
    with pytest.raises(CassetteMismatch, match="still expected tools/call"):
        replay.check()


def test_replay_rejects_files_that_are_not_cassettes(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"t": 0}\n')
    with pytest.raises(ValueError, match="not a trio_mcp cassette"):
        ReplayServer(path)
    with pytest.raises(ValueError, match="match must be"):
        ReplayServer(_cassette(path, []), match="fuzzy")  # type: ignore[arg-type]


def test_scrub_keys_bearers_and_literals() -> None:
    value = {
        "headers": {"Authorization": "Bearer abcdefghijkl", "X-Api-Key": "k-123"},
        "params": {"_meta": {"progressToken": 7}, "maxTokens": 100, "apiKey": "zzz"},
        "text": "use token abcdefghijklmnop or s3cr3t-value",
    }
    assert scrub(value, ["s3cr3t-value"]) == {
        "headers": {"Authorization": REDACTED, "X-Api-Key": REDACTED},
        "params": {"_meta": {"progressToken": 7}, "maxTokens": 100, "apiKey": REDACTED},
        "text": f"use token {REDACTED} or {REDACTED}",
    }


# -- the pytest plugin, used the way a user would ----------------------------------------------


def _run_example(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(HERE.parent)  # the trio_mcp under test, not an installed one
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


async def test_plugin_example_project_passes() -> None:
    done = await trio.to_thread.run_sync(_run_example)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout and "failed" not in done.stdout


async def test_plugin_adds_the_autojump_hint_to_a_start_up_timeout() -> None:
    done = await trio.to_thread.run_sync(_run_example, "autojump_trap.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "trio_mcp hint" in done.stdout
    assert "autojump MockClock" in done.stdout and "real subprocess or socket" in done.stdout


# -- a test that would hang on mcp_clock fails at once (issue 37) ----------------------------


async def test_a_test_that_would_hang_fails_at_once_saying_what_each_task_waits_on() -> None:
    # Before, both tests of hang_trap.py spun a CPU core for ever (the run timed out here).
    start = trio.current_time()
    done = await trio.to_thread.run_sync(_run_example, "hang_trap.py")
    assert trio.current_time() - start < 60
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "2 failed" in out
    # once per test in the failure reports (the summary repeats it in full where CI is set)
    reports = out.split("short test summary info")[0]
    assert reports.count("this test would hang for ever") == 2
    assert "trio_mcp stopped the test" in out
    # where each task waits: the test's line, the helper task, the tool, trio's call
    assert "hang_trap.py:19 in test_an_event_nobody_sets" in out
    assert "task 'the helper'" in out and "in Event.wait" in out
    assert "conftest.py:17 in mcp_server.<locals>.stuck" in out or "in stuck" in out
    assert "hang_trap.py:25 in test_a_tool_that_never_answers" in out
    assert "Cancelled" not in out  # the report replaces the cancellation's tracebacks


def test_hang_detection_waits_for_threads_and_real_io() -> None:
    from trio_mcp.testing._hang import hang_report_of, mcp_clock_made, run_detecting_hangs

    async def thread_then_sleep() -> str:
        # 0.2 s of real time in a thread: no task runs, no deadline, but not a hang
        await trio.to_thread.run_sync(__import__("time").sleep, 0.2)
        await trio.sleep(1000)  # virtual: instant
        return "done"

    clock = mcp_clock_made(trio.testing.MockClock(autojump_threshold=0))
    assert run_detecting_hangs(thread_then_sleep, clock=clock) == "done"
    assert hang_report_of(clock) is None

    async def stuck() -> None:
        await trio.Event().wait()

    clock = mcp_clock_made(trio.testing.MockClock(autojump_threshold=0))
    with pytest.raises(trio.Cancelled):
        run_detecting_hangs(stuck, clock=clock)
    report = hang_report_of(clock)
    assert report is not None and "test_testing_kit.py" in report and "in Event.wait" in report
    # a plain MockClock (not the plugin's) runs as trio.run does
    assert (
        run_detecting_hangs(thread_then_sleep, clock=trio.testing.MockClock(autojump_threshold=0))
        == "done"
    )
