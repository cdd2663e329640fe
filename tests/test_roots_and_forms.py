"""Mutable roots with notifications/roots/list_changed; elicitation content validation."""

from __future__ import annotations

from typing import Any

import pytest

import trio_mcp
from trio_mcp._handlers import validate_elicitation_content
from trio_mcp.testing import MockServer, ToolContext

from .rawpeer import connect


async def wait_for(peer: Any, predicate: Any) -> dict[str, Any]:
    while True:
        for message in peer.received:
            if predicate(message):
                return message
        await peer.got_message.wait()


async def announced(peer: Any, count: int) -> None:
    """Wait until the peer has received ``count`` roots/list_changed (then check no more)."""
    while len(peer.sent("notifications/roots/list_changed")) < count:
        await peer.got_message.wait()
    await peer.send({"jsonrpc": "2.0", "id": f"sync{count}", "method": "roots/list"})
    await wait_for(peer, lambda m: m.get("id") == f"sync{count}")  # in-order transport
    assert len(peer.sent("notifications/roots/list_changed")) == count


async def test_roots_set_announces_changes_in_legacy_era() -> None:
    roots = trio_mcp.Roots(["file:///work"])
    async with connect(options={"roots": roots}) as (session, peer):
        caps = peer.sent("initialize")[0]["params"]["capabilities"]
        assert caps["roots"] == {"listChanged": True}
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
        first = await wait_for(peer, lambda m: m.get("id") == 1 and "result" in m)
        assert first["result"] == {"roots": [{"uri": "file:///work"}]}
        await roots.add(trio_mcp.Root(uri="file:///data", name="data"))
        await announced(peer, 1)
        await roots.add("file:///data")  # different name: a change
        await roots.add("file:///data")  # the same: no announcement
        await roots.remove("file:///nope")  # absent: no announcement
        await announced(peer, 2)
        await roots.replace(["file:///other"])
        await roots.replace(["file:///other"])  # unchanged: no announcement
        await roots.remove("file:///other")
        await announced(peer, 4)
        assert len(roots) == 0 and "file:///other" not in roots
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "roots/list"})
        second = await wait_for(peer, lambda m: m.get("id") == 2 and "result" in m)
        assert second["result"] == {"roots": []}
    await roots.add("file:///after-close")  # a closed session is no longer told
    assert "file:///after-close" in roots


async def test_static_roots_claim_no_list_changed() -> None:
    async with connect(options={"roots": ["file:///a"]}) as (session, peer):
        assert peer.sent("initialize")[0]["params"]["capabilities"]["roots"] == {}


async def test_roots_modern_era_sends_nothing_but_serves_current_set() -> None:
    server = MockServer(eras="modern")

    @server.tool
    async def where(ctx: ToolContext) -> str:
        result = await ctx.list_roots()
        return ",".join(root["uri"] for root in result["roots"])

    roots = trio_mcp.Roots(["file:///one"])
    async with trio_mcp.open_mcp_session(server, roots=roots) as session:
        assert (await session.call_tool("where")).text == "file:///one"
        await roots.add("file:///two")
        assert (await session.call_tool("where")).text == "file:///one,file:///two"
    sent = [m.get("method") for m in server.received]
    assert "notifications/roots/list_changed" not in sent


def test_roots_reject_non_file_uris() -> None:
    with pytest.raises(ValueError, match="file://"):
        trio_mcp.Roots(["https://example.com/"])
    with pytest.raises(TypeError):
        trio_mcp.Roots([42])  # type: ignore[list-item]


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "maximum": 1},
        "ok": {"type": "boolean", "default": True},
        "color": {"type": "string", "enum": ["red", "green"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"},
                                             {"const": "l", "title": "Large"}]},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]},
                 "maxItems": 2},
        "titled": {"type": "array", "minItems": 1,
                   "items": {"anyOf": [{"const": "p", "title": "P"}]}},
    },
    "required": ["name"],
}  # fmt: skip

GOOD = {"name": "Ada", "email": "a@b.c", "site": "https://x", "born": "1815-12-10",
        "at": "2025-01-01T10:00:00Z", "age": 36, "score": 0.5, "ok": False, "color": "red",
        "size": "l", "legacy": "b", "tags": ["x", "y"], "titled": ["p"]}  # fmt: skip

BAD = [
    ({"name": "A"}, "name: must be at least 2 characters"),
    ({"name": "Abcdef"}, "name: must be at most 5 characters"),
    ({}, "name: is required"),
    ({"name": "Ada", "email": "nope"}, "email: is not a valid email"),
    ({"name": "Ada", "site": "no scheme"}, "site: is not a valid uri"),
    ({"name": "Ada", "born": "10/12/1815"}, "born: is not a valid date"),
    ({"name": "Ada", "at": "2025-01-01"}, "at: is not a valid date-time"),
    ({"name": "Ada", "age": 3.5}, "age: must be an integer"),
    ({"name": "Ada", "age": True}, "age: must be an integer"),
    ({"name": "Ada", "age": -1}, "age: must be at least 0"),
    ({"name": "Ada", "score": 2}, "score: must be at most 1"),
    ({"name": "Ada", "score": "1"}, "score: must be a number"),
    ({"name": "Ada", "ok": "yes"}, "ok: must be true or false"),
    ({"name": "Ada", "color": "blue"}, "color: must be one of ['red', 'green']"),
    ({"name": "Ada", "size": "Small"}, "size: must be one of ['s', 'l']"),
    ({"name": "Ada", "legacy": "A"}, "legacy: must be one of ['a', 'b']"),
    ({"name": "Ada", "tags": ["z"]}, "tags: every item must be one of ['x', 'y']"),
    ({"name": "Ada", "tags": ["x", "x"]}, "tags: must not repeat an item"),
    ({"name": "Ada", "tags": "x"}, "tags: must be a list of strings"),
    ({"name": "Ada", "titled": []}, "titled: must have at least 1 items"),
    ({"name": "Ada", "titled": ["q"]}, "titled: every item must be one of ['p']"),
    ({"name": "Ada", "extra": 1}, "extra: is not in the requested schema"),
]


def test_valid_content_passes() -> None:
    validate_elicitation_content(SCHEMA, GOOD)
    validate_elicitation_content(SCHEMA, {"name": "Ada", "age": 36.0})
    validate_elicitation_content(None, {"anything": 1})


@pytest.mark.parametrize(("content", "problem"), BAD)
def test_invalid_content_is_named(content: dict[str, Any], problem: str) -> None:
    with pytest.raises(trio_mcp.handlers.ElicitationContentError) as info:
        validate_elicitation_content(SCHEMA, content)
    assert info.value.problems == [problem]


async def test_invalid_content_becomes_an_error_to_the_server_legacy() -> None:
    async def elicit(params: Any, ctx: Any) -> Any:
        return {"action": "accept", "content": {"name": "A"}}

    async with connect(options={"elicitation": elicit}) as (session, peer):
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": {
            "message": "who?", "requestedSchema": SCHEMA}})  # fmt: skip
        answer = await wait_for(peer, lambda m: m.get("id") == 5 and "method" not in m)
        assert answer["error"]["code"] == -32603
        assert "name: must be at least 2 characters" in answer["error"]["message"]
        assert answer["error"]["data"] == {"problems": ["name: must be at least 2 characters"]}


async def test_defaults_fill_in_before_validation_and_modern_caller_sees_error() -> None:
    server = MockServer(eras="modern")
    answers = iter([{"name": "Ada"}, {"name": "Ada", "ok": "no"}])

    @server.tool
    async def ask(ctx: ToolContext) -> str:
        got = await ctx.elicit({"mode": "form", "message": "?", "requestedSchema": SCHEMA})
        return repr(sorted(got["content"].items()))

    async def elicit(params: Any, ctx: Any) -> Any:
        return {"action": "accept", "content": next(answers)}

    async with trio_mcp.open_mcp_session(server, elicitation=elicit) as session:
        assert (await session.call_tool("ask")).text == "[('name', 'Ada'), ('ok', True)]"
        with pytest.raises(trio_mcp.InputRequestError, match="ok: must be true or false"):
            await session.call_tool("ask")


async def test_roots_many_sessions_one_set() -> None:
    roots = trio_mcp.Roots()
    async with connect(options={"roots": roots}) as (_s1, peer1):
        async with connect(options={"roots": roots}) as (_s2, peer2):
            await roots.add("file:///x")
            for peer in (peer1, peer2):
                await announced(peer, 1)
        await roots.add("file:///y")  # the closed session is no longer told
        await announced(peer1, 2)
