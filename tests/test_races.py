"""Race tests: closing, cancelling and concurrency around the session, in both eras.

Every scenario runs under the autojump clock with its own ``trio.fail_after`` guard, so a
hang fails the test at a fixed virtual time instead of stalling the run. Interleavings are
varied by letting another task take ``k`` checkpoints before it acts.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

import trio_mcp
from trio_mcp._transports._memory import memory_transport_pair
from trio_mcp.testing import MockServer, ToolContext

from .fuzzing import Outcome, user_nursery
from .rawpeer import RawPeer

MODERN = "2026-07-28"
DISCOVER_OK = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw", "version": "2"}},
}
HANG = 600.0  # virtual seconds
ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
# What an operation racing its own session's close may end with, besides success.
ON_CLOSE = (trio.ClosedResourceError, trio_mcp.ConnectionClosed)


def make_server(era: str) -> MockServer:
    server = MockServer(eras=era)  # type: ignore[arg-type]

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    @server.tool
    async def slow(ctx: ToolContext, seconds: float) -> str:
        await trio.sleep(seconds)
        return "done"

    server.add_resource("file:///a", text="a")
    server.add_resource_template("file:///{name}", "files")
    server.add_prompt("p", "hello", [{"name": "a"}])
    server.set_completion(lambda ref, argument, context: ["x"])
    return server


async def checkpoints(k: int) -> None:
    for _ in range(k):
        await trio.lowlevel.checkpoint()


async def ends_in_time(done: trio.Event, what: str, seconds: float = 60) -> None:
    """Wait for ``done``; a hang fails the test instead of stalling it."""
    try:
        with trio.fail_after(seconds):
            await done.wait()
    except trio.TooSlowError:
        raise AssertionError(f"{what} still had not ended after {seconds} s") from None


async def _raw_discover(peer: RawPeer, message: dict[str, Any]) -> Any:
    return DISCOVER_OK


# -- close racing listen (review C2) ----------------------------------------------------------


async def test_close_racing_listen_never_reaches_the_users_nursery(
    autojump_clock: trio.testing.MockClock,
) -> None:
    unexpected: list[BaseException] = []
    for i in range(60):
        server = MockServer(eras="modern")
        ended = trio.Event()

        async def listener(session: trio_mcp.ClientSession, ended: trio.Event) -> None:
            try:
                async with session.listen(tools=True) as rx:
                    async for _ in rx:
                        pass
            except ON_CLOSE:
                pass
            except Exception as exc:
                unexpected.append(exc)
            finally:
                ended.set()

        with trio.fail_after(HANG):
            async with user_nursery() as nursery:
                async with trio_mcp.open_mcp_session(nursery, server) as session:
                    nursery.start_soon(listener, session, ended)
                    await checkpoints(i % 8)
                    nursery.start_soon(session.aclose)
                    await ends_in_time(ended, f"listen (iteration {i})")
    assert not unexpected, f"listen racing aclose raised {unexpected[:3]}"


# -- the session's nursery is cancelled (review C3) -------------------------------------------


async def _service_nursery(*, task_status: trio.TaskStatus[trio.Nursery]) -> None:
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()


@ERAS
async def test_cancelled_session_nursery_fails_callers_elsewhere_promptly(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_server(era)
    with trio.fail_after(HANG):
        async with user_nursery() as app:
            session_nursery = await app.start(_service_nursery)
            async with trio_mcp.open_mcp_session(session_nursery, server) as session:
                pending = Outcome()
                app.start_soon(pending.capture, session.call_tool, "slow", {"seconds": 3600})
                await trio.testing.wait_all_tasks_blocked()
                session_nursery.cancel_scope.cancel()
                await trio.testing.wait_all_tasks_blocked()
                start = trio.current_time()

                await ends_in_time(pending.done, "a call pending when the nursery was cancelled")
                assert isinstance(pending.error, trio_mcp.ConnectionClosed), pending.error

                later = Outcome()
                app.start_soon(later.capture, session.call_tool, "echo", {"text": "b"})
                await ends_in_time(later.done, "a call after the nursery was cancelled")
                assert isinstance(later.error, trio_mcp.ConnectionClosed), later.error
                assert trio.current_time() - start <= 1.0


# -- cancellation at every await point of a request --------------------------------------------


@ERAS
@pytest.mark.parametrize(
    "server_steps", [-1, 0, 3], ids=["never-answers", "answers", "answers-late"]
)
async def test_cancelling_a_call_at_every_checkpoint(
    era: str, server_steps: int, autojump_clock: trio.testing.MockClock
) -> None:
    async def tools_call(peer: RawPeer, message: dict[str, Any]) -> Any:
        steps = message["params"]["arguments"]["steps"]
        if steps < 0:
            await trio.sleep_forever()
        await checkpoints(steps)
        return {"content": [{"type": "text", "text": "done"}]}

    handlers: dict[str, Any] = {"tools__call": tools_call}
    if era == "modern":
        handlers["server__discover"] = _raw_discover
    client, server = memory_transport_pair()
    peer = RawPeer(server, **handlers)
    options: dict[str, Any] = {"protocol": "legacy"} if era == "legacy" else {}

    async def cancel_after(scope: trio.CancelScope, k: int) -> None:
        await checkpoints(k)
        scope.cancel()

    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            nursery.start_soon(peer.run, nursery)
            async with trio_mcp.open_mcp_session(nursery, client, **options) as session:
                assert session.era == era
                cancelled_after_send = completed = 0
                for k in range(-1, 40):  # -1: cancelled before the call starts
                    before = len(peer.sent("tools/call"))
                    with trio.CancelScope() as scope:
                        if k < 0:
                            scope.cancel()
                        else:
                            nursery.start_soon(cancel_after, scope, k)
                        result = await session.call_tool("t", {"steps": server_steps})
                        assert result.content[0].text == "done"  # type: ignore[union-attr]
                        completed += 1
                    await trio.testing.wait_all_tasks_blocked()
                    if server_steps < 0:
                        assert scope.cancelled_caught
                    sent = [m["id"] for m in peer.sent("tools/call")[before:]]
                    if scope.cancelled_caught and sent:
                        cancelled_after_send += 1
                        if era == "legacy":
                            missing = [i for i in sent if i not in peer.cancelled]
                            assert not missing, f"k={k}: request {missing} sent but never cancelled"
                    # no pending entry left behind, nothing broken
                    with trio.fail_after(60):
                        after = await session.call_tool("t", {"steps": 0})
                    assert after.content[0].text == "done"  # type: ignore[union-attr]
                # the sweep crossed the request's whole life: sent, waiting, (answered)
                assert cancelled_after_send > 0 if server_steps < 0 else completed > 0
                print(f"{era} steps={server_steps}: {cancelled_after_send} cancelled after "
                      f"sending, {completed} completed, of 41")  # fmt: skip
            await server.aclose()


# -- notify() is a checkpoint (review M3) ------------------------------------------------------


@ERAS
async def test_notify_is_a_checkpoint(era: str) -> None:
    server = make_server(era)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.lowlevel.checkpoint()

    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, server) as session:
                nursery.start_soon(ticker)
                await trio.lowlevel.checkpoint()
                before = ticks
                for i in range(10_000):
                    await session.notify("notifications/x-vendor/tick", {"i": i})
                ran = ticks - before
                with trio.CancelScope() as scope:
                    scope.cancel()
                    await session.notify("notifications/x-vendor/tick", {"i": -1})
    assert ran >= 1_000, f"a ticker task ran {ran} times during 10,000 notify() calls"
    assert scope.cancelled_caught, "notify() in a cancelled scope did not raise Cancelled"


# -- aclose() racing every public operation ----------------------------------------------------


async def _drain_listen(session: trio_mcp.ClientSession, **kwargs: Any) -> None:
    async with session.listen(**kwargs) as rx:
        async for _ in rx:
            pass


async def _drain_notifications(session: trio_mcp.ClientSession) -> None:
    async with session.notifications() as rx:
        async for _ in rx:
            pass


Op = Callable[[trio_mcp.ClientSession], Awaitable[Any]]
OPERATIONS: dict[str, Op] = {
    "ping": lambda s: s.ping(),
    "list_tools": lambda s: s.list_tools(cache=False),
    "list_tools_page": lambda s: s.list_tools_page(cache=False),
    "call_tool": lambda s: s.call_tool("echo", {"text": "x"}),
    "call_tool(slow)": lambda s: s.call_tool("slow", {"seconds": 5}),
    "list_resources": lambda s: s.list_resources(cache=False),
    "list_resource_templates": lambda s: s.list_resource_templates(cache=False),
    "read_resource": lambda s: s.read_resource("file:///a", cache=False),
    "subscribe_resource": lambda s: s.subscribe_resource("file:///a"),
    "list_prompts": lambda s: s.list_prompts(cache=False),
    "get_prompt": lambda s: s.get_prompt("p", {"a": "x"}),
    "complete": lambda s: s.complete({"type": "ref/prompt", "name": "p"}, "a", "b"),
    "set_logging_level": lambda s: s.set_logging_level("info"),
    "request": lambda s: s.request("tools/list"),
    "notify": lambda s: s.notify("notifications/x-vendor/x"),
    "listen(tools)": lambda s: _drain_listen(s, tools=True),
    "listen(resource_uris)": lambda s: _drain_listen(s, resource_uris=["file:///a"]),
    "notifications": _drain_notifications,
}
STREAMS = {"listen(tools)", "listen(resource_uris)", "notifications"}


@ERAS
@pytest.mark.parametrize("name", OPERATIONS)
async def test_close_racing_each_operation(
    era: str, name: str, autojump_clock: trio.testing.MockClock
) -> None:
    operation = OPERATIONS[name]
    server = make_server(era)
    with trio.fail_after(HANG):
        if name not in STREAMS:  # the operation itself works
            async with user_nursery() as nursery:
                async with trio_mcp.open_mcp_session(nursery, server) as session:
                    await operation(session)
        for k in [*range(8), None]:  # None: close once the operation is blocked
            outcome = Outcome()
            async with user_nursery() as nursery:
                async with trio_mcp.open_mcp_session(nursery, server) as session:
                    nursery.start_soon(outcome.capture, operation, session)
                    if k is None:
                        await trio.testing.wait_all_tasks_blocked()
                    else:
                        await checkpoints(k)
                    nursery.start_soon(session.aclose)
                    await ends_in_time(outcome.done, f"{name} racing aclose (k={k})")
            error = outcome.error
            assert error is None or isinstance(error, ON_CLOSE), (
                f"{name} racing aclose (k={k}) raised {error!r}, "
                "not trio.ClosedResourceError or ConnectionClosed"
            )


# -- async callable objects as notification handlers (review m3) ------------------------------


class AsyncRecorder:
    """A notification handler that is an object with ``async def __call__``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.called = trio.Event()

    async def __call__(self, note: trio_mcp.Notification) -> None:
        await trio.lowlevel.checkpoint()
        self.seen.append(note.method)
        self.called.set()


async def _record(recorder: AsyncRecorder, note: trio_mcp.Notification) -> None:
    await recorder(note)


HANDLER_SHAPES: dict[str, Callable[[AsyncRecorder], Any]] = {
    "async callable object": lambda recorder: recorder,
    "partial of an async function": lambda recorder: functools.partial(_record, recorder),
    "bound async method": lambda recorder: recorder.__call__,
}


@ERAS
@pytest.mark.parametrize("shape", HANDLER_SHAPES)
@pytest.mark.parametrize("method", ["notifications/message", "*"])
async def test_async_callables_run_as_notification_handlers(
    era: str, shape: str, method: str, autojump_clock: trio.testing.MockClock
) -> None:
    handlers: dict[str, Any] = {"server__discover": _raw_discover} if era == "modern" else {}
    client, server = memory_transport_pair()
    peer = RawPeer(server, **handlers)
    recorder = AsyncRecorder()
    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            nursery.start_soon(peer.run, nursery)
            async with trio_mcp.open_mcp_session(nursery, client) as session:
                assert session.era == era
                session.add_notification_handler(method, HANDLER_SHAPES[shape](recorder))
                await peer.send({"jsonrpc": "2.0", "method": "notifications/message",
                                 "params": {"level": "info", "data": "hello"}})  # fmt: skip
                await ends_in_time(recorder.called, f"the {shape} handler")
                assert recorder.seen == ["notifications/message"]
            await server.aclose()


# -- server requests with duplicate ids (review m6) --------------------------------------------


async def test_duplicate_server_request_ids_can_still_be_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started: list[Any] = []
    cancelled: list[Any] = []

    async def sample(params: Any, ctx: trio_mcp.RequestContext) -> Any:
        started.append(ctx.request_id)
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            cancelled.append(ctx.request_id)
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    client, server = memory_transport_pair()
    peer = RawPeer(server)
    request = {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage",
               "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                          "maxTokens": 10}}  # fmt: skip
    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            nursery.start_soon(peer.run, nursery)
            async with trio_mcp.open_mcp_session(
                nursery, client, protocol="legacy", sampling=sample
            ) as session:
                await peer.send(request)
                await peer.send(request)
                await trio.testing.wait_all_tasks_blocked()
                # Served twice, or the duplicate rejected or ignored: the engine's choice.
                assert started, "the sampling handler never ran"
                await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": 7}})  # fmt: skip
                await trio.testing.wait_all_tasks_blocked()
                assert len(cancelled) == len(started), (
                    f"{len(started)} handlers ran for id 7, only {len(cancelled)} were cancelled"
                )
                await session.ping()
            await server.aclose()


# -- the first reply starts the reply writer; idle response channels are shared per run -----


def _session_tasks(nursery: trio.Nursery) -> list[str]:
    return sorted(task.name for task in nursery.child_tasks if task.name.startswith("trio_mcp"))


async def _close_and_tell(session: trio_mcp.ClientSession, closed: trio.Event) -> None:
    await session.aclose()
    closed.set()


@pytest.mark.parametrize("first", ["close", "ping"])
async def test_close_racing_the_first_reply(
    first: str, autojump_clock: trio.testing.MockClock
) -> None:
    ping = {"jsonrpc": "2.0", "id": "p1", "method": "ping"}
    for k in range(8):
        client, server = memory_transport_pair()
        peer = RawPeer(server)
        with trio.fail_after(HANG):
            async with user_nursery() as nursery:
                nursery.start_soon(peer.run, nursery)
                async with trio_mcp.open_mcp_session(nursery, client, protocol="legacy") as session:
                    closed = trio.Event()
                    close = functools.partial(_close_and_tell, session, closed)
                    if first == "close":
                        nursery.start_soon(close)
                        await checkpoints(k)
                        with contextlib.suppress(trio_mcp.ConnectionClosed):  # (the client left)
                            await peer.send(ping)
                    else:
                        await peer.send(ping)
                        await checkpoints(k)
                        nursery.start_soon(close)
                    await ends_in_time(closed, f"aclose racing the first ping ({first}, k={k})")
                    await trio.testing.wait_all_tasks_blocked()
                    assert _session_tasks(nursery) == [], f"{first}, k={k}: a task outlived close"
                await server.aclose()


@ERAS
async def test_cancelling_at_every_checkpoint_never_hands_a_pooled_channel_to_another_session(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = make_server(era)
    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            async with (
                trio_mcp.open_mcp_session(nursery, server) as first,
                trio_mcp.open_mcp_session(nursery, server) as second,
            ):
                assert first._rpc._pool is second._rpc._pool  # one pool for the run

                async def cancel_after(scope: trio.CancelScope, k: int) -> None:
                    await checkpoints(k)
                    scope.cancel()

                async def echo_on_second(text: str) -> None:
                    result = await second.call_tool("echo", {"text": text})
                    assert result.content[0].text == text  # type: ignore[union-attr]

                for k in range(30):
                    async with trio.open_nursery() as calls:
                        for i in range(3):  # the other session keeps using the pool meanwhile
                            calls.start_soon(echo_on_second, f"second {k}.{i}")
                        with trio.CancelScope() as scope:
                            calls.start_soon(cancel_after, scope, k)
                            await first.call_tool("echo", {"text": f"first {k}"})
                    # an idle channel holds nothing: no answer can reach its next owner
                    for _, receive in first._rpc._pool:
                        assert receive.statistics().current_buffer_used == 0, f"k={k}"
                    after = await first.call_tool("echo", {"text": f"after {k}"})
                    assert after.content[0].text == f"after {k}"  # type: ignore[union-attr]
