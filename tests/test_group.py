"""The server group: supervision under MockClock (exact virtual times), catalogue, routing."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import Backoff, ConnectionClosed, open_server_group
from trio_mcp._transports._base import Transport
from trio_mcp.config import MemoryConsentStore, parse_config
from trio_mcp.groups import NameCollisionError, RestartPolicy, ServerState, ServerUnavailableError
from trio_mcp.testing import MockServer, ToolContext

POLICY = RestartPolicy(
    backoff=Backoff(initial=1.0, multiplier=2.0, maximum=60.0, jitter=0),
    failure_threshold=3,
    recovery_time=100.0,
    max_restarts=5,
    healthy_after=10.0,
)


def server(name: str) -> MockServer:
    mock = MockServer(name=name)

    @mock.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        del ctx
        return f"{name}:{text}"

    @mock.tool(name=f"only_{name}")
    async def only(ctx: ToolContext) -> str:
        del ctx
        return name

    mock.add_resource(f"{name}://readme", text=f"readme of {name}")
    mock.add_prompt(
        "hello", lambda ctx: [{"role": "user", "content": {"type": "text", "text": name}}]
    )
    return mock


class NeverStarts:
    """A transport factory whose server dies at once, with a stderr tail."""

    def __init__(self) -> None:
        self.attempts: list[float] = []

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        del nursery
        self.attempts.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        raise ConnectionClosed("could not start", exit_code=2, stderr_tail="fatal: no config")
        yield  # pragma: no cover


def text(result: trio_mcp.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    return block.text


async def test_catalogue_prefixes_collisions_and_routes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b = server("a"), server("b")
    async with trio.open_nursery() as nursery:
        async with open_server_group(nursery, [a, b], restart=POLICY) as group:
            assert group.servers == ["a", "b"]
            names = sorted(tool.name for tool in await group.list_tools())
            assert names == ["a_echo", "b_echo", "only_a", "only_b"]
            assert text(await group.call_tool("b_echo", {"text": "hi"})) == "b:hi"
            assert text(await group.call_tool("only_a")) == "a"
            assert group.route_tool("a_echo") == ("a", "echo")
            assert sorted(p.name for p in await group.list_prompts()) == ["a_hello", "b_hello"]
            read = await group.read_resource("b://readme")
            assert "readme of b" in str(read.contents[0])
            with pytest.raises(trio_mcp.ServerError, match="unknown tool 'echo'"):
                await group.call_tool("echo", {"text": "x"})
            with pytest.raises(trio_mcp.ResourceNotFoundError):
                await group.read_resource("c://nothing")
    assert group.status("a").state is ServerState.STOPPED


async def test_collision_error_policy_and_hook(autojump_clock: trio.testing.MockClock) -> None:
    async with open_server_group([server("a"), server("b")], collisions="error") as group:
        with pytest.raises(NameCollisionError) as info:
            await group.list_tools()
        assert info.value.servers == ["a", "b"]
    hook_calls: list[tuple[str, str, str]] = []

    def rename(kind: str, name_of_server: str, name: str) -> str:
        hook_calls.append((kind, name_of_server, name))
        return f"{name}@{name_of_server}"

    async with open_server_group([server("a"), server("b")], collisions=rename) as group:
        assert "echo@b" in {tool.name for tool in await group.list_tools()}
        assert text(await group.call_tool("echo@a", {"text": "x"})) == "a:x"
    assert ("tool", "a", "echo") in hook_calls


async def test_crash_restart_after_backoff_refreshes_catalogue(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b = server("a"), server("b")
    async with open_server_group({"a": a, "b": b}, restart=POLICY) as group:
        async with group.events() as events:
            start = trio.current_time()

            @a.tool
            async def added(ctx: ToolContext) -> str:  # appears after the restart
                del ctx
                return "new"

            await a.crash()
            seen: list[tuple[float, ServerState]] = []
            async for status in events:
                seen.append((trio.current_time() - start, status.state))
                if status.state is ServerState.RESTARTING:
                    assert status.retry_at == pytest.approx(start + 1.0)
                    # b keeps working while a is down; a answers with the reason
                    assert text(await group.call_tool("only_b")) == "b"
                    with pytest.raises(ServerUnavailableError) as down:
                        await group.call_tool("only_a")
                    assert down.value.server == "a"
                    assert "waiting to restart (in 1.0 s)" in str(down.value)
                    assert down.value.retry_at == pytest.approx(start + 1.0)
                if status.state is ServerState.RUNNING:
                    break
        assert seen == [
            (0.0, ServerState.RESTARTING),
            (1.0, ServerState.STARTING),
            (1.0, ServerState.RUNNING),
        ]
        assert group.status("a").restarts == 1
        assert text(await group.call_tool("added")) == "new"


async def test_backoff_then_circuit_breaker_then_give_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    broken = NeverStarts()
    async with open_server_group({"ok": server("ok"), "broken": broken}, restart=POLICY) as group:
        first = group.status("broken")
        assert first.state is ServerState.RESTARTING
        assert first.stderr_tail == "fatal: no config"
        assert first.exit_code == 2
        final = await group.wait_for("broken", ServerState.FAILED)
        assert text(await group.call_tool("only_ok")) == "ok"
    # 1 s, 2 s of backoff; the third failure opens the breaker: 100 s each, 5 restarts.
    assert broken.attempts == [0.0, 1.0, 3.0, 103.0, 203.0, 303.0]
    assert final.restarts == 5
    assert isinstance(final.error, ConnectionClosed)


async def test_restarts_off_and_unlimited_breaker_times(
    autojump_clock: trio.testing.MockClock,
) -> None:
    broken = NeverStarts()
    async with open_server_group([broken], restart=RestartPolicy(enabled=False)) as group:
        status = group.status("neverstarts")
        assert status.state is ServerState.FAILED
        with pytest.raises(ServerUnavailableError, match="down for good") as info:
            group.session("neverstarts")
        assert info.value.stderr_tail == "fatal: no config"
    assert broken.attempts == [0.0]


async def test_healthy_run_resets_backoff(autojump_clock: trio.testing.MockClock) -> None:
    a = server("a")
    async with open_server_group([a], restart=POLICY) as group:
        for _ in range(4):  # long runs: every restart waits the first delay only
            await trio.sleep(20)
            await a.crash()
            status = await group.wait_for("a", ServerState.RESTARTING)
            assert status.retry_at == pytest.approx(trio.current_time() + 1.0)
            await group.wait_for("a", ServerState.RUNNING)
        assert group.status("a").restarts == 4


async def test_notifications_across_the_group(autojump_clock: trio.testing.MockClock) -> None:
    a, b = server("a"), server("b")
    async with open_server_group([a, b]) as group:
        async with group.notifications("notifications/tools/list_changed") as channel:

            @b.tool
            async def later(ctx: ToolContext) -> str:
                del ctx
                return "later"

            await b.notify_tools_changed()
            note = await channel.receive()
            assert note.server == "b"
            assert note.notification.method == "notifications/tools/list_changed"
            # the catalogue was refreshed before the notification was passed on
            assert "later" in {tool.name for tool in await group.list_tools()}


async def test_handlers_learn_the_server_name(autojump_clock: trio.testing.MockClock) -> None:
    asked: list[str | None] = []

    async def elicit(params: Any, ctx: trio_mcp.RequestContext) -> dict[str, Any]:
        del params
        asked.append(ctx.server_name)
        return {"action": "accept", "content": {}}

    def asking(name: str) -> MockServer:
        mock = MockServer(name=f"self-{name}", eras="legacy")

        @mock.tool
        async def ask(ctx: ToolContext) -> str:
            answer = await ctx.elicit(
                {
                    "mode": "form",
                    "message": "name?",
                    "requestedSchema": {"type": "object", "properties": {}},
                }
            )
            return str(answer.get("action"))

        return mock

    async with open_server_group(
        {"left": asking("l"), "right": asking("r")}, elicitation=elicit
    ) as group:
        await group.call_tool("left_ask")
        await group.call_tool("right_ask")
    assert asked == ["left", "right"]


async def test_consent_rejects_new_and_changed_entries(
    autojump_clock: trio.testing.MockClock,
) -> None:
    import sys

    document = {
        "mcpServers": {"demo": {"command": sys.executable, "args": ["-m", "trio_mcp.testing"]}}
    }
    import json

    config = await parse_config(json.dumps(document), source="/tmp/x/.mcp.json")
    store = MemoryConsentStore()
    requests: list[trio_mcp.config.ConsentRequest] = []

    async def refuse(request: trio_mcp.config.ConsentRequest) -> bool:
        requests.append(request)
        return False

    async with open_server_group(config, approve=refuse, consent_store=store) as group:
        assert group.status("demo").state is ServerState.REJECTED
        with pytest.raises(ServerUnavailableError, match="not approved"):
            group.session("demo")
    assert [r.changed for r in requests] == [False]
    assert store.approved == {}


def test_bad_arguments() -> None:
    with pytest.raises(TypeError):
        open_server_group(42)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="unknown servers"):
        open_server_group([server("a")], server_options={"nope": {}})
    with pytest.raises(ValueError, match="collisions"):
        open_server_group([server("a")], collisions="merge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_restarts"):
        RestartPolicy(max_restarts=-1)


async def test_user_error_in_nurseryless_block_is_bare(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with pytest.raises(KeyError):
        async with open_server_group([server("a")]) as group:
            group.status("zzz")


class SlowToClose:
    """A member whose transport takes a second to close after the server died (a stdio
    process being reaped, an HTTP client shutting down): the group is still closing the dead
    session while callers route to it."""

    def __init__(self, mock: MockServer) -> None:
        self.mock = mock

    @asynccontextmanager
    async def open_transport(self, nursery: trio.Nursery) -> AsyncGenerator[Transport, None]:
        async with self.mock.open_transport(nursery) as transport:
            yield transport
        with trio.CancelScope(shield=True):
            await trio.sleep(1)


async def test_call_while_the_group_closes_a_dead_session_is_unavailable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Found by scripts/restart_storm.py (issue 33): a SIGKILLed stdio member's callers got
    # trio.ClosedResourceError, which means "you closed the session", from the session the
    # group was closing; they must get ServerUnavailableError, as while it restarts.
    a = server("a")
    async with open_server_group({"a": SlowToClose(a)}, restart=POLICY) as group:
        assert text(await group.call_tool("echo", {"text": "up"})) == "a:up"
        await a.crash(exit_code=-9)
        await trio.sleep(0.5)  # the group is closing the dead session
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: group.call_tool("echo", {"text": "down"}),
            lambda: group.get_prompt("hello"),
            lambda: group.read_resource("a://readme"),
            lambda: group.read_resource("a://readme", server="a"),
        ]
        for call in calls:
            with pytest.raises(ServerUnavailableError, match="session ended") as down:
                await call()
            assert down.value.server == "a"
        with pytest.raises(ServerUnavailableError):
            group.session("a")
        await group.wait_for("a", ServerState.RESTARTING)
        await group.wait_for("a", ServerState.RUNNING)
        assert trio.current_time() == 2.0  # closed at 1.0, then the policy's 1 s backoff
        assert text(await group.call_tool("echo", {"text": "back"})) == "a:back"
