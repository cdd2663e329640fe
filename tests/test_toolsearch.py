"""Searching a large tool catalogue: ToolIndex, session and group search, the agent's top N."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp import CreateMessageResult, TextContent, open_server_group
from trio_mcp import types as t
from trio_mcp.agent import ModelRequest, ToolIndex
from trio_mcp.testing import MockServer, ToolContext


def tool(name: str, title: str = "", description: str = "", args: tuple[str, ...] = ()) -> t.Tool:
    schema = {"type": "object", "properties": {arg: {"type": "string"} for arg in args}}
    return t.Tool(
        name=name,
        title=title or t.UNSET,
        description=description or t.UNSET,
        input_schema=schema,
    )


CATALOGUE = [
    tool("send_mail", description="Send an email message", args=("to", "subject")),
    tool("forecast", title="Weather forecast", description="Tomorrow's sky", args=("city",)),
    tool("weather", description="Current weather in a city", args=("city",)),
    tool("list_issues", title="List issues", args=("repo",)),
    tool("createIssue", description="Open a new issue on a repository", args=("repo", "title")),
    tool("ping"),
    tool("city_info", args=("weatherStation",)),
]


def names(tools: list[t.Tool]) -> list[str]:
    return [item.name for item in tools]


def test_ranking_name_then_title_then_arguments_then_description() -> None:
    index = ToolIndex(CATALOGUE)
    # a word of the name (30) > a word of the title (15) > part of an argument's name (5)
    assert names(index.search("weather")) == ["weather", "forecast", "city_info"]
    assert names(index.search("issue")) == ["createIssue", "list_issues"]
    assert names(index.search("create issue")) == ["createIssue", "list_issues"]
    # name (30) > argument and description (8 + 4) > argument (8)
    assert names(index.search("city")) == ["city_info", "weather", "forecast"]
    assert names(index.search("city", limit=2)) == ["city_info", "weather"]
    assert names(index.search("email to someone")) == ["send_mail"]  # "to": a stop word


def test_empty_queries_limits_and_bad_limits() -> None:
    index = ToolIndex(CATALOGUE)
    assert names(index.search("")) == names(CATALOGUE)
    assert names(index.search("  ...  ", limit=2)) == ["send_mail", "forecast"]
    assert index.search("nothing-like-it") == []
    assert "weather" in names(index.search("the"))  # only stop words: searched as they are
    assert len(index) == len(CATALOGUE)
    with pytest.raises(ValueError, match="limit"):
        index.search("x", limit=-1)


def test_camel_case_names_and_arguments_are_words() -> None:
    index = ToolIndex(CATALOGUE)
    assert names(index.search("station")) == ["city_info"]
    assert names(index.search("createIssue")) == ["createIssue", "list_issues"]


text = st.text(st.characters(codec="utf-8"), max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(text, text, text, st.lists(text, max_size=3)), max_size=12),
    text,
    st.none() | st.integers(0, 5),
)
def test_any_catalogue_and_query_search_without_error(
    entries: list[tuple[str, str, str, list[str]]], query: str, limit: int | None
) -> None:
    # names, titles, descriptions and argument names are the server's: any text at all
    tools = [tool(n, ti, d, tuple(a)) for n, ti, d, a in entries]
    found = ToolIndex(tools).search(query, limit=limit)
    assert all(any(item is listed for listed in tools) for item in found)
    assert len({id(item) for item in found}) == len(found)
    if limit is not None:
        assert len(found) <= limit


def many_tools_server(count: int) -> MockServer:
    server = MockServer(eras="legacy")
    for i in range(count):

        async def handler(ctx: ToolContext) -> str:
            return "ok"

        server.tool(name=f"tool_{i}", description=f"does thing number {i}")(handler)
    return server


def list_calls(server: MockServer) -> int:
    return sum(1 for message in server.received if message.get("method") == "tools/list")


async def test_session_search_reuses_its_index_until_the_tools_change(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = many_tools_server(300)
    async with trio_mcp.open_mcp_session(server) as session:
        assert names(await session.search_tools("tool_42"))[0] == "tool_42"
        listed = list_calls(server)
        assert names(await session.search_tools("number 7", limit=3)) == [
            "tool_7", "tool_17", "tool_27",
        ]  # fmt: skip
        assert list_calls(server) == listed  # the index was reused: no listing

        @server.tool(description="A new kind of thing")
        async def brand_new(ctx: ToolContext) -> str:
            return "new"

        await server.notify_tools_changed()
        await trio.sleep(1)
        assert names(await session.search_tools("brand new")) == ["brand_new"]
        assert list_calls(server) == listed + 1


async def test_group_search_uses_exposed_names(autojump_clock: trio.testing.MockClock) -> None:
    a, b = many_tools_server(3), many_tools_server(3)

    @a.tool(description="Forecast the weather")
    async def weather(ctx: ToolContext) -> str:
        return "sunny"

    async with open_server_group({"a": a, "b": b}) as group:
        assert names(await group.search_tools("weather")) == ["weather"]
        found = names(await group.search_tools("tool_1", limit=2))
        assert found == ["a_tool_1", "b_tool_1"]
        assert names(await group.search_tools("tool_1", limit=2)) == found  # cached index


class Recording:
    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> CreateMessageResult:
        self.requests.append(request)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="ok"), model="m", stop_reason="endTurn"
        )


async def test_the_agent_offers_only_the_best_matches(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = many_tools_server(50)

    @server.tool(description="Forecast the weather in a city")
    async def weather(ctx: ToolContext, city: str) -> str:
        return "sunny"

    model = Recording()
    async with trio_mcp.open_mcp_session(server) as session:
        await trio_mcp.run_agent(model, session, ["What is the weather in Oslo?"], max_tools=3)
        offered: Any = model.requests[0].tools
        assert names(list(offered))[0] == "weather" and len(offered) <= 3
        await trio_mcp.run_agent(model, session, ["hi"])
        assert len(model.requests[1].tools) == 51  # no max_tools: every tool
        with pytest.raises(ValueError, match="max_tools"):
            await trio_mcp.run_agent(model, session, ["hi"], max_tools=0)
