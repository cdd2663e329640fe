"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865): typed ``_meta.ui``, ``ui://`` reads, the option.

Against MockServer (``add_app``, ``tool(ui=...)``) in both eras; the real peer is
fastmcp (``test_interop_apps``).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp import types as t
from trio_mcp.testing import MockServer, ToolContext

VIEW = "ui://weather/view"
HTML = "<!doctype html><p>weather</p>"


def apps_server() -> MockServer:
    server = MockServer()
    server.add_app(
        VIEW,
        HTML,
        csp={"connectDomains": ["https://api.example.com"], "futureDomains": ["x"]},
        permissions={"camera": {}},
        domain="weather.example.com",
        prefers_border=False,
    )

    @server.tool(ui=VIEW)
    def forecast(ctx: ToolContext, city: str) -> str:
        return f"sunny in {city}"

    @server.tool(ui={"resourceUri": VIEW, "visibility": ["app"]})
    def refresh(ctx: ToolContext) -> str:
        return "refreshed"

    @server.tool
    def plain(ctx: ToolContext) -> str:
        return "plain"

    return server


EXPECTED_UI = t.UIResourceMeta(
    csp=t.UIResourceCsp(connect_domains=["https://api.example.com"]),
    permissions=t.UIResourcePermissions(camera={}),
    domain="weather.example.com",
    prefers_border=False,
)


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_app_tools_and_ui_resources_are_typed(protocol: str) -> None:
    server = apps_server()
    async with trio_mcp.open_mcp_session(server, protocol=protocol) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
        (resource,) = await session.list_resources()
        read = await session.read_resource(VIEW)
    forecast = tools["forecast"].ui
    assert forecast == t.UIToolMeta(resource_uri=VIEW)
    assert forecast is not None and forecast.model_visible
    refresh = tools["refresh"].ui
    assert refresh == t.UIToolMeta(resource_uri=VIEW, visibility=["app"])
    assert refresh is not None and not refresh.model_visible
    assert tools["plain"].ui is None
    assert (resource.uri, resource.mime_type, resource.ui) == (VIEW, t.APP_MIME_TYPE, EXPECTED_UI)
    (contents,) = read.contents
    assert isinstance(contents, t.TextResourceContents)
    assert (contents.text, contents.mime_type, contents.ui) == (HTML, t.APP_MIME_TYPE, EXPECTED_UI)
    # fields this library does not type stay in the raw _meta
    assert isinstance(contents.meta, dict)
    assert contents.meta["ui"]["csp"]["futureDomains"] == ["x"]


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_the_apps_option_declares_the_extension(protocol: str) -> None:
    server = apps_server()
    async with trio_mcp.open_mcp_session(server, protocol=protocol) as session:
        await session.list_tools()
    assert "extensions" not in (server.client_capabilities or {})
    async with trio_mcp.open_mcp_session(server, protocol=protocol, apps=True) as session:
        await session.list_tools()
    assert server.client_capabilities is not None
    assert server.client_capabilities["extensions"] == {
        "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}
    }


async def test_explicit_extension_settings_win_over_the_apps_option() -> None:
    server = apps_server()
    mine = {t.APPS_EXTENSION: {"mimeTypes": ["text/html;profile=mcp-app", "x/y"]}}
    async with trio_mcp.open_mcp_session(server, apps=True, extensions=mine) as session:
        await session.list_tools()
    assert server.client_capabilities is not None
    assert server.client_capabilities["extensions"] == mine


def tool_with_meta(meta: Any) -> t.Tool:
    return msgspec.convert({"name": "x", "inputSchema": {}, "_meta": meta}, t.Tool)


def test_malformed_ui_is_ignored_with_a_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="trio_mcp"):
        tool = tool_with_meta({"ui": {"resourceUri": 3}})
        assert tool.ui is None
    assert "malformed _meta.ui (UIToolMeta)" in caplog.text
    assert tool_with_meta({"ui": "nope"}).ui is None
    resource = msgspec.convert({"uri": VIEW, "name": "v", "_meta": {"ui": []}}, t.Resource)
    assert resource.ui is None


def test_the_flat_key_of_the_first_drafts_is_read() -> None:
    assert tool_with_meta({"ui/resourceUri": VIEW}).ui == t.UIToolMeta(resource_uri=VIEW)
    assert tool_with_meta({"ui/resourceUri": 3}).ui is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
UI_KEYS = st.sampled_from(
    ["resourceUri", "visibility", "csp", "permissions", "domain", "prefersBorder"]
)
UI_OBJECTS = st.dictionaries(UI_KEYS | st.text(), JSON, max_size=6)


@settings(max_examples=300, deadline=None)
@given(ui=JSON | UI_OBJECTS, flat=JSON)
def test_any_ui_from_a_server_decodes_or_is_none(ui: Any, flat: Any) -> None:
    wire = msgspec.json.encode(
        {
            "tools": [
                {"name": "x", "inputSchema": {}, "_meta": {"ui": ui, "ui/resourceUri": flat}}
            ],
        }
    )
    (tool,) = msgspec.json.decode(wire, type=t.ListToolsResult).tools
    assert tool.ui is None or isinstance(tool.ui, t.UIToolMeta)
    resource = msgspec.json.decode(
        msgspec.json.encode({"uri": VIEW, "name": "v", "_meta": {"ui": ui}}), type=t.Resource
    )
    assert resource.ui is None or isinstance(resource.ui, t.UIResourceMeta)
    contents = msgspec.json.decode(
        msgspec.json.encode({"uri": VIEW, "text": "", "_meta": {"ui": ui}}),
        type=t.TextResourceContents,
    )
    assert contents.ui is None or isinstance(contents.ui, t.UIResourceMeta)
