"""The demo: a session against the bundled demo server (``python -m trio_mcp.demo``).

Starts ``python -m trio_mcp.testing`` as a stdio subprocess, lets trio_mcp pick the protocol
era, lists the tools, calls ``echo`` and ``add``, and shows a timeout cancelling a slow call.
"""

from __future__ import annotations

import sys

import trio

import trio_mcp

__all__ = ["main"]


async def run_demo() -> None:
    """Run the demo session and print what happens."""
    command = [sys.executable, "-m", "trio_mcp.testing"]
    async with trio_mcp.open_mcp_session(command) as session:
        info = session.server_info
        print(f"connected to {info.name if info else '?'} ", end="")
        print(f"({session.era} era, protocol {session.protocol_version})")
        tools = await session.list_tools()
        print("tools:", ", ".join(tool.name for tool in tools))
        result = await session.call_tool("echo", {"text": "hello from trio_mcp"})
        print("echo ->", result.raise_for_error().text)
        total = await session.call_tool("add", {"a": 2, "b": 3})
        print("add(2, 3) ->", total.text)
        try:
            await session.call_tool("slow", {"seconds": 10}, timeout=0.5)
        except trio.TooSlowError:
            print("slow(10) with timeout=0.5 -> cancelled (the server was told)")


def main() -> None:
    """Entry point of ``python -m trio_mcp.demo``."""
    trio.run(run_demo)


if __name__ == "__main__":
    main()
