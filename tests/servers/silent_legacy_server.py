"""A legacy (handshake-era) stdio MCP server that NEVER answers a method it does not know.

Plain Python, no SDK: newline-delimited JSON-RPC on stdin/stdout. It answers
``initialize`` (echoing the requested protocol version when it speaks it, else offering
``2025-11-25``), ``ping``, ``tools/list`` and ``tools/call`` (one tool, ``echo(text)``).
Every other request, ``server/discover`` included, is silently dropped: no result, no
error, the process lives on. Notifications are ignored. That is the "no answer within
the probe timeout" case of the era detection: a client must give up on the probe and
fall back to ``initialize``.

Run it with any Python 3::

    python tests/servers/silent_legacy_server.py

Observability: when env ``TRIO_MCP_METHODS_LOG`` names a file, the server appends
``start <pid>`` when it starts and then the method of every message it receives.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

METHODS_LOG_ENV = "TRIO_MCP_METHODS_LOG"
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_INFO = {"name": "trio-mcp-silent-legacy-server", "version": "1.0.0"}
ECHO_TOOL = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def log_line(line: str) -> None:
    """Append ``line`` to the methods log, if one is configured."""
    path = os.environ.get(METHODS_LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def handle(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result for a known request, or None to stay silent."""
    if method == "initialize":
        requested = params.get("protocolVersion")
        return {
            "protocolVersion": requested if requested in VERSIONS else VERSIONS[0],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO,
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [ECHO_TOOL]}
    if method == "tools/call":
        if params.get("name") != "echo":
            return {"content": [{"type": "text", "text": "unknown tool"}], "isError": True}
        text = str((params.get("arguments") or {}).get("text", ""))
        return {"content": [{"type": "text", "text": text}], "isError": False}
    return None


def main() -> None:
    """Serve stdin/stdout until end of input."""
    log_line(f"start {os.getpid()}")
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            continue  # a response or garbage: nothing to do
        method = message["method"]
        log_line(method)
        if "id" not in message:
            continue  # a notification
        params = message.get("params")
        result = handle(method, params if isinstance(params, dict) else {})
        if result is None:
            continue  # the point of this server: no answer at all
        response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
