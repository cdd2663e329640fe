"""Benchmark trio_mcp against the hand-written floors and the official MCP SDKs (Python, TypeScript).

Usage::

    python bench/run.py [--rounds 5] [--quick] [--json bench/results/latest.json]

For every round, every workload, every client (interleaved: floor, channel_floor, trio_mcp,
sdk, floor, ...) a fresh worker process (``bench/_worker.py``) imports the client,
runs the workload after its own untimed warm-up and reports one JSON line. Medians over
rounds are reported; ratios are computed round by round (client values from the same
round) and their median is compared with the targets. A client that cannot be imported
(trio_mcp while it is being written) is skipped with a message.

Prints a table on stdout and, with ``--json``, writes the raw results, the medians, the
ratios, the target verdicts and a description of the machine.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "_worker.py")
MARKER = "BENCH_RESULT "
CLIENTS = ["floor", "channel_floor", "trio_mcp", "sdk", "ts"]
# The stdio targets are measured against the channel floor (same delivery as trio_mcp: one
# memory channel per request); the Event floor is shown as the limit of a sleeping client.
STDIO_FLOOR = "channel_floor"
SUBJECT = "trio_mcp"
WORKLOADS = ["seq", "conc", "blob", "list", "session", "pending", "sessions", "codec"]
# HTTP / WebSocket suites: the server is bench/http_server.js on Node (started by the worker).
HTTP_CLIENTS = ["h11_floor", "httpx_floor", "trio_mcp", "sdk", "fastmcp", "ts"]
# The official TypeScript client (bench/ts/ts_client.mjs, on Node): a peer column of every
# suite, installed by this script (npm ci in bench/ts, pinned by its package-lock.json).
TS = "ts"
TS_DIR = os.path.join(HERE, "ts")
HTTP_WORKLOADS = ["seq", "conc", "blob", "list", "session"]


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    worker_args: tuple[str, ...]
    clients: tuple[str, ...]
    workloads: tuple[str, ...]


SUITES = [
    Suite("stdio", "stdio (legacy era)", (), tuple(CLIENTS), tuple(WORKLOADS)),
    Suite(
        "http",
        "Streamable HTTP, legacy era, JSON responses",
        ("--transport", "http"),
        tuple(HTTP_CLIENTS),
        tuple(HTTP_WORKLOADS),
    ),
    Suite(
        "http-sse",
        "Streamable HTTP, legacy era, SSE responses",
        ("--transport", "http", "--sse"),
        tuple(HTTP_CLIENTS),
        tuple(HTTP_WORKLOADS),
    ),
    Suite(
        "http-modern",
        "Streamable HTTP, modern era (2026-07-28; the SDKs negotiate legacy), JSON responses",
        ("--transport", "http", "--modern"),
        tuple(HTTP_CLIENTS),
        tuple(HTTP_WORKLOADS),
    ),
    Suite(
        "http-modern-sse",
        "Streamable HTTP, modern era, SSE responses",
        ("--transport", "http", "--modern", "--sse"),
        tuple(HTTP_CLIENTS),
        tuple(HTTP_WORKLOADS),
    ),
    Suite(
        "ws",
        "WebSocket (legacy era; no SDK client speaks it)",
        ("--transport", "ws"),
        ("trio_mcp",),
        tuple(HTTP_WORKLOADS),
    ),
]
STDIO_PAIRS = [
    (SUBJECT, STDIO_FLOOR),
    (SUBJECT, "floor"),
    (SUBJECT, "sdk"),
    (SUBJECT, TS),
    (STDIO_FLOOR, "floor"),
]
SUITE_BY_NAME = {suite.name: suite for suite in SUITES}
QUICK_SUITES = ["stdio", "http"]
# --quick (under a minute): the suites above, without the slowest workloads and clients.
QUICK_SKIP = {"pending", "sessions", "session", "fastmcp"}


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    workload: str
    field: str
    unit: str
    scale: float = 1.0
    higher_is_better: bool = True


METRICS = [
    Metric("seq_cps", "(a) 2000 sequential echo calls", "seq", "calls_per_s", "calls/s"),
    Metric("seq_p50", "    p50 latency", "seq", "p50_us", "us", higher_is_better=False),
    Metric("seq_p99", "    p99 latency", "seq", "p99_us", "us", higher_is_better=False),
    Metric("conc_cps", "(b) 1000 concurrent calls in flight", "conc", "calls_per_s", "calls/s"),
    Metric("conc_cold", "    first (cold) burst", "conc", "cold_calls_per_s", "calls/s"),
    Metric("blob_1", "(c) blob 1 MiB", "blob", "mb_per_s_1mib", "MB/s"),
    Metric("blob_8", "    blob 8 MiB", "blob", "mb_per_s_8mib", "MB/s"),
    Metric("blob_32", "    blob 32 MiB", "blob", "mb_per_s_32mib", "MB/s"),
    Metric("list_lps", "(d) tools/list, 1000 tools, typed", "list", "lists_per_s", "lists/s"),
    # Client CPU time per unit of work (process_time of the worker during the timed part):
    # far steadier than wall-clock rates on a loaded machine; no targets, for reading.
    Metric("seq_cpu", "cpu: sequential call", "seq", "cpu_us_per_call", "us", 1.0, False),
    Metric("conc_cpu", "cpu: concurrent call", "conc", "cpu_us_per_call", "us", 1.0, False),
    Metric("cold_cpu", "cpu: cold-burst call", "conc", "cold_cpu_us_per_call", "us", 1.0, False),
    Metric("blob_cpu", "cpu: blob 1 MiB, per MB", "blob", "cpu_ms_per_mb_1mib", "ms", 1.0, False),
    Metric("list_cpu", "cpu: one tools/list", "list", "cpu_ms_per_list", "ms", 1.0, False),
    Metric("import_ms", "(e) import time", "session", "import_s", "ms", 1e3, False),
    Metric(
        "rss_import", "    RSS after import", "session", "rss_import_kb", "MiB", 1 / 1024, False
    ),
    Metric("peak_seq", "    peak RSS during (a)", "seq", "peak_rss_kb", "MiB", 1 / 1024, False),
    Metric("peak_blob", "    peak RSS during (c)", "blob", "peak_rss_kb", "MiB", 1 / 1024, False),
    Metric("open_ms", "    open+initialize+close", "session", "open_close_ms", "ms", 1.0, False),
    Metric(
        "pending_kib",
        "(f) memory per pending request",
        "pending",
        "bytes_per_pending",
        "KiB",
        1 / 1024,
        False,
    ),
    Metric(
        "session_kib",
        "    memory per open session",
        "sessions",
        "bytes_per_session",
        "KiB",
        1 / 1024,
        False,
    ),
    Metric("codec_us", "codec: tools/call encode+decode", "codec", "codec_us", "us", 1.0, False),
    Metric("encode_us", "    request encode", "codec", "encode_us", "us", 1.0, False),
    Metric("decode_us", "    response decode", "codec", "decode_us", "us", 1.0, False),
]
METRIC_BY_KEY = {m.key: m for m in METRICS}


@dataclass(frozen=True)
class Target:
    metric: str
    kind: str  # "ratio" (subject / other), "diff" (subject - other), "abs" (subject)
    other: str | None  # "floor" / "sdk" / None
    op: str  # ">=" or "<="
    threshold: float

    def describe(self) -> str:
        if self.kind == "ratio":
            return f"{self.op}{self.threshold:g}x {self.other}"
        if self.kind == "diff":
            return f"{self.op}{self.other}+{self.threshold:g}"
        return f"{self.op}{self.threshold:g}"


# The stdio targets (issue 27): every workload >= 0.9x the channel floor except the cold
# first burst (>= 0.8x), memory per pending request and per session <= 1.3x the channel
# floor's, and the SDK ratios from before. The Event floor ("floor") has no target: it is
# the limit of any sleeping Trio client, shown as a column.
TARGETS = [
    Target("seq_cps", "ratio", STDIO_FLOOR, ">=", 0.9),
    Target("seq_cps", "ratio", "sdk", ">=", 3.0),
    Target("conc_cps", "ratio", STDIO_FLOOR, ">=", 0.9),
    Target("conc_cps", "ratio", "sdk", ">=", 7.0),
    Target("conc_cold", "ratio", STDIO_FLOOR, ">=", 0.8),
    Target("blob_1", "ratio", STDIO_FLOOR, ">=", 0.9),
    Target("blob_8", "ratio", STDIO_FLOOR, ">=", 0.9),
    Target("blob_32", "ratio", STDIO_FLOOR, ">=", 0.9),
    Target("list_lps", "ratio", STDIO_FLOOR, ">=", 0.9),
    Target("list_lps", "ratio", "sdk", ">=", 10.0),
    Target("rss_import", "ratio", STDIO_FLOOR, "<=", 1.3),
    Target("open_ms", "diff", STDIO_FLOOR, "<=", 2.0),
    Target("pending_kib", "ratio", STDIO_FLOOR, "<=", 1.3),
    Target("session_kib", "ratio", STDIO_FLOOR, "<=", 1.3),
    Target("codec_us", "abs", None, "<=", 2.0),
    # issue 35: ahead of the official TypeScript client on every workload
    *(
        Target(k, "ratio", TS, ">=", 1.2)
        for k in ("seq_cps", "conc_cps", "conc_cold", "blob_1", "list_lps")
    ),
]

HTTP_METRICS = [
    Metric("seq_cps", "sequential echo calls", "seq", "calls_per_s", "calls/s"),
    Metric("seq_p50", "    p50 latency", "seq", "p50_us", "us", higher_is_better=False),
    Metric("conc_cps", "1000 concurrent calls", "conc", "calls_per_s", "calls/s"),
    Metric("blob_1", "blob 1 MiB", "blob", "mb_per_s_1mib", "MB/s"),
    Metric("list_lps", "tools/list, 1000 tools, typed", "list", "lists_per_s", "lists/s"),
    Metric("open_ms", "open + first call + close", "session", "open_close_ms", "ms", 1.0, False),
    Metric("seq_cpu", "cpu: sequential call", "seq", "cpu_us_per_call", "us", 1.0, False),
    Metric("conc_cpu", "cpu: concurrent call", "conc", "cpu_us_per_call", "us", 1.0, False),
    Metric("blob_cpu", "cpu: blob 1 MiB, per MB", "blob", "cpu_ms_per_mb_1mib", "ms", 1.0, False),
    Metric("list_cpu", "cpu: one tools/list", "list", "cpu_ms_per_list", "ms", 1.0, False),
    Metric("peak_seq", "peak RSS during seq", "seq", "peak_rss_kb", "MiB", 1 / 1024, False),
]
HTTP_METRIC_BY_KEY = {m.key: m for m in HTTP_METRICS}
HTTP_FLOOR = "httpx_floor"
HTTP_TARGETS = [
    *(
        Target(k, "ratio", HTTP_FLOOR, ">=", 0.9)
        for k in ("seq_cps", "conc_cps", "blob_1", "list_lps")
    ),
    Target("seq_cps", "ratio", "sdk", ">=", 2.0),
    Target("conc_cps", "ratio", "sdk", ">=", 3.0),
    Target("blob_1", "ratio", "sdk", ">=", 1.2),
    Target("list_lps", "ratio", "sdk", ">=", 5.0),
    Target("open_ms", "ratio", HTTP_FLOOR, "<=", 1.5),
    # issue 35: 1,000 concurrent calls >= 3.5x the httpx floor and >= 1.5x the TypeScript
    # client; every other workload >= 1.2x the TypeScript client
    Target("conc_cps", "ratio", HTTP_FLOOR, ">=", 3.5),
    Target("conc_cps", "ratio", TS, ">=", 1.5),
    *(Target(k, "ratio", TS, ">=", 1.2) for k in ("seq_cps", "blob_1", "list_lps")),
]


# ---------------------------------------------------------------------------- machinery


def child_env(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    if importlib.util.find_spec("trio_mcp") is None:
        # Not installed (a plain checkout): let the workers import it from the source tree.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env["BENCH_SDK_BACKEND"] = args.sdk_backend
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def run_worker(
    client: str,
    workload: str,
    args: argparse.Namespace,
    env: dict[str, str],
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    cmd = [sys.executable, WORKER, client, workload, "--tools", str(args.tools), *extra]
    if args.quick:
        cmd.append("--quick")
    if args.modern:
        cmd.append("--modern")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=args.timeout, cwd=ROOT
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout:g} s", "wall_s": args.timeout}
    wall = time.perf_counter() - t0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            result: dict[str, Any] = json.loads(line[len(MARKER) :])
            result["wall_s"] = wall
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
    return {"error": f"exit {proc.returncode}: " + "\n".join(tail), "wall_s": wall}


def metric_value(metric: Metric, result: dict[str, Any] | None) -> float | None:
    if not result or "error" in result:
        return None
    value = result.get(metric.field)
    if not isinstance(value, (int, float)):
        return None
    return float(value) * metric.scale


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_total_mib = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_total_mib = int(line.split()[1]) // 1024
    except OSError:
        pass
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    versions: dict[str, str | None] = {}
    for dist in [
        "trio",
        "msgspec",
        "mcp",
        "mcp-types",
        "pydantic",
        "pydantic-core",
        "anyio",
        "trio-mcp",
    ]:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    if versions["trio-mcp"] is None:
        versions["trio-mcp"] = "source tree" + _git_commit()
    return {
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "mem_total_mib": mem_total_mib,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "packages": versions,
    }


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return f" @ {out.stdout.strip()}" if out.returncode == 0 and out.stdout.strip() else ""


# --------------------------------------------------------------------------- evaluation


def per_round(
    rounds: list[dict[str, dict[str, dict[str, Any]]]], metric: Metric, client: str
) -> list[float | None]:
    return [metric_value(metric, r.get(metric.workload, {}).get(client)) for r in rounds]


def evaluate_target(
    target: Target,
    rounds: list[dict[str, dict[str, dict[str, Any]]]],
    metrics: dict[str, Metric] = METRIC_BY_KEY,
) -> dict[str, Any]:
    metric = metrics[target.metric]
    subject = per_round(rounds, metric, SUBJECT)
    if target.kind == "abs":
        values = [v for v in subject if v is not None]
    else:
        assert target.other is not None
        other = per_round(rounds, metric, target.other)
        values = []
        for s, o in zip(subject, other, strict=True):
            if s is None or o is None:
                continue
            if target.kind == "ratio":
                if o > 0:
                    values.append(s / o)
            else:
                values.append(s - o)
    value = median_or_none(values)
    if value is None:
        verdict = "n/a"
    elif target.op == ">=":
        verdict = "PASS" if value >= target.threshold else "MISS"
    else:
        verdict = "PASS" if value <= target.threshold else "MISS"
    return {
        "metric": target.metric,
        "target": target.describe(),
        "kind": target.kind,
        "vs": target.other,
        "op": target.op,
        "threshold": target.threshold,
        "value": value,
        "per_round": values,
        "verdict": verdict,
    }


def ratio_median(
    rounds: list[dict[str, dict[str, dict[str, Any]]]], metric: Metric, a: str, b: str
) -> float | None:
    values = []
    for x, y in zip(per_round(rounds, metric, a), per_round(rounds, metric, b), strict=True):
        if x is not None and y is not None and y > 0:
            values.append(x / y)
    return median_or_none(values)


def fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def render_table(
    summary: dict[str, dict[str, float | None]],
    rounds: list[dict[str, dict[str, dict[str, Any]]]],
    verdicts: list[dict[str, Any]],
    clients: list[str],
    metrics: list[Metric] = METRICS,
    pairs: list[tuple[str, str]] | None = None,
) -> str:
    by_metric: dict[str, list[dict[str, Any]]] = {}
    for v in verdicts:
        by_metric.setdefault(v["metric"], []).append(v)
    pairs = pairs or STDIO_PAIRS
    short = {SUBJECT: "trio", "httpx_floor": "httpx", "h11_floor": "h11", STDIO_FLOOR: "chan"}
    ratio_names = [f"{short.get(a, a)}/{short.get(b, b)}" for a, b in pairs]
    header = ["metric", "unit", *clients, *ratio_names, "targets"]
    rows = [header]
    for m in metrics:
        vals = [fmt(summary[m.key].get(c)) for c in clients]

        def r(a: str, b: str, m: Metric = m) -> str:
            if a not in clients or b not in clients:
                return "n/a"
            x = ratio_median(rounds, m, a, b)
            return "n/a" if x is None else f"{x:.2f}x"

        marks = []
        for v in by_metric.get(m.key, []):
            shown = (
                ""
                if v["value"] is None
                else (f" ({v['value']:+.2f} ms)" if v["kind"] == "diff" else "")
            )
            marks.append(f"{v['verdict']} {v['target']}{shown}")
        rows.append(
            [
                m.label,
                m.unit,
                *vals,
                *(r(a, b) for a, b in pairs),
                "; ".join(marks),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = []
    for i, row in enumerate(rows):
        cells = [
            row[j].ljust(widths[j]) if j < 2 else row[j].rjust(widths[j])
            for j in range(len(header) - 1)
        ]
        lines.append("  ".join(cells) + "  " + row[-1])
        if i == 0:
            lines.append("-" * (sum(widths) + 2 * len(widths) + len("targets")))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- main


def evaluate_suite(
    suite: Suite,
    clients: list[str],
    workloads: list[str],
    rounds: list[dict[str, dict[str, dict[str, Any]]]],
) -> dict[str, Any]:
    """Medians, per-round ratios and target verdicts of one suite."""
    stdio = suite.name == "stdio"
    metrics = METRICS if stdio else HTTP_METRICS
    by_key = METRIC_BY_KEY if stdio else HTTP_METRIC_BY_KEY
    targets = TARGETS if stdio else HTTP_TARGETS
    metrics = [m for m in metrics if m.workload in workloads]
    summary: dict[str, dict[str, float | None]] = {}
    for m in metrics:
        summary[m.key] = {}
        for c in clients:
            vals = [v for v in per_round(rounds, m, c) if v is not None]
            summary[m.key][c] = median_or_none(vals)
    verdicts = [
        evaluate_target(t, rounds, by_key)
        if SUBJECT in clients
        else {**evaluate_target(t, [], by_key), "verdict": "n/a"}
        for t in targets
        if by_key[t.metric].workload in workloads
    ]
    if stdio:
        pairs = STDIO_PAIRS
    else:
        pairs = [(SUBJECT, HTTP_FLOOR), (SUBJECT, "sdk"), (SUBJECT, TS), (SUBJECT, "h11_floor")]
    ratios = {
        m.key: {
            f"{a}/{b}": ratio_median(rounds, m, a, b)
            for a, b in pairs
            if a in clients and b in clients
        }
        for m in metrics
    }
    table = render_table(summary, rounds, verdicts, clients, metrics, pairs)
    return {
        "title": suite.title,
        "clients": clients,
        "workloads": workloads,
        "summary": summary,
        "ratios": ratios,
        "targets": verdicts,
        "table": table,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 5, quick 1)")
    parser.add_argument("--quick", action="store_true", help="fast smoke run (< 1 minute)")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON here")
    parser.add_argument(
        "--suites",
        default=None,
        help=f"comma-separated subset of {','.join(SUITE_BY_NAME)} (quick: {','.join(QUICK_SUITES)})",
    )
    parser.add_argument("--clients", default=None, help="comma-separated subset")
    parser.add_argument("--workloads", default=None, help="comma-separated subset")
    parser.add_argument("--tools", type=int, default=1000, help="tools in tools/list (1000)")
    parser.add_argument(
        "--modern", action="store_true", help="stdio server answers server/discover"
    )
    parser.add_argument(
        "--sdk-backend",
        choices=["trio", "asyncio"],
        default="trio",
        help="anyio backend the SDK runs on (default trio)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="per-worker timeout, s")
    args = parser.parse_args(argv)
    rounds_n = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    if args.timeout is None:
        args.timeout = 90.0 if args.quick else 240.0
    suite_names = (args.suites or ",".join(QUICK_SUITES if args.quick else SUITE_BY_NAME)).split(
        ","
    )
    for name in suite_names:
        if name not in SUITE_BY_NAME:
            parser.error(f"unknown suite {name!r}")
    wanted_clients = set(args.clients.split(",")) if args.clients else None
    wanted_workloads = set(args.workloads.split(",")) if args.workloads else None
    known = set(CLIENTS) | set(HTTP_CLIENTS)
    for c in wanted_clients or ():
        if c not in known:
            parser.error(f"unknown client {c!r}")
    for w in wanted_workloads or ():
        if w not in WORKLOADS:
            parser.error(f"unknown workload {w!r}")
    env = child_env(args)
    started = time.perf_counter()
    log = sys.stderr

    # Untimed warm-up that doubles as the import check: byte-compiles every module and
    # warms the page cache before anything is measured.
    all_clients = list(dict.fromkeys(c for n in suite_names for c in SUITE_BY_NAME[n].clients))
    if wanted_clients is not None:
        all_clients = [c for c in all_clients if c in wanted_clients]
    if TS in all_clients:
        install_ts(log)
    if args.quick and args.suites is None:
        all_clients = [c for c in all_clients if c not in QUICK_SKIP]
    available: dict[str, dict[str, Any]] = {}
    for c in all_clients:
        res = run_worker(c, "import", args, env)
        if "error" in res:
            last = res["error"].strip().splitlines()[-1].strip()
            print(
                f"[bench] skipping {c}: it does not import ({last}); for the traceback run: "
                f"python bench/_worker.py {c} import",
                file=log,
            )
            available[c] = {"available": False, "error": res["error"]}
        else:
            available[c] = {"available": True, "import_s_warmup": res["import_s"]}
    plan: list[tuple[Suite, list[str], list[str]]] = []
    for name in suite_names:
        suite = SUITE_BY_NAME[name]
        skip = QUICK_SKIP if args.quick and args.suites is None else set()
        clients = [
            c for c in suite.clients if available.get(c, {}).get("available") and c not in skip
        ]
        workloads = [
            w
            for w in suite.workloads
            if (wanted_workloads is None or w in wanted_workloads) and w not in skip
        ]
        if clients and workloads:
            plan.append((suite, clients, workloads))
    if not plan:
        print("[bench] nothing to run", file=log)
        return 1

    # rounds[r][suite][workload][client]
    rounds: list[dict[str, dict[str, dict[str, dict[str, Any]]]]] = []
    for r in range(rounds_n):
        t_round = time.perf_counter()
        this: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        for suite, clients, workloads in plan:
            for w in workloads:
                for c in clients:
                    res = run_worker(c, w, args, env, suite.worker_args)
                    this.setdefault(suite.name, {}).setdefault(w, {})[c] = res
                    if "error" in res:
                        print(
                            f"[bench] round {r + 1} {suite.name} {w} {c} FAILED: {res['error']}",
                            file=log,
                        )
        rounds.append(this)
        print(
            f"[bench] round {r + 1}/{rounds_n} done in {time.perf_counter() - t_round:.1f} s",
            file=log,
            flush=True,
        )

    results = {
        suite.name: evaluate_suite(
            suite, clients, workloads, [rd.get(suite.name, {}) for rd in rounds]
        )
        for suite, clients, workloads in plan
    }
    elapsed = time.perf_counter() - started
    machine = machine_info()

    print()
    quick_note = " (QUICK: smaller workloads, indicative only)" if args.quick else ""
    print(
        f"trio_mcp benchmark: {rounds_n} round(s){quick_note}, "
        f"medians over rounds; ratios are medians of per-round ratios"
    )
    print(
        f"machine: {machine['cpu_model']}, {machine['cpus_usable']} usable CPU(s), "
        f"Python {machine['python']}; SDK mcp {machine['packages']['mcp']} on "
        f"anyio/{args.sdk_backend}"
    )
    all_verdicts: list[dict[str, Any]] = []
    for name, res in results.items():
        print()
        print(f"== {name}: {res['title']}")
        print(res["table"])
        all_verdicts.extend(res["targets"])
    print()
    counted = [v for v in all_verdicts if v["verdict"] != "n/a"]
    print(
        f"targets: {sum(v['verdict'] == 'PASS' for v in counted)} PASS, "
        f"{sum(v['verdict'] == 'MISS' for v in counted)} MISS, "
        f"{len(all_verdicts) - len(counted)} n/a; total time {elapsed:.0f} s"
    )
    for c, info in available.items():
        if not info["available"]:
            print(f"note: {c}: not run (does not import)")
    imports = {
        c: round(info["import_s_warmup"] * 1e3, 1)
        for c, info in available.items()
        if info.get("available")
    }
    print("note: import time of each client module (warm-up run, ms): " + json.dumps(imports))
    cli_ms = time_cli(env)
    if cli_ms is not None:
        print(
            f"note: `trio-mcp --help`: {cli_ms:.0f} ms (python -m trio_mcp.cli --help, median of 5)"
        )

    if args.json:
        out = {
            "version": 2,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": machine,
            "config": {
                "rounds": rounds_n,
                "quick": args.quick,
                "tools": args.tools,
                "modern_server": args.modern,
                "sdk_backend": args.sdk_backend,
                "suites": [s.name for s, _, _ in plan],
            },
            "clients": available,
            "cli_help_ms": cli_ms,
            "suites": results,
            "rounds": rounds,
            "elapsed_s": elapsed,
        }
        path = os.path.abspath(args.json)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")
    return 0


def install_ts(log: Any) -> None:
    """Install the TypeScript client (``npm ci`` in bench/ts) unless it is there already.

    Skipped with a note where Node or npm is missing: the ``ts`` column then reads n/a.
    """
    node = os.environ.get("BENCH_NODE", "node")
    installed = os.path.join(TS_DIR, "node_modules", "@modelcontextprotocol", "client")
    lock = os.path.join(TS_DIR, "package-lock.json")
    stamp = os.path.join(TS_DIR, "node_modules", ".package-lock.json")
    fresh = os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(lock)
    if os.path.isdir(installed) and fresh:
        return
    npm = shutil.which("npm")
    if shutil.which(node) is None or npm is None:
        print(
            f"[bench] note: the TypeScript client is not run: {node!r} or npm is not on PATH "
            "(Node 20 or later; BENCH_NODE names another node)",
            file=log,
        )
        return
    print("[bench] installing the TypeScript client: npm ci in bench/ts", file=log, flush=True)
    proc = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
        cwd=TS_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"[bench] note: npm ci failed, the TypeScript client is not run: {tail}", file=log)


def time_cli(env: dict[str, str]) -> float | None:
    """Median wall time of ``python -m trio_mcp.cli --help`` (fresh processes), ms."""
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "trio_mcp.cli", "--help"],
            capture_output=True,
            env=env,
            cwd=ROOT,
            timeout=60,
        )
        if proc.returncode != 0:
            return None
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


if __name__ == "__main__":
    sys.exit(main())
