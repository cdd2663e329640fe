"""Run a parsed command line under Trio and turn every failure into an exit status."""

from __future__ import annotations

import argparse
import logging
import sys

import trio

from .._exceptions import MCPError
from ._app import App, Interrupted, report
from ._args import UsageError

__all__ = ["run"]

_EXPECTED = (MCPError, UsageError, Interrupted, trio.TooSlowError, OSError)


def run(args: argparse.Namespace) -> int:
    """Run ``args`` (a one-shot command or the interactive mode); return the exit status."""
    library = logging.getLogger("trio_mcp")
    if args.verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        library.addHandler(handler)
        library.setLevel(logging.DEBUG)
    else:
        library.addHandler(logging.NullHandler())
        library.propagate = False  # server logs are shown with --log-level, not as warnings
    server_logs = logging.getLogger("trio_mcp.server")  # shown by --log-level instead
    server_logs.addHandler(logging.NullHandler())
    server_logs.propagate = False
    app = App(args)
    try:
        return trio.run(app.main)
    except _EXPECTED as exc:
        return report(app, args.json, exc)
    except KeyboardInterrupt:  # Ctrl-C before the signal watcher ran
        return report(app, args.json, Interrupted("interrupted"))
