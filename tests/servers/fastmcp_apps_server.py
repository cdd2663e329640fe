"""A fastmcp server with an MCP App (``io.modelcontextprotocol/ui``), for ``test_interop_apps``.

Runs in fastmcp's own virtualenv (``.peers/py-fastmcp/``); stdio. Offers:

* the app ``ui://weather/view.html`` (HTML, ``text/html;profile=mcp-app``), which may reach
  ``https://api.example.com`` and asks for the clipboard;
* ``forecast(city)``, whose results that app shows (visible to the model and the app);
* ``refresh()``, an app-only tool (``visibility: ["app"]``);
* ``ui_supported()``, which says whether the client declared the extension.
"""

from __future__ import annotations

from fastmcp import Context, FastMCP
from fastmcp.apps.config import UI_EXTENSION_ID, AppConfig, ResourceCSP, ResourcePermissions

VIEW = "ui://weather/view.html"
HTML = "<!doctype html><html><body><div id='forecast'></div></body></html>"

mcp = FastMCP("trio-mcp-apps-peer")


@mcp.resource(
    VIEW,
    app=AppConfig(
        csp=ResourceCSP(connect_domains=["https://api.example.com"]),
        permissions=ResourcePermissions(clipboard_write={}),
        prefers_border=True,
    ),
)
def view() -> str:
    return HTML


@mcp.tool(app=AppConfig(resource_uri=VIEW))
def forecast(city: str) -> str:
    """The weather in ``city``."""
    return f"sunny in {city}"


@mcp.tool(app=AppConfig(resource_uri=VIEW, visibility=["app"]))
def refresh() -> str:
    """Refresh the view (called by the app, not the model)."""
    return "refreshed"


@mcp.tool()
def ui_supported(ctx: Context) -> bool:
    """Whether this client declared MCP Apps."""
    return ctx.client_supports_extension(UI_EXTENSION_ID)


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
