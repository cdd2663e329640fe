"""MockServer handlers with the wrong signature fail at registration, saying what they need."""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp.testing import MockServer, ToolContext


def test_prompt_handler_without_ctx_is_refused_with_the_shape_it_needs() -> None:
    server = MockServer()

    def greet(name: str) -> str:  # forgot ctx: called as greet(ctx, name=...)
        return f"hello {name}"

    with pytest.raises(TypeError) as caught:
        server.add_prompt("greet", greet, ["name"])
    message = str(caught.value)
    assert "prompt 'greet'" in message
    assert "handler(ctx, **arguments)" in message
    assert "but greet(name" in message
    assert "def greet(ctx, name)" in message


def test_prompt_handler_missing_a_declared_argument_is_refused() -> None:
    server = MockServer()
    with pytest.raises(TypeError, match="handler\\(ctx, \\*\\*arguments\\)"):
        server.add_prompt("greet", lambda ctx: "hi", ["name"])


def test_good_handlers_are_accepted() -> None:
    server = MockServer()
    server.add_prompt("greet", lambda ctx, name: f"hi {name}", ["name"])
    server.add_prompt("any", lambda ctx, **arguments: "hi", ["a", "b"])
    server.add_resource_template("file:///{path}", "files", lambda ctx, uri, path: path)
    server.set_completion(lambda ref, argument, context: ["a"])

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        return text


def test_template_and_completion_handlers_are_checked() -> None:
    server = MockServer()
    with pytest.raises(TypeError, match="handler\\(ctx, uri, \\*\\*variables\\)"):
        server.add_resource_template("file:///{path}", "files", lambda uri, path: path)
    with pytest.raises(TypeError, match="handler\\(ref, argument, context\\)"):
        server.set_completion(lambda ref: ["a"])


def test_tool_function_with_an_input_schema_it_cannot_take_is_refused() -> None:
    server = MockServer()

    def add(a: int) -> int:  # no ctx
        return a

    schema: Any = {"type": "object", "properties": {"a": {}}, "required": ["a"]}
    register = server.tool(input_schema=schema)
    with pytest.raises(TypeError, match="function\\(ctx, \\*\\*arguments\\)"):
        register(add)


@pytest.mark.parametrize("eras", ["modern", "legacy"])
async def test_a_handler_asking_for_one_input_after_another_gets_both(eras: str) -> None:
    # Modern era: the client sends only the latest round's inputResponses; the earlier
    # answers travel with the requestState the server issued (they were lost before, and
    # the call gave up after 10 rounds).
    import trio_mcp

    server = MockServer(eras=eras)  # type: ignore[arg-type]
    schema: Any = {"type": "object", "properties": {"v": {"type": "string"}}}

    @server.tool
    async def two(ctx: ToolContext) -> str:
        first = await ctx.elicit({"message": "first?", "requestedSchema": schema})
        second = await ctx.elicit({"message": "second?", "requestedSchema": schema})
        return f"{first['content']['v']} {second['content']['v']}"

    async def answer(params: Any, ctx: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"v": params.message.rstrip("?")}}

    async with trio_mcp.open_mcp_session(server, elicitation=answer) as session:
        result = await session.call_tool("two", {})
    assert result.text == "first second"
