"""The byte test that lets a tool listing skip the x-mcp-header walk, and its exactness.

Over modern Streamable HTTP every ``tools/list`` goes through the header rules. A listing
whose bytes cannot spell ``x-mcp-header`` (``may_hold_annotation``) skips the walk of every
schema; these tests prove that the skip is exact: the tools kept and the ``Mcp-Param-*``
headers of every call are what the full check gives, on generated listings written with
any mix of JSON escapes, and end to end through a session.
"""

from __future__ import annotations

import json
import logging
import os
import random
from typing import Any

import httpx
import msgspec
import pytest
import trio
from hypothesis import example, given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp import types as t
from trio_mcp._eras import era_cache
from trio_mcp._tools import ListingScan, ToolBook
from trio_mcp._transports._headers import may_hold_annotation

#: Examples per property: 300 here, the fuzz profile's count under `nox -s fuzz`.
EXAMPLES = int(os.environ.get("TRIO_MCP_FUZZ_EXAMPLES", "300"))

NEEDLE = "x-mcp-header"
URL = "http://mcp.test/mcp"
MODERN = "2026-07-28"


@pytest.fixture(autouse=True)
def fresh_era_cache() -> None:
    era_cache.clear()


# -- writing JSON with any mix of escapes -------------------------------------------------


def _escape(char: str, rnd: random.Random) -> str:
    code = ord(char)
    if code > 0xFFFF:  # a surrogate pair
        code -= 0x10000
        pair = (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
        return "".join(_u(unit, rnd) for unit in pair)
    return _u(code, rnd)


def _u(code: int, rnd: random.Random) -> str:
    digits = f"{code:04x}"
    return "\\u" + (digits.upper() if rnd.random() < 0.5 else digits)


def write_string(text: str, rnd: random.Random, rate: float) -> str:
    out = ['"']
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            out.append(_u(ord(char), rnd))  # a lone surrogate can only be written escaped
        elif rnd.random() < rate:
            out.append(_escape(char, rnd))
        elif char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif ord(char) < 0x20:
            out.append(_u(ord(char), rnd))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def write_json(value: object, rnd: random.Random, rate: float) -> str:
    """JSON text of ``value``, each character of each string escaped with chance ``rate``."""
    if isinstance(value, str):
        return write_string(value, rnd, rate)
    if isinstance(value, dict):
        items = (
            f"{write_string(k, rnd, rate)}:{write_json(v, rnd, rate)}" for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(write_json(v, rnd, rate) for v in value) + "]"
    return json.dumps(value)


def strings_of(value: object) -> list[str]:
    """Every string in decoded JSON, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        found: list[str] = []
        for key, sub in value.items():
            found.append(key)
            found.extend(strings_of(sub))
        return found
    if isinstance(value, list):
        return [s for sub in value for s in strings_of(sub)]
    return []


# -- generated listings ---------------------------------------------------------------------

_texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from([NEEDLE, "X-MCP-Header", "x-mcp-headers", "x-mcp-heade", "x mcp header"]),
    st.builds(lambda a, b: a + NEEDLE + b, st.text(max_size=4), st.text(max_size=4)),
    st.sampled_from(["\\u0078-mcp-header", "é", "\U0001f600", "\\", '"']),
)
_header_values = st.one_of(
    st.sampled_from(["Region", "region", "Zone", "X-Id", "", "Bad Header", "a\nb", "é"]),
    st.integers(-2, 2),
    st.none(),
    st.lists(st.just("Region"), max_size=1),
)
_types = st.sampled_from(
    ["string", "integer", "boolean", "number", "object", "array", ["string", "null"], [], None]
)


@st.composite
def schemas(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    declared = draw(_types)
    if declared is not None:
        schema["type"] = declared
    if draw(st.integers(0, 3)) == 0:
        schema[NEEDLE] = draw(_header_values)
    if draw(st.booleans()):
        schema["description"] = draw(_texts)
    if depth < 2:
        names = draw(st.lists(st.sampled_from(["region", "zone", "q", "id", NEEDLE]), max_size=3))
        if names:
            schema["properties"] = {name: draw(schemas(depth + 1)) for name in names}
        if draw(st.integers(0, 4)) == 0:
            keyword = draw(st.sampled_from(["items", "not", "additionalProperties", "if"]))
            schema[keyword] = draw(schemas(depth + 1))
        if draw(st.integers(0, 4)) == 0:
            keyword = draw(st.sampled_from(["anyOf", "allOf", "oneOf"]))
            schema[keyword] = [draw(schemas(depth + 1))]
        if draw(st.integers(0, 5)) == 0:
            schema["$defs"] = {"d": draw(schemas(depth + 1))}
        if draw(st.integers(0, 5)) == 0:
            schema["default"] = {NEEDLE: draw(_texts)}  # instance data, not an annotation
    return schema


@st.composite
def listings(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(0, 5))
    tools = []
    for i in range(count):
        tool: dict[str, Any] = {"name": f"tool{i}", "inputSchema": draw(schemas())}
        if draw(st.booleans()):
            tool["description"] = draw(_texts)
        if draw(st.integers(0, 3)) == 0:
            tool["_meta"] = {draw(_texts): draw(_texts)}
        tools.append(tool)
    return tools


def _arguments(tool: t.Tool) -> dict[str, Any]:
    props = tool.input_schema.get("properties")
    if not isinstance(props, dict):
        return {}
    return {
        name: {inner: "v" for inner in sub.get("properties", {})}
        if isinstance(sub, dict) and isinstance(sub.get("properties"), dict)
        else "v w"
        for name, sub in props.items()
    }


def verdicts(book: ToolBook, kept: list[t.Tool], tools: list[t.Tool]) -> object:
    """What a session does with a checked listing: the tools it keeps, each call's headers."""
    headers = {}
    for tool in tools:
        try:
            headers[tool.name] = dict(book.param_headers(tool.name, _arguments(tool)) or {})
        except ValueError as exc:
            headers[tool.name] = str(exc)
    return [tool.name for tool in kept], headers


# -- the byte test ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "may"),
    [
        (b'{"tools":[]}', False),
        (b'{"a":"x-mcp-header"}', True),
        (b'{"description":"mentions x-mcp-header in prose"}', True),
        (b'{"\\u0078-mcp-header":"Region"}', True),
        (b'{"x\\u002Dmcp-header":"Region"}', True),
        (b'{"x-mcp-heade\\u0072":"Region"}', True),
        (b'{"a":"\\\\u0078"}', True),  # an escaped backslash then "u0078": conservatively True
        (b'{"a":"caf\\u00e9 \\u00E9t\\u00e9"}', False),  # non-ASCII escapes spell no ASCII
        (b'{"a":"\\ud83d\\ude00 \\n\\t\\"\\\\ \\/"}', False),
        (b'{"a":"X-MCP-HEADER"}', False),  # the annotation's name is case-sensitive
        (b'{"a":"\\u0041"}', True),  # any escaped printable ASCII: the full check decides
    ],
)
def test_may_hold_annotation(text: bytes, may: bool) -> None:
    assert may_hold_annotation(text) is may
    assert may_hold_annotation(memoryview(text)) is may
    assert may_hold_annotation(bytearray(text)) is may


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    value=listings(), seed=st.integers(0, 2**32 - 1), rate=st.sampled_from([0.0, 0.05, 0.5, 1.0])
)
@example(
    value=[{"name": "a", "inputSchema": {"properties": {"r": {NEEDLE: "R"}}}}], seed=1, rate=1.0
)
def test_the_byte_test_never_misses_an_annotation(
    value: list[dict[str, Any]], seed: int, rate: float
) -> None:
    """Whenever the bytes pass, no string of the decoded listing contains x-mcp-header."""
    text = write_json({"tools": value}, random.Random(seed), rate).encode("utf-8")
    decoded = msgspec.json.decode(text)
    assert decoded == {"tools": value}  # (the writer wrote what it was given)
    if not may_hold_annotation(text):
        assert not any(NEEDLE in s for s in strings_of(decoded))


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    value=listings(), seed=st.integers(0, 2**32 - 1), rate=st.sampled_from([0.0, 0.05, 0.5, 1.0])
)
@example(
    value=[
        {"name": "ok", "inputSchema": {"properties": {"region": {"type": "string", NEEDLE: "R"}}}},
        {"name": "bad", "inputSchema": {"properties": {"a": {"type": "object", NEEDLE: "A"}}}},
    ],
    seed=7,
    rate=1.0,
)
@example(value=[{"name": "prose", "inputSchema": {}, "description": NEEDLE}], seed=0, rate=0.0)
def test_the_skip_and_the_full_check_agree(
    value: list[dict[str, Any]], seed: int, rate: float
) -> None:
    """A listing checked through ``ListingScan`` keeps exactly the tools the full check
    keeps, and every call of every tool gets the same ``Mcp-Param-*`` headers."""
    text = write_json({"tools": value}, random.Random(seed), rate).encode("utf-8")
    tools = t.decoder_for(t.ListToolsResult).decode(text).tools
    logger = logging.getLogger("trio_mcp")
    level = logger.level
    logger.setLevel(logging.CRITICAL)  # (the dropped tools' warnings: not the point here)
    try:
        full = ToolBook("off")
        full_kept = full.checked_tool_headers(list(tools))
        scan = ListingScan()
        scan(msgspec.Raw(text))
        fast = ToolBook("off")
        fast_kept = fast.check_tool_headers(list(tools), clean=scan.clean)
        paged = ToolBook("off")
        paged_kept = paged.checked_page(
            t.ListToolsResult(tools=list(tools)), more=False, clean=scan.clean
        )
    finally:
        logger.setLevel(level)
    assert verdicts(fast, fast_kept, tools) == verdicts(full, full_kept, tools)
    assert verdicts(paged, paged_kept.tools, tools) == verdicts(full, full_kept, tools)


def test_a_page_without_bytes_is_never_clean() -> None:
    scan = ListingScan()
    scan(msgspec.Raw(b'{"tools":[]}'))
    assert scan.clean
    scan(None)  # a page from the cache: its bytes were not seen
    assert not scan.clean
    scan(msgspec.Raw(b'{"tools":[]}'))
    assert not scan.clean  # (once unclean, the listing stays so)


# -- end to end through a session over modern Streamable HTTP -------------------------------

DISCOVER = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scan", "version": "1"}},
}
PLAIN_TOOL = {
    "name": "plain",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
}
# the annotation's name and its value written with escapes, as some JSON writers do
ESCAPED_LISTING = (
    b'{"resultType":"complete","tools":['
    b'{"name":"search","inputSchema":{"type":"object","properties":{'
    b'"region":{"type":"string","\\u0078-mcp-header":"Reg\\u0069on"}}}},'
    b'{"name":"broken","inputSchema":{"type":"object","properties":{'
    b'"a":{"type":"object","x\\u002Dmcp-header":"A"}}}}]}'
)


class Server:
    def __init__(self, listing: bytes | list[bytes]) -> None:
        self.listings = listing if isinstance(listing, list) else [listing]
        self.calls: list[httpx.Request] = []
        self.lists = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        message = json.loads(request.content)
        if "id" not in message:
            return httpx.Response(202)
        method = message["method"]
        if method == "server/discover":
            result = json.dumps(DISCOVER).encode()
        elif method == "tools/list":
            result = self.listings[min(self.lists, len(self.listings) - 1)]
            self.lists += 1
        elif method == "tools/call":
            self.calls.append(request)
            result = b'{"resultType":"complete","content":[{"type":"text","text":"ok"}]}'
        else:
            return httpx.Response(
                200,
                json={
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "no"},
                },
            )
        body = (
            b'{"jsonrpc":"2.0","id":'
            + json.dumps(message["id"]).encode()
            + b',"result":'
            + result
            + b"}"
        )
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})


def _params(server: Server) -> trio_mcp.StreamableHTTPParameters:
    return trio_mcp.StreamableHTTPParameters(
        URL, client=httpx.AsyncClient(transport=httpx.MockTransport(server))
    )


def _counting(session: trio_mcp.ClientSession, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    # ToolBook has __slots__: count on the class, for this session's book only
    checks: list[int] = []
    book = session._tools
    real = ToolBook.checked_tool_headers

    def counting(self: ToolBook, tools: list[t.Tool], *, more: bool = False) -> list[t.Tool]:
        if self is book:
            checks.append(len(tools))
        return real(self, tools, more=more)

    monkeypatch.setattr(ToolBook, "checked_tool_headers", counting)
    return checks


def _listing(*tools: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"resultType": "complete", "tools": list(tools), **extra}).encode()


async def test_a_listing_that_cannot_hold_an_annotation_is_not_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = Server(_listing(PLAIN_TOOL, {**PLAIN_TOOL, "name": "other", "description": "café"}))
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, _params(server)) as session:
            assert session.era == "modern"
            checks = _counting(session, monkeypatch)
            for _ in range(2):
                assert [tool.name for tool in await session.list_tools()] == ["plain", "other"]
            page = await session.list_tools_page()
            assert [tool.name for tool in page.tools] == ["plain", "other"]
            assert checks == []  # no schema was walked
            await session.call_tool("plain", {"q": "x"})
    assert not any(name.startswith("mcp-param-") for name in server.calls[0].headers)


async def test_an_annotation_spelled_with_escapes_is_still_checked(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server(ESCAPED_LISTING)
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, _params(server)) as session:
            checks = _counting(session, monkeypatch)
            with caplog.at_level(logging.WARNING, logger="trio_mcp"):
                tools = await session.list_tools()
            assert [tool.name for tool in tools] == ["search"]  # "broken" dropped
            assert "broken" in caplog.text
            assert checks == [2]
            await session.call_tool("search", {"region": "eu-west"})
            page = await session.list_tools_page()
            assert [tool.name for tool in page.tools] == ["search"]
            await session.call_tool("search", {"region": "us"})
    assert [call.headers.get("mcp-param-region") for call in server.calls] == ["eu-west", "us"]


async def test_the_name_in_prose_takes_the_full_check_and_keeps_every_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prose = {**PLAIN_TOOL, "description": "Use x-mcp-header annotations for routing."}
    server = Server(_listing(prose))
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, _params(server)) as session:
            checks = _counting(session, monkeypatch)
            assert [tool.name for tool in await session.list_tools()] == ["plain"]
            assert checks == [1]


async def test_a_cached_listing_keeps_its_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page from the result cache has no bytes to test: the full check decides, alike."""
    cached = ESCAPED_LISTING.replace(
        b'"resultType":"complete",', b'"resultType":"complete","ttlMs":60000,'
    )
    clean = _listing(PLAIN_TOOL, ttlMs=60000)
    for listing, names in ((cached, ["search"]), (clean, ["plain"])):
        server = Server(listing)
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, _params(server)) as session:
                for _ in range(2):
                    assert [tool.name for tool in await session.list_tools()] == names
                    page = await session.list_tools_page()
                    assert [tool.name for tool in page.tools] == names
                assert server.lists == 1  # the rest came from the cache
                if names == ["search"]:
                    await session.call_tool("search", {"region": "ap"})
        assert [call.headers.get("mcp-param-region") for call in server.calls] == (
            ["ap"] if names == ["search"] else []
        )


async def test_a_listing_that_changes_is_checked_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([_listing(PLAIN_TOOL), ESCAPED_LISTING, _listing(PLAIN_TOOL)])
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, _params(server)) as session:
            checks = _counting(session, monkeypatch)
            assert [tool.name for tool in await session.list_tools()] == ["plain"]
            assert [tool.name for tool in await session.list_tools()] == ["search"]
            await session.call_tool("search", {"region": "eu"})
            assert [tool.name for tool in await session.list_tools()] == ["plain"]
            await session.call_tool("search", {"region": "us"})  # no longer listed: no rules
            assert checks == [2]
    assert [call.headers.get("mcp-param-region") for call in server.calls] == ["eu", None]


class PagedServer(Server):
    """Answers ``tools/list`` with ``pages[cursor]`` (the first page has no cursor)."""

    def __init__(self, pages: dict[str | None, bytes]) -> None:
        super().__init__(b"")
        self.pages = pages

    def __call__(self, request: httpx.Request) -> httpx.Response:
        message = json.loads(request.content)
        if message.get("method") == "tools/list":
            cursor = (message.get("params") or {}).get("cursor")
            self.listings = [self.pages[cursor]]
            self.lists = 0
        return super().__call__(request)


async def test_every_page_of_a_listing_is_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    """One page that may hold an annotation sends the whole listing to the full check."""
    second = ESCAPED_LISTING.replace(b'"resultType":"complete",', b"")
    server = PagedServer({None: _listing(PLAIN_TOOL, nextCursor="2"), "2": second})
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, _params(server)) as session:
            checks = _counting(session, monkeypatch)
            tools = await session.list_tools()
            assert [tool.name for tool in tools] == ["plain", "search"]
            assert checks == [3]
            await session.call_tool("search", {"region": "eu"})
    assert [call.headers.get("mcp-param-region") for call in server.calls] == ["eu"]

    clean = PagedServer(
        {None: _listing(PLAIN_TOOL, nextCursor="2"), "2": _listing({**PLAIN_TOOL, "name": "b"})}
    )
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, _params(clean)) as session:
            checks = _counting(session, monkeypatch)
            assert [tool.name for tool in await session.list_tools()] == ["plain", "b"]
            assert checks == []


@pytest.mark.parametrize("how", ["timeout", "default_timeout"])
async def test_the_bytes_are_looked_at_under_a_timeout_too(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``timeout=`` (and a session's default timeout) take another way to the connection:
    the bytes are looked at on it too."""
    for listing, names, walked in (
        (_listing(PLAIN_TOOL), ["plain"], []),
        (ESCAPED_LISTING, ["search"], [2]),
    ):
        server = Server(listing)
        params = _params(server)
        options: dict[str, Any] = {"default_timeout": 30.0} if how == "default_timeout" else {}
        async with trio.open_nursery() as nursery:
            async with trio_mcp.open_mcp_session(nursery, params, **options) as session:
                checks = _counting(session, monkeypatch)
                kwargs: dict[str, Any] = {"timeout": 30.0} if how == "timeout" else {}
                assert [tool.name for tool in await session.list_tools(**kwargs)] == names
                page = await session.list_tools_page(**kwargs)
                assert [tool.name for tool in page.tools] == names
                assert checks == walked + walked
