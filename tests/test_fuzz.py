"""Property tests of the engine's trust boundary, in both protocol eras.

Whatever a server sends, the session survives it and callers see only documented
exceptions (``MCPError`` subclasses, ``trio.TooSlowError``, ``trio.ClosedResourceError``
after their own close, ``trio.Cancelled``):

1. Garbage between normal traffic (bytes, JSON, garbled JSON-RPC, batches, routed
   notifications, server requests) never kills the session nor reaches the user's nursery.
2. A malformed response to a pending request fails exactly that caller.
3. Every caller gets an exception object of its own.
4. An argument that cannot be encoded fails that call only and leaks nothing.

Each example runs in its own ``trio.run`` under an autojump ``MockClock``, so a hang becomes
a ``trio.TooSlowError`` after a fixed virtual time, not a stuck test. The budget is
``TRIO_MCP_FUZZ_EXAMPLES`` examples per property (see ``tests/conftest.py``;
``nox -s fuzz`` raises it).
"""

from __future__ import annotations

import gc
import logging
import traceback
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

import trio_mcp
from trio_mcp._transports._memory import memory_transport_pair
from trio_mcp.testing import MockServer, ToolContext

from . import fuzzing
from .fuzzing import MESSAGES_FED, Outcome, dump, user_nursery
from .rawpeer import RawPeer, no_answer

MODERN = "2026-07-28"
DISCOVER_OK = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True},
        "prompts": {},
        "completions": {},
        "logging": {},
    },
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw", "version": "2"}},
}
HANG = 600.0  # virtual seconds: nothing in a scenario legitimately takes this long
ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])


def run(scenario: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run one example in a fresh Trio run whose clock jumps whenever all tasks block."""
    trio.run(scenario, *args, clock=trio.testing.MockClock(autojump_threshold=0))


# -- a raw peer in either era --------------------------------------------------------------------


async def _sample(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    await trio.sleep(1)  # long enough for the server to cancel it
    return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}


async def _elicit(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    return {"action": "decline"}


async def _roots(ctx: trio_mcp.RequestContext) -> Any:
    return []


async def _empty(peer: RawPeer, message: dict[str, Any]) -> Any:
    return {}


async def _discover(peer: RawPeer, message: dict[str, Any]) -> Any:
    return DISCOVER_OK


async def _acknowledge_listen(peer: RawPeer, message: dict[str, Any]) -> Any:
    meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
    await peer.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"_meta": meta, "notifications": message["params"]["notifications"]}})  # fmt: skip
    await trio.sleep_forever()


def _peer(era: str, server: Any, **handlers: Any) -> RawPeer:
    handlers.setdefault("resources__subscribe", _empty)
    handlers.setdefault("resources__unsubscribe", _empty)
    handlers.setdefault("subscriptions__listen", _acknowledge_listen)
    if era == "modern":
        handlers.setdefault("server__discover", _discover)
    peer = RawPeer(server, **handlers)
    peer.init_result = {**peer.init_result, "capabilities": DISCOVER_OK["capabilities"]}
    return peer


def _options(era: str) -> dict[str, Any]:
    return {
        "protocol": "legacy" if era == "legacy" else "auto",
        "sampling": _sample,
        "elicitation": _elicit,
        "roots": _roots,
    }


async def _request(peer: RawPeer, method: str, count: int = 1) -> dict[str, Any]:
    """Wait until the peer has received the ``count``-th request of ``method``."""
    while len(peer.sent(method)) < count:
        await peer.got_message.wait()
    return peer.sent(method)[count - 1]


TOOLS = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}


# -- 1. garbage between normal traffic ------------------------------------------------------------


async def _survives(era: str, frames: list[Any], listen: bool) -> None:
    """Feed ``frames`` while a request is pending (and maybe a listen is active); then the
    pending request, a ping and a new request must all succeed."""
    client, server = memory_transport_pair()
    gate = trio.Event()

    async def tools_list(peer: RawPeer, message: dict[str, Any]) -> Any:
        await gate.wait()
        return TOOLS

    peer = _peer(era, server, tools__list=tools_list)
    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            nursery.start_soon(peer.run, nursery)
            async with trio_mcp.open_mcp_session(nursery, client, **_options(era)) as session:
                assert session.era == era
                await session.ping()
                async with AsyncExitStack() as stack:
                    slots: dict[str, Any] = {}
                    if listen:
                        await stack.enter_async_context(
                            session.listen(tools=True, resource_uris=["file:///a"])
                        )
                        if era == "modern":
                            slots["listen"] = (await _request(peer, "subscriptions/listen"))["id"]
                    pending = Outcome()
                    nursery.start_soon(pending.capture, lambda: session.list_tools(cache=False))
                    slots["pending"] = (await _request(peer, "tools/list"))["id"]
                    for frame in frames:
                        await server.send(frame if isinstance(frame, bytes) else dump(frame, slots))
                        MESSAGES_FED[0] += 1
                    await trio.testing.wait_all_tasks_blocked()
                    gate.set()
                    tools = await pending.get("the request pending while garbage arrived")
                    assert [tool.name for tool in tools] == ["t"]
                await session.ping()
                assert [tool.name for tool in await session.list_tools(cache=False)] == ["t"]
            await server.aclose()


def _frames(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(strategy, min_size=1, max_size=8)


@ERAS
@given(frames=_frames(fuzzing.garbage_bytes), listen=st.booleans())
def test_arbitrary_bytes_never_kill_the_session(
    era: str, frames: list[bytes], listen: bool
) -> None:
    run(_survives, era, frames, listen)


@ERAS
@given(frames=_frames(st.one_of(fuzzing.any_json, fuzzing.mutated_frames())), listen=st.booleans())
def test_arbitrary_json_never_kills_the_session(era: str, frames: list[Any], listen: bool) -> None:
    run(_survives, era, frames, listen)


@ERAS
@given(frames=_frames(fuzzing.plausible_messages()), listen=st.booleans())
def test_garbled_jsonrpc_never_kills_the_session(era: str, frames: list[Any], listen: bool) -> None:
    run(_survives, era, frames, listen)


@ERAS
@given(frames=_frames(fuzzing.targeted_notifications), listen=st.booleans())
def test_garbled_notifications_never_kill_the_session(
    era: str, frames: list[Any], listen: bool
) -> None:
    run(_survives, era, frames, listen)


@ERAS
@given(frames=_frames(fuzzing.server_requests), listen=st.booleans())
def test_garbled_server_requests_never_kill_the_session(
    era: str, frames: list[Any], listen: bool
) -> None:
    run(_survives, era, frames, listen)


@ERAS
@given(frames=_frames(fuzzing.batches), listen=st.booleans())
def test_batches_never_kill_the_session(era: str, frames: list[Any], listen: bool) -> None:
    run(_survives, era, frames, listen)


# The shapes the review found fatal (C1, M9), pinned so they run on every CI run.
KNOWN_KILLERS = {
    "invalid UTF-8 in method": b'{"jsonrpc":"2.0","method":"notifications/\xff"}',
    "invalid UTF-8 in a string id": b'{"jsonrpc":"2.0","id":"\xff","result":{}}',
    "invalid UTF-8 in error.message": (
        b'{"jsonrpc":"2.0","id":99999999,"error":{"code":1,"message":"\xff"}}'
    ),
    "invalid UTF-8 in notification params": (
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\xff"}}'
    ),
    "nesting 5,000 deep in params": (
        b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * 5000 + b"]" * 5000 + b"}"
    ),
    "cancelled with a list requestId": (
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}'
    ),
    "cancelled with an object requestId": (
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}'
    ),
    "resources/updated with a list uri": (
        b'{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":["x"]}}'
    ),
    "one-element batch": b'[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}]',
    "empty batch": b"[]",
    "plain garbage": b"not json at all",
}


@ERAS
@pytest.mark.parametrize("frame", KNOWN_KILLERS.values(), ids=KNOWN_KILLERS.keys())
def test_known_killers_are_survived(era: str, frame: bytes) -> None:
    run(_survives, era, [frame], True)


# -- 2. a malformed response fails exactly its caller ------------------------------------------

Call = Callable[[trio_mcp.ClientSession], Awaitable[Any]]
CALLS: dict[str, tuple[str, Call, Any]] = {
    "call_tool": (
        "tools/call",
        lambda s: s.call_tool("t", {"a": 1}),
        {"content": [{"type": "text", "text": "ok"}], "isError": False},
    ),
    "list_tools": ("tools/list", lambda s: s.list_tools(cache=False), TOOLS),
    "read_resource": (
        "resources/read",
        lambda s: s.read_resource("file:///a", cache=False),
        {"contents": [{"uri": "file:///a", "text": "x"}]},
    ),
    "get_prompt": (
        "prompts/get",
        lambda s: s.get_prompt("p"),
        {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]},
    ),
    "complete": (
        "completion/complete",
        lambda s: s.complete({"type": "ref/prompt", "name": "p"}, "a", "b"),
        {"completion": {"values": ["x"]}},
    ),
    "request": ("x-vendor/raw", lambda s: s.request("x-vendor/raw", {"a": 1}), {"any": [1]}),
}
# What a caller may get for a malformed answer: never a TransportError (the connection is
# fine), never anything foreign.
FOR_A_BAD_ANSWER = (trio_mcp.ProtocolError, trio_mcp.ServerError, trio_mcp.InputRequestError)


async def _fails_only_its_caller(era: str, name: str, template: Any) -> None:
    method, call, valid = CALLS[name]
    client, server = memory_transport_pair()
    gate = trio.Event()
    answered: list[int] = []

    async def answer(peer: RawPeer, message: dict[str, Any]) -> Any:
        if answered:  # a modern retry after input was gathered
            return valid
        answered.append(message["id"])
        await peer.stream.send(dump(template, {"id": message["id"]}))
        MESSAGES_FED[0] += 1
        no_answer()

    async def bystander(peer: RawPeer, message: dict[str, Any]) -> Any:
        await gate.wait()
        return {"ok": True}

    peer = _peer(era, server, **{method.replace("/", "__"): answer,
                                 "x-vendor__bystander": bystander})  # fmt: skip
    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            nursery.start_soon(peer.run, nursery)
            async with trio_mcp.open_mcp_session(nursery, client, **_options(era)) as session:
                other = Outcome()
                nursery.start_soon(other.capture, session.request, "x-vendor/bystander")
                await _request(peer, "x-vendor/bystander")
                try:
                    with trio.fail_after(60):
                        await call(session)
                except trio.TooSlowError as exc:
                    raise AssertionError(f"{name} hung on a malformed answer") from exc
                except FOR_A_BAD_ANSWER:
                    pass
                except Exception as exc:
                    raise AssertionError(
                        f"{name} raised {type(exc).__name__} for a malformed answer, not one of "
                        f"{[e.__name__ for e in FOR_A_BAD_ANSWER]}: {exc!r}"
                    ) from exc
                gate.set()
                assert await other.get("a concurrent request") == {"ok": True}
                await session.ping()
            await server.aclose()


@st.composite
def _bad_answers(draw: st.DrawFn, era: str) -> tuple[str, Any]:
    name = draw(st.sampled_from(sorted(CALLS)))
    return name, draw(fuzzing.malformed_responses(CALLS[name][2], modern=era == "modern"))


@ERAS
@given(data=st.data())
def test_malformed_response_fails_exactly_its_caller(era: str, data: st.DataObject) -> None:
    name, template = data.draw(_bad_answers(era))
    run(_fails_only_its_caller, era, name, template)


# The answers the review found leaking foreign exceptions (M2), pinned.
KNOWN_BAD_ANSWERS: dict[str, tuple[str, str, bytes]] = {
    "result is a list": ("modern", "call_tool", b'{"jsonrpc":"2.0","id":ID,"result":[1,2]}'),
    "result is a string": ("modern", "call_tool", b'{"jsonrpc":"2.0","id":ID,"result":"x"}'),
    "resultType is a number": (
        "modern", "call_tool", b'{"jsonrpc":"2.0","id":ID,"result":{"resultType":5}}'
    ),
    "neither result nor error (modern)": ("modern", "call_tool", b'{"jsonrpc":"2.0","id":ID}'),
    "neither result nor error (legacy)": ("legacy", "request", b'{"jsonrpc":"2.0","id":ID}'),
    "invalid UTF-8 in an untyped result": (
        "legacy", "request", b'{"jsonrpc":"2.0","id":ID,"result":{"a":"\xff"}}'
    ),
    "invalid UTF-8 in an inputRequests method": (
        "modern", "call_tool",
        b'{"jsonrpc":"2.0","id":ID,"result":{"resultType":"input_required",'
        b'"inputRequests":{"k":{"method":"\xff","params":{}}}}}',
    ),
    "invalid UTF-8 in an inputRequests key": (
        "modern", "call_tool",
        b'{"jsonrpc":"2.0","id":ID,"result":{"resultType":"input_required",'
        b'"inputRequests":{"\xff":{"method":"roots/list"}}}}',
    ),
    "tool_result nested 150 deep": (
        "legacy", "call_tool",
        b'{"jsonrpc":"2.0","id":ID,"result":{"content":['
        + b'{"type":"tool_result","toolUseId":"u","content":[' * 150
        + b'{"type":"x-unknown"}' + b"]}" * 150 + b"]}}",
    ),
    "result nested 5,000 deep": (
        "legacy", "request", b'{"jsonrpc":"2.0","id":ID,"result":' + b"[" * 5000 + b"]" * 5000 + b"}"
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("era", "name", "frame"), KNOWN_BAD_ANSWERS.values(), ids=KNOWN_BAD_ANSWERS.keys()
)
def test_known_bad_answers_fail_only_their_caller(era: str, name: str, frame: bytes) -> None:
    before, after = frame.split(b"ID")
    run(_fails_only_its_caller, era, name, fuzzing.Splice(before, "id", after))


# -- 3. a fresh exception per caller --------------------------------------------------------------


def _traceback_size(exc: BaseException | None) -> int:
    size = 0
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        size += sum(1 for _ in traceback.walk_tb(exc.__traceback__))
        exc = exc.__cause__ or exc.__context__
    return size


def _crashable_server(era: str) -> MockServer:
    server = MockServer(eras=era)  # type: ignore[arg-type]

    @server.tool
    async def echo(ctx: ToolContext, text: str) -> str:
        return text

    @server.tool
    async def hang(ctx: ToolContext) -> str:
        await trio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    return server


@ERAS
async def test_every_caller_gets_its_own_exception_after_a_crash(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = _crashable_server(era)
    errors: list[BaseException] = []

    async def call(name: str) -> None:
        try:
            await session.call_tool(name, {"text": "x"} if name == "echo" else {})
        except Exception as exc:
            errors.append(exc)

    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, server) as session:
                async with trio.open_nursery() as callers:
                    for _ in range(10):
                        callers.start_soon(call, "hang")
                    await trio.testing.wait_all_tasks_blocked()
                    await server.crash()
                for _ in range(50):
                    await call("echo")
    assert len(errors) == 60
    undocumented = [e for e in errors if not isinstance(e, trio_mcp.ConnectionClosed)]
    assert not undocumented, f"expected ConnectionClosed after a crash, got {undocumented[:3]}"
    assert len({id(e) for e in errors}) == len(errors), "callers share exception objects"
    sizes = [_traceback_size(e) for e in errors[10:]]
    assert max(sizes) == sizes[0], f"tracebacks grow from call to call: {sizes[:5]}...{sizes[-3:]}"


# -- 4. unencodable arguments ---------------------------------------------------------------------


def _cycle() -> Any:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _deep_list() -> Any:
    value: list[Any] = []
    for _ in range(10_000):
        value = [value]
    return value


def _lambda(x: Any) -> Any:  # pragma: no cover - never called
    return x


# name -> (factory, what the caller may get): a wrong *type* is a TypeError (or ours); a wrong
# *value* (lone surrogate, cycle, extreme nesting) may also be a ValueError.
UNENCODABLE: dict[str, tuple[Callable[[], Any], tuple[type[BaseException], ...]]] = {
    "object": (object, (trio_mcp.MCPError, TypeError)),
    "complex": (lambda: 1j, (trio_mcp.MCPError, TypeError)),
    "function": (lambda: _lambda, (trio_mcp.MCPError, TypeError)),
    "class": (lambda: int, (trio_mcp.MCPError, TypeError)),
    "tuple key": (lambda: {(1, 2): 1}, (trio_mcp.MCPError, TypeError)),
    "None key": (lambda: {None: 1}, (trio_mcp.MCPError, TypeError)),
    "set of objects": (lambda: {object()}, (trio_mcp.MCPError, TypeError)),
    "lone surrogate": (lambda: "a\ud800b", (trio_mcp.MCPError, TypeError, ValueError)),
    "cycle": (_cycle, (trio_mcp.MCPError, TypeError, ValueError)),
    "10,000 deep": (_deep_list, (trio_mcp.MCPError, TypeError, ValueError)),
}
SENDERS: dict[str, Callable[[trio_mcp.ClientSession, Any], Awaitable[Any]]] = {
    "call_tool": lambda s, v: s.call_tool("echo", {"text": "x", "extra": v}),
    "request": lambda s, v: s.request("tools/list", {"cursor": None, "_meta": {"x": v}}),
    "get_prompt": lambda s, v: s.get_prompt("p", {"a": v}),
    "complete": lambda s, v: s.complete(
        {"type": "ref/prompt", "name": "p"}, "a", "b", context_arguments={"c": v}
    ),
    "notify": lambda s, v: s.notify("notifications/x-vendor", {"v": v}),
}


def _wrap(value: Any, path: list[str]) -> Any:
    for step in reversed(path):
        value = [1, value] if step == "list" else {"k": value, "ok": 1}
    return value


def _server_for_encoding(era: str) -> MockServer:
    server = _crashable_server(era)
    server.add_prompt("p", "hello", [{"name": "a"}])
    server.set_completion(lambda ref, argument, context: ["x"])
    return server


async def _bad_arguments_fail_cleanly(era: str, calls: list[tuple[str, str, list[str]]]) -> None:
    server = _server_for_encoding(era)
    with trio.fail_after(HANG):
        async with user_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, server) as session:
                for sender, bad, path in calls:
                    factory, allowed = UNENCODABLE[bad]
                    try:
                        await SENDERS[sender](session, _wrap(factory(), path))
                    except allowed:
                        pass
                    except Exception as exc:
                        raise AssertionError(
                            f"{sender} with a {bad} argument raised {exc!r}, not one of "
                            f"{[e.__name__ for e in allowed]}"
                        ) from exc
                    else:
                        raise AssertionError(f"{sender} sent a {bad} argument without complaint")
                    MESSAGES_FED[0] += 1
                assert (await session.call_tool("echo", {"text": "after"})).text == "after"
                await session.ping()


@ERAS
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(sorted(SENDERS)),
            st.sampled_from(sorted(UNENCODABLE)),
            st.lists(st.sampled_from(["list", "dict"]), max_size=3),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_unencodable_arguments_fail_only_that_call(
    era: str, calls: list[tuple[str, str, list[str]]]
) -> None:
    run(_bad_arguments_fail_cleanly, era, calls)


@ERAS
async def test_unencodable_arguments_leak_nothing(
    era: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = _server_for_encoding(era)

    async def bad_calls(n: int) -> None:
        for _ in range(n):
            try:
                await session.call_tool("echo", {"text": "x", "a": object()})
            except Exception:  # which exception is the business of the test above
                pass
        assert (await session.call_tool("echo", {"text": "ok"})).text == "ok"

    logging.disable(logging.CRITICAL)  # captured log records would count as growth
    try:
        async with user_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, server) as session:
                await bad_calls(50)  # warm up caches, pools, lazily built objects
                gc.collect()
                before = len(gc.get_objects())
                await bad_calls(300)
                gc.collect()
                growth = len(gc.get_objects()) - before
    finally:
        logging.disable(logging.NOTSET)
    assert growth < 150, f"300 failed calls left {growth} more live objects: per-call state leaks"
