"""The stdio transport against a real child process that misbehaves on demand."""

from __future__ import annotations

import itertools
import os
import shlex
import sys
from pathlib import Path

import pytest
import trio
import trio.lowlevel
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._exceptions import ConnectionClosed
from trio_mcp._transports._stdio import (
    _WRITE_QUEUE_SIZE,
    StdioParameters,
    StdioTransport,
    default_environment,
)

EDGE = [sys.executable, str(Path(__file__).parent / "servers" / "edge_server.py")]


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the process group."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            return True
    return False


async def test_echo_over_stdio() -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, EDGE, probe_timeout=5) as session:
            assert session.era == "legacy"
            result = await session.call_tool("echo", {"text": "hello"})
            assert result.content[0].text == "hello"  # type: ignore[union-attr]


async def test_command_line_string_is_split_like_a_shell() -> None:
    command = " ".join(f"'{part}'" for part in EDGE)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, command) as session:
            assert (await session.call_tool("echo", {"text": "a b"})).content[0].text == "a b"  # type: ignore[union-attr]


async def test_crash_mid_call_fails_every_waiter_with_exit_code_and_stderr() -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
            errors: list[trio_mcp.ConnectionClosed] = []

            async def hanging() -> None:
                try:
                    await session.call_tool("hang", {})
                except trio_mcp.ConnectionClosed as exc:
                    errors.append(exc)

            async with trio.open_nursery() as inner:
                for _ in range(3):
                    inner.start_soon(hanging)
                with pytest.raises(trio_mcp.ConnectionClosed) as info:
                    await session.call_tool("crash", {})
            assert info.value.exit_code == 3
            assert "crashed on purpose" in info.value.stderr_tail
            assert len(errors) == 3


async def test_garbage_line_is_dropped_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
            assert (await session.call_tool("garbage", {})).text == "after garbage"
            assert (await session.call_tool("echo", {"text": "x"})).text == "x"
    assert "not json" in caplog.text


async def test_partial_last_line_is_reported() -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
            with pytest.raises(trio_mcp.ConnectionClosed, match="middle of a message"):
                await session.call_tool("partial", {})


async def test_oversize_message_gives_specific_error() -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(
            nursery, trio_mcp.StdioParameters(EDGE, max_message_size=100_000)
        ) as session:
            ok = await session.call_tool("big", {"size": 50_000})
            assert len(ok.content[0].text) == 50_000  # type: ignore[union-attr]
            with pytest.raises(trio_mcp.MessageTooLargeError) as info:
                await session.call_tool("big", {"size": 300_000})
            assert info.value.limit == 100_000


async def test_32_mib_message_is_received_whole() -> None:
    size = 32 * 1024 * 1024
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
            result = await session.call_tool("big", {"size": size})
            assert len(result.content[0].text) == size  # type: ignore[union-attr]


async def test_stderr_flood_never_deadlocks_and_is_forwarded() -> None:
    lines: list[str] = []
    params = StdioParameters(EDGE, on_stderr=lines.append)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            result = await session.call_tool("flood", {"mb": 64})
            assert result.content[0].text == "flooded"  # type: ignore[union-attr]
    assert len(lines) == 64 * 1024


@pytest.mark.parametrize("how", ["normal", "error", "cancelled"])
async def test_no_process_of_the_group_remains(how: str) -> None:
    pgid = -1
    with trio.move_on_after(30) as deadline:
        async with trio.open_nursery() as nursery:
            try:
                async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
                    pgid = session.transport.pid  # type: ignore[attr-defined]
                    child = int((await session.call_tool("spawn", {})).content[0].text)  # type: ignore[union-attr]
                    assert os.getpgid(child) == pgid
                    if how == "error":
                        raise KeyError("boom")
                    if how == "cancelled":
                        nursery.cancel_scope.cancel()
                        await trio.sleep_forever()
            except KeyError:
                assert how == "error"
    assert not deadline.cancelled_caught
    assert pgid > 0
    assert not group_alive(pgid)


async def test_sigterm_ignoring_server_is_killed() -> None:
    params = StdioParameters(EDGE, shutdown_timeout=0.5)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            pgid = session.transport.pid  # type: ignore[attr-defined]
            await session.call_tool("ignore_term", {})
    assert session.transport.returncode == -9  # type: ignore[attr-defined]
    assert not group_alive(pgid)


async def test_missing_program_is_a_clear_error() -> None:
    async with trio.open_nursery() as nursery:
        with pytest.raises(trio_mcp.ConnectionClosed, match="could not start"):
            async with trio_mcp.open_mcp_session(nursery, ["/nonexistent/mcp-server"]):
                pass  # pragma: no cover


async def test_safe_default_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    env = default_environment()
    assert "SECRET_TOKEN" not in env
    assert "PATH" in env


async def test_user_env_and_cwd_reach_the_server(tmp_path: Path) -> None:
    script = tmp_path / "envserver.py"
    script.write_text(
        "import json, os, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if 'id' not in m: continue\n"
        "    if m['method'] == 'initialize':\n"
        "        r = {'protocolVersion': '2025-11-25', 'capabilities': {},"
        " 'serverInfo': {'name': os.environ.get('MY_VAR', '') + '|' + os.getcwd(), 'version': '1'}}\n"
        "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n"
        "    else:\n"
        "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'],"
        " 'error': {'code': -32601, 'message': 'no'}}), flush=True)\n"
    )
    params = StdioParameters([sys.executable, str(script)], env={"MY_VAR": "set"}, cwd=tmp_path)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, params) as session:
            assert session.server_info is not None
            assert session.server_info.name == f"set|{tmp_path}"


async def test_invalid_utf8_is_a_protocol_error() -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
            with pytest.raises(trio_mcp.ProtocolError, match="invalid result of tools/call"):
                await session.call_tool("badutf8", {})


async def test_no_file_descriptors_leak() -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def one_session(crash: bool) -> None:
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
                if crash:
                    with pytest.raises(trio_mcp.ConnectionClosed):
                        await session.call_tool("crash", {})
                else:
                    await session.call_tool("echo", {"text": "x"})

    await one_session(False)  # warm up lazily created runtime fds (epoll, wakeup socket)
    before = open_fds()
    for crash in (False, True, False):
        await one_session(crash)
    assert open_fds() == before


async def test_server_dying_at_startup_reports_exit_code_and_stderr() -> None:
    argv = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('cannot start: no config\\n'); sys.exit(2)",
    ]
    async with trio.open_nursery() as nursery:
        with pytest.raises(trio_mcp.ConnectionClosed) as info:
            async with trio_mcp.open_mcp_session(nursery, argv):
                pass  # pragma: no cover
    assert info.value.exit_code == 2
    assert "cannot start: no config" in info.value.stderr_tail


BANNER_SERVER = (
    "import sys, runpy; print('Starting server v1.2...', flush=True); "
    "sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


async def test_stdout_banner_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    argv = [sys.executable, "-c", BANNER_SERVER, EDGE[1]]
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, argv) as session:
            assert (await session.call_tool("echo", {"text": "ok"})).text == "ok"
    assert "dropping an invalid message" in caplog.text
    assert "Starting server" in caplog.text


# -- the transport itself: backpressure, checkpoints, failure paths ---------------------------

SINK = [
    sys.executable,
    "-c",
    "import sys, shutil, os; shutil.copyfileobj(sys.stdin.buffer, open(os.devnull, 'wb'))",
]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


async def host_nursery(*, task_status: trio.TaskStatus[trio.Nursery]) -> None:
    """A nursery living in another task, like a long-lived service nursery."""
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()


async def test_send_is_a_checkpoint_and_the_queue_stays_bounded() -> None:
    ticks = 0
    most_queued = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.lowlevel.checkpoint()

    message = b'{"jsonrpc":"2.0","method":"notifications/progress"}'
    async with trio.open_nursery() as nursery:
        async with StdioParameters(SINK).open_transport(nursery) as transport:
            nursery.start_soon(ticker)
            for _ in range(200_000):
                await transport.send(message)
                out = transport._out_send  # (None until a line had to wait)
                queued = out.statistics().current_buffer_used if out is not None else 0
                most_queued = max(most_queued, queued)
            nursery.cancel_scope.cancel()
    assert ticks > 10_000  # the ticker ran all along, not only after the loop
    assert most_queued <= _WRITE_QUEUE_SIZE


async def test_send_waits_while_the_server_does_not_read_stdin() -> None:
    sent = 0

    async def flood(transport: StdioTransport) -> None:
        nonlocal sent
        for _ in range(10_000):
            await transport.send(b"x" * 1024)
            sent += 1

    params = StdioParameters(SLEEPER, shutdown_timeout=0.2)
    async with trio.open_nursery() as nursery:
        async with params.open_transport(nursery) as transport:
            async with trio.open_nursery() as callers:
                callers.start_soon(flood, transport)
                await trio.testing.wait_all_tasks_blocked()
                # blocked: the queue is full and the pipe (64 KiB) too; nothing else piles up
                assert transport._out_send is not None
                assert transport._out_send.statistics().current_buffer_used == _WRITE_QUEUE_SIZE
                assert sent < _WRITE_QUEUE_SIZE + 200
                assert transport.try_send_now(b"{}") is False  # the fast path never blocks
                callers.cancel_scope.cancel()
            assert sent < 10_000


async def test_fast_path_and_queue_keep_lines_whole_and_in_order() -> None:
    big = b"b" * (1024 * 1024)  # more than the pipe takes at once: the rest is queued
    received: list[bytes] = []
    async with trio.open_nursery() as nursery:
        async with StdioParameters(["cat"]).open_transport(nursery) as transport:

            async def read(count: int) -> None:
                for _ in range(count):
                    received.append(await transport.receive())

            async with trio.open_nursery() as readers:
                readers.start_soon(read, 3)
                await trio.testing.wait_all_tasks_blocked()  # the writer parks: idle
                assert transport.try_send_now(big) is True
                assert transport.try_send_now(b"second") is False  # the writer is busy now
                await transport.send(b"second")
                await transport.send(b"third")
            await trio.testing.wait_all_tasks_blocked()  # all written: the writer is idle
            assert transport.try_send_now(b"fourth") is True
            await read(1)
    assert received == [big, b"second", b"third", b"fourth"]


async def test_send_fails_once_the_transports_nursery_is_cancelled() -> None:
    errors: list[ConnectionClosed] = []

    async def flood(transport: StdioTransport) -> None:
        try:
            for _ in range(10_000):
                await transport.send(b"x" * 1024)
        except ConnectionClosed as exc:
            errors.append(exc)

    params = StdioParameters(SLEEPER, shutdown_timeout=0.2)
    async with trio.open_nursery() as outer:
        service: trio.Nursery = await outer.start(host_nursery)
        async with params.open_transport(service) as transport:
            async with trio.open_nursery() as callers:
                callers.start_soon(flood, transport)
                await trio.testing.wait_all_tasks_blocked()  # flood waits for room
                service.cancel_scope.cancel()  # the writer task goes away
            assert len(errors) == 1  # the waiting sender was woken with an error
            assert "nursery it was opened with was cancelled" in str(errors[0])

            async def fill() -> None:
                for _ in range(_WRITE_QUEUE_SIZE + 1):
                    await transport.send(b"{}")

            with trio.fail_after(5), pytest.raises(ConnectionClosed, match="cancelled"):
                await fill()
            assert transport.try_send_now(b"{}") is False
        assert transport.returncode is not None


async def test_windows_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_process(*args: object, **kwargs: object) -> trio.Process:
        raise AssertionError("no process may be started")  # pragma: no cover

    monkeypatch.setattr(trio.lowlevel, "open_process", no_process)
    async with trio.open_nursery() as nursery:
        with monkeypatch.context() as patch:
            patch.setattr(sys, "platform", "win32")
            with pytest.raises(trio_mcp.TransportError, match="POSIX-only"):
                async with StdioParameters(["cat"]).open_transport(nursery):
                    pass  # pragma: no cover


async def test_process_is_reaped_when_the_transport_cannot_be_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[trio.Process] = []

    def broken_init(
        self: StdioTransport, process: trio.Process, params: StdioParameters, nursery: object
    ) -> None:
        started.append(process)
        raise RuntimeError("cannot build the transport")

    monkeypatch.setattr(StdioTransport, "__init__", broken_init)
    try:
        async with trio.open_nursery() as nursery:
            with pytest.raises(RuntimeError, match="cannot build"):
                async with StdioParameters(SLEEPER).open_transport(nursery):
                    pass  # pragma: no cover
        (process,) = started
        assert process.returncode == -9
        assert not group_alive(process.pid)
    finally:
        for process in started:
            if process.returncode is None:  # pragma: no cover - the bug this test catches
                process.kill()


STUBBORN = [
    sys.executable,
    "-c",
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(600)",
]


@pytest.mark.timeout(60)  # the old code waited for the process forever, shielded
@pytest.mark.parametrize("error", [PermissionError, ProcessLookupError])
async def test_server_is_killed_when_its_group_cannot_be_signalled(
    monkeypatch: pytest.MonkeyPatch, error: type[OSError]
) -> None:
    def refuse(pgid: int, sig: int) -> None:
        raise error

    params = StdioParameters(STUBBORN, shutdown_timeout=0.2)
    async with trio.open_nursery() as nursery:
        async with params.open_transport(nursery) as transport:
            assert await transport.receive() == b"ready"  # SIGTERM is ignored from now on
            monkeypatch.setattr(os, "killpg", refuse)
            start = trio.current_time()
    assert transport.returncode == -9
    assert trio.current_time() - start < 5


async def test_era_key_names_the_command_and_the_directory(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        async with StdioParameters("cat -u").open_transport(nursery) as transport:
            assert transport.era_key == "stdio:cat -u"
        params = StdioParameters(["cat", "a b"], cwd=tmp_path)
        async with params.open_transport(nursery) as transport:
            assert transport.era_key == f"stdio:cd {shlex.quote(str(tmp_path))} && cat 'a b'"


class _ChunkedStdout:
    """Drives :meth:`StdioTransport.receive` with given chunks instead of a pipe."""

    def __init__(self, chunks: list[bytes], max_message_size: int) -> None:
        self.chunks = list(chunks)
        self.transport = StdioTransport.__new__(StdioTransport)
        t = self.transport
        t._max = max_message_size  # pyright: ignore[reportPrivateUsage]
        t._chunk = b""  # pyright: ignore[reportPrivateUsage]
        t._pos = 0  # pyright: ignore[reportPrivateUsage]
        t._parts = []  # pyright: ignore[reportPrivateUsage]
        t._parts_size = 0  # pyright: ignore[reportPrivateUsage]
        t._eof_note = ""  # pyright: ignore[reportPrivateUsage]
        t._read_chunk = self._read_chunk  # type: ignore[method-assign]
        t._collect_exit = self._collect_exit  # type: ignore[method-assign]
        t.closed_error = lambda: ConnectionClosed("eof" + t._eof_note)  # type: ignore[method-assign]

    async def _read_chunk(self) -> bytes:
        await trio.lowlevel.checkpoint()
        return self.chunks.pop(0) if self.chunks else b""

    async def _collect_exit(self) -> None:
        await trio.lowlevel.checkpoint()

    async def messages(self) -> list[bytes]:
        out: list[bytes] = []
        while True:
            try:
                out.append(await self.transport.receive())
            except trio.EndOfChannel:
                return out


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


@given(
    lines=st.lists(
        st.tuples(
            st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x").replace(b"\r", b"y")),
            st.sampled_from([b"\n", b"\r\n"]),
        ),
        max_size=12,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
async def test_line_reassembly_is_independent_of_how_reads_are_cut(
    lines: list[tuple[bytes, bytes]], cuts: list[int]
) -> None:
    data = b"".join(line + end for line, end in lines)
    expected = [line for line, _ in lines if line.strip()]
    got = await _ChunkedStdout(_split(data, cuts), 1 << 20).messages()
    assert got == expected
    assert all(type(message) is bytes for message in got)


@given(
    size=st.integers(min_value=0, max_value=300),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
async def test_a_line_over_the_limit_fails_however_it_is_cut(size: int, cuts: list[int]) -> None:
    limit = 100
    data = b"a" * size + b"\n" + b"ok\n"
    reader = _ChunkedStdout(_split(data, cuts), limit)
    if size <= limit:
        assert await reader.messages() == ([b"a" * size] if size else []) + [b"ok"]
    else:
        with pytest.raises(trio_mcp.MessageTooLargeError):
            await reader.messages()


async def test_a_line_cut_off_by_the_end_of_stdout_is_reported() -> None:
    reader = _ChunkedStdout([b'{"a":', b"1}\n", b'{"b"', b":2"], 1000)
    with pytest.raises(ConnectionClosed, match="middle of a message"):
        await reader.messages()
    assert reader.chunks == []


async def test_an_idle_transport_runs_only_the_stderr_drain() -> None:
    """Issue 27: lines that can be written at once go straight to the pipe; the writer task
    and its queue (about 4 KiB per session) start with the first line that has to wait."""
    async with trio.open_nursery() as nursery:
        async with StdioParameters(["cat"]).open_transport(nursery) as transport:
            await transport.send(b'{"a":1}')
            assert await transport.receive() == b'{"a":1}'
            assert transport.try_send_now(b'{"b":2}') is True
            assert await transport.receive() == b'{"b":2}'
            assert [task.name for task in nursery.child_tasks] == ["trio_mcp stderr cat"]
            assert transport._out_send is None
            assert transport.queue_nowait(b'{"c":3}') is True  # queued: the writer starts
            assert await transport.receive() == b'{"c":3}'
            assert len(nursery.child_tasks) == 2


async def test_send_fails_when_the_nursery_is_cancelled_before_any_line_waited() -> None:
    """With no writer task yet, the stderr drain tells that the transport's nursery is gone."""
    params = StdioParameters(SLEEPER, shutdown_timeout=0.2)
    async with trio.open_nursery() as outer:
        service: trio.Nursery = await outer.start(host_nursery)
        async with params.open_transport(service) as transport:
            await transport.send(b"{}")
            service.cancel_scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(ConnectionClosed, match="nursery it was opened with was cancelled"):
                await transport.send(b"{}")
            assert transport.try_send_now(b"{}") is False
            assert transport.queue_nowait(b"{}") is False
        assert transport.returncode is not None


async def test_pid_while_running_and_none_once_exited() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, EDGE) as session:
                transport = session.transport
                assert isinstance(transport, StdioTransport)
                pid = transport.pid
                assert pid is not None and os.getpgid(pid) == pid
                with pytest.raises(ConnectionClosed) as died:
                    await session.call_tool("crash", {})
                assert died.value.exit_code == 3  # the exit was collected before this
                assert transport.pid is None
                assert transport.returncode == 3
