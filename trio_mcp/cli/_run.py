"""Run a parsed command line under Trio and turn every failure into an exit status."""

from __future__ import annotations

import argparse
import logging
import os
import sys

import trio

from .._exceptions import MCPError
from .._terminal import for_terminal
from ._app import App, Interrupted, report
from ._args import UsageError
from ._output import StdoutClosed

__all__ = ["run"]

_EXPECTED = (MCPError, UsageError, Interrupted, trio.TooSlowError, OSError)

EXIT_PIPE_CLOSED = 141
"""The status of a command whose reader went away (``| head``): what a shell reports for a program
ended by SIGPIPE (128 + 13), as ``cat`` or ``grep`` would give."""


class _SafeFormatter(logging.Formatter):
    """``-v`` log lines carry peer text (messages, errors): neutralised for the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return for_terminal(super().format(record))


def _stdout_closed() -> int:
    """Python's documented SIGPIPE recipe: point stdout at devnull, so that the final
    flush at exit does not fail again, and end quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - no stdout file descriptor
        pass
    return EXIT_PIPE_CLOSED


def run(args: argparse.Namespace) -> int:
    """Run ``args`` (a one-shot command or the interactive mode); return the exit status."""
    library = logging.getLogger("trio_mcp")
    if args.verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_SafeFormatter("%(levelname)s %(name)s: %(message)s"))
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
    except StdoutClosed:
        return _stdout_closed()
    except _EXPECTED as exc:
        return report(app, args.json, exc)
    except KeyboardInterrupt:  # Ctrl-C before the signal watcher ran
        return report(app, args.json, Interrupted("interrupted"))
