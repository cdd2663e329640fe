// A deliberately cheap MCP server over Streamable HTTP and WebSocket for the benchmarks.
//
// The HTTP counterpart of bench/echo_server.py (same methods, same tools, same answers),
// written for Node's http module so that it is never the bottleneck: every constant answer
// is encoded once, blobs once per size, and nothing is validated beyond JSON.parse.
//
//   node bench/http_server.js [--tools N] [--modern] [--sse] [--port P]
//
// Prints "LISTENING <port>" on stdout once it accepts connections; ends when stdin closes
// (so a worker that dies never leaves it behind).
//
// * POST /mcp: one JSON-RPC message per request. A notification (or response) gets 202.
//   A request gets its answer as application/json, or with --sse as a text/event-stream
//   of one `message` event. `initialize` gets an Mcp-Session-Id (legacy era).
// * GET /mcp: legacy era: an event stream held open (server-initiated messages, none are
//   sent); --modern: 405.
// * DELETE /mcp: 200 (ends the legacy session).
// * WebSocket (any path, subprotocol "mcp"): one JSON-RPC message per text frame.
// * `server/discover`: -32601 (clients fall back to `initialize`), or with --modern a
//   DiscoverResult for 2026-07-28.
// * tools/call: echo {text}, blob {size}, park, wait_parked {n}, release (as echo_server.py).
"use strict";

const http = require("http");
const crypto = require("crypto");

const LEGACY = new Set(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]);
const MODERN = "2026-07-28";

let nTools = 1000, modern = false, sse = false, port = 0;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--tools") nTools = parseInt(argv[++i], 10);
  else if (argv[i] === "--modern") modern = true;
  else if (argv[i] === "--sse") sse = true;
  else if (argv[i] === "--port") port = parseInt(argv[++i], 10);
  else { console.error(`usage: http_server.js [--tools N] [--modern] [--sse] [--port P]`); process.exit(2); }
}

function makeTools(n) {
  const tools = [
    { name: "echo", description: "Returns the text it was given.",
      inputSchema: { type: "object", properties: { text: { type: "string", description: "Text to echo back." } }, required: ["text"] } },
    { name: "blob", description: "Returns a text content of the requested size in bytes.",
      inputSchema: { type: "object", properties: { size: { type: "integer", minimum: 0 } }, required: ["size"] } },
    { name: "park", description: "Benchmark control: not answered until `release` is called.",
      inputSchema: { type: "object", properties: {} } },
    { name: "wait_parked", description: "Benchmark control: answered once `n` calls are parked.",
      inputSchema: { type: "object", properties: { n: { type: "integer", minimum: 0 } }, required: ["n"] } },
    { name: "release", description: "Benchmark control: answers every parked call.",
      inputSchema: { type: "object", properties: {} } },
  ];
  for (let i = tools.length; i < n; i++) {
    const num = String(i).padStart(5, "0");
    tools.push({
      name: `tool_${num}`, title: `Tool number ${i}`,
      description: `Looks up records in collection ${i} that match a query and returns at most \`limit\` of them, newest first.`,
      inputSchema: {
        type: "object",
        properties: {
          query: { type: "string", description: "Full-text query." },
          limit: { type: "integer", description: "Maximum number of records.", minimum: 1, maximum: 100, default: 10 },
          include_archived: { type: "boolean", default: false },
        },
        required: ["query"],
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    });
  }
  return n < tools.length ? tools.slice(0, n) : tools;
}

const extra = modern ? { resultType: "complete" } : {};
const cache = modern ? { ttlMs: 0, cacheScope: "private" } : {};
const tail = (result) => `,"result":${JSON.stringify(result)}}`;
const TOOLS_TAIL = Buffer.from(tail({ tools: makeTools(nTools), ...extra, ...cache }));
const EMPTY_TAIL = tail({ ...extra });
const DISCOVER_TAIL = modern
  ? tail({ resultType: "complete", supportedVersions: [MODERN], capabilities: { tools: {} }, ttlMs: 0,
           cacheScope: "private", _meta: { "io.modelcontextprotocol/serverInfo": { name: "bench", version: "1" } } })
  : ',"error":{"code":-32601,"message":"Method not found: server/discover"}}';
const TEXT_HEAD = ',"result":{"content":[{"type":"text","text":';
const TEXT_END = modern ? '}],"isError":false,"resultType":"complete"}}' : '}],"isError":false}}';
const SESSION_ID = crypto.randomBytes(16).toString("hex");
const blobTails = new Map();
function blobTail(size) {
  let t = blobTails.get(size);
  if (t === undefined) {
    t = Buffer.from(TEXT_HEAD + '"' + "x".repeat(size) + '"' + TEXT_END);
    blobTails.set(size, t);
  }
  return t;
}
function initTail(version) {
  if (!LEGACY.has(version)) version = "2025-11-25";
  return tail({ protocolVersion: version, capabilities: { tools: { listChanged: false } },
                serverInfo: { name: "bench", version: "1" }, ...extra });
}

// Parked calls: each is a function that sends its answer.
let parked = [];
let waiters = [];
function checkWaiters() {
  if (!waiters.length) return;
  const still = [];
  for (const [send, n] of waiters) {
    if (parked.length >= n) send(TEXT_HEAD + '"parked"' + TEXT_END); else still.push([send, n]);
  }
  waiters = still;
}

// Answers one message: calls send(tailStringOrBuffer) now or later; returns false for a
// notification or a response (nothing to answer).
function handle(msg, reply) {
  if (msg === null || typeof msg !== "object" || msg.id === undefined || msg.id === null || msg.method === undefined) return false;
  const head = '{"jsonrpc":"2.0","id":' + JSON.stringify(msg.id);
  const send = (t) => reply(typeof t === "string" ? head + t : Buffer.concat([Buffer.from(head), t]));
  const params = msg.params || {};
  switch (msg.method) {
    case "tools/call": {
      const args = params.arguments || {};
      switch (params.name) {
        case "echo": send(TEXT_HEAD + JSON.stringify(args.text ?? "") + TEXT_END); break;
        case "blob": send(blobTail(args.size | 0)); break;
        case "park": parked.push(send); checkWaiters(); break;
        case "wait_parked": waiters.push([send, args.n | 0]); checkWaiters(); break;
        case "release": {
          const t = TEXT_HEAD + '"released"' + TEXT_END;
          const held = parked; parked = [];
          for (const s of held) s(t);
          send(t);
          break;
        }
        default: send(',"error":{"code":-32602,"message":"Unknown tool"}}');
      }
      break;
    }
    case "ping": send(EMPTY_TAIL); break;
    case "tools/list": send(TOOLS_TAIL); break;
    case "initialize": send(initTail(params.protocolVersion)); break;
    case "server/discover": send(DISCOVER_TAIL); break;
    default: send(',"error":{"code":-32601,"message":"Method not found"}}');
  }
  return true;
}

const JSON_HEADERS = ["Content-Type", "application/json"];
const SSE_HEADERS = ["Content-Type", "text/event-stream", "Cache-Control", "no-cache"];

function onPost(req, res, body) {
  let msg;
  try { msg = JSON.parse(body); } catch (e) { res.writeHead(400).end(); return; }
  const isInit = msg && msg.method === "initialize";
  const answered = handle(msg, (answer) => {
    const headers = (sse ? SSE_HEADERS : JSON_HEADERS).slice();
    if (isInit && !modern) headers.push("Mcp-Session-Id", SESSION_ID);
    if (sse) {
      res.writeHead(200, headers);
      res.end(typeof answer === "string"
        ? "event: message\ndata: " + answer + "\n\n"
        : Buffer.concat([Buffer.from("event: message\ndata: "), answer, Buffer.from("\n\n")]));
    } else {
      headers.push("Content-Length", String(Buffer.byteLength(answer)));
      res.writeHead(200, headers);
      res.end(answer);
    }
  });
  if (!answered) { res.writeHead(202, ["Content-Length", "0"]); res.end(); }
}

const server = http.createServer((req, res) => {
  if (req.method === "POST") {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => onPost(req, res, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
  } else if (req.method === "GET") {
    if (modern) { res.writeHead(405, ["Content-Length", "0"]); res.end(); return; }
    res.writeHead(200, SSE_HEADERS);
    res.write(": stream open\n\n");  // held open until the client closes it
  } else if (req.method === "DELETE") {
    res.writeHead(200, ["Content-Length", "0"]); res.end();
  } else {
    res.writeHead(405, ["Content-Length", "0"]); res.end();
  }
});
server.keepAliveTimeout = 120000;
server.headersTimeout = 125000;
server.requestTimeout = 0;

// -- WebSocket: RFC 6455, text frames, no extensions ----------------------------------------

function wsFrame(payload, opcode = 0x1) {
  const data = typeof payload === "string" ? Buffer.from(payload) : payload;
  const n = data.length;
  let header;
  if (n < 126) { header = Buffer.from([0x80 | opcode, n]); }
  else if (n < 65536) { header = Buffer.alloc(4); header[0] = 0x80 | opcode; header[1] = 126; header.writeUInt16BE(n, 2); }
  else { header = Buffer.alloc(10); header[0] = 0x80 | opcode; header[1] = 127; header.writeBigUInt64BE(BigInt(n), 2); }
  return [header, data];
}

server.on("upgrade", (req, socket, head) => {
  const key = req.headers["sec-websocket-key"];
  const accept = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
  const protocols = (req.headers["sec-websocket-protocol"] || "").split(",").map((s) => s.trim());
  socket.setNoDelay(true);
  socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
               `Sec-WebSocket-Accept: ${accept}\r\n` +
               (protocols.includes("mcp") ? "Sec-WebSocket-Protocol: mcp\r\n" : "") + "\r\n");
  let buf = head && head.length ? head : Buffer.alloc(0);
  let fragments = [];
  const send = (answer) => { if (!socket.destroyed) { const [h, d] = wsFrame(answer); socket.cork(); socket.write(h); socket.write(d); socket.uncork(); } };
  const onData = () => {
    while (buf.length >= 2) {
      const fin = buf[0] & 0x80, opcode = buf[0] & 0x0f, masked = buf[1] & 0x80;
      let len = buf[1] & 0x7f, off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
      const maskOff = off; if (masked) off += 4;
      if (buf.length < off + len) return;
      const payload = Buffer.from(buf.subarray(off, off + len));
      if (masked) { for (let i = 0; i < len; i++) payload[i] ^= buf[maskOff + (i & 3)]; }
      buf = buf.subarray(off + len);
      if (opcode === 0x8) { const [h, d] = wsFrame(payload.subarray(0, 2), 0x8); socket.write(h); socket.end(d); return; }
      if (opcode === 0x9) { const [h, d] = wsFrame(payload, 0xA); socket.write(h); socket.write(d); continue; }
      if (opcode === 0xA) continue;
      fragments.push(payload);
      if (!fin) continue;
      const text = fragments.length === 1 ? fragments[0] : Buffer.concat(fragments);
      fragments = [];
      let msg; try { msg = JSON.parse(text); } catch (e) { continue; }
      handle(msg, send);
    }
  };
  socket.on("data", (chunk) => { buf = buf.length ? Buffer.concat([buf, chunk]) : chunk; onData(); });
  socket.on("error", () => {});
  if (buf.length) onData();
});

server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
