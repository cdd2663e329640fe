"""The blocking and asyncio bridges end the servers they start, whatever the program does.

Each test runs a real Python program in a child process; the program opens a session on
``tests/servers/stubborn_server.py`` (a server that keeps running after its stdin closes)
and then drops it, is interrupted, or ends its event loop. The test then checks in /proc that
the server process is gone: no server survives its client.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import trio_mcp
from trio_mcp import AsyncioSession

ROOT = Path(__file__).resolve().parent.parent
STUBBORN = Path(__file__).resolve().parent / "servers" / "stubborn_server.py"
DEMO = [sys.executable, "-m", "trio_mcp.testing"]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is dead: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_dead(pid: int, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def read_pid(pidfile: Path, within: float = 60.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = pidfile.read_text() if pidfile.exists() else ""
        if text:
            return int(text)
        time.sleep(0.05)
    raise AssertionError("the server never started")


def run_program(code: str, pidfile: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), str(STUBBORN), str(pidfile), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str], within: float = 120.0) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:  # pragma: no cover - the failure being tested
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the program did not end within {within} s: {err}") from None
    return proc.returncode, out, err


def kill_leftover(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def check_server_gone(pid: int, err: str = "") -> None:
    try:
        assert wait_dead(pid), f"the server (pid {pid}) outlived its client; stderr: {err}"
    finally:
        kill_leftover(pid)


# -- the test programs ------------------------------------------------------------------

PROLOGUE = """
import faulthandler, signal, sys, asyncio, trio_mcp
# A fresh program's Ctrl-C, whatever the test runner inherited; a stack dump if it hangs.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
faulthandler.dump_traceback_later(18)  # to stderr; the program goes on
server = [sys.executable, sys.argv[1], sys.argv[2], *sys.argv[3:]]
"""


def test_blocking_session_dropped_without_close_is_closed_at_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = (
        PROLOGUE
        + """
import gc
session = trio_mcp.open_blocking_session(server)
assert [tool.name for tool in session.list_tools()][:1] == ["echo"]
del session
gc.collect()
print("dropped", flush=True)
"""
    )
    proc = run_program(code, pidfile)
    code_, out, err = finish(proc)
    pid = read_pid(pidfile)
    assert (code_, out) == (0, "dropped\n"), err
    check_server_gone(pid, err)


def test_ctrl_c_during_a_blocking_open_is_prompt_and_ends_the_server(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = (
        PROLOGUE
        + """
try:
    trio_mcp.open_blocking_session(server)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""
    )
    proc = run_program(code, pidfile, "600")  # the server takes 10 minutes to start
    pid = read_pid(pidfile)
    time.sleep(0.3)  # the open is under way: the server runs, the caller waits for it
    proc.send_signal(signal.SIGINT)
    # Before the fix the caller waited 30 s for a thread that waited for the server.
    code_, out, err = finish(proc, within=20.0)
    assert out == "interrupted\n", err
    assert code_ != 0 and "KeyboardInterrupt" in err
    check_server_gone(pid, err)


def test_asyncio_session_left_open_when_asyncio_run_ends(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = (
        PROLOGUE
        + """
async def main():
    held.append(trio_mcp.open_asyncio_session(server))
    session = await held[0].__aenter__()
    print(len(await session.list_tools()) > 0, flush=True)
    return session  # never closed: asyncio.run ends with it open

held = []
session = asyncio.run(main())
print("closed", session.closed, flush=True)
"""
    )
    proc = run_program(code, pidfile)
    code_, out, err = finish(proc)
    pid = read_pid(pidfile)
    assert (code_, out) == (0, "True\nclosed True\n"), err
    check_server_gone(pid, err)


def test_asyncio_session_open_on_a_stopped_loop_at_exit(tmp_path: Path) -> None:
    """A Jupyter kernel's shutdown: the loop stops with the session open, then Python exits."""
    pidfile = tmp_path / "pid"
    code = (
        PROLOGUE
        + """
loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)

held = []

async def open_it():
    held.append(trio_mcp.open_asyncio_session(server))
    session = await held[0].__aenter__()
    print(len(await session.list_tools()) > 0, flush=True)
    return session

session = loop.run_until_complete(open_it())
print("exiting", flush=True)
"""
    )
    proc = run_program(code, pidfile)
    code_, out, err = finish(proc)
    pid = read_pid(pidfile)
    assert (code_, out) == (0, "True\nexiting\n"), err
    check_server_gone(pid, err)


def test_asyncio_session_open_on_a_closed_loop_at_exit(tmp_path: Path) -> None:
    """The loop was closed under the session: at exit its server is killed."""
    pidfile = tmp_path / "pid"
    code = (
        PROLOGUE
        + """
loop = asyncio.new_event_loop()

held = []

async def open_it():
    held.append(trio_mcp.open_asyncio_session(server))
    session = await held[0].__aenter__()
    print(len(await session.list_tools()) > 0, flush=True)
    return session

session = loop.run_until_complete(open_it())
loop.close()
print("exiting", flush=True)
"""
    )
    proc = run_program(code, pidfile)
    code_, out, err = finish(proc)
    pid = read_pid(pidfile)
    assert (code_, out) == (0, "True\nexiting\n"), err
    check_server_gone(pid, err)


# -- asyncio: opens at the same time -----------------------------------------------------


def test_two_asyncio_opens_at_once() -> None:
    async def main() -> list[str]:
        async def open_and_call(word: str) -> str:
            async with trio_mcp.open_asyncio_session(DEMO) as session:
                result = await session.call_tool("echo", {"text": word})
                block = result.content[0]
                assert isinstance(block, trio_mcp.TextContent)
                return block.text

        return await asyncio.gather(*(open_and_call(w) for w in ("one", "two", "three")))

    assert asyncio.run(main()) == ["one", "two", "three"]


def test_asyncio_open_joining_a_starting_guest_run_then_cancelled() -> None:
    """One open is cancelled while it waits for the guest run another open started."""

    async def main() -> str:
        held = trio_mcp.open_asyncio_session(DEMO)

        async def first() -> AsyncioSession:
            return await held.__aenter__()

        async def second() -> None:
            async with trio_mcp.open_asyncio_session(DEMO):
                raise AssertionError("not reached")  # pragma: no cover

        one = asyncio.ensure_future(first())
        two = asyncio.ensure_future(second())
        await asyncio.sleep(0)
        two.cancel()
        session = await one
        with pytest.raises(asyncio.CancelledError):
            await two
        result = await session.call_tool("echo", {"text": "still"})
        await session.aclose()
        await held.__aexit__(None, None, None)
        block = result.content[0]
        assert isinstance(block, trio_mcp.TextContent)
        return block.text

    assert asyncio.run(main()) == "still"


def test_race_opens_cancelled_at_every_step_leave_nothing_behind() -> None:
    """Opens started together, each cancelled after a different number of loop steps."""
    from trio_mcp import _asyncio
    from trio_mcp.testing import demo_server

    async def main(steps: int) -> list[str]:
        async def open_and_call(word: str) -> str:
            async with trio_mcp.open_asyncio_session(demo_server()) as session:
                result = await session.call_tool("echo", {"text": word})
                block = result.content[0]
                assert isinstance(block, trio_mcp.TextContent)
                return block.text

        tasks = [asyncio.ensure_future(open_and_call(str(i))) for i in range(4)]
        for _ in range(steps):
            await asyncio.sleep(0)
        tasks[1].cancel()
        tasks[3].cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert _asyncio._hosts == {}  # pyright: ignore[reportPrivateUsage]  # the guest run ended
        return [d if isinstance(d, str) else type(d).__name__ for d in done]

    for steps in range(0, 40, 3):
        got = asyncio.run(main(steps))
        assert got[0] == "0" and got[2] == "2", (steps, got)
        assert all(g in (str(i), "CancelledError") for i, g in enumerate(got)), (steps, got)
