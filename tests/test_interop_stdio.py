"""Interop over stdio with real servers from the registries.

* ``@modelcontextprotocol/server-everything`` (npm, legacy era only);
* ``tests/servers/sdk_server.py``, built with the official ``mcp`` 2.3.0 SDK, in dual (auto
  detects modern), legacy-only and modern-only modes.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from msgspec import UNSET

import trio_mcp
from trio_mcp import StdioParameters

from .interop_peers import (
    everything_argv,
    everything_env,
    sdk_server_argv,
    sdk_server_env,
    skip_unless_peers,
    skip_unless_sdk,
)

pytestmark = pytest.mark.interop


@pytest.fixture
def everything() -> StdioParameters:
    skip_unless_peers()
    return StdioParameters(everything_argv("stdio"), env=everything_env())


@pytest.fixture
def sdk_server() -> Any:
    skip_unless_sdk()

    def make(mode: str) -> StdioParameters:
        return StdioParameters(sdk_server_argv("stdio", mode=mode), env=sdk_server_env())  # type: ignore[arg-type]

    return make


async def sample(params: trio_mcp.CreateMessageRequestParams, ctx: trio_mcp.RequestContext) -> Any:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "sampled-answer"},
        "model": "fake-llm",
    }


async def elicit(params: Any, ctx: trio_mcp.RequestContext) -> Any:
    schema = getattr(params, "requested_schema", {}) or {}
    content = {
        name: _valid_string(prop)
        for name, prop in schema.get("properties", {}).items()
        if prop.get("type") == "string"
    }
    return {"action": "accept", "content": content}


_FORMATS = {
    "email": "ada@example.com",
    "uri": "https://example.com/ada",
    "date": "1815-12-10",
    "date-time": "1815-12-10T00:00:00Z",
}


def _valid_string(prop: dict[str, Any]) -> str:
    """What a person filling the form in would give: a valid value for the property."""
    if prop.get("enum"):
        return str(prop["enum"][0])
    for key in ("oneOf", "anyOf"):
        for option in prop.get(key, ()):
            if "const" in option:
                return str(option["const"])
    return _FORMATS.get(str(prop.get("format")), "Ada")


HANDLERS: dict[str, Any] = {
    "sampling": sample,
    "elicitation": elicit,
    "roots": ["file:///tmp/project"],
}


# -- server-everything -----------------------------------------------------------------


async def test_everything_tools_resources_prompts(everything: StdioParameters) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, everything) as session:
            assert session.era == "legacy"
            assert session.protocol_version == "2025-11-25"
            names = {tool.name for tool in await session.list_tools()}
            assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
            echo = await session.call_tool("echo", {"message": "hi"})
            assert echo.text == "Echo: hi"
            total = await session.call_tool("get-sum", {"a": 2, "b": 40})
            assert "42" in total.text
            resources = await session.list_resources()
            assert resources
            read = await session.read_resource(resources[0].uri)
            assert read.contents
            templates = await session.list_resource_templates()
            assert any("{resourceId}" in t.uri_template for t in templates)
            prompts = {p.name for p in await session.list_prompts()}
            assert "args-prompt" in prompts
            prompt = await session.get_prompt("args-prompt", {"city": "Paris"})
            assert "Paris" in str(prompt.messages[0].content)
            completion = await session.complete(
                {"type": "ref/prompt", "name": "completable-prompt"}, "department", "E"
            )
            assert completion.completion.values
            with pytest.raises(trio_mcp.ResourceNotFoundError):
                await session.read_resource("demo://nope")


async def test_everything_progress_and_logging(everything: StdioParameters) -> None:
    seen: list[float] = []
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, everything) as session:
            result = await session.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=lambda p: seen.append(p.progress),
            )
            assert not result.is_error
            assert seen == [1, 2, 3]
            await session.set_logging_level("debug")
            async with session.notifications("notifications/message") as rx:
                await session.call_tool("toggle-simulated-logging", {})
                with trio.fail_after(30):
                    note = await rx.receive()
                assert "level" in note.params


async def test_everything_sampling_elicitation_roots(everything: StdioParameters) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, everything, **HANDLERS) as session:
            names = {tool.name for tool in await session.list_tools()}
            assert {
                "trigger-sampling-request",
                "trigger-elicitation-request",
                "get-roots-list",
            } <= names
            sampled = await session.call_tool("trigger-sampling-request", {"prompt": "hi"})
            assert "sampled-answer" in sampled.text
            elicited = await session.call_tool("trigger-elicitation-request", {})
            assert not elicited.is_error
            roots = await session.call_tool("get-roots-list", {})
            assert "file:///tmp/project" in roots.text


async def test_everything_cli_smoke(
    everything: StdioParameters, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    from trio_mcp.cli import main

    command = " ".join(shlex.quote(part) for part in everything.argv)
    assert await trio.to_thread.run_sync(main, [command, "call", "echo", '{"message": "cli"}']) == 0
    assert "Echo: cli" in capsys.readouterr().out


# -- the official SDK's server ---------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "era"), [("dual", "modern"), ("legacy", "legacy"), ("modern", "modern")]
)
async def test_sdk_server_eras(sdk_server: Any, mode: str, era: str) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, sdk_server(mode), **HANDLERS) as session:
            assert session.era == era
            names = {tool.name for tool in await session.list_tools()}
            assert {"echo", "add", "ask_name", "summarize", "show_roots"} <= names
            assert (await session.call_tool("echo", {"text": "x"})).text == "x"
            added = await session.call_tool("add", {"a": 1, "b": 2})
            assert added.structured_content == {"result": 3}
            failed = await session.call_tool("fail", {})
            assert failed.is_error
            with pytest.raises(trio_mcp.ToolError):
                failed.raise_for_error()
            # server-to-client input: legacy requests or modern multi-round-trip results
            assert "Ada" in (await session.call_tool("ask_name", {})).text
            assert "sampled-answer" in (await session.call_tool("summarize", {"text": "t"})).text
            assert "file:///tmp/project" in (await session.call_tool("show_roots", {})).text
            text = await session.read_resource("test://static/text")
            assert text.contents[0].text  # type: ignore[union-attr]
            blob = await session.read_resource("test://static/blob")
            assert blob.contents[0].blob  # type: ignore[union-attr]
            prompt = await session.get_prompt("greeting", {"name": "Ada"})
            assert "Ada" in str(prompt.messages[0].content)
            completion = await session.complete(
                {"type": "ref/prompt", "name": "greeting"}, "style", "f"
            )
            assert "friendly" in completion.completion.values
            seen: list[float] = []
            await session.call_tool(
                "count_with_progress", {"steps": 3}, on_progress=lambda p: seen.append(p.progress)
            )
            assert len(seen) == 3
            if session.era == "modern" or session.server_capabilities.logging is not UNSET:
                await session.set_logging_level("info")
            async with session.notifications("notifications/message") as rx:
                await session.call_tool("log_messages", {"count": 2})
                with trio.fail_after(10):
                    assert (await rx.receive()).params["level"] in (
                        "info",
                        "warning",
                        "debug",
                        "notice",
                        "error",
                    )


@pytest.mark.parametrize("mode", ["dual", "legacy"])
async def test_sdk_server_list_changed_through_listen(sdk_server: Any, mode: str) -> None:
    async with trio.open_nursery() as nursery:
        async with trio_mcp.open_mcp_session(nursery, sdk_server(mode)) as session:
            async with session.listen(tools=True) as rx:
                await session.call_tool("add_dynamic_tool", {"name": "fresh"})
                with trio.fail_after(10):
                    note = await rx.receive()
                assert note.method == "notifications/tools/list_changed"
            assert "fresh" in {tool.name for tool in await session.list_tools()}
