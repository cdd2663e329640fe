"""A deliberately cheap stdio MCP server for the trio_mcp benchmarks.

The server must never be the bottleneck, so every response that does not depend on the
request is encoded once up front (blobs once per size) and responses are written with raw
``os.write`` calls. It imports only the standard library (stdlib ``json``; msgspec would
cost ~20 ms of start-up per server process for no measurable gain per request) and the
benchmark starts it with ``python -S`` so a session open is not dominated by start-up.

Reading: the server reads whatever stdin has ready (up to 1 MiB) and answers every complete
line in that chunk before it writes; all answers to one chunk go out in one write, so a
lone request is answered (and flushed) at once and a burst of pipelined requests costs one
write syscall instead of one each.

Methods:

* ``initialize``: echoes ``protocolVersion`` when it is one of the four legacy revisions,
  otherwise answers ``2025-11-25``.
* ``notifications/*``: ignored.
* ``server/discover``: JSON-RPC error -32601 (clients fall back to the legacy handshake),
  or a DiscoverResult for ``2026-07-28`` with ``--modern``.
* ``ping``: empty result.
* ``tools/list``: ``--tools N`` realistic tools (default 1000), one page.
* ``tools/call``:

  - ``echo`` ``{"text": str}``: a text content with the same text;
  - ``blob`` ``{"size": int}``: a text content of ``size`` bytes (``"x" * size``, cached);
  - ``park`` ``{}``: no answer until ``release`` (for memory per pending request);
  - ``wait_parked`` ``{"n": int}``: answered once at least ``n`` parks are held;
  - ``release`` ``{}``: answers every parked call, then itself.

Run: ``python -S bench/echo_server.py [--tools N] [--modern]``. Ends at EOF on stdin.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

LEGACY_VERSIONS = frozenset({"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"})
MODERN_VERSION = "2026-07-28"


def _decode(data: bytes) -> Any:
    return json.loads(data)


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def make_tools(n: int) -> list[dict[str, Any]]:
    """Builds ``n`` tool definitions: the five the server implements, then realistic fillers.

    Every tool the benchmark calls is listed, so clients that look a tool up before
    validating its result (the SDK lists tools on the first call of an unknown tool) do so
    once, during warm-up.
    """
    tools: list[dict[str, Any]] = [
        {
            "name": "echo",
            "description": "Returns the text it was given.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Text to echo back."}},
                "required": ["text"],
            },
        },
        {
            "name": "blob",
            "description": "Returns a text content of the requested size in bytes.",
            "inputSchema": {
                "type": "object",
                "properties": {"size": {"type": "integer", "minimum": 0}},
                "required": ["size"],
            },
        },
        {
            "name": "park",
            "description": "Benchmark control: not answered until `release` is called.",
            "inputSchema": {"type": "object", "properties": {}},
        },
        {
            "name": "wait_parked",
            "description": "Benchmark control: answered once `n` calls are parked.",
            "inputSchema": {
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 0}},
                "required": ["n"],
            },
        },
        {
            "name": "release",
            "description": "Benchmark control: answers every parked call.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ]
    for i in range(len(tools), n):
        tools.append(
            {
                "name": f"tool_{i:05d}",
                "title": f"Tool number {i}",
                "description": (
                    f"Looks up records in collection {i} that match a query and returns "
                    "at most `limit` of them, newest first."
                ),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Full-text query."},
                        "limit": {
                            "type": "integer",
                            "description": "Maximum number of records.",
                            "minimum": 1,
                            "maximum": 100,
                            "default": 10,
                        },
                        "include_archived": {"type": "boolean", "default": False},
                    },
                    "required": ["query"],
                },
                "annotations": {"readOnlyHint": True, "openWorldHint": False},
            }
        )
    return tools[:n] if n < len(tools) else tools


class Server:
    """Answers requests; keeps only the state that parked calls need."""

    def __init__(self, n_tools: int, modern: bool) -> None:
        self.modern = modern
        extra: dict[str, Any] = {"resultType": "complete"} if modern else {}
        cache: dict[str, Any] = {"ttlMs": 0, "cacheScope": "private"} if modern else {}
        self._extra = extra
        self.tools_tail = self._tail({"tools": make_tools(n_tools), **extra, **cache})
        self.empty_tail = self._tail(dict(extra))
        self.discover_tail = (
            self._tail(
                {
                    "resultType": "complete",
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {
                        "io.modelcontextprotocol/serverInfo": {"name": "bench", "version": "1"}
                    },
                }
            )
            if modern
            else b',"error":{"code":-32601,"message":"Method not found: server/discover"}}\n'
        )
        self.init_tails: dict[str, bytes] = {}
        self.blob_tails: dict[int, bytes] = {}
        self.text_head = b',"result":{"content":[{"type":"text","text":'
        self.text_end = (
            b'}],"isError":false,"resultType":"complete"}}\n'
            if modern
            else b'}],"isError":false}}\n'
        )
        self.parked: list[bytes] = []
        self.wait_parked: list[tuple[bytes, int]] = []

    @staticmethod
    def _tail(result: Any) -> bytes:
        return b',"result":' + _encode(result) + b"}\n"

    def init_tail(self, version: Any) -> bytes:
        if version not in LEGACY_VERSIONS:
            version = "2025-11-25"
        tail = self.init_tails.get(version)
        if tail is None:
            tail = self.init_tails[version] = self._tail(
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "bench", "version": "1"},
                    **self._extra,
                }
            )
        return tail

    def blob_tail(self, size: int) -> bytes:
        tail = self.blob_tails.get(size)
        if tail is None:
            tail = self.blob_tails[size] = (
                self.text_head + b'"' + b"x" * size + b'"' + self.text_end
            )
        return tail

    def handle(self, line: bytes, out: list[bytes]) -> None:
        """Appends the answer(s) to one request line to ``out`` (nothing for notifications)."""
        msg = _decode(line)
        rid = msg.get("id")
        if rid is None:
            return  # notification (initialized, cancelled, ...): nothing to answer
        head = b'{"jsonrpc":"2.0","id":' + _encode(rid)
        method = msg.get("method")
        params = msg.get("params") or {}
        if method == "tools/call":
            name = params.get("name")
            args = params.get("arguments") or {}
            if name == "echo":
                out.append(head + self.text_head + _encode(args.get("text", "")) + self.text_end)
            elif name == "blob":
                out.append(head)
                out.append(self.blob_tail(int(args.get("size", 0))))
            elif name == "park":
                self.parked.append(head)
                self._check_waiters(out)
            elif name == "wait_parked":
                self.wait_parked.append((head, int(args.get("n", 0))))
                self._check_waiters(out)
            elif name == "release":
                tail = self.text_head + b'"released"' + self.text_end
                out.extend(h + tail for h in self.parked)
                self.parked.clear()
                out.append(head + tail)
            else:
                out.append(head + b',"error":{"code":-32602,"message":"Unknown tool"}}\n')
        elif method == "ping":
            out.append(head + self.empty_tail)
        elif method == "tools/list":
            out.append(head + self.tools_tail)
        elif method == "initialize":
            out.append(head + self.init_tail(params.get("protocolVersion")))
        elif method == "server/discover":
            out.append(head + self.discover_tail)
        else:
            out.append(head + b',"error":{"code":-32601,"message":"Method not found"}}\n')

    def _check_waiters(self, out: list[bytes]) -> None:
        if not self.wait_parked:
            return
        tail = self.text_head + b'"parked"' + self.text_end
        still: list[tuple[bytes, int]] = []
        for head, n in self.wait_parked:
            if len(self.parked) >= n:
                out.append(head + tail)
            else:
                still.append((head, n))
        self.wait_parked = still


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _flush(fd: int, out: list[bytes]) -> None:
    small: list[bytes] = []
    for piece in out:
        if len(piece) >= 1 << 16:
            if small:
                _write_all(fd, b"".join(small))
                small.clear()
            _write_all(fd, piece)
        else:
            small.append(piece)
    if small:
        _write_all(fd, b"".join(small))
    out.clear()


def main(argv: list[str] | None = None) -> None:
    """Serves stdin/stdout until EOF."""
    argv = sys.argv[1:] if argv is None else argv
    n_tools, modern = 1000, False
    i = 0
    while i < len(argv):
        if argv[i] == "--tools":
            n_tools = int(argv[i + 1])
            i += 1
        elif argv[i] == "--modern":
            modern = True
        else:
            sys.exit(f"usage: echo_server.py [--tools N] [--modern] (got {argv[i]!r})")
        i += 1
    server = Server(n_tools, modern)
    fd_in = sys.stdin.buffer.fileno()
    fd_out = sys.stdout.buffer.fileno()
    pending = b""
    out: list[bytes] = []
    try:
        while True:
            chunk = os.read(fd_in, 1 << 20)
            if not chunk:
                break
            if pending:
                chunk = pending + chunk
            lines = chunk.split(b"\n")
            pending = lines.pop()
            for line in lines:
                if line.strip():
                    server.handle(line, out)
            if out:
                _flush(fd_out, out)
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
