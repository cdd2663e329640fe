#!/usr/bin/env python
"""Restart storm: real MCP servers SIGKILLed and restarted while 20 tasks call them (issue 33).

Starts real servers on loopback (server-everything over Streamable HTTP, the official Python
SDK's server in the legacy and modern eras, a fastmcp server, the old SDK 1.9.3 when
installed, and two stdio servers plus one HTTP server through one ``open_server_group``),
opens sessions to them, and runs ``--tasks`` tasks (default 20) that call ``echo``
continuously, each call under its own deadline (half with ``timeout=``, half inside
``trio.fail_after``). Meanwhile a seeded killer SIGKILLs a random server every few seconds and
starts it again on the same port (the group restarts its stdio members itself).

Records every call (outcome, duration, overshoot past its deadline), every outage (when the
server accepted again, when the first call through trio_mcp succeeded after that), and every
second RSS, open file descriptors, trio tasks and child processes. At the end it checks that
no server process is left. Prints a summary; exits 1 when a rule is broken:

* no call waits past its deadline (+ ``--slack``), none hangs, none raises anything but
  trio_mcp's own exceptions or ``trio.TooSlowError``;
* every server answers again within ``--recovery`` seconds of coming back;
* RSS, fds and tasks flat: the last fifth of the storm stays within a margin of the warm
  window (15-35 %), and once every session is closed fds and tasks are back where they were
  before any was opened;
* no server process outlives the run.

Transports trio_mcp cannot yet recover (probed by behaviour at the start: kill, restart, is
the session answering again?) are skipped with the reason printed, so legacy SSE joins the
storm by itself once it reconnects. Loopback only; stops by itself; every process it started
is killed on any exit, Ctrl-C included.

Usage::

    python scripts/restart_storm.py --seconds 180 [--seed 33] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's trio_mcp and tests/, first

import trio  # noqa: E402

import trio_mcp  # noqa: E402
from tests.interop_peers import (  # noqa: E402
    FASTMCP_PYTHON,
    LISTENING_MARKER,
    LOOPBACK,
    SERVERS_DIR,
    _Output,
    _wait_until_accepting,
    everything_argv,
    everything_env,
    free_loopback_port,
    methods_log_env,
    old_sdk_installed,
    old_sdk_server_argv,
    old_sdk_server_env,
    peers_installed,
    sdk_available,
    sdk_server_argv,
    sdk_server_env,
)
from trio_mcp.groups import RestartPolicy, ServerState  # noqa: E402

#: Env var set on every server this harness starts: its value is our pid (orphan check).
MARKER = "TRIO_MCP_STORM_OWNER"
#: Env var naming a stdio group member (how the killer finds its process).
MEMBER = "TRIO_MCP_STORM_MEMBER"

Launch = Callable[[int], tuple[list[str], dict[str, str]]]


# ------------------------------------------------------------------ measurements


class LogCounter(logging.Handler):
    """Counts trio_mcp's log records by level (the summary prints them)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[record.levelname] += 1


def rss_kib() -> int:
    """This process's resident set size, in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def open_fds() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))


def trio_tasks() -> int:
    """How many trio tasks are alive (the root task's tree)."""
    root = trio.lowlevel.current_root_task()
    count, stack = 0, [] if root is None else [root]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


def _proc_ppid(pid: str) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])


def _proc_env(pid: str) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, _, value = item.partition(b"=")
        env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env


def _children() -> list[str]:
    """Pids of this process's direct children (cheap: no walk over ``/proc``)."""
    found: list[str] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):
                found += Path(f"/proc/self/task/{tid}/children").read_text().split()
    except OSError:
        pass
    else:
        return found
    me = os.getpid()  # no ``children`` files: walk ``/proc``
    return [pid for pid in os.listdir("/proc") if pid.isdigit() and _proc_ppid(pid) == me]


def child_processes() -> int:
    """Direct children of this process (servers, alive or zombie)."""
    return len(_children())


def marked_processes(member: str | None = None) -> list[int]:
    """Live processes started by this run (their env carries our pid), or one group member's.

    A member is a direct child (the group started it); the whole run looks at every process.
    """
    me, found = str(os.getpid()), []
    for pid in _children() if member is not None else os.listdir("/proc"):
        if not pid.isdigit() or pid == me:
            continue
        env = _proc_env(pid)
        if env.get(MARKER) != me or (member is not None and env.get(MEMBER) != member):
            continue
        with contextlib.suppress(OSError):
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            if state != "Z":
                found.append(int(pid))
    return found


def kill_marked() -> list[int]:
    """SIGKILL every live process this run started; returns their pids."""
    pids = marked_processes()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return pids


# ------------------------------------------------------------------ servers


@dataclass
class Outage:
    server: str
    killed_at: float
    back_at: float | None = None
    first_ok_at: float | None = None

    @property
    def recovery(self) -> float | None:
        if self.back_at is None or self.first_ok_at is None:
            return None
        return self.first_ok_at - self.back_at


@dataclass
class Server:
    """One server of the storm: how to reach it, kill it and know it is back."""

    name: str
    kind: str  # what the summary groups recovery times by
    tool: str
    argument: str
    launch: Launch | None = None  # HTTP: started by us on a fixed port
    path: str = "/mcp"
    port: int = 0
    process: trio.Process | None = None
    output: _Output | None = None
    current: Outage | None = None
    answered: trio.Event = field(default_factory=trio.Event)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}{self.path}"

    async def start(self) -> float:
        """Start the HTTP server on its port; returns when it accepted connections."""
        assert self.launch is not None
        if not self.port:
            self.port = free_loopback_port()
        argv, env = self.launch(self.port)
        env[MARKER] = str(os.getpid())
        self.output = _Output()
        self.process = await trio.lowlevel.open_process(
            argv, stdin=subprocess.DEVNULL, stdout=self.output.file, stderr=self.output.file,
            env=env,
        )  # fmt: skip
        with trio.fail_after(60):
            ready = f"{LISTENING_MARKER} {LOOPBACK}:{self.port}"
            accepting = await _wait_until_accepting(self.process, self.port, self.output, ready)
        if not accepting:
            raise RuntimeError(f"{self.name} did not start:\n{self.output.tail()}")
        return trio.current_time()

    async def kill(self) -> None:
        """SIGKILL it, as a crash does, and reap it."""
        with trio.CancelScope(shield=True):
            if self.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await self.process.wait()
                self.process = None
            if self.output is not None:
                self.output.file.close()
                self.output = None


def http_servers(old_sdk: bool) -> list[Server]:
    """The HTTP servers the harness runs itself (those whose peers are installed)."""
    servers: list[Server] = []
    if peers_installed():
        servers.append(
            Server(
                "everything-http", "server-everything (Streamable HTTP, 400)", "echo", "message",
                lambda p: (everything_argv("streamableHttp"), everything_env(p)),
            )
        )  # fmt: skip
    if sdk_available():
        servers += [
            Server(
                "sdk-http", "official SDK (Streamable HTTP, legacy, 404)", "echo", "text",
                lambda p: (sdk_server_argv("http", mode="legacy", port=p), sdk_server_env()),
            ),
            Server(
                "sdk-modern", "official SDK (Streamable HTTP, modern era)", "echo", "text",
                lambda p: (sdk_server_argv("http", mode="modern", port=p), sdk_server_env()),
            ),
            Server(
                "group-http", "official SDK (group member over HTTP)", "group-http_echo",
                "text", lambda p: (sdk_server_argv("http", mode="legacy", port=p),
                                   sdk_server_env()),
            ),
        ]  # fmt: skip
    if FASTMCP_PYTHON.is_file():
        script = str(SERVERS_DIR / "fastmcp_http_server.py")
        servers.append(
            Server(
                "fastmcp-http", "fastmcp (Streamable HTTP)", "echo", "text",
                lambda p: ([str(FASTMCP_PYTHON), script, "--port", str(p)], methods_log_env()),
            )
        )  # fmt: skip
    if old_sdk:
        servers.append(
            Server(
                "old-sdk-http", "official SDK 1.9.3 (Streamable HTTP, plain 400)", "echo",
                "text", lambda p: (old_sdk_server_argv("http", port=p), old_sdk_server_env(None)),
                path="/mcp/",
            )
        )  # fmt: skip
    return servers


def sse_servers() -> list[Server]:
    """Legacy HTTP+SSE servers: in the storm only once trio_mcp recovers them (probed)."""
    servers: list[Server] = []
    if peers_installed():
        servers.append(
            Server(
                "everything-sse", "server-everything (legacy SSE)", "echo", "message",
                lambda p: (everything_argv("sse"), everything_env(p)), path="/sse",
            )
        )  # fmt: skip
    if sdk_available():
        servers.append(
            Server(
                "sdk-sse", "official SDK (legacy SSE)", "echo", "text",
                lambda p: (sdk_server_argv("sse", mode="legacy", port=p), sdk_server_env()),
                path="/sse",
            )
        )  # fmt: skip
    return servers


def stdio_members() -> dict[str, tuple[list[str], dict[str, str], Server]]:
    """The stdio servers of the group: argv, env and their storm record."""
    members: dict[str, tuple[list[str], dict[str, str], Server]] = {}
    if peers_installed():
        members["every-stdio"] = (
            everything_argv("stdio"), {},
            Server("every-stdio", "server-everything (stdio, group)", "every-stdio_echo",
                   "message"),
        )  # fmt: skip
    if sdk_available():
        members["sdk-stdio"] = (
            sdk_server_argv("stdio", mode="legacy"), {"PYTHONUNBUFFERED": "1"},
            Server("sdk-stdio", "official SDK (stdio, group)", "sdk-stdio_echo", "text"),
        )  # fmt: skip
    return members


# ------------------------------------------------------------------ the storm


@dataclass
class Call:
    server: str
    start: float
    duration: float
    outcome: str  # "ok", an exception's class name, or "hung"
    foreign: bool = False


@dataclass
class Sample:
    at: float
    rss_kib: int
    fds: int
    tasks: int
    children: int


@dataclass
class Storm:
    args: argparse.Namespace
    rng: random.Random
    servers: dict[str, Server] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)  # per call, not a list: flat RSS
    by_server: Counter[tuple[str, str]] = field(default_factory=Counter)
    longest: float = 0.0  # the longest call, in seconds
    late_count: int = 0
    late: list[Call] = field(default_factory=list)  # past deadline + slack (the first 50)
    foreign: list[Call] = field(default_factory=list)  # (the first 50)
    outages: list[Outage] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    started: float = 0.0
    storm_end: float = 0.0

    # -- callers

    async def caller(
        self, index: int, server: Server, call: Callable[..., Awaitable[Any]], stop: trio.Event
    ) -> None:
        deadline, use_timeout = self.args.deadline, index % 2 == 0
        arguments = {server.argument: f"storm {index}"}
        while not stop.is_set():
            start = trio.current_time()
            outcome, foreign = "ok", False
            with trio.move_on_after(deadline + self.args.hang) as guard:
                try:
                    if use_timeout:
                        await call(server.tool, arguments, timeout=deadline)
                    else:
                        with trio.fail_after(deadline):
                            await call(server.tool, arguments)
                except (trio_mcp.MCPError, trio.TooSlowError) as exc:
                    outcome = type(exc).__name__
                except Exception as exc:  # a foreign exception: a rule broken
                    outcome, foreign = f"{type(exc).__module__}.{type(exc).__name__}", True
                    if len(self.tracebacks) < 3:
                        self.tracebacks.append("".join(traceback.format_exception(exc)))
            end = trio.current_time()
            if guard.cancelled_caught:
                outcome = "hung"
            self.outcomes[outcome] += 1
            self.by_server[server.name, outcome] += 1
            self.longest = max(self.longest, end - start)
            if end - start > deadline + self.args.slack:
                self.late_count += 1
                if len(self.late) < 50:
                    self.late.append(Call(server.name, start, end - start, outcome))
            if foreign and len(self.foreign) < 50:
                self.foreign.append(Call(server.name, start, end - start, outcome, foreign))
            if outcome == "ok":
                outage = server.current
                if (
                    outage is not None
                    and outage.back_at is not None
                    and end >= outage.back_at
                    and outage.first_ok_at is None
                ):
                    outage.first_ok_at = end
                    server.answered.set()
                await trio.sleep(self.args.pace)
            else:
                await trio.sleep(0.05)  # a failed call: do not spin on a refused connection

    # -- the killer

    async def outage_http(self, server: Server) -> None:
        outage = Outage(server.name, trio.current_time())
        server.current, server.answered = outage, trio.Event()
        self.outages.append(outage)
        await server.kill()
        await trio.sleep(self.rng.uniform(self.args.down_min, self.args.down_max))
        outage.back_at = await server.start()
        await self._await_answer(server, outage)

    async def outage_stdio(self, server: Server, group: Any) -> None:
        pids = marked_processes(server.name)
        if len(pids) != 1:
            return  # not running right now (the group is restarting it)
        outage = Outage(server.name, trio.current_time())
        server.current, server.answered = outage, trio.Event()
        self.outages.append(outage)
        with contextlib.suppress(OSError):
            os.kill(pids[0], signal.SIGKILL)
        with trio.move_on_after(30):  # back: a new process, and the group says RUNNING
            while True:
                fresh = [pid for pid in marked_processes(server.name) if pid != pids[0]]
                if fresh and group.status(server.name).state is ServerState.RUNNING:
                    break
                await trio.sleep(0.02)
            outage.back_at = trio.current_time()
        if outage.back_at is None:
            status = group.status(server.name)
            self.problems.append(
                f"{server.name}: the group did not restart it within 30 s "
                f"(state {status.state.value}, restarts {status.restarts})"
            )
            return
        await self._await_answer(server, outage)

    async def _await_answer(self, server: Server, outage: Outage) -> None:
        with trio.move_on_after(self.args.never):
            await server.answered.wait()
        if outage.first_ok_at is None:
            assert outage.back_at is not None
            self.problems.append(
                f"{server.name}: no call answered within {self.args.never:.0f} s of it coming "
                f"back at t={outage.back_at - self.started:.1f} s"
            )

    async def killer(self, group: Any, until: float) -> None:
        async with trio.open_nursery() as nursery:
            busy: set[str] = set()

            async def one(server: Server) -> None:
                try:
                    if server.launch is not None:
                        await self.outage_http(server)
                    else:
                        await self.outage_stdio(server, group)
                finally:
                    busy.discard(server.name)

            while True:
                await trio.sleep(self.rng.uniform(self.args.kill_min, self.args.kill_max))
                if trio.current_time() >= until:
                    break
                idle = sorted(name for name in self.servers if name not in busy)
                if not idle or len(busy) >= self.args.max_down:
                    continue
                server = self.servers[self.rng.choice(idle)]
                busy.add(server.name)
                nursery.start_soon(one, server)

    async def sampler(self) -> None:
        while True:
            self.samples.append(
                Sample(trio.current_time() - self.started, rss_kib(), open_fds(), trio_tasks(),
                       child_processes())
            )  # fmt: skip
            await trio.sleep(1)

    # -- probes

    async def recovers(self, server: Server) -> str | None:
        """Kill and restart ``server`` once: None if its session answers again, else why not."""
        await server.start()
        try:
            async with trio.open_nursery() as nursery:
                try:
                    async with trio_mcp.open_mcp_session(nursery, self._target(server)) as s:
                        await s.call_tool(server.tool, {server.argument: "probe"}, timeout=10)
                        await server.kill()
                        back = await server.start()
                        last = "no call finished"
                        with trio.move_on_after(self.args.recovery + 3):
                            while True:
                                try:
                                    await s.call_tool(
                                        server.tool, {server.argument: "probe"}, timeout=2
                                    )
                                    return None
                                except (trio_mcp.MCPError, trio.TooSlowError) as exc:
                                    last = f"{type(exc).__name__}: {exc}"
                                await trio.sleep(0.1)
                        waited = trio.current_time() - back
                        return f"no answer {waited:.1f} s after the restart (last: {last})"
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            await server.kill()

    def _target(self, server: Server) -> Any:
        if server.path == "/sse":
            from trio_mcp.transports import SSEParameters

            return SSEParameters(server.url)
        return server.url

    # -- the run

    async def run(self) -> None:
        """The storm, until its end or SIGTERM (then ``terminated``: cleaned up, no verdict)."""
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:

                async def storm() -> None:
                    await self._run()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(storm)
                async for _signal in signals:
                    self.terminated = True
                    nursery.cancel_scope.cancel()
                    break

    async def _run(self) -> None:
        try:
            await self._storm()
        finally:  # also on Ctrl-C, SIGTERM or a failed start
            for server in self.servers.values():
                if server.launch is not None:
                    await server.kill()  # shielded

    async def _storm(self) -> None:
        self.started = trio.current_time()
        for server in http_servers(old_sdk=old_sdk_installed()):
            self.servers[server.name] = server
        if self.args.probe:
            for server in sse_servers():
                reason = await self.recovers(server)
                if reason is None:
                    self.servers[server.name] = server
                else:
                    self.skipped.append(
                        f"{server.name}: skipped, trio_mcp does not recover this transport "
                        f"yet (issue 33 part C): {reason}"
                    )
        self.skipped.append("websocket: skipped, no real WebSocket MCP server among the peers")
        members = stdio_members()
        if not self.servers and not members:
            raise SystemExit("no peers installed: run `bash scripts/install-peers.sh`")
        async with trio.open_nursery() as nursery:
            for server in self.servers.values():
                nursery.start_soon(server.start)
        pre_open = (open_fds(), trio_tasks())

        restart = RestartPolicy(
            backoff=trio_mcp.Backoff(initial=0.1, maximum=1.0, jitter=0.0),
            max_restarts=None, healthy_after=1.0, failure_threshold=1000,
        )  # fmt: skip
        group_servers: dict[str, Any] = {}
        for name, (argv, env, record) in members.items():
            marked = {**env, MARKER: str(os.getpid()), MEMBER: name}
            group_servers[name] = trio_mcp.transports.StdioParameters(argv, env=marked)
            self.servers[name] = record
        if "group-http" in self.servers:
            group_servers["group-http"] = self.servers["group-http"].url

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.sampler)
            async with contextlib.AsyncExitStack() as stack:
                from trio_mcp.groups import open_server_group

                group = await stack.enter_async_context(
                    open_server_group(nursery, group_servers, restart=restart)
                )
                for name in group_servers:
                    status = group.status(name)
                    if status.state is not ServerState.RUNNING:
                        raise RuntimeError(f"group member {name} did not start: {status.error}")
                calls: dict[str, Callable[..., Awaitable[Any]]] = {}
                for server in self.servers.values():
                    if server.name in group_servers:
                        calls[server.name] = group.call_tool
                    else:
                        session = await stack.enter_async_context(
                            trio_mcp.open_mcp_session(nursery, self._target(server))
                        )
                        calls[server.name] = session.call_tool
                names = sorted(self.servers)
                stop = trio.Event()
                storm_start = trio.current_time()
                self.storm_end = storm_start + self.args.seconds
                async with trio.open_nursery() as callers:
                    for index in range(self.args.tasks):
                        server = self.servers[names[index % len(names)]]
                        callers.start_soon(self.caller, index, server, calls[server.name], stop)
                    await self.killer(group, self.storm_end)
                    await trio.sleep(2)  # every server back: calls for two more seconds
                    stop.set()
                self.end_of_storm = trio.current_time()
            nursery.cancel_scope.cancel()  # the sampler
        await trio.sleep(0.5)  # closed sessions' sockets and processes settle
        self.post_close = (open_fds(), trio_tasks())
        self.pre_open = pre_open

    # -- the verdict

    def verdict(self) -> dict[str, Any]:
        args, late = self.args, self.late
        ok = self.outcomes["ok"]
        failures = Counter({k: n for k, n in self.outcomes.items() if k != "ok"})
        worst = self.longest - args.deadline
        for c in late[:10]:
            self.problems.append(
                f"{c.server}: a call ({c.outcome}) took {c.duration:.3f} s, past its "
                f"{args.deadline} s deadline by {c.duration - args.deadline:.3f} s"
            )
        if self.late_count > 10:
            self.problems.append(f"... {self.late_count - 10} more calls past their deadline")
        for c in self.foreign[:10]:
            self.problems.append(f"{c.server}: a call raised a foreign exception {c.outcome}")
        per_kind: dict[str, list[float]] = {}
        for outage in self.outages:
            kind = self.servers[outage.server].kind
            if outage.recovery is not None:
                per_kind.setdefault(kind, []).append(outage.recovery)
                if outage.recovery > args.recovery:
                    self.problems.append(
                        f"{outage.server}: answered {outage.recovery:.2f} s after it came back "
                        f"(budget {args.recovery} s)"
                    )
        recovery = {
            kind: {"outages": len(v), "median": statistics.median(v), "max": max(v)}
            for kind, v in sorted(per_kind.items())
        }
        storm = [s for s in self.samples if s.at <= self.storm_end - self.started]
        span = storm[-1].at - storm[0].at if len(storm) > 1 else 0.0
        t0 = storm[0].at if storm else 0.0
        warm = [s for s in storm if 0.15 * span <= s.at - t0 <= 0.35 * span]
        tail = [s for s in storm if s.at - t0 >= 0.8 * span]
        margins = {"rss_kib": args.rss_margin * 1024, "fds": args.fd_margin,
                   "tasks": args.task_margin}  # fmt: skip
        flat: dict[str, Any] = {}
        if warm and tail:
            for key, margin in margins.items():
                w = max(getattr(s, key) for s in warm)
                e = max(getattr(s, key) for s in tail)
                flat[key] = {"warm_max": w, "end_max": e, "margin": margin}
                if e > w + margin:
                    self.problems.append(
                        f"{key} grew: {w} in the warm window, {e} at the end (margin {margin})"
                    )
        else:
            self.problems.append("too few samples to judge growth (run longer)")
        pre_fds, pre_tasks = self.pre_open
        post_fds, post_tasks = self.post_close
        if post_fds > pre_fds + args.fd_close_margin:
            self.problems.append(
                f"fds after every session closed: {post_fds}, before any opened: {pre_fds}"
            )
        if post_tasks > pre_tasks:
            self.problems.append(
                f"trio tasks after every session closed: {post_tasks}, before: {pre_tasks}"
            )
        picks = [storm[0], storm[len(storm) // 2], storm[-1]] if storm else []
        return {
            "seconds": args.seconds,
            "seed": args.seed,
            "tasks": args.tasks,
            "servers": sorted(self.servers),
            "skipped": self.skipped,
            "calls": self.outcomes.total(),
            "ok": ok,
            "failures": dict(failures.most_common()),
            "failures_by_server": {
                f"{name}: {outcome}": n
                for (name, outcome), n in sorted(self.by_server.items())
                if outcome != "ok"
            },
            "max_overshoot": worst,
            "outages": len(self.outages),
            "kills": Counter(o.server for o in self.outages),
            "recovery": recovery,
            "flat": flat,
            "samples_start_middle_end": [s.__dict__ for s in picks],
            "before_open_after_close": {
                "fds": [pre_fds, post_fds],
                "tasks": [pre_tasks, post_tasks],
            },
            "orphans": self.orphans,
            "problems": self.problems,
            "tracebacks": self.tracebacks,
        }

    orphans: list[int] = field(default_factory=list)
    terminated: bool = False
    tracebacks: list[str] = field(default_factory=list)
    pre_open: tuple[int, int] = (0, 0)
    post_close: tuple[int, int] = (0, 0)
    end_of_storm: float = 0.0


def print_summary(v: dict[str, Any]) -> None:
    w = print
    w(f"restart storm: {v['seconds']:.0f} s, seed {v['seed']}, {v['tasks']} calling tasks")
    w(f"servers: {', '.join(v['servers'])}")
    for line in v["skipped"]:
        w(f"  {line}")
    w(f"calls: {v['calls']} ({v['ok']} ok)")
    for outcome, n in v["failures"].items():
        w(f"  failed {n:6d} x {outcome}")
    by_server = ", ".join(f"{k} {n}" for k, n in v["failures_by_server"].items())
    w(f"  by server: {by_server}")
    w(f"max overshoot past the deadline: {v['max_overshoot']:+.3f} s")
    kills = ", ".join(f"{k} {n}" for k, n in sorted(v["kills"].items()))
    w(f"outages: {v['outages']} ({kills})")
    w("recovery (first answer after the server accepts again):")
    for kind, r in v["recovery"].items():
        w(f"  {kind}: {r['outages']} outages, median {r['median']:.3f} s, max {r['max']:.3f} s")
    w("samples (t s, RSS MiB, fds, trio tasks, child processes):")
    for s in v["samples_start_middle_end"]:
        w(
            f"  t={s['at']:6.1f}  {s['rss_kib'] / 1024:7.1f}  {s['fds']:4d}  {s['tasks']:4d}  "
            f"{s['children']:3d}"
        )
    for key, f in v["flat"].items():
        w(f"  {key}: warm max {f['warm_max']}, end max {f['end_max']} (margin {f['margin']})")
    b = v["before_open_after_close"]
    w(f"before opening / after closing: fds {b['fds'][0]} / {b['fds'][1]}, "
      f"tasks {b['tasks'][0]} / {b['tasks'][1]}")  # fmt: skip
    w(f"orphans: {v['orphans'] or 'none'}")
    w(f"trio_mcp log records: {v.get('log_records') or 'none'} (--log prints the warnings)")
    for tb in v["tracebacks"]:
        w(f"a foreign exception:\n{tb}")
    if v["problems"]:
        w(f"RULES BROKEN ({len(v['problems'])}):")
        for p in v["problems"]:
            w(f"  - {p}")
    else:
        w("all rules hold")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=180.0, help="storm duration (180)")
    p.add_argument("--seed", type=int, default=33)
    p.add_argument("--tasks", type=int, default=20, help="calling tasks (20)")
    p.add_argument("--deadline", type=float, default=2.0, help="each call's deadline (2 s)")
    p.add_argument("--slack", type=float, default=0.5, help="tolerated overshoot (0.5 s)")
    p.add_argument("--hang", type=float, default=10.0, help="past deadline+this: a hang")
    p.add_argument("--recovery", type=float, default=2.0, help="answer again within (2 s)")
    p.add_argument("--never", type=float, default=15.0, help="no answer this long: never")
    p.add_argument("--kill-min", type=float, default=1.5)
    p.add_argument("--kill-max", type=float, default=4.0)
    p.add_argument("--down-min", type=float, default=0.2)
    p.add_argument("--down-max", type=float, default=3.0)
    p.add_argument("--max-down", type=int, default=3, help="servers down at once (3)")
    p.add_argument("--pace", type=float, default=0.01, help="pause after an answered call")
    p.add_argument("--rss-margin", type=float, default=16.0, help="RSS growth allowed (MiB)")
    p.add_argument("--fd-margin", type=int, default=24)
    p.add_argument("--task-margin", type=int, default=30)
    p.add_argument("--fd-close-margin", type=int, default=4)
    p.add_argument("--no-probe", dest="probe", action="store_false",
                   help="do not probe legacy SSE (leave it out)")  # fmt: skip
    p.add_argument("--log", action="store_true", help="print trio_mcp's warnings")
    p.add_argument("--json", type=Path, help="also write the figures here")
    return p.parse_args(argv)


def _is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is, or is a group that holds, a KeyboardInterrupt."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    inner: Sequence[BaseException] = getattr(exc, "exceptions", ())
    return any(_is_interrupt(e) for e in inner)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    storm = Storm(args, random.Random(args.seed))
    counter = LogCounter()
    library = logging.getLogger("trio_mcp")
    library.addHandler(counter)
    library.setLevel(logging.INFO)
    if args.log:
        handler = logging.StreamHandler()
        handler.setLevel(logging.WARNING)
        library.addHandler(handler)
    began = time.monotonic()
    # Ctrl-C works even when started with SIGINT ignored (a background job of a script)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        trio.run(storm.run)
    except BaseException as exc:  # Ctrl-C comes out of trio alone or in an exception group
        if not _is_interrupt(exc):
            raise
        left = kill_marked()
        print(f"interrupted after {time.monotonic() - began:.1f} s; killed {len(left)} left")
        return 130
    finally:
        storm.orphans = kill_marked()
    if storm.terminated:
        print(f"terminated after {time.monotonic() - began:.1f} s; servers all stopped")
        return 143
    verdict = storm.verdict()
    verdict["log_records"] = dict(counter.counts)
    print_summary(verdict)
    if args.json is not None:
        args.json.write_text(json.dumps(verdict, indent=2, default=str) + "\n")
    return 1 if verdict["problems"] or verdict["orphans"] else 0


if __name__ == "__main__":
    sys.exit(main())
