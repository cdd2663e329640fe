"""Name clashes in a server group affect only the names that clash (issue 26)."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

import trio_mcp
from trio_mcp import open_server_group
from trio_mcp._group._members import Member
from trio_mcp._group._names import Catalogue
from trio_mcp.testing import MockServer, ToolContext


def server(name: str, *tools: str) -> MockServer:
    mock = MockServer(name=name)
    for tool in tools:

        async def answer(ctx: ToolContext, tool: str = tool) -> str:
            del ctx
            return f"{name}.{tool}"

        mock.tool(name=tool)(answer)
    return mock


def text(result: trio_mcp.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, trio_mcp.TextContent)
    return block.text


def clash_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "claim the tool name" in r.getMessage()]


async def test_a_tool_named_like_a_prefixed_name_breaks_nothing_else(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # a and c both offer x (so a_x and c_x); b offers a tool literally named a_x.
    servers = {"a": server("a", "x", "y"), "b": server("b", "a_x", "z"), "c": server("c", "x")}
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with open_server_group(servers) as group:
            names = sorted(tool.name for tool in await group.list_tools())
            assert names == ["a_x", "b_a_x", "c_x", "y", "z"]
            assert text(await group.call_tool("y")) == "a.y"
            assert text(await group.call_tool("z")) == "b.z"
            assert text(await group.call_tool("a_x")) == "a.x"  # the prefixed name is a's
            assert text(await group.call_tool("b_a_x")) == "b.a_x"
            assert text(await group.call_tool("c_x")) == "c.x"
            assert group.route_tool("b_a_x") == ("b", "a_x")
            await group.list_tools()  # listed again: the clash is not logged again
    assert clash_lines(caplog) == [
        "servers 'a', 'b' claim the tool name 'a_x': the renamed one keeps it, the other is "
        "exposed as 'b_a_x'"
    ]


async def test_two_renamed_items_on_one_name_are_exposed_for_neither(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # "a" + "_" + "b_x" and "a_b" + "_" + "x" are both "a_b_x".
    servers = {
        "a": server("a", "b_x", "only_a"),
        "a_b": server("a_b", "x"),
        "c": server("c", "b_x", "x"),
    }
    with caplog.at_level(logging.WARNING, logger="trio_mcp"):
        async with open_server_group(servers) as group:
            names = sorted(tool.name for tool in await group.list_tools())
            assert names == ["c_b_x", "c_x", "only_a"]
            assert text(await group.call_tool("only_a")) == "a.only_a"
            assert text(await group.call_tool("c_x")) == "c.x"
            with pytest.raises(trio_mcp.ServerError, match="unknown tool 'a_b_x'"):
                await group.call_tool("a_b_x")
    assert [r.getMessage() for r in caplog.records if "exposed for none" in r.getMessage()] == [
        "servers 'a', 'a_b' all claim the tool name 'a_b_x': it is exposed for none of them"
    ]


async def test_a_hook_renaming_onto_another_servers_name(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def rename(kind: str, name_of_server: str, name: str) -> str:
        return f"{name}-{name_of_server}"

    servers = {"a": server("a", "x"), "b": server("b", "x-a", "x")}
    async with open_server_group(servers, collisions=rename) as group:
        names = sorted(tool.name for tool in await group.list_tools())
        assert names == ["x-a", "x-a-b", "x-b"]
        assert text(await group.call_tool("x-a")) == "a.x"
        assert text(await group.call_tool("x-a-b")) == "b.x-a"


async def test_prompts_follow_the_same_rules(autojump_clock: trio.testing.MockClock) -> None:
    def prompt_server(name: str, *prompts: str) -> MockServer:
        mock = MockServer(name=name)
        for prompt in prompts:
            mock.add_prompt(prompt, lambda ctx: [])
        return mock

    servers = {
        "a": prompt_server("a", "p", "q"),
        "b": prompt_server("b", "a_p"),
        "c": prompt_server("c", "p"),
    }
    async with open_server_group(servers) as group:
        names = sorted(prompt.name for prompt in await group.list_prompts())
        assert names == ["a_p", "b_a_p", "c_p", "q"]


async def test_error_policy_still_raises(autojump_clock: trio.testing.MockClock) -> None:
    servers = {"a": server("a", "x"), "b": server("b", "x")}
    async with open_server_group(servers, collisions="error") as group:
        with pytest.raises(trio_mcp.groups.NameCollisionError):
            await group.list_tools()


# -- property: whatever the servers call their tools --------------------------------------

names = st.one_of(
    st.sampled_from(["x", "y", "a_x", "b_x", "a_b_x", "b_a_x", "c_x", "x_a", "a_a_x"]),
    st.text(alphabet="abx_", min_size=1, max_size=6),
)


def catalogue_of(servers: dict[str, list[str]]) -> dict[str, tuple[str, str]]:
    """The group's exposed tool names -> (server, its name there), for these listings."""
    members = []
    for server_name, tools in servers.items():
        member = Member(server_name, [], {}, restartable=False)
        member.state = trio_mcp.groups.ServerState.RUNNING
        member.items["tool"] = [
            trio_mcp.Tool(name=name, input_schema={"type": "object"}) for name in tools
        ]
        members.append(member)
    exposed = Catalogue("prefix", "_").exposed("tool", members)
    return {name: (member.name, item.name) for name, (member, item) in exposed.items()}


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "a_b"]),
        st.lists(names, max_size=5, unique=True),
        min_size=1,
        max_size=4,
    )
)
def test_a_clash_never_breaks_the_catalogue(servers: dict[str, list[str]]) -> None:
    with pytest.MonkeyPatch.context() as patch:  # the clash warnings are not the point here
        patch.setattr(logging.getLogger("trio_mcp"), "disabled", True)
        exposed = catalogue_of(servers)  # never raises NameCollisionError
    owners: dict[str, list[str]] = {}
    for server_name, tools in servers.items():
        for tool in tools:
            owners.setdefault(tool, []).append(server_name)
    renamed = {f"{s}_{tool}" for tool, found in owners.items() if len(found) > 1 for s in found}
    for tool, found in owners.items():
        if len(found) == 1 and tool not in renamed:  # no clash at all: kept as is
            assert exposed[tool] == (found[0], tool)
    for name, (server_name, tool) in exposed.items():
        assert name == tool or name == f"{server_name}_{tool}"  # only ever its own prefix
