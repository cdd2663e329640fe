"""The tool loop over a server group: the group's names, its routing, a server restarting."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import Backoff, CreateMessageResult, TextContent, open_server_group
from trio_mcp.agent import ModelRequest
from trio_mcp.groups import RestartPolicy, ServerState
from trio_mcp.testing import MockServer, ToolContext
from trio_mcp.types import ToolResultContent

from .test_agent import answer, use

POLICY = RestartPolicy(backoff=Backoff(initial=1.0, jitter=0), healthy_after=10.0)


def weather_server(name: str) -> MockServer:
    server = MockServer(name)

    @server.tool(description="Weather in a city")
    async def weather(ctx: ToolContext, city: str) -> str:  # the same name on both servers
        await trio.sleep(5)
        return f"{name}: sunny in {city}"

    @server.tool(name=f"only_{name}")
    async def only(ctx: ToolContext) -> str:
        return name

    return server


Step = Callable[[ModelRequest], Awaitable[CreateMessageResult]]


class Stepped:
    """A scripted model whose steps may act (crash a server) before answering."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []
        self.times: list[float] = []

    async def __call__(self, request: ModelRequest) -> CreateMessageResult:
        self.requests.append(request)
        self.times.append(trio.current_time())
        return await self.steps.pop(0)(request)


def results(request: ModelRequest) -> dict[str, ToolResultContent]:
    last = request.messages[-1]
    assert last.role == "user" and isinstance(last.content, list)
    return {b.tool_use_id: b for b in last.content if isinstance(b, ToolResultContent)}


def text_of(block: ToolResultContent) -> str:
    first = block.content[0]
    assert isinstance(first, TextContent)
    return first.text


async def test_agent_over_a_group_uses_its_names_routing_and_restarts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b = weather_server("a"), weather_server("b")

    async def ask_both(request: ModelRequest) -> CreateMessageResult:
        return answer(
            use("1", "a_weather", city="Oslo"), use("2", "b_weather", city="Rome"),
            use("3", "only_b"),
        )  # fmt: skip

    async def crash_b(request: ModelRequest) -> CreateMessageResult:
        got = results(request)
        assert text_of(got["1"]) == "a: sunny in Oslo"
        assert text_of(got["2"]) == "b: sunny in Rome"
        assert text_of(got["3"]) == "b"

        @b.tool
        async def added(ctx: ToolContext) -> str:  # listed once b has restarted
            return "new"

        await b.crash()
        await group.wait_for("b", ServerState.RESTARTING)
        return answer(use("4", "b_weather", city="Rome"), use("5", "a_weather", city="Rome"))

    async def after_restart(request: ModelRequest) -> CreateMessageResult:
        got = results(request)
        assert got["4"].is_error is True and "server 'b'" in text_of(got["4"])
        assert text_of(got["5"]) == "a: sunny in Rome"  # a kept answering
        await group.wait_for("b")
        return answer(use("6", "added"))

    async def final(request: ModelRequest) -> CreateMessageResult:
        assert text_of(results(request)["6"]) == "new"
        return answer(TextContent(text="done"))

    model = Stepped(ask_both, crash_b, after_restart, final)
    async with open_server_group([a, b], restart=POLICY) as group:
        start = trio.current_time()
        result = await trio_mcp.run_agent(model, group, ["Weather?"])
        assert result.text == "done" and result.iterations == 4 and result.tool_calls == 6
        offered = sorted(tool.name for tool in model.requests[0].tools)
        assert offered == ["a_weather", "b_weather", "only_a", "only_b"]
        # after the restart the model is offered b's refreshed catalogue: the group's own
        assert model.requests[3].tools == await group.list_tools()
        assert "added" in {tool.name for tool in model.requests[3].tools}
        # the 5 s calls ran at once; the down server's call failed at once while a's ran;
        # b was back at 6 s (1 s backoff), before a's second call ended
        assert [when - start for when in model.times] == [0.0, 5.0, 10.0, 10.0]
        assert group.status("b").restarts == 1


async def test_a_group_next_to_a_session_and_a_collision_error_group(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def ask(request: ModelRequest) -> CreateMessageResult:
        return answer(use("1", "group__only_a"), use("2", "solo__only_a"))

    async def final(request: ModelRequest) -> CreateMessageResult:
        got = results(request)
        assert text_of(got["1"]) == "a" and text_of(got["2"]) == "a"
        return answer(TextContent(text="ok"))

    model = Stepped(ask, final)
    async with (
        open_server_group([weather_server("a"), weather_server("b")]) as group,
        trio_mcp.open_mcp_session(weather_server("a")) as solo,
    ):
        result = await trio_mcp.run_agent(model, {"group": group, "solo": solo}, ["hi"])
        assert result.text == "ok"
        offered = {tool.name for tool in model.requests[0].tools}
        # only a name clashing between the group and the session gets the label prefix
        assert offered == {"a_weather", "b_weather", "only_b", "group__only_a", "solo__only_a",
                           "weather"}  # fmt: skip
    async with open_server_group(
        [weather_server("a"), weather_server("b")], collisions="error"
    ) as strict:
        with pytest.raises(trio_mcp.groups.NameCollisionError):
            await trio_mcp.run_agent(Stepped(), strict, ["hi"])
