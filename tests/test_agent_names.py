"""run_agent's tool names are unambiguous: no server can claim another's name (issue 26)."""

from __future__ import annotations

import re
from typing import Any

import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

import trio_mcp
from trio_mcp import CreateMessageResult, TextContent
from trio_mcp.agent import ModelRequest
from trio_mcp.testing import MockServer, ToolContext
from trio_mcp.types import ToolUseContent

VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def server(name: str, *tools: str) -> MockServer:
    mock = MockServer(name)
    for tool in tools:

        async def answer(ctx: ToolContext, tool: str = tool) -> str:
            del ctx
            return f"{name}.{tool}"

        mock.tool(name=tool)(answer)
    return mock


class Recorder:
    """A model that calls every offered tool once, then answers; records the routing."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> CreateMessageResult:
        self.requests.append(request)
        if len(self.requests) == 1:
            uses: list[Any] = [
                ToolUseContent(id=tool.name, name=tool.name, input={}) for tool in request.tools
            ]
            return CreateMessageResult(
                role="assistant", content=uses, model="m", stop_reason="toolUse"
            )
        return CreateMessageResult(
            role="assistant", content=[TextContent(text="done")], model="m", stop_reason="endTurn"
        )


async def routes(sessions: Any) -> dict[str, str]:
    """Offered name -> the text of what answered it (``server.tool``)."""
    model = Recorder()
    result = await trio_mcp.run_agent(model, sessions, ["go"])
    answers: dict[str, str] = {}
    for message in result.messages[2:3]:
        for block in message.content:  # type: ignore[union-attr]
            assert isinstance(block, trio_mcp.types.ToolResultContent)
            text = block.content[0]
            assert isinstance(text, TextContent)
            answers[block.tool_use_id] = text.text
    assert all(VALID.fullmatch(name) for name in answers)
    return answers


async def test_a_server_cannot_claim_another_servers_qualified_name(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # a and b both offer x, so a's is "a__x"; b also offers a tool literally named "a__x".
    async with (
        trio_mcp.open_mcp_session(server("a", "x")) as a,
        trio_mcp.open_mcp_session(server("b", "x", "a__x", "b__y", "plain")) as b,
    ):
        for sessions in ({"a": a, "b": b}, {"b": b, "a": a}):  # whichever comes first
            answers = await routes(sessions)
            assert answers["a__x"] == "a.x"  # a's, never b's
            assert answers["b__x"] == "b.x"
            assert answers["b__a__x"] == "b.a__x"
            assert answers["b__b__y"] == "b.b__y"  # its own prefix does not pass as bare
            assert answers["plain"] == "b.plain"
            for name, text in answers.items():  # every name is <label>__... of its owner
                if "__" in name:
                    assert text.startswith(name.split("__", 1)[0] + ".")


async def test_labels_with_underscores_cannot_be_confused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Labels "a" and "a_" once gave "a___x" for both a_'s "x" and a's "_x".
    async with (
        trio_mcp.open_mcp_session(server("one", "x", "_x")) as one,
        trio_mcp.open_mcp_session(server("two", "x", "_x")) as two,
    ):
        answers = await routes({"a": one, "a_": two})
    assert answers == {
        "a__x": "one.x", "a___x": "one._x", "a-__x": "two.x", "a-___x": "two._x",
    }  # fmt: skip


async def test_unsafe_and_long_names_get_a_digest_of_their_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    long = "t" * 70
    async with (
        trio_mcp.open_mcp_session(server("a", "dot.ted", "dot_ted", long)) as a,
        trio_mcp.open_mcp_session(server("b", "dot_ted")) as b,
    ):
        answers = await routes({"a": a, "b": b})
    by_text = {text: name for name, text in answers.items()}
    assert by_text["a.dot_ted"] == "a__dot_ted" and by_text["b.dot_ted"] == "b__dot_ted"
    assert re.fullmatch(r"a__dot_ted_[0-9a-f]{8}", by_text["a.dot.ted"])
    assert re.fullmatch(r"a__t+_[0-9a-f]{8}", by_text[f"a.{long}"])
    assert len(by_text[f"a.{long}"]) == 64


async def test_one_session_keeps_its_names(autojump_clock: trio.testing.MockClock) -> None:
    async with trio_mcp.open_mcp_session(server("solo", "x", "y")) as solo:
        answers = await routes(solo)
    assert answers == {"x": "solo.x", "y": "solo.y"}
    await trio.lowlevel.checkpoint()


# -- property: whatever the servers call their tools --------------------------------------

tool_names = st.one_of(
    st.text(min_size=1, max_size=80),
    st.text(alphabet="ab_-.", min_size=1, max_size=12),
    st.builds(lambda a, b: f"{a}__{b}", st.sampled_from(["a", "b", "a_", "a-", "s0"]),
              st.text(alphabet="ab_x", min_size=0, max_size=6)),
)  # fmt: skip


class Listed:
    """A source whose list_tools returns fixed tools (run_agent's _Toolbox reads only that)."""

    server_info = None

    def __init__(self, names: list[str]) -> None:
        self.tools = [trio_mcp.Tool(name=name, input_schema={"type": "object"}) for name in names]

    async def list_tools(self) -> list[trio_mcp.Tool]:
        await trio.lowlevel.checkpoint()
        return self.tools


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "a_", "a-", "a__b", "x" * 30, "", "s0"]),
        st.lists(tool_names, max_size=6),
        min_size=1,
        max_size=4,
    )
)
def test_offered_names_are_valid_and_stand_for_one_tool(servers: dict[str, list[str]]) -> None:
    from trio_mcp._agent import _label, _Toolbox  # pyright: ignore[reportPrivateUsage]

    sources = {label: Listed(names) for label, names in servers.items()}
    labelled = _label(sources)  # type: ignore[arg-type]
    box = trio.run(_Toolbox.gather, labelled)
    label_of = {id(source): label for label, source in labelled.items()}
    assert all("_" not in label for label in labelled)
    for name, offered in box.offered.items():
        assert VALID.fullmatch(name), name
        owner = label_of[id(offered.session)]
        if name == offered.tool.name:  # bare: nobody else has it, and it looks like no label's
            assert not any(name.startswith(f"{label}__") for label in labelled)
            assert sum(t.name == name for s in sources.values() for t in s.tools) == 1
        else:  # qualified: the text before the first "__" is the owner's label
            assert name.split("__", 1)[0] == owner
    offered_tools = [(label_of[id(o.session)], o.tool.name) for o in box.offered.values()]
    listed = {(label_of[id(s)], t.name) for s in labelled.values() for t in s.tools}  # type: ignore[attr-defined]
    assert set(offered_tools) == listed  # every tool is offered (once per listing)
