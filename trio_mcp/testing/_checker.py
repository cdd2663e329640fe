"""The transport contract as a callable check: the suite trio_mcp runs over its own transports.

``await check_transport(opener)`` drives real sessions over a transport and fails with
[`TransportContractError`][trio_mcp.testing.TransportContractError] naming the rule broken.
trio_mcp's own ``tests/test_transport_contract.py`` runs it over memory, stdio, WebSocket and the
HTTP transports; run it over yours.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

import trio

from .._connect import open_mcp_session
from .._exceptions import TransportError
from .._session import ClientSession
from ._context import ToolContext
from ._server import MockServer

__all__ = ["CHECKS", "Check", "Kill", "Opener", "TransportContractError", "check_transport"]

Check = Literal["messages", "server_gone", "close"]
CHECKS: tuple[Check, ...] = ("messages", "server_gone", "close")
"""Every check, in the order [`check_transport()`][trio_mcp.testing.check_transport] runs them."""

Kill = Callable[[ClientSession], Awaitable[None]]
"""Makes the server side go away abruptly (kill the process, drop the socket), given the session
connected to it."""
Opener = Callable[[MockServer], AbstractAsyncContextManager[tuple[Any, Kill]]]
"""Opens a server reachable through your transport and yields ``(target, kill)``: ``target`` is
anything ``open_mcp_session`` takes (your transport factory), whose server has an ``echo(text)``
tool; the [`MockServer`][trio_mcp.testing.MockServer] passed in has one, serve it if you can."""


class TransportContractError(AssertionError):
    """A transport broke one rule of the transport contract; the message says which."""


def echo_server() -> MockServer:
    """A [`MockServer`][trio_mcp.testing.MockServer] with the ``echo(text)`` tool the checks call.

    Returns:
        A fresh server.
    """
    server = MockServer(name="contract")

    @server.tool(description="Echo the text back")
    async def echo(ctx: ToolContext, text: str) -> str:
        del ctx
        return text

    return server


async def check_transport(
    opener: Opener,
    *,
    checks: Sequence[Check] = CHECKS,
    timeout: float = 30.0,
) -> None:
    """Check that a transport keeps the transport contract, through real sessions.

    Each check gets a fresh server from ``opener``:

    * ``"messages"``: 50 concurrent tool calls, messages of up to 5 kB, each answer whole
      and to the right caller;
    * ``"server_gone"``: after ``kill``, a request fails with a
      [`TransportError`][trio_mcp.TransportError] (never hangs);
    * ``"close"``: closing is idempotent and completes when cancelled, and a closed session
      and transport raise `trio.ClosedResourceError`.

    Bounds are in the current clock's seconds: with a real process or socket, run it on
    real time (no ``autojump_clock``).

    Args:
        opener: Opens a server behind your transport (see `Opener`).
        checks: Which checks to run.
        timeout: A bound on each check, so a broken transport fails instead of hanging.

    Raises:
        TransportContractError: A rule was broken (or a check timed out).
        ValueError: ``checks`` names an unknown check.
    """
    for name in checks:
        if name not in CHECKS:
            raise ValueError(f"unknown check {name!r}; the checks are {', '.join(CHECKS)}")
    for name in checks:
        try:
            with trio.fail_after(timeout):
                await _RUNNERS[name](opener)
        except trio.TooSlowError as exc:
            raise TransportContractError(
                f"transport contract check {name!r} did not finish within {timeout} s: "
                "something hangs (a receive that never ends, a close that never completes)"
            ) from exc


async def _messages(opener: Opener) -> None:
    async with opener(echo_server()) as (target, _kill):
        async with trio.open_nursery() as nursery:
            async with open_mcp_session(nursery, target) as session:
                results: dict[int, str] = {}

                async def one(i: int) -> None:
                    text = f"message {i} " + "x" * (i * 37 % 5000)
                    results[i] = (await session.call_tool("echo", {"text": text})).text

                async with trio.open_nursery() as calls:
                    for i in range(50):
                        calls.start_soon(one, i)
            nursery.cancel_scope.cancel()
    expected = {i: f"message {i} " + "x" * (i * 37 % 5000) for i in range(50)}
    if results != expected:
        wrong = sorted(i for i in expected if results.get(i) != expected[i])
        raise TransportContractError(
            f"messages: {len(wrong)} of 50 concurrent calls got a wrong answer "
            f"(first: call {wrong[0]}); messages must arrive whole and in one piece"
        )


async def _server_gone(opener: Opener) -> None:
    async with opener(echo_server()) as (target, kill):
        async with trio.open_nursery() as nursery:
            async with open_mcp_session(nursery, target) as session:
                await session.call_tool("echo", {"text": "up"})
                await kill(session)
                failure: BaseException | None = None
                try:
                    for _ in range(3):  # the first may still be answered by a dying peer
                        await session.call_tool("echo", {"text": "down"})
                except TransportError as exc:
                    failure = exc
                if failure is None:
                    raise TransportContractError(
                        "server_gone: requests still succeed after the server was killed"
                    )
            nursery.cancel_scope.cancel()


async def _close(opener: Opener) -> None:
    async with opener(echo_server()) as (target, _kill):
        async with trio.open_nursery() as nursery:
            session = None
            with trio.CancelScope() as scope:
                async with open_mcp_session(nursery, target) as session:
                    await session.call_tool("echo", {"text": "x"})
                    scope.cancel()  # the block exits by cancellation: close still completes
                    await trio.sleep_forever()
            assert session is not None
            if not session.closed:
                raise TransportContractError("close: the session is not closed after its block")
            await session.aclose()
            await session.transport.aclose()
            for what, attempt in (
                ("session.call_tool", lambda: session.call_tool("echo", {"text": "x"})),
                ("transport.send", lambda: session.transport.send(b"{}", None)),
            ):
                try:
                    await attempt()
                except trio.ClosedResourceError:
                    continue
                except Exception as exc:
                    raise TransportContractError(
                        f"close: {what} after close raised {exc!r}, not trio.ClosedResourceError"
                    ) from exc
                raise TransportContractError(f"close: {what} after close did not raise")
            nursery.cancel_scope.cancel()


_RUNNERS: dict[str, Callable[[Opener], Awaitable[None]]] = {
    "messages": _messages,
    "server_gone": _server_gone,
    "close": _close,
}
