"""trio_mcp's pytest plugin (the ``pytest11`` entry point ``trio_mcp``); needs pytest-trio.

Fixtures:

* ``mcp_era``: ``"both"``, or ``"legacy"``/``"modern"`` under ``@pytest.mark.mcp_eras``;
* ``mcp_server``: a fresh [`MockServer`][trio_mcp.testing.MockServer] for that era (override it in
  your ``conftest.py`` to serve your tools);
* ``mcp_session_options``: keyword arguments for ``open_mcp_session`` (from
  ``@pytest.mark.mcp_session_options(...)``; override it for defaults);
* ``mcp_session``: a [`ClientSession`][trio_mcp.ClientSession] connected in memory to
  ``mcp_server``, in the era of ``mcp_era``;
* ``mcp_clock``: a `trio.testing.MockClock` that autojumps (pytest-trio runs the test
  on it), and fails a test that would hang for ever (every task waits, no deadline is
  pending) with what each task waits on, instead of spinning a CPU core (``_hang``).

Markers: ``@pytest.mark.mcp_eras()`` runs a test once per era (``mcp_eras("legacy")`` only
in one); ``@pytest.mark.mcp_session_options(default_timeout=5)``.

A test that fails with the library's ``initialize``/``server/discover`` timeout under an
autojump clock gets a hint in its failure report: virtual time raced ahead of a real process
or socket.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Generator
from typing import Any

import pytest
import trio
import trio.testing

from .._connect import open_mcp_session
from .._session import ClientSession
from ._hang import hang_report_of, is_mcp_clock, mcp_clock_made, run_detecting_hangs
from ._server import MockServer
from ._server_base import MODERN_VERSIONS

__all__ = [
    "AUTOJUMP_HINT",
    "HANG_NOTE",
    "mcp_clock",
    "mcp_era",
    "mcp_server",
    "mcp_session",
    "mcp_session_options",
]

_ERAS = ("legacy", "modern")

AUTOJUMP_HINT = (
    "trio_mcp: this test timed out in the library's start-up ({what}) while running on an "
    "autojump MockClock. If it talks to a real subprocess or socket, that is the cause: "
    "while the real server starts, every task waits, so the clock jumps ahead and "
    "init_timeout/probe_timeout (virtual seconds) expire at once. Use autojump_clock only "
    "with MockServer or in-memory transports; run tests against real processes on real "
    "time (no clock fixture) bounded by trio.fail_after, or pass init_timeout=None. "
    "See docs/testing.md."
)
"""Added to the failure report of a start-up timeout under an autojump clock."""


HANG_NOTE = (
    "trio_mcp stopped the test (cancelled it) after every task had waited for half a second "
    "of real time with nothing left that could wake one. Under mcp_clock, give every wait "
    "a way to end (set the event, answer the request) or a deadline (trio.fail_after). "
    "See docs/testing.md."
)
"""Ends the failure report of a test that would have hung."""


def pytest_configure(config: pytest.Config) -> None:
    """Register the plugin's markers."""
    config.addinivalue_line(
        "markers",
        "mcp_eras(*eras): run the test once per MCP protocol era "
        "('legacy', 'modern'; both when none is named), through the mcp_era fixture",
    )
    config.addinivalue_line(
        "markers",
        "mcp_session_options(**options): keyword arguments for open_mcp_session in the "
        "mcp_session fixture",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``mcp_era`` for tests marked ``mcp_eras``."""
    marker = metafunc.definition.get_closest_marker("mcp_eras")
    if marker is None or "mcp_era" not in metafunc.fixturenames:
        return
    eras = tuple(marker.args) or _ERAS
    for era in eras:
        if era not in _ERAS:
            raise pytest.UsageError(f"mcp_eras: unknown era {era!r}; use 'legacy' or 'modern'")
    metafunc.parametrize("mcp_era", eras, indirect=True, ids=[f"era={e}" for e in eras])


@pytest.fixture
def mcp_era(request: pytest.FixtureRequest) -> str:
    """The protocol era under test: ``"legacy"``, ``"modern"`` or ``"both"`` (unmarked).

    ``"both"`` means a dual-era server and a client that negotiates (modern wins).
    """
    return str(getattr(request, "param", "both"))


@pytest.fixture
def mcp_server(mcp_era: str) -> MockServer:
    """A fresh MockServer speaking ``mcp_era``; override it to register your tools.

    Returns:
        ``MockServer(eras=mcp_era)``.
    """
    return MockServer(eras="both" if mcp_era == "both" else mcp_era)  # type: ignore[arg-type]


@pytest.fixture
def mcp_session_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Keyword arguments for ``open_mcp_session`` in ``mcp_session``.

    Returns:
        The keywords of the closest ``@pytest.mark.mcp_session_options(...)``, or ``{}``.
    """
    marker = request.node.get_closest_marker("mcp_session_options")
    return dict(marker.kwargs) if marker is not None else {}


@pytest.fixture
async def mcp_session(
    nursery: trio.Nursery,
    mcp_server: MockServer,
    mcp_era: str,
    mcp_session_options: dict[str, Any],
) -> AsyncGenerator[ClientSession, None]:
    """A session connected in memory to ``mcp_server``, in the era of ``mcp_era``.

    A dual-era ``mcp_server`` is still spoken to in ``mcp_era`` (``protocol=`` is set), so an
    overriding ``mcp_server`` that ignores ``mcp_era`` runs both eras too. The session's tasks
    run in pytest-trio's ``nursery`` fixture; it is closed after the test.

    Yields:
        The open session.
    """
    options = dict(mcp_session_options)
    if mcp_era in _ERAS and mcp_server.eras == "both":
        options.setdefault("protocol", "legacy" if mcp_era == "legacy" else MODERN_VERSIONS[0])
    async with open_mcp_session(nursery, mcp_server, **options) as session:
        yield session


@pytest.fixture
def mcp_clock() -> trio.testing.MockClock:
    """A MockClock that jumps ahead whenever every task waits (``autojump_threshold=0``).

    pytest-trio runs a test that requests it on this clock. In-process servers only: see
    the warning in docs/testing.md. A test in which every task waits and no deadline is
    pending (it would spin for ever) fails after half a second of real time, its report
    saying where each task waits.

    Returns:
        The clock.
    """
    return mcp_clock_made(trio.testing.MockClock(autojump_threshold=0))


def _start_up_timeout(exc: BaseException) -> str | None:
    """The start-up step (initialize, server/discover) whose timeout ``exc`` contains.

    Walks groups, causes and contexts iteratively, each exception once: chains can be
    long and can loop.
    """
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, trio.TooSlowError):
            text = str(current)
            for what in ("initialize", "server/discover"):
                if text.startswith(f"{what} timed out"):
                    return what
        children: Any = getattr(current, "exceptions", None)
        if isinstance(children, tuple):
            todo.extend(
                child  # pyright: ignore[reportUnknownArgumentType]
                for child in children  # pyright: ignore[reportUnknownVariableType]
                if isinstance(child, BaseException)
            )
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)
    return None


def _hang_report(item: pytest.Item) -> str | None:
    funcargs: Any = getattr(item, "funcargs", {})
    for value in dict(funcargs).values():
        if is_mcp_clock(value):
            return hang_report_of(value)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the trio tests that request ``mcp_clock`` with hang detection.

    pytest-trio takes the ``run`` of the first ``trio`` marker that names one: this one,
    added before pytest-trio's own (trio mode), unless the test names its own ``run`` or
    the project runs its tests on another loop (pytest-trio's ``trio_run = qtrio``).
    """
    try:
        if config.getini("trio_run") not in ("", "trio"):
            return
    except ValueError:  # pytest-trio is not installed: nothing runs async tests
        return
    for item in items:
        if "mcp_clock" not in getattr(item, "fixturenames", ()):
            continue
        if any("run" in mark.kwargs for mark in item.iter_markers("trio")):
            continue
        item.add_marker(pytest.mark.trio(run=run_detecting_hangs))


def _autojumps(item: pytest.Item) -> bool:
    funcargs: Any = getattr(item, "funcargs", {})
    for value in dict(funcargs).values():
        if isinstance(value, trio.testing.MockClock) and value.autojump_threshold != math.inf:
            return True
    return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Add the autojump hint to a start-up timeout's failure report; explain a hang."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.failed or call.excinfo is None or not _autojumps(item):
        return
    hang = _hang_report(item)
    if hang is not None:  # the cancellation's tracebacks say nothing: the report replaces them
        report.longrepr = f"{hang}\n\n{HANG_NOTE}"
        return
    what = _start_up_timeout(call.excinfo.value)
    if what is None:
        return
    hint = AUTOJUMP_HINT.format(what=what)
    longrepr: Any = report.longrepr
    if hasattr(longrepr, "addsection"):
        longrepr.addsection("trio_mcp hint", hint)
    else:
        report.sections.append(("trio_mcp hint", hint))
