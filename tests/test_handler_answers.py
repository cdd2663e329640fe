"""What the client's handlers send back to the server: only what the schema allows.

* Elicitation content goes out only with ``accept`` (form mode); an invalid ``action`` is
  the handler's bug: ``-32603``, logged, nothing forwarded.
* A sampling request without tools is answered with one content block, never a list.
* ``-32602`` is ours alone (params that do not decode); a handler's own exception, a
  ``ValueError`` included, is ``-32603`` with a generic message (no internals), logged.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
import trio

import trio_mcp
from trio_mcp import StdioParameters

from .interop_peers import everything_argv, everything_env, skip_unless_peers
from .rawpeer import RawPeer, connect

FORM = {
    "message": "who?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}
SAMPLE = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    "maxTokens": 10,
}


async def answer_to(peer: RawPeer, request_id: Any, method: str, params: Any) -> dict[str, Any]:
    await peer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    while True:
        for message in peer.received:
            if message.get("id") == request_id and "method" not in message:
                return message
        await peer.got_message.wait()


# -- elicitation --------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_content_is_dropped_unless_accept(action: str) -> None:
    async def elicit(params: Any, ctx: Any) -> Any:
        return {"action": action, "content": {"name": "typed before declining"}}

    async def elicit_struct(params: Any, ctx: Any) -> Any:
        return trio_mcp.ElicitResult(action=action, content={"name": "secret"})

    for handler in (elicit, elicit_struct):
        async with connect(options={"elicitation": handler}) as (_, peer):
            answer = await answer_to(peer, 1, "elicitation/create", FORM)
            assert answer["result"] == {"action": action}


async def test_accept_keeps_its_content_and_url_mode_never_carries_any() -> None:
    async def elicit(params: Any, ctx: Any) -> Any:
        return {"action": "accept", "content": {"name": "Ada"}}

    options = {"elicitation": elicit, "elicitation_modes": ("form", "url")}
    async with connect(options=options) as (_, peer):
        answer = await answer_to(peer, 1, "elicitation/create", FORM)
        assert answer["result"] == {"action": "accept", "content": {"name": "Ada"}}
        url = {"mode": "url", "message": "m", "url": "https://x.test", "elicitationId": "e"}
        answer = await answer_to(peer, 2, "elicitation/create", url)
        assert answer["result"] == {"action": "accept"}


@pytest.mark.parametrize("bad", [{"action": "yes"}, {"content": {"name": "x"}}, {}, None, "ok"])
async def test_invalid_action_is_an_internal_error_not_forwarded(
    bad: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def elicit(params: Any, ctx: Any) -> Any:
        return bad

    async with connect(options={"elicitation": elicit}) as (_, peer):
        answer = await answer_to(peer, 1, "elicitation/create", FORM)
    assert "result" not in answer
    assert answer["error"]["code"] == -32603
    assert "x" not in str(answer["error"]).replace("elicitation", "")  # nothing of it sent
    assert any("elicitation handler returned" in r.getMessage() for r in caplog.records)


# -- a handler's exception is its own: -32603, generic, logged ----------------------------------


@pytest.mark.parametrize("error", [ValueError("db password=hunter2"), KeyError("internal")])
@pytest.mark.parametrize("kind", ["sampling", "elicitation", "roots"])
async def test_handler_exception_is_internal_error_without_details(
    kind: str, error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(*args: Any) -> Any:
        raise error

    method, params = {
        "sampling": ("sampling/createMessage", SAMPLE),
        "elicitation": ("elicitation/create", FORM),
        "roots": ("roots/list", {}),
    }[kind]
    async with connect(options={kind: handler}) as (_, peer):
        answer = await answer_to(peer, 1, method, params)
    assert answer["error"]["code"] == -32603
    assert answer["error"]["message"] == f"internal error: the client could not handle {method}"
    assert "data" not in answer["error"]
    logged = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert logged and logged[0].exc_info is not None and logged[0].exc_info[1] is error


async def test_only_undecodable_params_are_invalid_params() -> None:
    async def sample(params: Any, ctx: Any) -> Any:
        raise AssertionError("not called")  # pragma: no cover

    async with connect(options={"sampling": sample}) as (_, peer):
        answer = await answer_to(peer, 1, "sampling/createMessage", {"messages": "nope"})
    assert answer["error"]["code"] == -32602
    assert "sampling/createMessage" in answer["error"]["message"]


async def test_handler_error_raised_on_purpose_goes_out_as_is() -> None:
    async def sample(params: Any, ctx: Any) -> Any:
        raise trio_mcp.HandlerError(-1, "user rejected the request", {"why": "policy"})

    async with connect(options={"sampling": sample}) as (_, peer):
        answer = await answer_to(peer, 1, "sampling/createMessage", SAMPLE)
    assert answer["error"] == {
        "code": -1,
        "message": "user rejected the request",
        "data": {"why": "policy"},
    }


# -- sampling: one content block unless tools were offered --------------------------------------


def _chat_client(message: dict[str, Any]) -> httpx.AsyncClient:
    async def handle(request: httpx.Request) -> httpx.Response:
        choice = {"message": message, "finish_reason": "stop"}
        return httpx.Response(200, json={"model": "fake", "choices": [choice]})

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def _anthropic_client(content: list[dict[str, Any]]) -> httpx.AsyncClient:
    async def handle(request: httpx.Request) -> httpx.Response:
        body = {"model": "fake", "content": content, "stop_reason": "end_turn"}
        return httpx.Response(200, json=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


async def test_model_adapters_answer_a_request_without_tools_with_one_block() -> None:
    async with (
        _chat_client({"content": "hello"}) as chat,
        _anthropic_client(
            [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        ) as anthropic,
    ):
        models = {
            "openai": trio_mcp.agent.OpenAIChatModel("m", client=chat),
            "anthropic": trio_mcp.agent.AnthropicModel("m", client=anthropic),
        }
        expected = {"openai": "hello", "anthropic": "a\nb"}
        for name, model in models.items():
            options = {"sampling": trio_mcp.agent.sampling_handler(model)}
            async with connect(options=options) as (_, peer):
                answer = await answer_to(peer, 1, "sampling/createMessage", SAMPLE)
                content = answer["result"]["content"]
                assert content == {"type": "text", "text": expected[name]}, name
                tools = dict(SAMPLE, tools=[{"name": "t", "inputSchema": {"type": "object"}}])
                answer = await answer_to(peer, 2, "sampling/createMessage", tools)
                assert isinstance(answer["result"]["content"], list)  # with tools: a list


async def test_any_handler_list_of_one_block_is_sent_as_the_block() -> None:
    async def sample(params: Any, ctx: Any) -> Any:
        return trio_mcp.CreateMessageResult(
            role="assistant", content=[trio_mcp.TextContent(text="one")], model="m"
        )

    async def several(params: Any, ctx: Any) -> Any:
        content = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        return {"role": "assistant", "content": content, "model": "m"}

    async with connect(options={"sampling": sample}) as (_, peer):
        answer = await answer_to(peer, 1, "sampling/createMessage", SAMPLE)
        assert answer["result"]["content"] == {"type": "text", "text": "one"}
    async with connect(options={"sampling": several}) as (_, peer):
        answer = await answer_to(peer, 1, "sampling/createMessage", SAMPLE)
        assert answer["error"]["code"] == -32603  # cannot be one block: not forwarded


@pytest.fixture
def everything() -> StdioParameters:
    skip_unless_peers()
    return StdioParameters(everything_argv("stdio"), env=everything_env())


@pytest.mark.interop
async def test_sampling_handler_answers_the_typescript_reference_server(
    everything: StdioParameters,
) -> None:
    async with _chat_client({"content": "sampled by a model"}) as chat:
        handler = trio_mcp.agent.sampling_handler(trio_mcp.agent.OpenAIChatModel("m", client=chat))
        with trio.fail_after(60):
            async with trio_mcp.open_mcp_session(everything, sampling=handler) as session:
                result = await session.call_tool("trigger-sampling-request", {"prompt": "hi"})
    assert not result.is_error, result.text
    assert "sampled by a model" in result.text


# -- the same rules for modern servers (input_required: the answers go into the retry) ----------


async def test_modern_era_gets_the_same_answers() -> None:
    from trio_mcp.testing import MockServer, ToolContext

    server = MockServer(eras="modern")
    seen: list[Any] = []

    @server.tool
    async def ask(ctx: ToolContext) -> str:
        seen.append(await ctx.elicit({"mode": "form", **FORM}))
        return "ok"

    @server.tool
    async def think(ctx: ToolContext) -> str:
        seen.append(await ctx.sample(SAMPLE))
        return "ok"

    async def elicit(params: Any, ctx: Any) -> Any:
        return {"action": "decline", "content": {"name": "typed, then declined"}}

    async def sample(params: Any, ctx: Any) -> Any:
        content = [{"type": "text", "text": "one"}]
        return {"role": "assistant", "content": content, "model": "m"}

    async with trio_mcp.open_mcp_session(server, elicitation=elicit, sampling=sample) as session:
        assert session.era == "modern"
        assert (await session.call_tool("ask")).text == "ok"
        assert (await session.call_tool("think")).text == "ok"
    assert seen[0] == {"action": "decline"}
    assert seen[1]["content"] == {"type": "text", "text": "one"}
