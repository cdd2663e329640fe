"""A misbehaving-on-demand stdio MCP server (stdlib only) for the stdio transport tests.

Legacy handshake; ``server/discover`` gets -32601. Tools (``tools/call`` name):
echo, crash (stderr + exit 3), garbage (an invalid line), partial (half a line, then exit),
big (a response of ``size`` bytes), spawn (starts a grandchild that sleeps; returns its pid),
flood (writes ``mb`` MiB to stderr, then answers), hang (never answers),
ignore_term (the server ignores SIGTERM from now on).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys


def write(message: dict) -> None:  # type: ignore[type-arg]
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def result(request_id: object, value: object) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": value})


def text(request_id: object, value: str) -> None:
    result(request_id, {"content": [{"type": "text", "text": value}]})


def main() -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            result(
                request_id,
                {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "edge", "version": "1"},
                },
            )
        elif method == "tools/call":
            name = message["params"]["name"]
            args = message["params"].get("arguments", {})
            if name == "echo":
                text(request_id, args.get("text", ""))
            elif name == "crash":
                sys.stderr.write("fatal: the edge server crashed on purpose\n")
                sys.stderr.flush()
                os._exit(3)
            elif name == "badutf8":
                head = b'{"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode()
                sys.stdout.buffer.write(head + b', "result": {"content": "\xff\xfe"}}\n')
                sys.stdout.buffer.flush()
            elif name == "garbage":  # an invalid line, then the answer
                sys.stdout.buffer.write(b"this is not json\n")
                sys.stdout.buffer.flush()
                text(request_id, "after garbage")
            elif name == "partial":
                sys.stdout.buffer.write(b'{"jsonrpc": "2.0", "id": ')
                sys.stdout.buffer.flush()
                os._exit(0)
            elif name == "big":
                text(request_id, "x" * int(args["size"]))
            elif name == "spawn":
                child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                text(request_id, str(child.pid))
            elif name == "flood":
                chunk = b"e" * 1023 + b"\n"
                for _ in range(int(args.get("mb", 1)) * 1024):
                    sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()
                text(request_id, "flooded")
            elif name == "hang":
                pass
            elif name == "ignore_term":
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                sys.stdin.close()
                text(request_id, "ignoring")
                signal.pause()
            else:
                write({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": -32602, "message": f"unknown tool {name}"}})  # fmt: skip
        elif method == "ping":
            result(request_id, {})
        else:
            write({"jsonrpc": "2.0", "id": request_id,
                   "error": {"code": -32601, "message": f"Method not found: {method}"}})  # fmt: skip


if __name__ == "__main__":
    main()
