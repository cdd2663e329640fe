"""A server's outputSchema never blocks the event loop: big ones compile in a worker thread,
oversized ones not at all (results "unchecked", a warning logged); small ones stay inline."""

from __future__ import annotations

import logging
import threading
from typing import Any

import msgspec
import pytest

import trio_mcp
from trio_mcp import _validation
from trio_mcp._validation import _INLINE_COMPILE_SIZE, MAX_OUTPUT_SCHEMA_SIZE
from trio_mcp.testing import MockServer, ToolContext

pytest.importorskip("jsonschema_rs")  # the validation extra (in the test extra)


def schema_of(properties: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer", "minimum": 0} for i in range(properties)},
        "required": ["p0"],
    }


SMALL = schema_of(3)
BIG = schema_of(2_000)  # ~80 KB: past the inline size, under the limit
HUGE = schema_of(10_000)  # ~400 KB: over the limit
SIZES = [len(msgspec.json.encode(schema)) for schema in (SMALL, BIG, HUGE)]
assert SIZES[0] < _INLINE_COMPILE_SIZE < SIZES[1] < MAX_OUTPUT_SCHEMA_SIZE < SIZES[2]


def make_server() -> MockServer:
    server = MockServer()
    for name, schema in (("small", SMALL), ("big", BIG), ("huge", HUGE)):

        @server.tool(name=name, outputSchema=schema)
        async def tool(ctx: ToolContext, p0: int = 1) -> dict[str, Any]:
            return {"p0": p0}

    return server


@pytest.fixture
def compiled_in(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Each compilation of a server schema: (number of properties, ran on the main thread)."""
    seen: list[tuple[int, bool]] = []
    real = _validation.compile_schema

    def spy(schema: Any) -> Any:
        seen.append(
            (len(schema["properties"]), threading.current_thread() is threading.main_thread())
        )
        return real(schema)

    monkeypatch.setattr(_validation, "compile_schema", spy)
    return seen


async def test_small_schemas_compile_inline_big_ones_in_a_thread(
    compiled_in: list[tuple[int, bool]],
) -> None:
    async with trio_mcp.open_mcp_session(make_server()) as session:
        await session.list_tools()
        for name in ("small", "big"):
            good = await session.call_tool(name, {"p0": 3})
            bad = await session.call_tool(name, {"p0": -3})
            assert good.validation is not None and good.validation.status == "valid"
            assert bad.validation is not None and bad.validation.status == "invalid"
    assert compiled_in == [(3, True), (2_000, False)]  # once per tool; big: off the loop


async def test_tasks_path_compiles_off_the_loop_too(compiled_in: list[tuple[int, bool]]) -> None:
    async with trio_mcp.open_mcp_session(make_server()) as session:
        await session.list_tools()
        async with session.start_tool_task("big", {"p0": -1}) as task:
            result = await task.result()
    assert result.validation is not None and result.validation.status == "invalid"
    assert compiled_in == [(2_000, False)]


@pytest.mark.parametrize("mode", ["report", "strict"])
async def test_an_oversized_schema_is_not_compiled_and_said_so(
    mode: str, compiled_in: list[tuple[int, bool]], caplog: pytest.LogCaptureFixture
) -> None:
    async with trio_mcp.open_mcp_session(make_server(), output_validation=mode) as session:
        await session.list_tools()
        first = await session.call_tool("huge", {"p0": -1})
        second = await session.call_tool("huge", {"p0": -1})
    for result in (first, second):
        assert result.validation is not None and result.validation.status == "unchecked"
        assert f"over the {MAX_OUTPUT_SCHEMA_SIZE}-byte limit" in result.validation.reason
    assert compiled_in == []
    warnings = [
        r for r in caplog.records if r.levelno == logging.WARNING and "huge" in r.getMessage()
    ]
    assert len(warnings) == 1  # logged once, not per call
