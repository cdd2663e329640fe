"""Serve an ASGI app with uvicorn on 127.0.0.1 and announce the port on stderr.

Shared by the HTTP peer servers in this folder (each run as a script, so this folder is on
``sys.path``; each may run in its own virtual environment, which has uvicorn through its
MCP SDK). The test side (``tests/interop_peers.py``) waits for :data:`LISTENING_MARKER`.
"""

from __future__ import annotations

import sys
from typing import Any

#: The line prefix a server prints, followed by ``host:port``, once it listens.
LISTENING_MARKER = "TRIO_MCP_PEER_LISTENING"


async def serve_announced(app: Any, port: int, host: str = "127.0.0.1") -> None:
    """Serve ``app`` until killed, printing ``LISTENING_MARKER host:port`` once listening."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[Any] | None = None) -> None:
            await super().startup(sockets)
            for srv in self.servers:
                for sock in srv.sockets:
                    addr = sock.getsockname()
                    print(f"{LISTENING_MARKER} {addr[0]}:{addr[1]}", file=sys.stderr, flush=True)

    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
    )
    await AnnouncingServer(config).serve()
