"""The agentic tool loop, the sampling handler and the two HTTP model adapters."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any

import h11
import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import CreateMessageResult, TextContent
from trio_mcp.agent import ModelRequest
from trio_mcp.testing import MockServer, ToolContext
from trio_mcp.types import SamplingMessage, ToolResultContent, ToolUseContent

from .h11peer import read_request
from .rawpeer import connect


def weather_server(name: str) -> MockServer:
    server = MockServer(name)

    @server.tool(description="Weather in a city")
    async def weather(ctx: ToolContext, city: str) -> str:
        await trio.sleep(5)
        return f"{name}: sunny in {city}"

    @server.tool
    async def broken(ctx: ToolContext) -> str:
        raise trio_mcp.ToolError("it broke")

    @server.tool
    async def forever(ctx: ToolContext) -> str:
        await trio.sleep_forever()
        raise AssertionError  # pragma: no cover

    return server


def use(call_id: str, name: str, **arguments: Any) -> ToolUseContent:
    return ToolUseContent(id=call_id, name=name, input=arguments)


def answer(*blocks: Any) -> CreateMessageResult:
    reason = "toolUse" if any(isinstance(b, ToolUseContent) for b in blocks) else "endTurn"
    return CreateMessageResult(
        role="assistant", content=list(blocks), model="s", stop_reason=reason
    )


class Scripted:
    """A model that answers from a script and records what it was asked."""

    def __init__(self, *answers: CreateMessageResult) -> None:
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> CreateMessageResult:
        self.requests.append(request)
        return self.answers.pop(0)


async def test_agent_runs_tool_calls_concurrently_across_sessions(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Scripted(
        answer(TextContent(text="checking"), use("1", "a__weather", city="Oslo"),
               use("2", "b__weather", city="Rome"), use("3", "nope"), use("4", "a__broken")),
        answer(TextContent(text="Oslo and Rome are sunny")),
    )  # fmt: skip
    async with (
        trio_mcp.open_mcp_session(weather_server("a")) as a,
        trio_mcp.open_mcp_session(weather_server("b")) as b,
    ):
        start = trio.current_time()
        result = await trio_mcp.run_agent(model, {"a": a, "b": b}, ["What is the weather?"])
        assert trio.current_time() - start == 5  # both 5 s calls ran at once
    assert result.text == "Oslo and Rome are sunny"
    assert result.iterations == 2 and result.tool_calls == 4
    offered = sorted(tool.name for tool in model.requests[0].tools)
    assert offered == ["a__broken", "a__forever", "a__weather", "b__broken", "b__forever",
                       "b__weather"]  # fmt: skip
    [feedback] = [m for m in result.messages if m.role == "user"][1:]
    blocks = {b.tool_use_id: b for b in feedback.content if isinstance(b, ToolResultContent)}
    assert blocks["1"].content[0].text == "a: sunny in Oslo" and blocks["1"].is_error is not True
    assert blocks["2"].content[0].text == "b: sunny in Rome"
    assert blocks["3"].is_error is True and "no tool named 'nope'" in blocks["3"].content[0].text
    assert blocks["4"].is_error is True
    assert model.requests[1].messages[-1] == feedback
    assert len(result.messages) == 4


async def test_unique_names_keep_their_name_and_labels_default_to_server_names() -> None:
    model = Scripted(answer(TextContent(text="done")))
    only = MockServer("solo")

    @only.tool
    async def thing(ctx: ToolContext) -> str:
        return "x"

    async with trio_mcp.open_mcp_session(only) as session:
        await trio_mcp.run_agent(model, session, ["hi"], system_prompt="be brief")
        assert [tool.name for tool in model.requests[0].tools] == ["thing"]
        assert model.requests[0].system_prompt == "be brief"
        with pytest.raises(ValueError):
            await trio_mcp.run_agent(model, [], ["hi"])
        with pytest.raises(ValueError):
            await trio_mcp.run_agent(model, session, ["hi"], max_iterations=0)


async def test_iteration_cap_carries_the_transcript(autojump_clock: trio.testing.MockClock) -> None:
    model = Scripted(*[answer(use(str(i), "broken")) for i in range(3)])
    async with trio_mcp.open_mcp_session(weather_server("a")) as session:
        with pytest.raises(
            trio_mcp.agent.AgentIterationLimitError, match="after 2 iterations"
        ) as info:
            await trio_mcp.run_agent(model, session, ["go"], max_iterations=2)
    assert len(model.requests) == 2
    assert [m.role for m in info.value.transcript] == ["user", "assistant", "user", "assistant"]


async def test_deadline_cancels_tool_calls_in_flight(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = weather_server("a")
    model = Scripted(answer(use("1", "forever"), use("2", "forever")))
    async with trio_mcp.open_mcp_session(server) as session:
        start = trio.current_time()
        with pytest.raises(trio_mcp.agent.AgentDeadlineError) as info:
            await trio_mcp.run_agent(model, session, ["go"], timeout=7)
        assert isinstance(info.value, trio.TooSlowError)
        assert trio.current_time() - start == 7
        assert [m.role for m in info.value.transcript] == ["user", "assistant"]
        await server.wait_for_message("notifications/cancelled", count=2)
        assert len(server.cancelled) == 2  # both calls in flight were announced as cancelled


async def test_tool_timeout_becomes_an_error_result(autojump_clock: trio.testing.MockClock) -> None:
    model = Scripted(answer(use("1", "forever")), answer(TextContent(text="gave up")))
    async with trio_mcp.open_mcp_session(weather_server("a")) as session:
        result = await trio_mcp.run_agent(model, session, ["go"], tool_timeout=2)
    assert trio.current_time() == 2
    feedback = result.messages[2].content[0]
    assert feedback.is_error is True and "timed out" in feedback.content[0].text


async def test_sampling_handler_declares_tools_and_forwards() -> None:
    model = Scripted(answer(use("t1", "lookup", q="x")))
    handler = trio_mcp.agent.sampling_handler(model, model_name="scripted")
    async with connect(options={"sampling": handler}) as (session, peer):
        caps = peer.sent("initialize")[0]["params"]["capabilities"]
        assert caps["sampling"] == {"tools": {}}
        await peer.send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
                         "params": {"messages": [{"role": "user", "content": {"type": "text",
                         "text": "hi"}}], "maxTokens": 50, "systemPrompt": "sys",
                         "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}],
                         "toolChoice": {"mode": "required"}}})  # fmt: skip
        while not [m for m in peer.received if m.get("id") == "s1"]:
            await peer.got_message.wait()
        [reply] = [m for m in peer.received if m.get("id") == "s1"]
        assert "result" in reply, reply
    assert reply["result"]["content"] == [
        {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "x"}}
    ]
    assert reply["result"]["stopReason"] == "toolUse"
    request = model.requests[0]
    assert request.tool_choice == "required" and request.max_tokens == 50
    assert [tool.name for tool in request.tools] == ["lookup"]


async def test_plain_sampling_handler_claims_no_tools() -> None:
    async def sample(params: Any, ctx: Any) -> Any:
        raise AssertionError  # pragma: no cover

    async with connect(options={"sampling": sample}) as (session, peer):
        assert peer.sent("initialize")[0]["params"]["capabilities"]["sampling"] == {}


# -- HTTP adapters against loopback fakes of the wire formats ------------------------------


async def serve_once(
    stream: trio.SocketStream,
    answer: Callable[[h11.Request, bytes], tuple[int, bytes]],
    seen: list[tuple[h11.Request, Any]],
) -> None:
    conn = h11.Connection(h11.SERVER)
    with contextlib.suppress(trio.BrokenResourceError, h11.RemoteProtocolError):
        received = await read_request(stream, conn)
        if received is None:
            return
        head, content = received
        seen.append((head, json.loads(content)))
        status, body = answer(head, content)
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers)))
        await stream.send_all(conn.send(h11.Data(data=body)))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        await stream.aclose()


@asynccontextmanager
async def fake_api(
    *replies: tuple[int, bytes],
) -> AsyncGenerator[tuple[str, list[tuple[h11.Request, Any]]], None]:
    queue = list(replies)
    seen: list[tuple[h11.Request, Any]] = []

    def answer(head: h11.Request, content: bytes) -> tuple[int, bytes]:
        return queue.pop(0)

    async with trio.open_nursery() as nursery:
        handler = functools.partial(serve_once, answer=answer, seen=seen)
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
        )
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}", seen
        nursery.cancel_scope.cancel()


CONVERSATION = ModelRequest(
    messages=[
        SamplingMessage(role="user", content=TextContent(text="weather?")),
        SamplingMessage(role="assistant", content=[use("c1", "weather", city="Oslo")]),
        SamplingMessage(role="user", content=[ToolResultContent(
            tool_use_id="c1", content=[TextContent(text="sunny")])]),
    ],
    tools=[trio_mcp.Tool(name="weather", description="Weather", input_schema={"type": "object"})],
    system_prompt="be brief",
    max_tokens=99,
    tool_choice="required",
)  # fmt: skip


async def test_openai_adapter_wire_format() -> None:
    reply = {"model": "m1", "choices": [{"finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function",
        "function": {"name": "weather", "arguments": "{\"city\": \"Rome\"}"}}]}}]}  # fmt: skip
    async with fake_api((200, json.dumps(reply).encode())) as (url, seen):
        model = trio_mcp.agent.OpenAIChatModel("m1", base_url=url, api_key="sk-test")
        result = await model(CONVERSATION)
    [(head, body)] = seen
    assert head.target == b"/chat/completions"
    assert (b"authorization", b"Bearer sk-test") in head.headers
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]  # fmt: skip
    assert body["tools"] == [{"type": "function", "function": {
        "name": "weather", "description": "Weather", "parameters": {"type": "object"}}}]  # fmt: skip
    assert body["tool_choice"] == "required" and body["max_tokens"] == 99
    assert result.content == [use("c2", "weather", city="Rome")]
    assert result.stop_reason == "toolUse" and result.model == "m1"


async def test_anthropic_adapter_wire_format() -> None:
    reply = {"model": "claude-x", "stop_reason": "end_turn",
             "content": [{"type": "text", "text": "Sunny."}]}  # fmt: skip
    async with fake_api((200, json.dumps(reply).encode())) as (url, seen):
        model = trio_mcp.agent.AnthropicModel("claude-x", base_url=url, api_key="key")
        result = await model(CONVERSATION)
    [(head, body)] = seen
    assert head.target == b"/v1/messages"
    assert (b"x-api-key", b"key") in head.headers
    assert (b"anthropic-version", b"2023-06-01") in head.headers
    assert body["system"] == "be brief" and body["max_tokens"] == 99
    assert body["tool_choice"] == {"type": "any"}
    assert body["tools"] == [{"name": "weather", "input_schema": {"type": "object"},
                              "description": "Weather"}]  # fmt: skip
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "weather",
                                           "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                      "content": [{"type": "text", "text": "sunny"}],
                                      "is_error": False}]},
    ]  # fmt: skip
    assert result.content == [TextContent(text="Sunny.")] and result.stop_reason == "endTurn"


@pytest.mark.parametrize("adapter", [trio_mcp.agent.OpenAIChatModel, trio_mcp.agent.AnthropicModel])
@pytest.mark.parametrize(
    ("status", "body", "match"),
    [
        (500, b'{"error": "overloaded"}', "HTTP 500"),
        (200, b"not json", "malformed JSON"),
        (200, b'{"unexpected": true}', "malformed"),
    ],
)
async def test_adapter_failures_are_model_errors(
    adapter: Any, status: int, body: bytes, match: str
) -> None:
    async with fake_api((status, body)) as (url, _seen):
        with pytest.raises(trio_mcp.agent.ModelError, match=match) as info:
            await adapter("m", base_url=url)(CONVERSATION)
    if status == 500:
        assert info.value.status_code == 500 and "overloaded" in info.value.body


async def test_adapter_bad_tool_arguments_and_unreachable() -> None:
    reply = {"choices": [{"finish_reason": "tool_calls", "message": {"tool_calls": [
        {"id": "c", "function": {"name": "w", "arguments": "{nope"}}]}}]}  # fmt: skip
    async with fake_api((200, json.dumps(reply).encode())) as (url, _seen):
        with pytest.raises(trio_mcp.agent.ModelError, match="not valid JSON"):
            await trio_mcp.agent.OpenAIChatModel("m", base_url=url)(CONVERSATION)
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(trio_mcp.agent.ModelError, match="could not be reached"):
            await trio_mcp.agent.AnthropicModel("m", base_url=f"http://127.0.0.1:{port}")(
                CONVERSATION
            )
