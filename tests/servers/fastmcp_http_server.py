"""A small fastmcp server over Streamable HTTP, for restart tests (``test_interop_restart_http``).

Runs in fastmcp's own virtualenv (``.peers/py-fastmcp/``); serves ``/mcp`` on 127.0.0.1 at
``--port`` and announces it (``_announce.py``). Tools: ``echo(text)``, and
``log_then_echo(text)``, which sends a log message on the request's stream first.
"""

from __future__ import annotations

import argparse
import asyncio

from _announce import serve_announced
from fastmcp import Context, FastMCP

mcp = FastMCP("trio-mcp-restart-peer")


@mcp.tool()
def echo(text: str) -> str:
    """Return ``text``."""
    return text


@mcp.tool()
async def log_then_echo(ctx: Context, text: str) -> str:
    """Log ``text`` (a ``notifications/message``), then return it."""
    await ctx.info(text)
    return text


def main() -> None:
    """Serve until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve_announced(mcp.http_app(path="/mcp"), args.port))


if __name__ == "__main__":
    main()
