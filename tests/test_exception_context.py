"""The nursery-less forms re-raise the user's own exception bare, its chain intact (issue 26)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
import trio
import trio.testing

from trio_mcp import open_mcp_session, open_server_group, run_agent
from trio_mcp.testing import MockServer, ToolContext

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup


class UserError(Exception):
    pass


def mock(name: str = "m") -> MockServer:
    server = MockServer(name=name)

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        del ctx
        return text

    return server


def raise_chained() -> None:
    """Raise a UserError with both a ``__cause__`` and a (different) ``__context__``."""
    cause = KeyError("the cause")
    try:
        raise ValueError("the context")
    except ValueError:
        raise UserError("mine") from cause


def raise_with_context_only() -> None:
    try:
        raise ValueError("the context")
    except ValueError:
        raise UserError("mine")  # noqa: B904 - implicit chaining is the point


OPENERS: dict[str, Callable[[], AbstractAsyncContextManager[Any]]] = {
    "open_mcp_session": lambda: open_mcp_session(mock()),
    "open_server_group": lambda: open_server_group([mock("a"), mock("b")]),
}


@pytest.mark.parametrize("opener", sorted(OPENERS))
async def test_cause_and_context_survive(
    opener: str, autojump_clock: trio.testing.MockClock
) -> None:
    with pytest.raises(UserError) as info:
        async with OPENERS[opener]():
            raise_chained()
    error = info.value
    assert not isinstance(error, BaseExceptionGroup)
    assert isinstance(error.__cause__, KeyError)
    assert isinstance(error.__context__, ValueError)
    assert str(error.__context__) == "the context"
    assert error.__suppress_context__  # as `raise ... from cause` set it, no more


@pytest.mark.parametrize("opener", sorted(OPENERS))
async def test_implicit_context_is_shown(
    opener: str, autojump_clock: trio.testing.MockClock
) -> None:
    with pytest.raises(UserError) as info:
        async with OPENERS[opener]():
            raise_with_context_only()
    error = info.value
    assert error.__cause__ is None
    assert isinstance(error.__context__, ValueError)
    assert not error.__suppress_context__  # the traceback shows "During handling of..."


@pytest.mark.parametrize("opener", sorted(OPENERS))
async def test_exception_without_chain_stays_without(
    opener: str, autojump_clock: trio.testing.MockClock
) -> None:
    with pytest.raises(UserError) as info:
        async with OPENERS[opener]():
            raise UserError("plain")
    assert info.value.__cause__ is None
    assert info.value.__context__ is None
    assert not info.value.__suppress_context__


class FailingSession:
    """A source whose list_tools fails with a chained error (run_agent unwraps it)."""

    server_info = None

    async def list_tools(self) -> list[Any]:
        await trio.lowlevel.checkpoint()
        raise_chained()
        return []


async def test_run_agent_unwraps_a_listing_error_with_its_chain() -> None:
    async def model(request: Any) -> Any:
        raise AssertionError("not reached")  # pragma: no cover

    with pytest.raises(UserError) as info:
        await run_agent(model, {"x": FailingSession()}, ["hi"])  # type: ignore[dict-item]
    assert isinstance(info.value.__cause__, KeyError)
    assert isinstance(info.value.__context__, ValueError)
