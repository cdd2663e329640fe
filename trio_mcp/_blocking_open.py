"""`open_blocking_session`: the entry point of the blocking client.

Kept apart from ``_blocking.py`` (the hand-written runner and `BlockingSessionBase`)
and ``_blocking_api.py`` (the [`BlockingSession`][trio_mcp.BlockingSession] generated from that base
class) so that it can import both at module level: the generated module imports ``_blocking``, so a
function there that needed ``_blocking_api`` would tie the two modules into a cycle.
"""

from __future__ import annotations

from typing import Any

from ._blocking import Runner, check_not_in_trio, wrap_handlers
from ._blocking_api import BlockingSession
from ._connect import take_transport_options

__all__ = ["open_blocking_session"]


def open_blocking_session(target: Any, /, **options: Any) -> BlockingSession:
    """Connect to an MCP server from code that does not run Trio, and return the session.

    Starts ``trio.run`` in a daemon thread and opens the session there with
    ``trio_mcp.open_mcp_session(target, **options)``; returns once the session is ready.
    Use it as a context manager, or call [`BlockingSession.close()`][trio_mcp.BlockingSession.close]
    (sessions still open at interpreter exit are closed then):

    ```python
    with trio_mcp.open_blocking_session(["python", "-m", "server"]) as session:
        print(session.list_tools())
    ```

    Args:
        target: What [`open_mcp_session()`][trio_mcp.open_mcp_session] connects to: an argv list, a
            command line, an ``http(s)://`` or ``ws(s)://`` URL, or a parameters object.
        **options: The options of [`open_mcp_session()`][trio_mcp.open_mcp_session]. ``sampling``,
            ``elicitation`` and ``roots`` handlers may be plain functions: they run in a worker
            thread.

    Returns:
        The open [`BlockingSession`][trio_mcp.BlockingSession].

    Raises:
        RuntimeError: Called from inside a Trio task.
        TypeError: Wrong arguments, or an option that does not apply to the target.
        ConnectionClosed: The server could not be started or went away during start-up.
    """
    check_not_in_trio("open_blocking_session()")
    target, options = take_transport_options(target, options, stacklevel=2)  # deprecated
    runner = Runner()
    runner.cancel_notice_timeout = float(options.get("cancel_notice_timeout", 1.0))
    runner.start(target, wrap_handlers(options))
    session: BlockingSession = BlockingSession._create(runner)
    return session
