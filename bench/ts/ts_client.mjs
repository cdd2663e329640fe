// The official TypeScript MCP client (@modelcontextprotocol/client, pinned in package.json)
// driving the benchmark's workloads, as a peer column of bench/run.py.
//
//   node bench/ts/ts_client.mjs WORKLOAD TARGET PARAMS_JSON
//
// WORKLOAD is seq, conc, blob, list or session; TARGET is the server's URL (Streamable HTTP,
// the server already running: bench/_worker.py started it) or a JSON array, the stdio
// server's command (started here for each session, as every other client does); PARAMS_JSON
// is bench/_worker.py's Params (the same sizes as the Python clients). The timed parts are
// the Python workloads' (bench/_worker.py w_seq, w_conc...), step for step: same warm-ups,
// same figures, one line "BENCH_RESULT {json}" on stdout.
//
// Warm-up: V8 compiles a hot function with its optimising tier only after some thousands of
// calls (CPython's specialiser, after a few), so the sequential and tools/list workloads
// warm up longer here than in Python (SEQ_WARM calls, LIST_WARM lists), which measures the
// client at its steady state, the one a long-running agent sees; the cold first burst is
// cold for every client.
//
// The client is used as its README shows: new Client(...), client.connect(transport) (the
// initialize handshake), client.callTool / client.listTools (every page), client.close().

import { performance } from "node:perf_hooks";

const MARKER = "BENCH_RESULT ";
const ECHO_TEXT = "hello, benchmark";
const MIB = 1 << 20;

const t0Import = performance.now();
const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
const importS = (performance.now() - t0Import) / 1e3;
const rssImportKb = Math.round(process.memoryUsage().rss / 1024);

const [workload, target, paramsJson] = process.argv.slice(2);
const p = JSON.parse(paramsJson);
const http = !target.startsWith("[");
const SEQ_WARM = Math.max(p.seq_warm ?? 0, 3000);
const LIST_WARM = 10;

async function openSession() {
  const client = new Client({ name: "bench-ts", version: "0.0.0" }, { capabilities: {} });
  let transport;
  if (http) {
    transport = new StreamableHTTPClientTransport(new URL(target));
  } else {
    const [command, ...args] = JSON.parse(target);
    // (its default line limit is 10 MiB; trio_mcp's, 64 MiB: the same for the 32 MiB blob)
    transport = new StdioClientTransport({ command, args, stderr: "inherit", maxBufferSize: 64 * MIB });
  }
  await client.connect(transport);
  return client;
}

function resultText(result) {
  return result.content[0].text;
}

const callEcho = (client) =>
  client.callTool({ name: "echo", arguments: { text: ECHO_TEXT } });

function cpuS() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function percentile(sorted, q) {
  const k = Math.max(0, Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1));
  return sorted[k];
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

async function wSeq() {
  const client = await openSession();
  try {
    for (let i = 0; i < SEQ_WARM; i++) await callEcho(client);
    const lat = [];
    let r;
    const c0 = cpuS();
    const t0 = performance.now();
    for (let i = 0; i < p.seq_n; i++) {
      const t = performance.now();
      r = await callEcho(client);
      lat.push(performance.now() - t);
    }
    const total = (performance.now() - t0) / 1e3;
    const cpu = cpuS() - c0;
    if (resultText(r) !== ECHO_TEXT) throw new Error("echo returned the wrong text");
    lat.sort((a, b) => a - b);
    return {
      calls: p.seq_n,
      calls_per_s: p.seq_n / total,
      p50_us: percentile(lat, 0.5) * 1e3,
      p99_us: percentile(lat, 0.99) * 1e3,
      cpu_us_per_call: (cpu / p.seq_n) * 1e6,
    };
  } finally {
    await client.close();
  }
}

async function wConc() {
  const client = await openSession();
  const times = [];
  const cpus = [];
  let cold = 0;
  let coldCpu = 0;
  let bad = 0;
  try {
    for (let rep = 0; rep < 1 + p.conc_reps; rep++) {
      const c0 = cpuS();
      const t0 = performance.now();
      const calls = [];
      for (let i = 0; i < p.conc_batch; i++) {
        calls.push(
          callEcho(client).then((r) => {
            if (resultText(r) !== ECHO_TEXT) bad++;
          }),
        );
      }
      await Promise.all(calls);
      const dt = (performance.now() - t0) / 1e3;
      const dc = cpuS() - c0;
      if (rep) {
        times.push(dt);
        cpus.push(dc);
      } else {
        cold = dt;
        coldCpu = dc;
      }
    }
  } finally {
    await client.close();
  }
  if (bad) throw new Error(`${bad} echo calls returned the wrong text`);
  return {
    batch: p.conc_batch,
    calls_per_s: p.conc_batch / median(times),
    cold_calls_per_s: p.conc_batch / cold,
    cpu_us_per_call: (median(cpus) / p.conc_batch) * 1e6,
    cold_cpu_us_per_call: (coldCpu / p.conc_batch) * 1e6,
    batch_s: times,
  };
}

async function wBlob() {
  const out = {};
  const client = await openSession();
  try {
    for (const size of p.blob_sizes) {
      const label = `${size / MIB}mib`;
      const call = () => client.callTool({ name: "blob", arguments: { size } });
      let r = await call(); // untimed warm-up
      if (resultText(r).length !== size) throw new Error("blob has the wrong size");
      let reps = 0;
      let elapsed = 0;
      const c0 = cpuS();
      const t0 = performance.now();
      for (;;) {
        r = await call();
        reps++;
        if (resultText(r).length !== size) throw new Error("blob has the wrong size");
        elapsed = (performance.now() - t0) / 1e3;
        if (elapsed >= p.blob_max_time || (reps >= p.blob_min_reps && elapsed >= p.blob_min_time))
          break;
      }
      out[`mb_per_s_${label}`] = (size * reps) / elapsed / 1e6;
      out[`cpu_ms_per_mb_${label}`] = ((cpuS() - c0) * 1e3) / ((size * reps) / 1e6);
      out[`reps_${label}`] = reps;
      out[`warmed_${label}`] = true;
    }
  } finally {
    await client.close();
  }
  return out;
}

async function wList() {
  const client = await openSession();
  try {
    let tools;
    for (let i = 0; i < LIST_WARM; i++) tools = await listAll(client);
    const nTools = tools.length;
    let reps = 0;
    let elapsed = 0;
    const c0 = cpuS();
    const t0 = performance.now();
    for (;;) {
      tools = await listAll(client);
      reps++;
      elapsed = (performance.now() - t0) / 1e3;
      if (reps >= p.list_min_reps && elapsed >= p.list_min_time) break;
    }
    const cpu = cpuS() - c0;
    if (tools.length !== nTools || tools[0].name !== "echo") {
      throw new Error("tools/list decoded wrongly");
    }
    return { tools: nTools, lists_per_s: reps / elapsed, reps, cpu_ms_per_list: (cpu / reps) * 1e3 };
  } finally {
    await client.close();
  }
}

async function wSession() {
  const times = [];
  for (let rep = 0; rep < 1 + p.session_reps; rep++) {
    const t0 = performance.now();
    const client = await openSession();
    if (p.first_call) await callEcho(client);
    await client.close();
    if (rep) times.push(performance.now() - t0);
  }
  return { open_close_ms: median(times), open_close_all_ms: times };
}

const WORKLOADS = { seq: wSeq, conc: wConc, blob: wBlob, list: wList, session: wSession };

async function main() {
  const fn = WORKLOADS[workload];
  if (fn === undefined) {
    // "import": the import check of bench/run.py (its time is Node's import of the client)
    const only = { import_s: importS, rss_import_kb: rssImportKb, unsupported: workload !== "import" };
    process.stdout.write(`${MARKER}${JSON.stringify(only)}\n`);
    return;
  }
  const result = {
    import_s: importS,
    rss_import_kb: rssImportKb,
    runtime: `node ${process.version}`,
    ...(await fn()),
    peak_rss_kb: Math.round(process.resourceUsage().maxRSS),
  };
  process.stdout.write(`${MARKER}${JSON.stringify(result)}\n`);
}

await main();
process.exit(0);
