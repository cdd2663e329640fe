"""Tool results against their outputSchema: report, strict, off; typed decoding."""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

import msgspec
import pytest
import trio

import trio_mcp
from trio_mcp._validation import compile_schema
from trio_mcp.testing import MockServer, ToolContext

WEATHER = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
    "required": ["temperature", "conditions"],
}


class Weather(msgspec.Struct):
    temperature: float
    conditions: str


@dataclasses.dataclass
class WeatherDC:
    temperature: float
    conditions: str


class WeatherTD(TypedDict):
    temperature: float
    conditions: str


def make_server(eras: str = "both") -> MockServer:
    server = MockServer(eras=eras)  # type: ignore[arg-type]

    @server.tool(outputSchema=WEATHER)
    async def good(ctx: ToolContext) -> dict[str, Any]:
        return {"temperature": 21.5, "conditions": "sunny"}

    @server.tool(outputSchema=WEATHER)
    async def bad(ctx: ToolContext) -> dict[str, Any]:
        return {"temperature": "warm"}

    @server.tool(outputSchema=WEATHER)
    async def unstructured(ctx: ToolContext) -> str:
        return "21.5 and sunny"

    @server.tool(outputSchema=WEATHER)
    async def failing(ctx: ToolContext) -> str:
        raise trio_mcp.ToolError("boom")

    @server.tool(outputSchema={"type": "nonsense"})
    async def broken_schema(ctx: ToolContext) -> dict[str, Any]:
        return {"x": 1}

    @server.tool(outputSchema={"$schema": "http://json-schema.org/draft-04/schema#",
                               "type": "object", "properties": {"n": {"type": "number",
                               "maximum": 5, "exclusiveMaximum": True}}})  # fmt: skip
    async def draft4(ctx: ToolContext, n: float) -> dict[str, Any]:
        return {"n": n}

    @server.tool
    async def plain(ctx: ToolContext) -> str:
        return "no schema"

    return server


@pytest.mark.parametrize("eras", ["legacy", "modern"])
async def test_report_mode_keeps_result_with_outcome(eras: str) -> None:
    async with trio_mcp.open_mcp_session(make_server(eras)) as session:
        unknown = await session.call_tool("good")
        assert unknown.validation.status == "unchecked"  # not listed yet
        await session.list_tools()
        good = await session.call_tool("good")
        assert good.validation.status == "valid" and good.validation.ok
        bad = await session.call_tool("bad")
        assert bad.structured_content == {"temperature": "warm"}  # not destroyed
        assert bad.validation.status == "invalid" and not bad.validation.ok
        paths = {error.path for error in bad.validation.errors}
        assert paths == {"", "/temperature"}  # missing "conditions"; wrong type
        missing = await session.call_tool("unstructured")
        assert missing.validation.status == "missing" and missing.text == "21.5 and sunny"
        failing = await session.call_tool("failing")
        assert failing.validation.status == "unchecked" and failing.is_error
        broken = await session.call_tool("broken_schema")
        assert broken.validation.status == "unchecked"
        assert "does not compile" in broken.validation.reason
        assert (await session.call_tool("plain")).validation.status == "unchecked"
        assert (await session.call_tool("draft4", {"n": 4})).validation.status == "valid"
        assert (await session.call_tool("draft4", {"n": 5})).validation.status == "invalid"


async def test_strict_mode_raises_with_the_result() -> None:
    async with trio_mcp.open_mcp_session(make_server(), output_validation="strict") as session:
        await session.list_tools()
        assert (await session.call_tool("good")).validation.ok
        with pytest.raises(trio_mcp.OutputValidationError) as info:
            await session.call_tool("bad")
        assert info.value.result.structured_content == {"temperature": "warm"}
        assert info.value.validation.status == "invalid"
        with pytest.raises(trio_mcp.OutputValidationError, match="no structuredContent"):
            await session.call_tool("unstructured")


async def test_off_mode_and_bad_option() -> None:
    async with trio_mcp.open_mcp_session(make_server(), output_validation="off") as session:
        await session.list_tools()
        assert (await session.call_tool("bad")).validation is None
    with pytest.raises(ValueError, match="output_validation"):
        trio_mcp.open_mcp_session(make_server(), output_validation="loud")


async def test_validators_compiled_once_and_dropped_on_list_changed() -> None:
    server = make_server("legacy")
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, server) as session:
            await session.list_tools()
            await session.call_tool("good")
            compiled = session._tools.validators["good"]
            await session.call_tool("good")
            assert session._tools.validators["good"] is compiled  # compiled once
            server.remove_tool("good")

            @server.tool(name="good", outputSchema={"type": "object", "required": ["other"]})
            async def good2(ctx: ToolContext) -> dict[str, Any]:
                return {"temperature": 1, "conditions": "x"}

            async with session.notifications("notifications/tools/list_changed") as changes:
                await server.notify_tools_changed()
                await changes.receive()
            assert session._tools.validators == {} and session._tools.output_schemas == {}
            assert (await session.call_tool("good")).validation.status == "unchecked"
            await session.list_tools()
            assert (await session.call_tool("good")).validation.status == "invalid"


@pytest.mark.parametrize("tp", [Weather, WeatherDC, WeatherTD])
async def test_result_type_decodes(tp: type[Any]) -> None:
    async with trio_mcp.open_mcp_session(make_server()) as session:
        value = await session.call_tool("good", result_type=tp)
        got = value if isinstance(value, dict) else msgspec.structs.asdict(value) if isinstance(
            value, msgspec.Struct) else dataclasses.asdict(value)  # fmt: skip
        assert got == {"temperature": 21.5, "conditions": "sunny"}


async def test_result_type_errors() -> None:
    async with trio_mcp.open_mcp_session(make_server()) as session:
        with pytest.raises(trio_mcp.OutputValidationError, match="Weather") as info:
            await session.call_tool("bad", result_type=Weather)
        assert info.value.result.structured_content == {"temperature": "warm"}
        with pytest.raises(trio_mcp.OutputValidationError, match="no structuredContent"):
            await session.call_tool("unstructured", result_type=Weather)
        with pytest.raises(trio_mcp.ToolError):
            await session.call_tool("failing", result_type=Weather)


def test_compile_schema_errors() -> None:
    with pytest.raises(trio_mcp.validation.SchemaError, match="does not compile"):
        compile_schema({"type": "nonsense"})
    with pytest.raises(trio_mcp.validation.SchemaError):  # never fetched
        compile_schema({"$ref": "https://example.com/schema.json"})
    with pytest.raises(trio_mcp.validation.SchemaError):
        compile_schema([1, 2])  # type: ignore[arg-type]
    assert compile_schema(True).validate(5).ok
    assert compile_schema({"prefixItems": [{"type": "integer"}]}).validate(["x"]).status == (
        "invalid"
    )
