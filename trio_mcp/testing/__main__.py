"""``python -m trio_mcp.testing [--era both|legacy|modern]``: the demo server over stdio."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import trio

from ._demo import demo_server


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the demo server on stdin/stdout until stdin closes.

    Returns:
        The exit status: 0 after a clean end of stdin, 1 if the server crashed.
    """
    parser = argparse.ArgumentParser(
        prog="python -m trio_mcp.testing",
        description="Serve trio_mcp's demo MCP server over stdio (newline-delimited JSON).",
    )
    parser.add_argument(
        "--era",
        choices=["both", "legacy", "modern"],
        default="both",
        help="which protocol eras to serve (default: both)",
    )
    args = parser.parse_args(argv)
    server = demo_server(args.era)
    trio.run(server.serve_stdio)
    if server.crash_count:
        print("trio_mcp demo server: crashed on request", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
