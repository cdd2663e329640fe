"""MCP Apps (``io.modelcontextprotocol/ui``) against fastmcp (``tests/servers/fastmcp_apps_server.py``).

fastmcp writes ``_meta.ui`` on its app tools and ``ui://`` resources and reads the client's
``capabilities.extensions``: the typed views, the ``ui://`` read and the negotiation, in
both eras.
"""

from __future__ import annotations

import pytest

import trio_mcp
from trio_mcp import StdioParameters
from trio_mcp import types as t

from .interop_peers import fastmcp_apps_argv, skip_unless_fastmcp

pytestmark = pytest.mark.interop

VIEW = "ui://weather/view.html"


@pytest.fixture
def fastmcp_apps() -> StdioParameters:
    skip_unless_fastmcp()
    return StdioParameters(fastmcp_apps_argv())


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_fastmcp_app_tools_and_resource_are_typed(
    fastmcp_apps: StdioParameters, protocol: str
) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_apps, protocol=protocol) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
        (resource,) = await session.list_resources()
        read = await session.read_resource(VIEW)
    forecast = tools["forecast"].ui
    assert forecast == t.UIToolMeta(resource_uri=VIEW)
    assert forecast is not None and forecast.model_visible
    refresh = tools["refresh"].ui
    assert refresh is not None and refresh.visibility == ["app"] and not refresh.model_visible
    assert tools["ui_supported"].ui is None
    expected = t.UIResourceMeta(
        csp=t.UIResourceCsp(connect_domains=["https://api.example.com"]),
        permissions=t.UIResourcePermissions(clipboard_write={}),
        prefers_border=True,
    )
    assert (resource.uri, resource.mime_type, resource.ui) == (VIEW, t.APP_MIME_TYPE, expected)
    (contents,) = read.contents
    assert isinstance(contents, t.TextResourceContents)
    assert contents.mime_type == t.APP_MIME_TYPE and contents.ui == expected
    assert contents.text.startswith("<!doctype html>")


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
@pytest.mark.parametrize("apps", [False, True])
async def test_fastmcp_sees_the_apps_option(
    fastmcp_apps: StdioParameters, protocol: str, apps: bool
) -> None:
    async with trio_mcp.open_mcp_session(fastmcp_apps, protocol=protocol, apps=apps) as session:
        result = await session.call_tool("ui_supported", {})
    assert result.text == ("true" if apps else "false")
