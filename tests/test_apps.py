"""MCP Apps (io.modelcontextprotocol/ui): typed _meta.ui, ui:// resources, the capability."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp
from trio_mcp import types as t
from trio_mcp.testing import MockServer, ToolContext

APP = "ui://weather/app.html"
HTML = "<!doctype html><p>weather</p>"
RESOURCE_UI = {
    "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": []},
    "permissions": {"camera": {}, "clipboardWrite": {}},
    "domain": "weather.apps.example.com",
    "prefersBorder": True,
}


def app_server(eras: Any) -> MockServer:
    server = MockServer(eras=eras)

    @server.tool(_meta={"ui": {"resourceUri": APP, "visibility": ["model", "app"]}})
    async def weather(ctx: ToolContext, city: str) -> str:
        return f"sunny in {city}"

    @server.tool(_meta={"ui/resourceUri": APP})  # the deprecated flat key
    async def old_style(ctx: ToolContext) -> str:
        return "x"

    @server.tool
    async def plain(ctx: ToolContext) -> str:
        return "x"

    server.add_resource(APP, text=HTML, mime_type=t.APP_MIME_TYPE, _meta={"ui": RESOURCE_UI})
    return server


@pytest.mark.parametrize("eras", ["legacy", "modern"])
async def test_tools_and_resources_carry_typed_ui(
    eras: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = app_server(eras)
    apps = {t.APPS_EXTENSION: {"mimeTypes": [t.APP_MIME_TYPE]}}
    async with trio_mcp.open_mcp_session(server, extensions=apps) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
        ui = tools["weather"].ui
        assert ui == t.UIToolMeta(resource_uri=APP, visibility=["model", "app"])
        assert tools["old_style"].ui == t.UIToolMeta(resource_uri=APP)
        assert tools["plain"].ui is None
        [resource] = await session.list_resources()
        assert resource.ui is not None and resource.ui.csp is not t.UNSET
        assert resource.ui.csp.connect_domains == ["https://api.example.com"]
        assert resource.ui.permissions == t.UIResourcePermissions(camera={}, clipboard_write={})
        assert (resource.ui.domain, resource.ui.prefers_border) == (
            "weather.apps.example.com",
            True,
        )
        # a ui:// resource is read like any other; its contents carry the same _meta.ui
        read = await session.read_resource(APP)
        [contents] = read.contents
        assert isinstance(contents, t.TextResourceContents) and contents.text == HTML
        assert contents.mime_type == t.APP_MIME_TYPE and contents.ui == resource.ui
    # the capability is negotiated as the extension says, in either era
    caps = server.client_capabilities or {}
    assert caps["extensions"][t.APPS_EXTENSION] == {"mimeTypes": [t.APP_MIME_TYPE]}


def test_a_malformed_ui_is_a_protocol_error_when_read() -> None:
    tool = t.Tool(name="x", input_schema={}, meta={"ui": {"resourceUri": 7}})
    with pytest.raises(trio_mcp.ProtocolError, match="UIToolMeta"):
        _ = tool.ui
    resource = t.Resource(uri=APP, name="app", meta={"ui": "not an object"})
    with pytest.raises(trio_mcp.ProtocolError, match="UIResourceMeta"):
        _ = resource.ui
    assert t.Resource(uri=APP, name="app", meta={"other": 1}).ui is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
ui_keys = st.sampled_from(
    ["resourceUri", "visibility", "csp", "permissions", "domain", "prefersBorder", "connectDomains"]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(ui_keys, json_values, max_size=4) | json_values)
def test_any_ui_meta_from_a_server_is_typed_or_a_protocol_error(ui: Any) -> None:
    # _meta.ui is the server's: whatever it holds, reading it gives a value or ProtocolError
    for owner in (
        t.Tool(name="x", input_schema={}, meta={"ui": ui}),
        t.Resource(uri=APP, name="app", meta={"ui": ui}),
        t.TextResourceContents(uri=APP, text="", meta={"ui": ui}),
    ):
        try:
            value = owner.ui
        except trio_mcp.ProtocolError:
            continue
        assert value is None or isinstance(value, (t.UIToolMeta, t.UIResourceMeta))
