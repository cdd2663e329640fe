"""A test that would hang on an autojump clock fails at once, saying what each task waits on.

trio's `MockClock` with ``autojump_threshold=0`` jumps to the next
deadline whenever every task waits. When every task waits and *no* deadline is pending
(a lock never released, an event never set, a reply that never comes), there is nothing to
jump to: the run loop spins a CPU core for ever. `HangDetector`, a trio instrument
the plugin adds to every run on its ``mcp_clock`` (through pytest-trio's ``run=``, see
`run_detecting_hangs()`), notices that state (no task runnable, no deadline, no task
waiting for I/O, nothing queued from another thread) lasting
`hang_grace` seconds of real time (a thread or another process may
still wake a task meanwhile), writes `describe_waits()` into
`hang_report`, and cancels the main task, so the test fails and the
plugin shows the report. Should the test's own clean-up hang too, every nursery is
cancelled; then the clock stops jumping (no more spinning) and the report goes to stderr.
"""

from __future__ import annotations

import math
import os
import sys
import time
import types
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio
import trio.testing

__all__ = [
    "HangDetector",
    "HangError",
    "describe_waits",
    "hang_report_of",
    "is_mcp_clock",
    "mcp_clock_made",
    "run_detecting_hangs",
]

_TRIO_DIR = os.path.dirname(trio.__file__)
_OUR_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # trio_mcp/
_NURSERY_EXIT = frozenset({"_nested_child_finished", "__aexit__"})
"""The frames of a task that waits for its nursery's children."""
_PYTEST_TRIO_DIR = os.path.join(os.path.dirname(_TRIO_DIR), "pytest_trio")
_HEADER = (
    "trio_mcp: this test would hang for ever: every task waits, no deadline is pending and no "
    "task waits for I/O, so the autojump clock has nothing to jump to. What each task waits on "
    "(the innermost line of yours, then the trio call it waits in):"
)


class HangError(RuntimeError):
    """A test on the autojump clock stopped: every task waited on something that never came."""


class HangDetector(trio.abc.Instrument):
    """A trio instrument that stops a run that would spin for ever on an autojump clock.

    Args:
        hang_grace: Real seconds the hopeless state must last before the run is stopped.
    """

    def __init__(self, *, hang_grace: float = 0.5) -> None:
        self.hang_grace = hang_grace
        """Real seconds the hopeless state must last (a thread may still finish meanwhile)."""
        self.hang_report: str | None = None
        """What each task waited on, once a hang was detected (None until then)."""
        self._idle_since: float | None = None
        self._cancels = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        """A task runs: whatever waited before, the run is not stuck."""
        self._idle_since = None

    def before_io_wait(self, timeout: float) -> None:
        """Each turn of the run loop: is anything left that could ever wake a task?"""
        stats = trio.lowlevel.current_statistics()
        if (
            stats.tasks_runnable
            or stats.seconds_to_next_deadline != math.inf
            or stats.run_sync_soon_queue_size
            or _io_waiters(stats.io_statistics) > 1  # (1: trio's own run_sync_soon task)
        ):
            self._idle_since = None
            return
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
            return
        if now - self._idle_since < self.hang_grace:
            return
        self._idle_since = None
        if self.hang_report is None:
            self.hang_report = describe_waits()
        self._cancels += 1
        if self._cancels == 1:  # the main task: the test fails, its clean-up runs
            main = _main_nursery()
            if main is not None:
                main.cancel_scope.cancel()
                return
        if self._cancels <= 2:  # the clean-up hangs too: every scope that can be cancelled
            for task in _tasks(trio.lowlevel.current_root_task()):
                for nursery in task.child_nurseries:
                    nursery.cancel_scope.cancel()
            return
        # Shielded waits that never end: stop spinning, say why (Ctrl-C still works).
        clock: Any = trio.lowlevel.current_clock()
        if isinstance(clock, trio.testing.MockClock):
            clock.autojump_threshold = math.inf
        sys.stderr.write(f"{self.hang_report}\n(the clean-up hangs too: stopped the clock)\n")


def run_detecting_hangs(
    fn: Callable[[], Awaitable[object]],
    *,
    clock: trio.abc.Clock | None = None,
    instruments: Sequence[trio.abc.Instrument] = (),
    **options: Any,
) -> object:
    """``trio.run``, plus a `HangDetector` when ``clock`` is the plugin's ``mcp_clock``.

    The plugin makes this the ``run`` of every trio test that requests ``mcp_clock``.
    """
    if clock is None or not is_mcp_clock(clock):
        return trio.run(fn, clock=clock, instruments=instruments, **options)
    detector = HangDetector()
    _DETECTORS[id(clock)] = detector
    try:
        return trio.run(fn, clock=clock, instruments=[*instruments, detector], **options)
    finally:
        if detector.hang_report is None:
            del _DETECTORS[id(clock)]


_MCP_CLOCKS: weakref.WeakSet[trio.testing.MockClock] = weakref.WeakSet()
"""The clocks the plugin's mcp_clock fixture made (MockClock is final: no attribute of ours)."""
_DETECTORS: dict[int, HangDetector] = {}
"""The detector of each such clock's run that found a hang, by the clock's id."""


def mcp_clock_made(clock: trio.testing.MockClock) -> trio.testing.MockClock:
    """Remember ``clock`` as one of the plugin's (its runs detect hangs)."""
    _MCP_CLOCKS.add(clock)
    return clock


def is_mcp_clock(clock: object) -> bool:
    """Whether ``clock`` came from the plugin's ``mcp_clock`` fixture."""
    return isinstance(clock, trio.testing.MockClock) and clock in _MCP_CLOCKS


def hang_report_of(clock: object) -> str | None:
    """The hang report of ``clock``'s run, if it found one (and forget it)."""
    detector = _DETECTORS.pop(id(clock), None)
    return None if detector is None else detector.hang_report


def _io_waiters(io: Any) -> int:
    """Tasks waiting for a file descriptor or handle (any of trio's I/O managers)."""
    names = (
        "tasks_waiting_read",
        "tasks_waiting_write",
        "tasks_waiting_overlapped",
        "tasks_waiting",
    )
    return sum(int(getattr(io, name, 0) or 0) for name in names)


def _main_nursery() -> trio.Nursery | None:
    """The nursery trio runs the main task in (the init task's innermost one)."""
    root = trio.lowlevel.current_root_task()
    nurseries = [] if root is None else root.child_nurseries
    return nurseries[-1] if nurseries else None


def _tasks(root: trio.lowlevel.Task | None) -> list[trio.lowlevel.Task]:
    """Every task under ``root``, depth first, ``root`` first."""
    found: list[trio.lowlevel.Task] = []
    todo = [] if root is None else [root]
    while todo:
        task = todo.pop()
        found.append(task)
        children = [child for nursery in task.child_nurseries for child in nursery.child_tasks]
        todo.extend(reversed(children))
    return found


def _frames(task: trio.lowlevel.Task) -> list[types.FrameType]:
    """The frames of ``task``'s coroutine chain, outermost first."""
    frames: list[types.FrameType] = []
    awaitable: Any = task.coro
    seen = 0
    while awaitable is not None and seen < 200:  # (a bound: chains are short)
        seen += 1
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        frame = frame or getattr(awaitable, "ag_frame", None)
        if frame is None:
            break
        frames.append(frame)
        awaitable = (
            getattr(awaitable, "cr_await", None)
            or getattr(awaitable, "gi_yieldfrom", None)
            or getattr(awaitable, "ag_await", None)
        )
    return frames


def _where(frame: types.FrameType) -> str:
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)  # (Python 3.11+: Event.wait)
    return f"{code.co_filename}:{frame.f_lineno} in {name}"


def _is_trio(frame: types.FrameType) -> bool:
    return frame.f_code.co_filename.startswith(_TRIO_DIR)


def describe_waits() -> str:
    """What every waiting task of this run waits on: its own code's frame, and trio's call.

    Tasks that only wait for their children (a nursery's end) are left out; so are trio's
    own and pytest-trio's fixture runners. Call it from inside a trio run.

    Returns:
        A report of one entry per task.
    """
    lines = [_HEADER]
    for task in _tasks(trio.lowlevel.current_root_task()):
        frames = _frames(task)
        if not frames or task.name.startswith(("<init>", "<TrioToken")):
            continue
        if any(frame.f_code.co_name in _NURSERY_EXIT for frame in frames):
            continue  # it waits for its children, listed below it
        own = [i for i, frame in enumerate(frames) if not _is_trio(frame)]
        at = own[-1] if own else 0  # (a task running trio's own function: that function)
        if frames[at].f_code.co_filename.startswith(_PYTEST_TRIO_DIR):
            continue  # pytest-trio waiting to tear a fixture down
        entry = f"  task {task.name!r}: {_where(frames[at])}"
        users = [i for i in own if not frames[i].f_code.co_filename.startswith(_OUR_DIR)]
        if users and users[-1] != at:  # the caller's line that called into trio_mcp
            entry += f"\n      called from {_where(frames[users[-1]])}"
        if at + 1 < len(frames):
            entry += f"\n      waits in {_where(frames[at + 1])}"
        lines.append(entry)
    return "\n".join(lines)
