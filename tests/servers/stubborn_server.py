"""An MCP server (trio_mcp's demo) that outlives its client unless the client ends it.

``python stubborn_server.py PIDFILE [START_DELAY]``: writes its pid to PIDFILE, sleeps
START_DELAY seconds (a slow starter), serves the demo server on stdio, and then, when stdin
closes, keeps running (for an hour) instead of exiting: only a signal ends it. Tests use it
to prove that a client closes (SIGTERM/SIGKILL) the servers it started.
"""

from __future__ import annotations

import os
import sys
import time

import trio

from trio_mcp.testing import demo_server


def main() -> None:
    with open(sys.argv[1], "w") as file:
        file.write(str(os.getpid()))
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
    trio.run(demo_server("both").serve_stdio)
    time.sleep(3600)


if __name__ == "__main__":
    main()
