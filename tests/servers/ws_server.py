"""A legacy (handshake-era) MCP server over WebSocket, with trio-websocket (no SDK).

None of the registry peers speaks WebSocket, so this is the real server the WebSocket
restart test kills and starts again: a separate process, a real socket. It accepts the
``mcp`` subprotocol, one JSON-RPC message per text frame, and answers ``initialize``
(protocol ``2025-06-18``), ``ping`` and ``tools/call`` of one tool, ``echo(text)``, whose
answer names the process (``<pid>:<text>``), so a test sees which process answered.

Run it with the test interpreter::

    python tests/servers/ws_server.py --port 8765

It prints ``TRIO_MCP_PEER_LISTENING 127.0.0.1:<port>`` on stderr once it listens
(127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket

LISTENING_MARKER = "TRIO_MCP_PEER_LISTENING"
INIT_RESULT: dict[str, Any] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "trio-mcp-ws-server", "version": "1.0.0"},
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    if "id" not in message or "method" not in message:
        return None
    method = message["method"]
    if method == "initialize":
        result: Any = INIT_RESULT
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        text = message.get("params", {}).get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": f"{os.getpid()}:{text}"}]}
    else:
        error = {"code": -32601, "message": f"unknown method {method}"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


async def handler(request: WebSocketRequest) -> None:
    ws = await request.accept(subprotocol="mcp")
    try:
        while True:
            reply = answer(json.loads(await ws.get_message()))
            if reply is not None:
                await ws.send_message(json.dumps(reply))
    except ConnectionClosed:
        pass


async def main(port: int) -> None:
    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, handler, "127.0.0.1", port, None)
        print(f"{LISTENING_MARKER} 127.0.0.1:{server.port}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    trio.run(main, parser.parse_args().port)
